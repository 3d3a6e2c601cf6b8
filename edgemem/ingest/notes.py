"""Raw turn → note draft: deterministic keywords, entities, resolved dates, embedding.

MemFly §3.3 ingestion and CLAG §3.1 (the note m_i with content, context, keywords, tags, time). No
model call here: keywords and entities are extracted deterministically, relative dates resolved
against the turn's event time (DESIGN Principle 6), and the embedding computed on the annotated text
so that "yesterday [7 May 2023]" is searchable by its absolute date too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from edgemem.ingest.dates import annotate, resolve_dates
from edgemem.store.raw import Turn
from edgemem.text import SENTENCE_END, day_label, extract_entities, extract_keywords


SENTENCE_MIN_WORDS = 3  # "Wow!" or "Thanks, Mel." alone says nothing a question asks about
MAX_SENTENCES = 12  # a long chunk's sentences are grouped into at most this many spans


def sentences(text: str) -> list[str]:
    """The spans of ``text`` that get a vector of their own: its sentences of SENTENCE_MIN_WORDS
    words or more (shorter ones join the next), grouped into at most MAX_SENTENCES consecutive spans
    for a long chunk. Empty for a text of one such sentence: its note vector already is that."""
    spans: list[str] = []
    carry = ""
    for part in SENTENCE_END.split(text.strip()):
        part = f"{carry} {part}".strip() if carry else part
        if len(part.split()) < SENTENCE_MIN_WORDS:
            carry = part
            continue
        spans.append(part)
        carry = ""
    if carry and spans:
        spans[-1] = f"{spans[-1]} {carry}"
    if len(spans) < 2:
        return []
    if len(spans) > MAX_SENTENCES:
        size = -(-len(spans) // MAX_SENTENCES)
        spans = [" ".join(spans[i:i + size]) for i in range(0, len(spans), size)]
    return spans


@dataclass
class NoteDraft:
    raw_ids: list[int]
    content: str
    context: str
    keywords: list[str]
    entities: list[str]
    dates: list[dict]
    speaker: str | None
    event_time: str
    embedding: np.ndarray | None = None
    tags: list[str] = field(default_factory=list)
    sentence_vectors: np.ndarray | None = None  # one row per span of :func:`sentences`, or None

    @property
    def embed_text(self) -> str:
        return f"{self.speaker}: {self.content}" if self.speaker else self.content

    @property
    def sentence_texts(self) -> list[str]:
        """What each sentence vector embeds: the span, after the speaker as the note vector has it."""
        return [f"{self.speaker}: {s}" if self.speaker else s for s in sentences(self.content)]


def draft(turn: Turn, source_title: str | None = None) -> NoteDraft:
    when = datetime.fromisoformat(turn.event_time)
    resolved = resolve_dates(turn.text, when)
    content = annotate(turn.text, when) if resolved else turn.text
    day = day_label(when)
    context = f"said by {turn.speaker} on {day}" if turn.speaker else f"written on {day}"
    if source_title:
        context += f" in {source_title}"
    return NoteDraft(
        raw_ids=[turn.id],
        content=content,
        context=context,
        keywords=extract_keywords(turn.text),
        entities=extract_entities(turn.text),
        dates=[
            {"phrase": d.phrase, "start": d.start.isoformat(), "end": d.end.isoformat(),
             "granularity": d.granularity, "approximate": d.approximate, "label": d.label()}
            for d in resolved
        ],
        speaker=turn.speaker,
        event_time=turn.event_time,
    )


def build(turns: list[tuple[Turn, str | None]], embed) -> list[NoteDraft]:
    """Drafts for a batch of turns, each note and its sentences embedded in one call (batching is
    ~10x faster than one by one)."""
    drafts = [draft(turn, title) for turn, title in turns]
    if drafts:
        spans = [d.sentence_texts for d in drafts]
        vectors = np.asarray(embed([d.embed_text for d in drafts] + [t for texts in spans for t in texts]),
                             dtype=np.float32)
        at = len(drafts)
        for d, v, texts in zip(drafts, vectors[:at], spans, strict=True):
            d.embedding = v
            if texts:
                d.sentence_vectors = vectors[at:at + len(texts)]
                at += len(texts)
    return drafts

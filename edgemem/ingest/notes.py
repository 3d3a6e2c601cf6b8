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
from edgemem.text import day_label, extract_entities, extract_keywords


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

    @property
    def embed_text(self) -> str:
        return f"{self.speaker}: {self.content}" if self.speaker else self.content


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
    """Drafts for a batch of turns, embedded in one call (batching is ~10x faster than one by one)."""
    drafts = [draft(turn, title) for turn, title in turns]
    if drafts:
        vectors = embed([d.embed_text for d in drafts])
        for d, v in zip(drafts, vectors, strict=True):
            d.embedding = np.asarray(v, dtype=np.float32)
    return drafts

"""Retrieval pathways fused by reciprocal-rank fusion (MemFlow Appendix A.2, Table 5; CLAG §3.4;
MemFly §3.4).

- dense: sqlite-vec KNN over note embeddings.
- bm25: Okapi BM25 with k1 = 1.5, b = 0.75 (Table 5). FTS5 finds the candidates (any query word), then
  they are rescored here, because FTS5's built-in bm25() fixes k1 at 1.2; document frequencies come
  from the FTS index and the average length from the notes table.
- cluster: CLAG two-stage retrieval — the K = 3 clusters whose centroids are nearest the query are the
  candidates; the model picks 0..K of them from their profiles (Appendix K.3 prompt, schema-constrained)
  when one is given, else those within a margin of the best; then dense search inside them.
- keyword / topic: MemFly's keyword pathway (shared keywords, rarer ones weigh more) and topic pathway
  (notes carrying keywords of the Leiden topics nearest the query).
- links: expansion of top hits along SUPPORTS / CONFLICTS / SUPERSEDES edges (MemFly topological path).

RRF: score(d) = Σ w / (k + rank), k = 60 (Table 5), gathers the candidates; :func:`fused_rank` orders
them by one score (cosine, BM25, the named speaker, the lines either side, length).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from nltk.stem import PorterStemmer

from edgemem import prompts
from edgemem.errors import ContextTooLong, SchemaError
from edgemem.store import clusters as cluster_store
from edgemem.store import links, notes, search
from edgemem.text import STOPWORDS, extract_keywords

RRF_K = 60
K1, B = 1.5, 0.75
CLUSTER_K = 3
CLUSTER_MARGIN = 0.05  # without a model: keep clusters within this cosine of the best one
LINK_KINDS = ("SUPPORTS", "CONFLICTS", "SUPERSEDES")
# with_replies: the reply to each of the first REPLY_TOP lines, at REPLY_FACTOR of its score. LoCoMo
# tune split, retrieval-only recall@10 on categories 1-4 (72.8 without): top 5 at 0.9: 76.6, top 10
# at 0.9: 76.2, top 5 at 0.7: 77.0, top 10 at 1.0: 76.6.
REPLY_TOP = 5
REPLY_FACTOR = 0.7
# fused_rank's weights, fitted on LoCoMo's tune conversations (26, 30, 41) over the candidates dense and
# BM25 find (50 each), recall@10 on categories 1-4: a grid of 216 settings chose these with any one
# conversation held out as with none (held out: 81.2; RRF with the speaker boost and sentence pathway
# this replaces: 74.1; the cosine alone: 67.7). A logistic regression on the same features, held out
# the same way: 80.0. Sentence vectors in place of or beside the line's lowered it (78.3, 79.9).
# Retrieval-only recall@10 through the whole read path (docs/measurements.md): LoCoMo tune 77.9 -> 80.7,
# the tune personas, never fitted on, 75.5 -> 81.3.
RANK_WEIGHTS = {"lexical": 0.3, "speaker": 0.2, "before": 0.1, "after": 0.1, "length": 0.1}
LENGTH_CAP = 40  # words: a line longer than this scores no higher for it

_stem = lru_cache(maxsize=65536)(PorterStemmer().stem)
_WORD = re.compile(r"[^\W_]+")


@dataclass
class Hit:
    note_id: int
    score: float
    pathways: dict[str, int] = field(default_factory=dict)  # pathway -> 1-based rank


def rrf(ranked: dict[str, Sequence[int]], k: int = RRF_K, weights: dict[str, float] | None = None) -> list[Hit]:
    """Fuse ranked id lists: each list contributes weight / (k + rank) to every id it holds."""
    hits: dict[int, Hit] = {}
    for pathway, ids in ranked.items():
        w = (weights or {}).get(pathway, 1.0)
        for rank, note_id in enumerate(ids, start=1):
            hit = hits.setdefault(note_id, Hit(note_id, 0.0))
            if pathway not in hit.pathways:
                hit.score += w / (k + rank)
                hit.pathways[pathway] = rank
    return sorted(hits.values(), key=lambda h: (-h.score, h.note_id))


def dense(conn: Any, vector: np.ndarray, k: int) -> list[int]:
    return [note_id for note_id, _ in notes.knn(conn, vector, k)]


def _stems(text: str) -> list[str]:
    return [_stem(w) for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS]


def bm25(conn: Any, text: str, k: int, *, depth: int = 200) -> list[tuple[int, float]]:
    """Okapi BM25 (k1 = 1.5, b = 0.75) over FTS5 candidates: (note id, score), best first."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text) if w.lower() not in STOPWORDS))
    if not words:
        return []
    candidates = [note_id for note_id, _ in notes.fts(conn, " ".join(words), depth)]
    if not candidates:
        return []
    n_docs = max(notes.count_active(conn), 1)
    avgdl = search.average_words(conn)
    idf: dict[str, float] = {}
    for word in words:
        df = search.doc_frequency(conn, word)
        if df:
            idf[_stem(word)] = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    scored = []
    for note in notes.get_many(conn, candidates):
        tf = Counter(_stems(f"{note.content} {note.context}"))
        dl = sum(tf.values()) or 1
        score = sum(
            weight * tf[term] * (K1 + 1) / (tf[term] + K1 * (1 - B + B * dl / avgdl))
            for term, weight in idf.items() if tf[term]
        )
        if score > 0:
            scored.append((note.id, score))
    scored.sort(key=lambda t: (-t[1], t[0]))
    return scored[:k]


def sparse(conn: Any, text: str, k: int) -> list[int]:
    return [note_id for note_id, _ in bm25(conn, text, k)]


def keyword_path(conn: Any, text: str, k: int) -> list[int]:
    terms = list(dict.fromkeys(extract_keywords(text, limit=12)))
    return [note_id for note_id, _ in search.keyword_notes(conn, terms, k)]


def topic_path(conn: Any, vector: np.ndarray, k: int, *, topics: int = 2) -> list[int]:
    nearest = [t for t, _ in search.nearest_topics(conn, vector, topics)]
    members = search.topic_notes(conn, nearest, k * 4)
    if not members:
        return []
    vecs = notes.vectors(conn, members)
    ranked = sorted(vecs, key=lambda i: -float(vecs[i] @ vector))
    return ranked[:k]


_CLUSTER_SCHEMA = {
    "type": "object",
    "properties": {
        "selected_clusters": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": CLUSTER_K}, "maxItems": CLUSTER_K},
    },
    "required": ["selected_clusters"],
    "additionalProperties": False,
}


def select_clusters(conn: Any, question: str, vector: np.ndarray, llm: Any | None) -> tuple[list[int], str]:
    """CLAG §3.4 stage one: candidate clusters by centroid, then the model's choice among them."""
    nearest = cluster_store.nearest(conn, vector, CLUSTER_K)
    if not nearest:
        return [], "none"
    best = nearest[0][1]
    close = [c for c, s in nearest if s >= best - CLUSTER_MARGIN]
    # A clear winner needs no model call (the same cascade as write-time routing, CLAG §3.2).
    if llm is not None and len(close) > 1:
        profiles = cluster_store.get_many(conn, [c for c, _ in nearest])
        lines = []
        for i, c in enumerate(profiles, start=1):
            example = cluster_path(conn, vector, [c.id], 1)
            sample = notes.get(conn, example[0]).content[:160] if example else ""
            lines.append(f"{i}. {c.summary or '(no summary yet)'} [tags: {', '.join(c.tags)}] e.g. \"{sample}\"")
        messages = [
            {"role": "system", "content": prompts.render("cluster_select_system")},
            {"role": "user", "content": prompts.render(
                "cluster_select_user", question=question, tags=", ".join(extract_keywords(question, 5)), clusters="\n".join(lines))},
        ]
        try:
            chosen = llm.complete_json(messages, _CLUSTER_SCHEMA, max_tokens=24).value["selected_clusters"]
            return [profiles[i - 1].id for i in dict.fromkeys(chosen) if 1 <= i <= len(profiles)], "model"
        except (SchemaError, ContextTooLong):
            pass  # deterministic choice below
    return close, "centroid"


def cluster_path(conn: Any, vector: np.ndarray, ids: Sequence[int], k: int) -> list[int]:
    members = search.cluster_members(conn, ids)
    if not members:
        return []
    vecs = notes.vectors(conn, members)
    return sorted(vecs, key=lambda i: -float(vecs[i] @ vector))[:k]


def expand_links(conn: Any, anchors: Sequence[int], limit: int) -> list[int]:
    """Notes linked to the anchors, in anchor order (the topological pathway)."""
    found: list[int] = []
    around = links.neighbours(conn, list(anchors), LINK_KINDS)
    for anchor in anchors:
        for other, _kind, _strength in around.get(anchor, []):
            if other not in found and other not in anchors:
                found.append(other)
    return found[:limit]


def next_lines(conn: Any, note_ids: Sequence[int], *, step: int = 1) -> dict[int, int]:
    """For notes of conversation lines: the active note of the line said next in the same session
    (``step`` -1: the line said before)."""
    out: dict[int, int] = {}
    ids = list(dict.fromkeys(note_ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(f"""
            SELECT ns1.note_id, n2.id FROM note_sources ns1
            JOIN raw_turns t1 ON t1.id = ns1.raw_id
            JOIN sources s ON s.id = t1.source_id AND s.kind = 'conversation'
            JOIN raw_turns t2 ON t2.source_id = t1.source_id AND t2.seq = t1.seq + ?
            JOIN note_sources ns2 ON ns2.raw_id = t2.id
            JOIN notes n2 ON n2.id = ns2.note_id AND n2.status = 'active'
            WHERE ns1.note_id IN ({marks}) ORDER BY t1.seq * ?""", [step, *chunk, step])
        for note_id, other in rows:
            if other != note_id:
                out[note_id] = other  # a merged note spans several lines: the one beside its last (first)
    return out


def with_replies(conn: Any, hits: list[Hit], top: int = REPLY_TOP, factor: float = REPLY_FACTOR) -> list[Hit]:
    """``hits`` with the reply to each of the first ``top`` conversation lines raised to ``factor``
    of that line's score, if that is higher than its own.

    "How did your kids react at the memorial?" matches a question about the kids' reaction; the
    answer is the next line, "They were awestruck and humbled.", which shares no word with it."""
    if not hits or top <= 0:
        return hits
    replies = next_lines(conn, [h.note_id for h in hits[:top]])
    if not replies:
        return hits
    scores = {h.note_id: h for h in hits}
    for rank, h in enumerate(hits[:top], start=1):
        reply = replies.get(h.note_id)
        if reply is None:
            continue
        raised = h.score * factor
        held = scores.get(reply)
        if held is None or held.score < raised:
            scores[reply] = Hit(reply, raised, {**(held.pathways if held else {}), "reply": rank})
    out = list(scores.values())
    out.sort(key=lambda h: (-h.score, h.note_id))
    return out


def hybrid(conn: Any, query: str, vector: np.ndarray, k: int, *, depth: int = 50) -> list[Hit]:
    """Top-k notes for ``query`` by RRF over dense and BM25 lists of ``depth`` candidates each."""
    fused = rrf({"dense": dense(conn, vector, depth), "bm25": sparse(conn, query, depth)})
    return fused[:k]


def named_speaker(conn: Any, question: str, ids: Sequence[int]) -> tuple[dict[int, str], str | None]:
    """The speaker of each of ``ids``, and the one of them the question names (None: none or several).

    "What did Melanie paint?" is about what Melanie said: in both LoCoMo dev conversations, 250 of
    the 259 evidence turns of answerable questions naming exactly one speaker were said by that
    speaker (and 12 of 72 for the adversarial questions, which name the wrong one). The speakers
    considered are those of the candidates themselves, so no table scan is needed."""
    speaker_of = notes.speakers(conn, list(ids))
    asked = [name for name in set(speaker_of.values()) if re.search(rf"\b{re.escape(name)}\b", question, re.IGNORECASE)]
    return speaker_of, (asked[0] if len(asked) == 1 else None)


def fused_rank(conn: Any, question: str, query: str, vector: np.ndarray, hits: list[Hit], k: int | None,
               weights: dict[str, float] = RANK_WEIGHTS) -> tuple[list[Hit], str | None]:
    """The top ``k`` (None: all) of the candidates the pathways found, ordered by one score, and the
    speaker the question names.

    score = cos(query, line) + lexical · BM25 / the query's best BM25 score + speaker · [said by the one
    speaker the question names] + before · cos(query, the line said before it) + after · cos(query, the
    line said after it) + length · min(words, LENGTH_CAP) / LENGTH_CAP.

    The pathways' reciprocal ranks (and :func:`with_replies`) decide which notes are candidates, not
    their order, so the scores the hits carry in are not read here: ranks throw away how close a line
    is, and on LoCoMo the cosine alone orders the candidates about as well as RRF over dense and BM25
    does. The neighbours carry what a reply leaves out ("They were awestruck
    and humbled." answers "How did your kids react at the memorial?" only after the line that asked),
    and a bare "Agreed!" is rarely what anyone asks about. ``query`` is the question without the
    speakers' names (``tiers.content_query``); ``question`` is as asked, for the speaker."""
    if not hits:
        return hits, None
    ids = [h.note_id for h in hits]
    before, after = next_lines(conn, ids, step=-1), next_lines(conn, ids)
    vecs = notes.vectors(conn, list(dict.fromkeys([*ids, *before.values(), *after.values()])))
    lexical = dict(bm25(conn, query, max(len(ids), 50)))
    best = max(lexical.values(), default=0.0) or 1.0
    speaker_of, asked = named_speaker(conn, question, ids)
    words = {n.id: len(n.content.split()) for n in notes.get_many(conn, ids)}

    def cos(note_id: int | None) -> float:
        v = vecs.get(note_id) if note_id is not None else None
        return float(v @ vector) if v is not None else 0.0

    out = []
    for h in hits:
        i = h.note_id
        score = (cos(i) + weights["lexical"] * lexical.get(i, 0.0) / best
                 + weights["speaker"] * (asked is not None and speaker_of.get(i) == asked)
                 + weights["before"] * cos(before.get(i)) + weights["after"] * cos(after.get(i))
                 + weights["length"] * min(words.get(i, 0), LENGTH_CAP) / LENGTH_CAP)
        out.append(Hit(i, score, h.pathways))
    out.sort(key=lambda h: (-h.score, h.note_id))
    return out[:k], asked


def multi_path(conn: Any, query: str, vector: np.ndarray, k: int, *, llm: Any | None = None, depth: int = 50) -> tuple[list[Hit], dict]:
    """All pathways fused: dense, BM25, CLAG cluster two-stage, keyword, topic, then link expansion."""
    chosen, how = select_clusters(conn, query, vector, llm)
    ranked = {
        "dense": dense(conn, vector, depth),
        "bm25": sparse(conn, query, depth),
        "cluster": cluster_path(conn, vector, chosen, depth),
        "keyword": keyword_path(conn, query, depth),
        "topic": topic_path(conn, vector, depth // 2),
    }
    fused = rrf(ranked, weights={"topic": 0.5, "keyword": 0.75})
    anchors = [h.note_id for h in fused[: max(3, k // 4)]]
    expanded = expand_links(conn, anchors, limit=max(2, k // 4))
    if expanded:
        fused = rrf({**ranked, "links": expanded}, weights={"topic": 0.5, "keyword": 0.75, "links": 0.5})
    info = {"clusters": chosen, "cluster_choice": how, "pathway_sizes": {p: len(v) for p, v in ranked.items()},
            "links": len(expanded)}
    return fused[:k], info

"""Retrieval pathways fused by reciprocal-rank fusion.

Dense (sqlite-vec KNN over note embeddings) and sparse (FTS5 BM25) candidate lists are fused with
RRF, score(d) = Σ 1 / (k + rank), k = 60 (Cormack et al. 2009; MemFlow Appendix A.2 uses the same
constant for its hybrid pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgemem.store import notes

RRF_K = 60


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


def sparse(conn: Any, text: str, k: int) -> list[int]:
    return [note_id for note_id, _ in notes.fts(conn, text, k)]


def hybrid(conn: Any, query: str, vector: np.ndarray, k: int, *, depth: int = 50) -> list[Hit]:
    """Top-k notes for ``query`` by RRF over dense and BM25 lists of ``depth`` candidates each."""
    fused = rrf({"dense": dense(conn, vector, depth), "bm25": sparse(conn, query, depth)})
    return fused[:k]

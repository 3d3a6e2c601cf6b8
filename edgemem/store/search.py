"""Read-path queries over the MemFly hierarchy (keywords, topics) and corpus statistics for BM25."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from edgemem.store.notes import blob

_AVGDL: dict[tuple[str, int], float] = {}


def doc_frequency(conn: Any, word: str) -> int:
    """Active notes whose FTS5 row matches ``word`` (FTS applies the same porter stemming)."""
    phrase = word.replace('"', '""')  # FTS5 string literal: a double quote is doubled
    return conn.execute("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?", (f'"{phrase}"',)).fetchone()[0]


def average_words(conn: Any) -> float:
    """Mean words per active note (content + context + keywords), cached per store size."""
    n = conn.execute("SELECT count(*) FROM notes WHERE status = 'active'").fetchone()[0]
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    key = (path, n)
    if key not in _AVGDL:
        row = conn.execute(
            """SELECT avg(length(content) - length(replace(content, ' ', '')) + 1
                        + length(context) - length(replace(context, ' ', '')) + 1)
               FROM notes WHERE status = 'active'"""
        ).fetchone()
        _AVGDL.clear()
        _AVGDL[key] = float(row[0] or 1.0)
    return _AVGDL[key]


def keyword_notes(conn: Any, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
    """Notes sharing keywords with the query, rarer keywords weighing more (MemFly keyword pathway)."""
    if not terms:
        return []
    marks = ",".join("?" * len(terms))
    rows = conn.execute(
        f"""SELECT nk.note_id, sum(1.0 / (1.0 + ln(1.0 + k.df))) AS score
            FROM keywords k JOIN note_keywords nk ON nk.keyword_id = k.id JOIN notes n ON n.id = nk.note_id
            WHERE k.term IN ({marks}) AND n.status = 'active'
            GROUP BY nk.note_id ORDER BY score DESC, nk.note_id LIMIT ?""",
        [*terms, k],
    )
    return [(r[0], float(r[1])) for r in rows]


def nearest_topics(conn: Any, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
    rows = conn.execute(
        "SELECT topic_id, distance FROM topic_vec WHERE centroid MATCH ? AND k = ? ORDER BY distance", (blob(vector), k)
    )
    return [(r[0], 1.0 - float(r[1])) for r in rows]


def topic_notes(conn: Any, topic_ids: Sequence[int], limit: int) -> list[int]:
    """Active notes holding keywords of the given topics, most topic keywords first."""
    if not topic_ids:
        return []
    marks = ",".join("?" * len(topic_ids))
    rows = conn.execute(
        f"""SELECT nk.note_id, count(*) AS hits FROM keywords k JOIN note_keywords nk ON nk.keyword_id = k.id
            JOIN notes n ON n.id = nk.note_id
            WHERE k.topic_id IN ({marks}) AND n.status = 'active'
            GROUP BY nk.note_id ORDER BY hits DESC, nk.note_id LIMIT ?""",
        [*topic_ids, limit],
    )
    return [r[0] for r in rows]


def cluster_members(conn: Any, cluster_ids: Sequence[int]) -> list[int]:
    if not cluster_ids:
        return []
    marks = ",".join("?" * len(cluster_ids))
    return [r[0] for r in conn.execute(
        f"SELECT id FROM notes WHERE cluster_id IN ({marks}) AND status = 'active' ORDER BY id", list(cluster_ids))]

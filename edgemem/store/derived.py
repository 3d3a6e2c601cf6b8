"""Everything derived from raw_turns, wiped in one go so `edgemem rebuild` can recompute it.

Raw turns and sources are never touched. With a new embedder the vector tables are recreated at its
dimension and the store's recorded embedder is updated, in the same transaction.
"""

from __future__ import annotations

from typing import Any

_DERIVED = ("links", "note_keywords", "keywords", "profile_sources", "profile", "note_sources", "ops", "jobs")


def reset(conn: Any, *, embed_model: str | None = None, dim: int | None = None) -> None:
    conn.execute("DELETE FROM notes_fts")
    conn.execute("DELETE FROM note_vec")
    conn.execute("DELETE FROM note_sentences")
    conn.execute("DELETE FROM cluster_vec")
    conn.execute("DELETE FROM topic_vec")
    for table in _DERIVED:
        conn.execute(f"DELETE FROM {table}")
    conn.execute("UPDATE notes SET merged_into = NULL")
    conn.execute("DELETE FROM notes")
    conn.execute("DELETE FROM clusters")
    conn.execute("DELETE FROM topics")
    if embed_model is not None and dim is not None:
        for table, key, column in (("note_vec", "note_id", "embedding"), ("cluster_vec", "cluster_id", "centroid"),
                                   ("topic_vec", "topic_id", "centroid")):
            conn.execute(f"DROP TABLE {table}")
            conn.execute(f"CREATE VIRTUAL TABLE {table} USING vec0({key} INTEGER PRIMARY KEY, {column} float[{dim}] distance_metric=cosine)")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'embed_model'", (embed_model,))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'embed_dim'", (str(dim),))

"""Table-level reads and writes for export, import and restore checks (used by :mod:`edgemem.admin`).

The export holds every regular table that is not bookkeeping, in an order in which rows can be
inserted back; the virtual tables are rebuilt on import (FTS5 from the notes, vec0 from the exported
or recomputed vectors), so an export never depends on their internal layout.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import numpy as np

from edgemem.errors import BadInput
from edgemem.store.notes import blob

# Insertion order: a row's references come before it (notes.merged_into is deferred, see load_rows).
TABLES = (
    "sources", "raw_turns", "clusters", "topics", "notes", "note_sources", "keywords", "note_keywords",
    "links", "profile", "profile_sources", "ops", "traces", "stats", "jobs", "watches",
)
VECTOR_TABLES = {"note_vec": ("note_id", "embedding"), "cluster_vec": ("cluster_id", "centroid"), "topic_vec": ("topic_id", "centroid")}


@contextlib.contextmanager
def snapshot(conn: Any) -> Iterator[Any]:
    """One read transaction: every read inside sees the same state, and writers are not blocked (WAL)."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN DEFERRED")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


def columns(conn: Any, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def dump_rows(conn: Any, table: str) -> Iterator[dict]:
    where = " WHERE status != 'done'" if table == "jobs" else ""
    for row in conn.execute(f"SELECT * FROM {table}{where} ORDER BY 1, 2"):
        yield dict(row)


def dump_vectors(conn: Any, table: str) -> dict[int, list[float]]:
    key, col = VECTOR_TABLES[table]
    return {r[0]: np.frombuffer(r[1], dtype=np.float32).tolist() for r in conn.execute(f"SELECT {key}, {col} FROM {table} ORDER BY {key}")}


def is_empty(conn: Any) -> bool:
    """No rows in any exported table (counters aside): the only kind of store an import goes into."""
    return all(conn.execute(f"SELECT NOT EXISTS (SELECT 1 FROM {t})").fetchone()[0] for t in TABLES if t != "stats")


def load_rows(conn: Any, table: str, rows: list[dict]) -> int:
    """Insert exported rows keeping their ids; columns the store does not know are refused."""
    if not rows:
        return 0
    known = set(columns(conn, table))
    cols = sorted({c for row in rows for c in row})
    unknown = [c for c in cols if c not in known]
    if unknown:
        raise BadInput(f"export has a column {table}.{unknown[0]} this store does not know (made by a newer edgemem?)")
    # A note may point at a later note (merged_into): check foreign keys at commit, not per row.
    conn.execute("PRAGMA defer_foreign_keys = ON")
    sql = f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    if table == "stats":
        sql += " ON CONFLICT(name) DO UPDATE SET value = value + excluded.value"
    conn.executemany(sql, [tuple(_cell(row.get(c)) for c in cols) for row in rows])
    return len(rows)


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, (dict, list)) else value


def load_vectors(conn: Any, table: str, vectors: dict[int, Any]) -> int:
    key, col = VECTOR_TABLES[table]
    conn.executemany(f"INSERT INTO {table}({key}, {col}) VALUES (?, ?)", [(int(k), blob(v)) for k, v in vectors.items()])
    return len(vectors)


def rebuild_fts(conn: Any) -> int:
    """The sparse index from the active notes (the same text ``notes.insert`` indexes)."""
    conn.execute("DELETE FROM notes_fts")
    return conn.execute(
        """INSERT INTO notes_fts(rowid, content, context, keywords)
           SELECT id, content, context, coalesce((SELECT group_concat(value, ' ') FROM json_each(notes.keywords)), '')
           FROM notes WHERE status = 'active' ORDER BY id"""
    ).rowcount


def active_note_texts(conn: Any) -> list[tuple[int, str | None, str]]:
    return [(r[0], r[1], r[2]) for r in conn.execute("SELECT id, speaker, content FROM notes WHERE status = 'active' ORDER BY id")]


def members(conn: Any, table: str) -> dict[int, list[int]]:
    """Active note ids per cluster (``cluster_vec``) or per topic through keywords (``topic_vec``)."""
    if table == "cluster_vec":
        sql = "SELECT cluster_id, id FROM notes WHERE status = 'active' AND cluster_id IS NOT NULL"
    else:
        sql = """SELECT DISTINCT k.topic_id, nk.note_id FROM keywords k JOIN note_keywords nk ON nk.keyword_id = k.id
                 JOIN notes n ON n.id = nk.note_id WHERE k.topic_id IS NOT NULL AND n.status = 'active'"""
    out: dict[int, list[int]] = {}
    for group, note_id in conn.execute(sql):
        out.setdefault(group, []).append(note_id)
    return out


def meta(conn: Any) -> dict[str, str]:
    return {r[0]: r[1] for r in conn.execute("SELECT key, value FROM meta")}


def turns_by_source(conn: Any) -> Iterator[tuple[dict, list[dict]]]:
    for source in conn.execute("SELECT * FROM sources ORDER BY id").fetchall():
        turns = conn.execute("SELECT * FROM raw_turns WHERE source_id = ? ORDER BY seq", (source["id"],)).fetchall()
        yield dict(source), [dict(t) for t in turns]


def current_profile(conn: Any) -> list[dict]:
    return [dict(r) for r in conn.execute("SELECT key, value, kind, valid_from FROM profile WHERE valid_to IS NULL ORDER BY kind, key")]

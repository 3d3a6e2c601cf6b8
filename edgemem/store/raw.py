"""Sources and raw turns: the verbatim record everything else is derived from (Principle 1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from edgemem.store.db import now


@dataclass(frozen=True)
class Turn:
    id: int
    source_id: int
    seq: int
    speaker: str | None
    text: str
    event_time: str
    ingested_at: str
    ext_id: str | None


@dataclass(frozen=True)
class Source:
    id: int
    kind: str
    uri: str
    title: str | None
    content_hash: str | None
    mtime: float | None
    meta: dict


def _turn(row: Any) -> Turn:
    return Turn(**{k: row[k] for k in row.keys()})


def _source(row: Any) -> Source:
    d = {k: row[k] for k in row.keys() if k != "created_at"}
    d["meta"] = json.loads(d["meta"])
    return Source(**d)


def get_source(conn: Any, kind: str, uri: str) -> Source | None:
    row = conn.execute("SELECT * FROM sources WHERE kind = ? AND uri = ?", (kind, uri)).fetchone()
    return _source(row) if row else None


def source_by_id(conn: Any, source_id: int) -> Source | None:
    row = conn.execute("SELECT * FROM sources WHERE id = ?", (source_id,)).fetchone()
    return _source(row) if row else None


def ensure_source(conn: Any, kind: str, uri: str, *, title: str | None = None, meta: dict | None = None) -> int:
    found = get_source(conn, kind, uri)
    if found:
        return found.id
    cur = conn.execute(
        "INSERT INTO sources(kind, uri, title, created_at, meta) VALUES (?, ?, ?, ?, ?)",
        (kind, uri, title, now(), json.dumps(meta or {})),
    )
    return cur.lastrowid


def set_source_hash(conn: Any, source_id: int, content_hash: str, mtime: float | None) -> None:
    conn.execute("UPDATE sources SET content_hash = ?, mtime = ? WHERE id = ?", (content_hash, mtime, source_id))


def list_sources(conn: Any, kind: str | None = None) -> list[Source]:
    if kind:
        rows = conn.execute("SELECT * FROM sources WHERE kind = ? ORDER BY id", (kind,))
    else:
        rows = conn.execute("SELECT * FROM sources ORDER BY id")
    return [_source(r) for r in rows]


def delete_source(conn: Any, source_id: int) -> None:
    conn.execute("DELETE FROM sources WHERE id = ?", (source_id,))


def append_turn(conn: Any, source_id: int, text: str, event_time: str, *, speaker: str | None = None, ext_id: str | None = None) -> int:
    seq = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM raw_turns WHERE source_id = ?", (source_id,)).fetchone()[0]
    cur = conn.execute(
        "INSERT INTO raw_turns(source_id, seq, speaker, text, event_time, ingested_at, ext_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (source_id, seq, speaker, text, event_time, now(), ext_id),
    )
    return cur.lastrowid


def get_turn(conn: Any, turn_id: int) -> Turn | None:
    row = conn.execute("SELECT * FROM raw_turns WHERE id = ?", (turn_id,)).fetchone()
    return _turn(row) if row else None


def turns_of_source(conn: Any, source_id: int) -> list[Turn]:
    return [_turn(r) for r in conn.execute("SELECT * FROM raw_turns WHERE source_id = ? ORDER BY seq", (source_id,))]


def recent_turns(conn: Any, source_id: int, n: int) -> list[Turn]:
    rows = conn.execute("SELECT * FROM raw_turns WHERE source_id = ? ORDER BY seq DESC LIMIT ?", (source_id, n)).fetchall()
    return [_turn(r) for r in reversed(rows)]


def iter_turns(conn: Any) -> Iterator[Turn]:
    for row in conn.execute("SELECT * FROM raw_turns ORDER BY id"):
        yield _turn(row)


def count(conn: Any) -> int:
    return conn.execute("SELECT count(*) FROM raw_turns").fetchone()[0]

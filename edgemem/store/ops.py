"""The audit log of memory operations (merge, link, supersede, evolve, profile, forget) with before/after.

DESIGN Principle 1: a merge or an evolution never destroys raw text and records what it replaced.
``before`` and ``after`` are JSON; ``forget`` removes a note's ops rows with it (store.forget).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from edgemem.store.db import now


@dataclass(frozen=True)
class Op:
    id: int
    op: str
    note_id: int | None
    before: Any
    after: Any
    created_at: str


def _op(row: Any) -> Op:
    return Op(
        row["id"], row["op"], row["note_id"],
        json.loads(row["before"]) if row["before"] is not None else None,
        json.loads(row["after"]) if row["after"] is not None else None,
        row["created_at"],
    )


def record(conn: Any, op: str, note_id: int | None, before: Any = None, after: Any = None) -> int:
    cur = conn.execute(
        "INSERT INTO ops(op, note_id, before, after, created_at) VALUES (?, ?, ?, ?, ?)",
        (op, note_id, None if before is None else json.dumps(before), None if after is None else json.dumps(after), now()),
    )
    return cur.lastrowid


def of_note(conn: Any, note_id: int) -> list[Op]:
    return [_op(r) for r in conn.execute("SELECT * FROM ops WHERE note_id = ? ORDER BY id", (note_id,))]


def latest(conn: Any, op: str | None = None, limit: int = 50) -> list[Op]:
    if op is None:
        rows = conn.execute("SELECT * FROM ops ORDER BY id DESC LIMIT ?", (limit,))
    else:
        rows = conn.execute("SELECT * FROM ops WHERE op = ? ORDER BY id DESC LIMIT ?", (op, limit))
    return [_op(r) for r in rows]


def count(conn: Any, op: str | None = None) -> int:
    if op is None:
        return conn.execute("SELECT count(*) FROM ops").fetchone()[0]
    return conn.execute("SELECT count(*) FROM ops WHERE op = ?", (op,)).fetchone()[0]

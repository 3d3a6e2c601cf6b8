"""One trace row per answered query (Principle 8), read back by `edgemem why`."""

from __future__ import annotations

import json
from typing import Any

from edgemem.store.db import now


def insert(conn: Any, trace_id: str, question: str, answer: str, *, route_tag: str | None, route_layer: str | None, tier: int | None, data: dict) -> None:
    conn.execute(
        "INSERT INTO traces(id, created_at, question, answer, route_tag, route_layer, tier, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (trace_id, now(), question, answer, route_tag, route_layer, tier, json.dumps(data)),
    )


def get(conn: Any, trace_id: str) -> dict | None:
    row = conn.execute("SELECT * FROM traces WHERE id = ?", (trace_id,)).fetchone()
    if row is None:
        return None
    out = dict(row)
    out["data"] = json.loads(out["data"])
    return out


def latest(conn: Any, n: int = 10) -> list[dict]:
    rows = conn.execute("SELECT id, created_at, route_tag, route_layer, tier FROM traces ORDER BY created_at DESC, rowid DESC LIMIT ?", (n,))
    return [dict(r) for r in rows]

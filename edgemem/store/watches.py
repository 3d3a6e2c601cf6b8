"""Watched folders (migration 0002_watches) and the file sources that live under them."""

from __future__ import annotations

import os
from typing import Any

from edgemem.store.db import now
from edgemem.store.raw import Source, _source


def add(conn: Any, path: str) -> str:
    """Record ``path`` as watched (idempotent); returns when it was first added."""
    conn.execute("INSERT OR IGNORE INTO watches(path, added_at) VALUES (?, ?)", (path, now()))
    return conn.execute("SELECT added_at FROM watches WHERE path = ?", (path,)).fetchone()[0]


def remove(conn: Any, path: str) -> bool:
    return conn.execute("DELETE FROM watches WHERE path = ?", (path,)).rowcount > 0


def all_watches(conn: Any) -> list[dict]:
    return [dict(r) for r in conn.execute("SELECT path, added_at FROM watches ORDER BY path")]


def file_sources_under(conn: Any, path: str) -> list[Source]:
    """File sources whose uri is ``path`` itself or lies below it (a range scan on the uri)."""
    prefix = path.rstrip(os.sep) + os.sep
    # Every string starting with ``prefix`` sorts in [prefix, prefix with its last char bumped).
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    rows = conn.execute(
        "SELECT * FROM sources WHERE kind = 'file' AND (uri = ? OR (uri >= ? AND uri < ?)) ORDER BY uri",
        (path, prefix, upper),
    )
    return [_source(r) for r in rows]

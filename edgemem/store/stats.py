"""Counters shown by `edgemem status`: model calls and fallbacks per step (Principle 2)."""

from __future__ import annotations

from typing import Any


def incr(conn: Any, name: str, n: int = 1) -> None:
    conn.execute("INSERT INTO stats(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value", (name, n))


def all_stats(conn: Any) -> dict[str, int]:
    return {row[0]: row[1] for row in conn.execute("SELECT name, value FROM stats ORDER BY name")}

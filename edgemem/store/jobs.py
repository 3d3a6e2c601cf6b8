"""The durable job queue: work survives a crash and a failing job is parked, never lost."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from edgemem.store.db import now

MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    payload: dict
    priority: int
    attempts: int


def enqueue(conn: Any, kind: str, payload: dict, priority: int = 10) -> int:
    ts = now()
    cur = conn.execute(
        "INSERT INTO jobs(kind, payload, priority, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        (kind, json.dumps(payload), priority, ts, ts),
    )
    return cur.lastrowid


def claim(conn: Any) -> Job | None:
    """Mark the next pending job running (the caller commits). Lower priority number runs first."""
    row = conn.execute(
        "SELECT id, kind, payload, priority, attempts FROM jobs WHERE status = 'pending' ORDER BY priority, id LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    conn.execute("UPDATE jobs SET status = 'running', attempts = attempts + 1, updated_at = ? WHERE id = ?", (now(), row["id"]))
    return Job(row["id"], row["kind"], json.loads(row["payload"]), row["priority"], row["attempts"] + 1)


def complete(conn: Any, job_id: int) -> None:
    conn.execute("UPDATE jobs SET status = 'done', last_error = NULL, updated_at = ? WHERE id = ?", (now(), job_id))


def fail(conn: Any, job_id: int, error: str) -> str:
    """Record a failure; the job goes back to pending, or is parked after MAX_ATTEMPTS. Returns the status."""
    attempts = conn.execute("SELECT attempts FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
    status = "parked" if attempts >= MAX_ATTEMPTS else "pending"
    conn.execute("UPDATE jobs SET status = ?, last_error = ?, updated_at = ? WHERE id = ?", (status, error[:2000], now(), job_id))
    return status


def release(conn: Any, job_id: int) -> None:
    """A job interrupted by a shutdown goes back to pending; the interruption is not an attempt."""
    conn.execute("UPDATE jobs SET status = 'pending', attempts = max(attempts - 1, 0), updated_at = ? WHERE id = ?",
                 (now(), job_id))


def requeue_running(conn: Any) -> int:
    """After a crash: jobs left 'running' had their writes rolled back with them; run them again."""
    return conn.execute("UPDATE jobs SET status = 'pending', updated_at = ? WHERE status = 'running'", (now(),)).rowcount


def counts(conn: Any) -> dict[str, int]:
    return {row[0]: row[1] for row in conn.execute("SELECT status, count(*) FROM jobs GROUP BY status")}


def parked(conn: Any) -> list[dict]:
    rows = conn.execute("SELECT id, kind, attempts, last_error, updated_at FROM jobs WHERE status = 'parked' ORDER BY id")
    return [dict(r) for r in rows]

"""CLAG clusters (§3.2): profile rows in ``clusters``, centroids in the vec0 table ``cluster_vec``.

A centroid is stored L2-normalised, so a dot product with a note embedding is the cosine similarity.
``size`` counts the cluster's active notes; ``changes`` counts assignments and moves since the last
profile, ``profiled_size`` is the size the profile was written for (the debounce of the profile job).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgemem.store import jobs
from edgemem.store.db import now
from edgemem.store.notes import blob


@dataclass
class Cluster:
    id: int
    summary: str
    tags: list[str]
    size: int
    profiled_size: int
    changes: int
    created_at: str
    updated_at: str


def _cluster(row: Any) -> Cluster:
    d = {k: row[k] for k in row.keys()}
    d["tags"] = json.loads(d["tags"])
    return Cluster(**d)


def unit(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def create(conn: Any, centroid: Sequence[float] | np.ndarray, *, size: int = 0, changes: int = 0) -> int:
    ts = now()
    cur = conn.execute(
        "INSERT INTO clusters(size, changes, created_at, updated_at) VALUES (?, ?, ?, ?)", (size, changes, ts, ts)
    )
    cluster_id = cur.lastrowid
    conn.execute("INSERT INTO cluster_vec(cluster_id, centroid) VALUES (?, ?)", (cluster_id, blob(unit(centroid))))
    return cluster_id


def get(conn: Any, cluster_id: int) -> Cluster | None:
    row = conn.execute("SELECT * FROM clusters WHERE id = ?", (cluster_id,)).fetchone()
    return _cluster(row) if row else None


def get_many(conn: Any, ids: Sequence[int]) -> list[Cluster]:
    """Clusters in the order of ``ids`` (missing ids skipped)."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    found = {r["id"]: _cluster(r) for r in conn.execute(f"SELECT * FROM clusters WHERE id IN ({marks})", list(ids))}
    return [found[i] for i in ids if i in found]


def all_clusters(conn: Any) -> list[Cluster]:
    return [_cluster(r) for r in conn.execute("SELECT * FROM clusters ORDER BY id")]


def count(conn: Any) -> int:
    return conn.execute("SELECT count(*) FROM clusters").fetchone()[0]


def delete(conn: Any, cluster_id: int) -> None:
    conn.execute("DELETE FROM cluster_vec WHERE cluster_id = ?", (cluster_id,))
    conn.execute("UPDATE notes SET cluster_id = NULL WHERE cluster_id = ?", (cluster_id,))
    conn.execute("DELETE FROM clusters WHERE id = ?", (cluster_id,))


# -- centroids ------------------------------------------------------------------------------------
def centroid(conn: Any, cluster_id: int) -> np.ndarray | None:
    row = conn.execute("SELECT centroid FROM cluster_vec WHERE cluster_id = ?", (cluster_id,)).fetchone()
    return np.frombuffer(row[0], dtype=np.float32).copy() if row else None


def centroids(conn: Any) -> dict[int, np.ndarray]:
    rows = conn.execute("SELECT cluster_id, centroid FROM cluster_vec")
    return {r[0]: np.frombuffer(r[1], dtype=np.float32).copy() for r in rows}


def set_centroid(conn: Any, cluster_id: int, vector: Sequence[float] | np.ndarray) -> None:
    conn.execute("DELETE FROM cluster_vec WHERE cluster_id = ?", (cluster_id,))
    conn.execute("INSERT INTO cluster_vec(cluster_id, centroid) VALUES (?, ?)", (cluster_id, blob(unit(vector))))


def nearest(conn: Any, vector: Sequence[float] | np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` clusters whose centroids are closest to ``vector``: (cluster id, cosine), best first."""
    if k <= 0:
        return []
    rows = conn.execute(
        "SELECT cluster_id, distance FROM cluster_vec WHERE centroid MATCH ? AND k = ? ORDER BY distance",
        (blob(vector), k),
    )
    found = [(r[0], 1.0 - float(r[1])) for r in rows]
    return sorted(found, key=lambda t: (-t[1], t[0]))  # ties broken by id: routing is deterministic


# -- membership -----------------------------------------------------------------------------------
def members(conn: Any, cluster_id: int) -> list[int]:
    """Active notes of a cluster, oldest first."""
    rows = conn.execute("SELECT id FROM notes WHERE cluster_id = ? AND status = 'active' ORDER BY id", (cluster_id,))
    return [r[0] for r in rows]


def unassigned(conn: Any) -> list[int]:
    """Active notes in no cluster: the cold-start buffer (CLAG Algorithm 1, N_processed < n)."""
    return [r[0] for r in conn.execute("SELECT id FROM notes WHERE cluster_id IS NULL AND status = 'active' ORDER BY id")]


def note_cluster(conn: Any, note_id: int) -> int | None:
    row = conn.execute("SELECT cluster_id FROM notes WHERE id = ?", (note_id,)).fetchone()
    return row[0] if row else None


def assign(conn: Any, note_ids: Sequence[int], cluster_id: int | None) -> None:
    conn.executemany("UPDATE notes SET cluster_id = ? WHERE id = ?", [(cluster_id, n) for n in note_ids])


def add_note(conn: Any, cluster_id: int, note_id: int, vector: Sequence[float] | np.ndarray) -> Cluster:
    """Put a note in a cluster and move the centroid: running mean of the members, renormalised."""
    cluster = get(conn, cluster_id)
    if cluster is None:
        raise KeyError(cluster_id)
    old = centroid(conn, cluster_id)
    v = unit(vector)
    # The stored centroid is the normalised mean; weighting it by the size keeps it a running mean of
    # directions. Drift from the exact mean is removed whenever the profile job recomputes it.
    new = v if old is None or cluster.size <= 0 else old * cluster.size + v
    set_centroid(conn, cluster_id, new)
    assign(conn, [note_id], cluster_id)
    conn.execute(
        "UPDATE clusters SET size = size + 1, changes = changes + 1, updated_at = ? WHERE id = ?", (now(), cluster_id)
    )
    cluster.size += 1
    cluster.changes += 1
    return cluster


def refresh(conn: Any, cluster_id: int, centroid_vector: Sequence[float] | np.ndarray | None = None) -> int:
    """Set size from the active members (and the centroid when given); returns the size."""
    size = conn.execute(
        "SELECT count(*) FROM notes WHERE cluster_id = ? AND status = 'active'", (cluster_id,)
    ).fetchone()[0]
    if centroid_vector is not None:
        set_centroid(conn, cluster_id, centroid_vector)
    conn.execute("UPDATE clusters SET size = ?, updated_at = ? WHERE id = ?", (size, now(), cluster_id))
    return size


def set_profile(conn: Any, cluster_id: int, summary: str, tags: list[str], profiled_size: int) -> None:
    conn.execute(
        "UPDATE clusters SET summary = ?, tags = ?, profiled_size = ?, changes = 0, updated_at = ? WHERE id = ?",
        (summary, json.dumps(tags), profiled_size, now(), cluster_id),
    )


# -- cluster jobs ---------------------------------------------------------------------------------
def job_pending(conn: Any, kind: str, cluster_id: int | None = None) -> bool:
    """Whether a ``kind`` job (for ``cluster_id``, when given) waits or runs: at most one at a time."""
    if cluster_id is None:
        row = conn.execute("SELECT 1 FROM jobs WHERE kind = ? AND status IN ('pending', 'running') LIMIT 1", (kind,))
    else:
        row = conn.execute(
            "SELECT 1 FROM jobs WHERE kind = ? AND status IN ('pending', 'running') "
            "AND json_extract(payload, '$.cluster_id') = ? LIMIT 1",
            (kind, cluster_id),
        )
    return row.fetchone() is not None


def enqueue_once(conn: Any, kind: str, payload: dict, priority: int) -> int | None:
    """Enqueue a job unless one of the same kind (and cluster) is already waiting; its id or None."""
    if job_pending(conn, kind, payload.get("cluster_id")):
        return None
    return jobs.enqueue(conn, kind, payload, priority)

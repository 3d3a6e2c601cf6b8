"""Note → note links: SUPPORTS / CONFLICTS / RELATED (MemFly §3.3 gated update) and SUPERSEDES.

A SUPERSEDES link points from the newer note (``src``) to the older one (``dst``) it replaces; both
notes stay. :func:`current` resolves any note to the note that is current for it, which is what the
read path needs for conflict resolution (MemFlow conflict-resolution, "most recent value").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from edgemem.store.db import now

KINDS = ("SUPPORTS", "CONFLICTS", "RELATED", "SUPERSEDES")


@dataclass(frozen=True)
class Link:
    id: int
    src: int
    dst: int
    kind: str
    strength: float
    made_by: str
    created_at: str


def _link(row: Any) -> Link:
    return Link(**{k: row[k] for k in row.keys()})


def add(conn: Any, src: int, dst: int, kind: str, *, strength: float = 1.0, made_by: str) -> int | None:
    """Add a link (or raise the strength of the same one); None for a self-link, which is never kept."""
    if kind not in KINDS:
        raise ValueError(f"unknown link kind {kind!r}")
    if src == dst:
        return None
    conn.execute(
        """INSERT INTO links(src, dst, kind, strength, made_by, created_at) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT(src, dst, kind) DO UPDATE SET strength = max(strength, excluded.strength)""",
        (src, dst, kind, float(strength), made_by, now()),
    )
    return conn.execute("SELECT id FROM links WHERE src = ? AND dst = ? AND kind = ?", (src, dst, kind)).fetchone()[0]


def of_note(conn: Any, note_id: int, kinds: Iterable[str] | None = None) -> list[Link]:
    """Every link touching ``note_id`` (either end), optionally of the given kinds; oldest first."""
    rows = conn.execute("SELECT * FROM links WHERE src = ? OR dst = ? ORDER BY id", (note_id, note_id))
    wanted = set(kinds) if kinds is not None else None
    return [link for link in map(_link, rows) if wanted is None or link.kind in wanted]


def neighbours(conn: Any, note_ids: Sequence[int], kinds: Iterable[str] | None = None, *, active_only: bool = True) -> dict[int, list[tuple[int, str, float]]]:
    """For each note, the notes linked to it (either direction): (other id, kind, strength), strongest first.

    The topological pathway of MemFly §3.4 expands retrieved anchors along these edges.
    """
    out: dict[int, list[tuple[int, str, float]]] = {n: [] for n in note_ids}
    if not note_ids:
        return out
    kinds = list(kinds) if kinds is not None else list(KINDS)
    kmarks = ",".join("?" * len(kinds))
    status = "AND o.status = 'active'" if active_only else ""
    for start in range(0, len(note_ids), 400):
        chunk = list(note_ids[start:start + 400])
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"""SELECT l.src AS anchor, l.dst AS other, l.kind, l.strength FROM links l JOIN notes o ON o.id = l.dst
                WHERE l.src IN ({marks}) AND l.kind IN ({kmarks}) {status}
                UNION ALL
                SELECT l.dst AS anchor, l.src AS other, l.kind, l.strength FROM links l JOIN notes o ON o.id = l.src
                WHERE l.dst IN ({marks}) AND l.kind IN ({kmarks}) {status}""",
            [*chunk, *kinds, *chunk, *kinds],
        )
        for row in rows:
            out[row["anchor"]].append((row["other"], row["kind"], row["strength"]))
    for found in out.values():
        found.sort(key=lambda t: (-t[2], t[0]))
    return out


def superseded_by(conn: Any, note_id: int) -> list[int]:
    """Notes that directly supersede ``note_id``, newest event time first."""
    rows = conn.execute(
        """SELECT l.src FROM links l JOIN notes n ON n.id = l.src
           WHERE l.dst = ? AND l.kind = 'SUPERSEDES' ORDER BY n.event_time DESC, l.src DESC""",
        (note_id,),
    )
    return [r[0] for r in rows]


def supersedes(conn: Any, note_id: int) -> list[int]:
    """Notes that ``note_id`` directly supersedes."""
    return [r[0] for r in conn.execute("SELECT dst FROM links WHERE src = ? AND kind = 'SUPERSEDES' ORDER BY dst", (note_id,))]


def current(conn: Any, note_ids: Sequence[int]) -> dict[int, int | None]:
    """For each note: None when nothing supersedes it, else the note that finally supersedes it.

    Follows SUPERSEDES chains (A <- B <- C gives A -> C), taking the newest superseder at each step. A
    superseder that was later merged resolves to the note it was merged into, so the answer is always
    a note the read path can show; a note's own merge is not a supersession and is not followed.
    Cycles (only possible through hand edits) stop at the first repeat.
    """
    out: dict[int, int | None] = {}
    for note_id in note_ids:
        seen = {note_id}
        at = note_id
        while True:
            nxt = [n for n in superseded_by(conn, at) if n not in seen]
            if not nxt:
                break
            at = _survivor(conn, nxt[0], seen)
            seen.add(at)
        out[note_id] = None if at == note_id else at
    return out


def _survivor(conn: Any, note_id: int, seen: set[int]) -> int:
    while True:
        row = conn.execute("SELECT merged_into FROM notes WHERE id = ? AND status = 'merged'", (note_id,)).fetchone()
        if row is None or row[0] is None or row[0] in seen:
            return note_id
        seen.add(note_id)
        note_id = row[0]


def count(conn: Any, kind: str | None = None) -> int:
    if kind is None:
        return conn.execute("SELECT count(*) FROM links").fetchone()[0]
    return conn.execute("SELECT count(*) FROM links WHERE kind = ?", (kind,)).fetchone()[0]

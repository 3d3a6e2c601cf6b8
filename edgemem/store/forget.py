"""Hard deletion across every table that can hold a note's text (secure_delete is on).

Virtual tables (FTS5, vec0) do not take part in foreign-key cascades, so their rows go first; links,
keyword memberships and profile sources cascade from ``notes``; ops rows that recorded the text are
removed too. Callers checkpoint the WAL afterwards so the old pages leave the -wal file as well.
"""

from __future__ import annotations

from typing import Any

from edgemem.store import notes


def notes_of_raw(conn: Any, raw_ids: list[int]) -> list[int]:
    found: set[int] = set()
    for start in range(0, len(raw_ids), 500):
        chunk = raw_ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        found.update(r[0] for r in conn.execute(f"SELECT note_id FROM note_sources WHERE raw_id IN ({marks})", chunk))
        found.update(r[0] for r in conn.execute(f"SELECT id FROM notes WHERE raw_id IN ({marks})", chunk))
    return sorted(found)


def forget_notes(conn: Any, note_ids: list[int]) -> dict[str, int]:
    """Delete notes, the raw turns they stand on, their ops, and profile rows left without a source."""
    note_ids = sorted(set(note_ids))
    if not note_ids:
        return {"notes": 0, "raw_turns": 0, "profile": 0}
    marks = ",".join("?" * len(note_ids))
    raw_ids = [r[0] for r in conn.execute(f"SELECT DISTINCT raw_id FROM note_sources WHERE note_id IN ({marks})", note_ids)]
    # A merged note's text lives on in its survivor: forgetting either forgets both.
    survivors = [r[0] for r in conn.execute(f"SELECT merged_into FROM notes WHERE id IN ({marks}) AND merged_into IS NOT NULL", note_ids)]
    absorbed = [r[0] for r in conn.execute(f"SELECT id FROM notes WHERE merged_into IN ({marks})", note_ids)]
    extra = sorted(set(survivors + absorbed) - set(note_ids))
    if extra:
        return forget_notes(conn, note_ids + extra)
    profile_ids = [r[0] for r in conn.execute(f"SELECT DISTINCT profile_id FROM profile_sources WHERE note_id IN ({marks})", note_ids)]
    clusters = [r[0] for r in conn.execute(f"SELECT DISTINCT cluster_id FROM notes WHERE id IN ({marks}) AND cluster_id IS NOT NULL", note_ids)]
    for note_id in note_ids:
        notes.delete(conn, note_id)
    conn.execute(f"DELETE FROM ops WHERE note_id IN ({marks})", note_ids)
    removed_raw = 0
    if raw_ids:
        rmarks = ",".join("?" * len(raw_ids))
        # Other notes built on the same raw turns are derived from forgotten text: they go too.
        others = [r[0] for r in conn.execute(f"SELECT DISTINCT note_id FROM note_sources WHERE raw_id IN ({rmarks})", raw_ids)]
        for note_id in others:
            notes.delete(conn, note_id)
        removed_raw = conn.execute(f"DELETE FROM raw_turns WHERE id IN ({rmarks})", raw_ids).rowcount
    removed_profile = 0
    for pid in profile_ids:
        left = conn.execute("SELECT count(*) FROM profile_sources WHERE profile_id = ?", (pid,)).fetchone()[0]
        if left == 0:
            removed_profile += conn.execute("DELETE FROM profile WHERE id = ?", (pid,)).rowcount
    for cid in clusters:
        conn.execute(
            "UPDATE clusters SET size = (SELECT count(*) FROM notes WHERE cluster_id = ? AND status = 'active'), changes = changes + 1 WHERE id = ?",
            (cid, cid),
        )
    conn.execute("DELETE FROM sources WHERE id NOT IN (SELECT DISTINCT source_id FROM raw_turns) AND kind != 'file'")
    return {"notes": len(note_ids), "raw_turns": removed_raw, "profile": removed_profile, "clusters": clusters}


def forget_source(conn: Any, source_id: int, *, keep_source: bool = False) -> dict[str, int]:
    raw_ids = [r[0] for r in conn.execute("SELECT id FROM raw_turns WHERE source_id = ?", (source_id,))]
    counts = forget_notes(conn, notes_of_raw(conn, raw_ids))
    counts["raw_turns"] = counts.get("raw_turns", 0) + conn.execute("DELETE FROM raw_turns WHERE source_id = ?", (source_id,)).rowcount
    conn.execute("DELETE FROM jobs WHERE status IN ('pending', 'parked') AND kind = 'note' AND json_extract(payload, '$.raw_id') IN (SELECT value FROM json_each(?))", (str(raw_ids),))
    if not keep_source:
        conn.execute("DELETE FROM sources WHERE id = ?", (source_id,))
    return counts

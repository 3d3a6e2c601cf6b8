"""Hard deletion across every table that can hold a note's text (secure_delete is on).

Virtual tables (FTS5, vec0) do not take part in foreign-key cascades, so their rows go first; links,
keyword memberships and profile sources cascade from ``notes``; ops rows that recorded the text are
removed too, as are keywords no other note uses, traces whose answer drew on a forgotten note, and
the summaries of the clusters it belonged to (each is queued for a new profile, CLAG §3.2). Callers
run :func:`purge` afterwards so the old pages leave the FTS segments and the -wal file as well.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from edgemem.store import clusters, jobs, notes, ops
from edgemem.store.db import now

CLUSTER_PROFILE_JOB = "cluster_profile"
CLUSTER_PROFILE_PRIORITY = 20


def notes_of_raw(conn: Any, raw_ids: list[int]) -> list[int]:
    found: set[int] = set()
    for start in range(0, len(raw_ids), 500):
        chunk = raw_ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        found.update(r[0] for r in conn.execute(f"SELECT note_id FROM note_sources WHERE raw_id IN ({marks})", chunk))
        found.update(r[0] for r in conn.execute(f"SELECT id FROM notes WHERE raw_id IN ({marks})", chunk))
    return sorted(found)


def closure(conn: Any, note_ids: list[int], raw_ids: list[int] = ()) -> tuple[list[int], list[int]]:
    """Everything a forget of these notes and raw turns reaches: merge partners (a survivor holds the
    absorbed note's text), the raw turns under them, and every other note built on those turns.
    What a preview shows is exactly what :func:`forget_notes` then removes."""
    notes_seen, raws_seen = set(note_ids), set(raw_ids)
    notes_seen.update(notes_of_raw(conn, sorted(raws_seen)))
    frontier = set(notes_seen)
    while frontier:
        chunk = sorted(frontier)
        marks = ",".join("?" * len(chunk))
        linked = {r[0] for r in conn.execute(f"SELECT merged_into FROM notes WHERE id IN ({marks}) AND merged_into IS NOT NULL", chunk)}
        linked |= {r[0] for r in conn.execute(f"SELECT id FROM notes WHERE merged_into IN ({marks})", chunk)}
        raws = {r[0] for r in conn.execute(f"SELECT raw_id FROM note_sources WHERE note_id IN ({marks})", chunk)} - raws_seen
        raws_seen |= raws
        linked |= set(notes_of_raw(conn, sorted(raws)))
        frontier = linked - notes_seen
        notes_seen |= frontier
    return sorted(notes_seen), sorted(raws_seen)


def forget_notes(conn: Any, note_ids: list[int]) -> dict[str, Any]:
    """Delete notes, the raw turns they stand on (and other notes built on those), their ops, keywords
    and traces, profile rows left without a source; mark their clusters (module docstring)."""
    return _forget_notes(conn, note_ids, None)


def _forget_notes(conn: Any, note_ids: list[int], keep_source: int | None) -> dict[str, Any]:
    note_ids = sorted(set(note_ids))
    if note_ids:  # only notes that exist are counted
        note_ids = [r[0] for r in conn.execute(f"SELECT id FROM notes WHERE id IN ({','.join('?' * len(note_ids))}) ORDER BY id", note_ids)]
    if not note_ids:
        return {"notes": 0, "raw_turns": 0, "profile": 0, "clusters": []}
    marks = ",".join("?" * len(note_ids))
    raw_ids = [r[0] for r in conn.execute(f"SELECT DISTINCT raw_id FROM note_sources WHERE note_id IN ({marks})", note_ids)]
    # A merged note's text lives on in its survivor: forgetting either forgets both.
    survivors = [r[0] for r in conn.execute(f"SELECT merged_into FROM notes WHERE id IN ({marks}) AND merged_into IS NOT NULL", note_ids)]
    absorbed = [r[0] for r in conn.execute(f"SELECT id FROM notes WHERE merged_into IN ({marks})", note_ids)]
    extra = sorted(set(survivors + absorbed) - set(note_ids))
    if extra:
        return _forget_notes(conn, note_ids + extra, keep_source)
    removed_ids = list(note_ids)
    if raw_ids:
        rmarks = ",".join("?" * len(raw_ids))
        # Other notes built on the same raw turns are derived from forgotten text: they go too.
        removed_ids += [r[0] for r in conn.execute(f"SELECT DISTINCT note_id FROM note_sources WHERE raw_id IN ({rmarks})", raw_ids)]
        removed_ids = sorted(set(removed_ids))
    amarks = ",".join("?" * len(removed_ids))
    profile_ids = [r[0] for r in conn.execute(f"SELECT DISTINCT profile_id FROM profile_sources WHERE note_id IN ({amarks})", removed_ids)]
    cluster_ids = [r[0] for r in conn.execute(f"SELECT DISTINCT cluster_id FROM notes WHERE id IN ({amarks}) AND cluster_id IS NOT NULL", removed_ids)]
    keyword_ids = [r[0] for r in conn.execute(f"SELECT DISTINCT keyword_id FROM note_keywords WHERE note_id IN ({amarks})", removed_ids)]
    for note_id in removed_ids:
        notes.delete(conn, note_id)
    conn.execute(f"DELETE FROM ops WHERE note_id IN ({amarks})", removed_ids)
    _forget_traces(conn, removed_ids)
    _forget_keywords(conn, keyword_ids)
    removed_raw = 0
    if raw_ids:
        removed_raw = conn.execute(f"DELETE FROM raw_turns WHERE id IN ({rmarks})", raw_ids).rowcount
    removed_profile = 0
    for pid in profile_ids:
        left = conn.execute("SELECT count(*) FROM profile_sources WHERE profile_id = ?", (pid,)).fetchone()[0]
        if left == 0:
            removed_profile += conn.execute("DELETE FROM profile WHERE id = ?", (pid,)).rowcount
    _forget_in_clusters(conn, cluster_ids)
    _drop_empty_sources(conn, keep_source)
    return {"notes": len(removed_ids), "raw_turns": removed_raw, "profile": removed_profile, "clusters": cluster_ids}


def _forget_in_clusters(conn: Any, cluster_ids: list[int]) -> None:
    """An emptied cluster goes (its centroid is the forgotten notes' mean); any other loses its
    summary and tags, which were written from the forgotten text, and is queued for a new profile."""
    for cid in cluster_ids:
        size = conn.execute("SELECT count(*) FROM notes WHERE cluster_id = ? AND status = 'active'", (cid,)).fetchone()[0]
        if size == 0:
            clusters.delete(conn, cid)
            continue
        conn.execute(
            "UPDATE clusters SET size = ?, summary = '', tags = '[]', profiled_size = 0, changes = changes + 1, updated_at = ? WHERE id = ?",
            (size, now(), cid),
        )
        # Not clusters.enqueue_once: a profile job already *running* read the forgotten notes, so
        # a new one is queued behind it; only one still waiting is enough.
        queued = conn.execute(
            "SELECT 1 FROM jobs WHERE kind = ? AND status = 'pending' AND json_extract(payload, '$.cluster_id') = ?",
            (CLUSTER_PROFILE_JOB, cid),
        ).fetchone()
        if not queued:
            jobs.enqueue(conn, CLUSTER_PROFILE_JOB, {"cluster_id": cid}, priority=CLUSTER_PROFILE_PRIORITY)


def _forget_keywords(conn: Any, keyword_ids: list[int]) -> None:
    """Keywords only forgotten notes used are deleted (a term can be the secret itself); the
    topics they labelled lose their label until the next topic rebuild (MemFly topic evolution)."""
    for start in range(0, len(keyword_ids), 500):
        chunk = keyword_ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        orphan = f"id IN ({marks}) AND NOT EXISTS (SELECT 1 FROM note_keywords k WHERE k.keyword_id = keywords.id)"
        conn.execute(f"UPDATE topics SET label = '' WHERE id IN (SELECT topic_id FROM keywords WHERE {orphan})", chunk)
        conn.execute(f"DELETE FROM keywords WHERE {orphan}", chunk)
        conn.execute(
            f"UPDATE keywords SET df = (SELECT count(*) FROM note_keywords k WHERE k.keyword_id = keywords.id) WHERE id IN ({marks})",
            chunk,
        )


def _forget_traces(conn: Any, note_ids: list[int]) -> None:
    """A trace whose answer drew on a forgotten note repeats its text: it goes. Traces list the notes
    they used as integers under a key naming them ("retrieved", "notes", "note_ids", ...)."""
    for start in range(0, len(note_ids), 500):
        chunk = note_ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        conn.execute(
            f"""DELETE FROM traces WHERE id IN (
                    SELECT t.id FROM traces t, json_tree(t.data) j
                    WHERE j.type = 'integer' AND j.atom IN ({marks})
                      AND (j.fullkey LIKE '%retriev%' OR j.fullkey LIKE '%note%'))""",
            chunk,
        )


def _drop_empty_sources(conn: Any, keep: int | None = None) -> None:
    """A conversation or note source with no turns left goes (its title can name what was forgotten);
    a file's source stays as the record of the file's hash, and so does ``keep``."""
    conn.execute(
        "DELETE FROM sources WHERE id NOT IN (SELECT DISTINCT source_id FROM raw_turns) AND kind != 'file' AND id IS NOT ?",
        (keep,),
    )


def forget_turns(conn: Any, raw_ids: list[int], *, keep_source: int | None = None) -> dict[str, Any]:
    """Delete raw turns, every note derived from them, and their note jobs not yet run."""
    counts = _forget_notes(conn, notes_of_raw(conn, raw_ids), keep_source)
    removed = 0
    for start in range(0, len(raw_ids), 500):
        chunk = raw_ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        removed += conn.execute(f"DELETE FROM raw_turns WHERE id IN ({marks})", chunk).rowcount
    conn.execute(
        "DELETE FROM jobs WHERE status IN ('pending', 'parked') AND kind = 'note' AND json_extract(payload, '$.raw_id') IN (SELECT value FROM json_each(?))",
        (json.dumps(raw_ids),),
    )
    _drop_empty_sources(conn, keep_source)
    counts["raw_turns"] = counts.get("raw_turns", 0) + removed
    return counts


def forget_source(conn: Any, source_id: int, *, keep_source: bool = False) -> dict[str, Any]:
    raw_ids = [r[0] for r in conn.execute("SELECT id FROM raw_turns WHERE source_id = ?", (source_id,))]
    counts = forget_turns(conn, raw_ids, keep_source=source_id if keep_source else None)
    if not keep_source:
        conn.execute("DELETE FROM sources WHERE id = ?", (source_id,))
    return counts


def sources_by_uri(conn: Any, uri: str) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM sources WHERE uri = ? ORDER BY id", (uri,))]


def record(conn: Any, counts: dict) -> None:
    """An audit row for a forget: what was removed, by id and count, never the text."""
    ops.record(conn, "forget", None, after=counts)


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def query_words(text: str) -> list[str]:
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text) if len(w) > 1 or w.isdigit()))


def match_query(conn: Any, text: str) -> tuple[list[int], list[int]]:
    """What a forget-by-query reaches: (active notes whose indexed text has every word of ``text``,
    raw turns whose text has every word). Every word, not any: a delete must be narrow."""
    words = query_words(text)
    if not words:
        return [], []
    fts = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
    note_ids = [r[0] for r in conn.execute("SELECT rowid FROM notes_fts WHERE notes_fts MATCH ? ORDER BY rowid", (fts,))]
    where = " AND ".join("instr(lower(text), ?) > 0" for _ in words)
    raw_ids = [r[0] for r in conn.execute(f"SELECT id FROM raw_turns WHERE {where} ORDER BY id", words)]
    return note_ids, raw_ids


def purge(conn: Any, *, attempts: int = 20, pause: float = 0.05) -> bool:
    """Leave no old page holding forgotten text: merge the FTS5 segments (dropping deleted entries),
    then checkpoint the WAL into the main file and truncate it. A reader on another thread (the
    daemon's worker) can hold the checkpoint back for a moment: retried, then False (the WAL is
    truncated at the next checkpoint that completes)."""
    conn.execute("INSERT INTO notes_fts(notes_fts) VALUES ('optimize')")
    for attempt in range(attempts):
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy == 0:
            return True
        if attempt + 1 < attempts:
            time.sleep(pause)
    return False

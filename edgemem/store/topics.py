"""MemFly's Note-Keyword-Topic hierarchy (§3.2, §3.3 topic evolution): keyword index and Leiden topics.

``keywords`` holds each term with its document frequency over active notes (df) and its topic;
``note_keywords`` the note → keyword memberships; ``topics`` / ``topic_vec`` the current partition
with one centroid per topic. Topics are replaced wholesale by each rebuild, so topic ids are not
stable across rebuilds. The read-path queries over these tables live in ``store.search``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgemem.store.db import now
from edgemem.store.notes import blob

_NEW_NOTES = "topics_new_notes"  # meta key: notes indexed since the last topic rebuild


@dataclass
class Topic:
    id: int
    label: str
    size: int
    created_at: str


# -- keyword index --------------------------------------------------------------------------------
def note_terms(conn: Any, note_id: int) -> list[str]:
    rows = conn.execute(
        "SELECT k.term FROM note_keywords nk JOIN keywords k ON k.id = nk.keyword_id WHERE nk.note_id = ? ORDER BY k.term",
        (note_id,),
    )
    return [r[0] for r in rows]


def sync_note(conn: Any, note_id: int, terms: Iterable[str]) -> None:
    """Make a note's memberships equal ``terms``, adjusting every touched keyword's df."""
    want = {t.lower() for t in terms if t and t.strip()}
    have = set(note_terms(conn, note_id))
    for term in sorted(have - want):
        kid = conn.execute("SELECT id FROM keywords WHERE term = ?", (term,)).fetchone()[0]
        conn.execute("DELETE FROM note_keywords WHERE note_id = ? AND keyword_id = ?", (note_id, kid))
        conn.execute("UPDATE keywords SET df = df - 1 WHERE id = ?", (kid,))
    for term in sorted(want - have):
        conn.execute("INSERT INTO keywords(term) VALUES (?) ON CONFLICT(term) DO NOTHING", (term,))
        kid = conn.execute("SELECT id FROM keywords WHERE term = ?", (term,)).fetchone()[0]
        conn.execute("INSERT OR IGNORE INTO note_keywords(note_id, keyword_id) VALUES (?, ?)", (note_id, kid))
        conn.execute("UPDATE keywords SET df = df + 1 WHERE id = ?", (kid,))


def reindex(conn: Any) -> None:
    """Rebuild memberships and df from the active notes' keywords; drop terms no active note has.

    Merged and forgotten notes lose their memberships here, and a term that only a forgotten note
    carried leaves the store with it.
    """
    conn.execute(
        """INSERT INTO keywords(term)
           SELECT DISTINCT lower(j.value) FROM notes n, json_each(n.keywords) j
           WHERE n.status = 'active' AND trim(j.value) != ''
           ON CONFLICT(term) DO NOTHING"""
    )
    conn.execute("DELETE FROM note_keywords")
    conn.execute(
        """INSERT OR IGNORE INTO note_keywords(note_id, keyword_id)
           SELECT n.id, k.id FROM notes n, json_each(n.keywords) j JOIN keywords k ON k.term = lower(j.value)
           WHERE n.status = 'active'"""
    )
    conn.execute("UPDATE keywords SET df = (SELECT count(*) FROM note_keywords nk WHERE nk.keyword_id = keywords.id)")
    conn.execute("DELETE FROM keywords WHERE df = 0")


def df(conn: Any, terms: Sequence[str] | None = None) -> dict[str, int]:
    if terms is None:
        return {r[0]: r[1] for r in conn.execute("SELECT term, df FROM keywords ORDER BY term")}
    if not terms:
        return {}
    marks = ",".join("?" * len(terms))
    rows = conn.execute(f"SELECT term, df FROM keywords WHERE term IN ({marks})", [t.lower() for t in terms])
    return {r[0]: r[1] for r in rows}


def active_keywords(conn: Any) -> list[tuple[int, list[str]]]:
    """(note id, keywords) of every active note, by id: the input of a topic rebuild."""
    rows = conn.execute("SELECT id, keywords FROM notes WHERE status = 'active' ORDER BY id")
    return [(r[0], [k.lower() for k in json.loads(r[1])]) for r in rows]


# -- counter of notes since the last rebuild --------------------------------------------------------
def bump_new_notes(conn: Any) -> int:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        (_NEW_NOTES,),
    )
    return int(conn.execute("SELECT value FROM meta WHERE key = ?", (_NEW_NOTES,)).fetchone()[0])


def reset_new_notes(conn: Any) -> None:
    conn.execute("INSERT INTO meta(key, value) VALUES (?, '0') ON CONFLICT(key) DO UPDATE SET value = '0'", (_NEW_NOTES,))


# -- topics ---------------------------------------------------------------------------------------
def replace(conn: Any, topics: Sequence[tuple[str, int, np.ndarray, Sequence[str]]]) -> list[int]:
    """Replace the partition: (label, size, centroid, member terms) per topic; returns the new ids."""
    conn.execute("UPDATE keywords SET topic_id = NULL WHERE topic_id IS NOT NULL")
    conn.execute("DELETE FROM topic_vec")
    conn.execute("DELETE FROM topics")
    ts = now()
    ids = []
    for label, size, centroid, terms in topics:
        tid = conn.execute("INSERT INTO topics(label, size, created_at) VALUES (?, ?, ?)", (label, size, ts)).lastrowid
        conn.execute("INSERT INTO topic_vec(topic_id, centroid) VALUES (?, ?)", (tid, blob(centroid)))
        conn.executemany("UPDATE keywords SET topic_id = ? WHERE term = ?", [(tid, t) for t in terms])
        ids.append(tid)
    return ids


def all_topics(conn: Any) -> list[Topic]:
    return [Topic(**{k: r[k] for k in r.keys()}) for r in conn.execute("SELECT * FROM topics ORDER BY id")]


def terms_of(conn: Any, topic_id: int) -> list[str]:
    rows = conn.execute("SELECT term FROM keywords WHERE topic_id = ? ORDER BY df DESC, term", (topic_id,))
    return [r[0] for r in rows]


def centroid(conn: Any, topic_id: int) -> np.ndarray | None:
    row = conn.execute("SELECT centroid FROM topic_vec WHERE topic_id = ?", (topic_id,)).fetchone()
    return np.frombuffer(row[0], dtype=np.float32).copy() if row else None

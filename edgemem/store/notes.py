"""Notes with their FTS5 (sparse) and vec0 (dense) rows kept in step.

Only *active* notes have rows in ``notes_fts``, ``note_vec`` and ``note_sentences``: a merged or
forgotten note leaves the indexes in the same transaction, so no search can return it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgemem.store.db import now


@dataclass
class Note:
    id: int
    raw_id: int | None
    content: str
    context: str
    keywords: list[str]
    entities: list[str]
    tags: list[str]
    dates: list[dict]
    speaker: str | None
    event_time: str
    cluster_id: int | None
    status: str
    merged_into: int | None
    version: int
    created_at: str
    updated_at: str
    source_turns: list[int] = field(default_factory=list)


_JSON_COLS = ("keywords", "entities", "tags", "dates")
_SELECT = """
SELECT n.*, (SELECT group_concat(raw_id) FROM note_sources s WHERE s.note_id = n.id) AS source_list
FROM notes n
"""


def _note(row: Any) -> Note:
    d = {k: row[k] for k in row.keys() if k != "source_list"}
    for col in _JSON_COLS:
        d[col] = json.loads(d[col])
    src = row["source_list"]
    d["source_turns"] = sorted(int(x) for x in src.split(",")) if src else []
    return Note(**d)


def blob(vector: Sequence[float] | np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _fts_row(conn: Any, note_id: int, content: str, context: str, keywords: list[str]) -> None:
    conn.execute("DELETE FROM notes_fts WHERE rowid = ?", (note_id,))
    conn.execute(
        "INSERT INTO notes_fts(rowid, content, context, keywords) VALUES (?, ?, ?, ?)",
        (note_id, content, context, " ".join(keywords)),
    )


def _vec_row(conn: Any, note_id: int, embedding: Sequence[float] | np.ndarray) -> None:
    conn.execute("DELETE FROM note_vec WHERE note_id = ?", (note_id,))
    conn.execute("INSERT INTO note_vec(note_id, embedding) VALUES (?, ?)", (note_id, blob(embedding)))


def _sentence_rows(conn: Any, note_id: int, sentences: np.ndarray | None) -> None:
    """Replace the note's sentence vectors (stored as float16: cosine within ~1e-3 of float32)."""
    conn.execute("DELETE FROM note_sentences WHERE note_id = ?", (note_id,))
    if sentences is not None and len(sentences):
        rows = np.asarray(sentences, dtype=np.float16)
        conn.executemany("INSERT INTO note_sentences(note_id, seq, embedding) VALUES (?, ?, ?)",
                         [(note_id, i, row.tobytes()) for i, row in enumerate(rows)])


def sentence_vectors(conn: Any, ids: Sequence[int]) -> dict[int, np.ndarray]:
    """The stored sentence vectors of each note that has them: note id -> (n, dim) float32."""
    out: dict[int, list[np.ndarray]] = {}
    ids = list(dict.fromkeys(ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for note_id, vec in conn.execute(
                f"SELECT note_id, embedding FROM note_sentences WHERE note_id IN ({marks}) ORDER BY note_id, seq", chunk):
            out.setdefault(note_id, []).append(np.frombuffer(vec, dtype=np.float16))
    return {k: np.asarray(v, dtype=np.float32) for k, v in out.items()}


def insert(
    conn: Any,
    *,
    raw_ids: Iterable[int],
    content: str,
    embedding: Sequence[float] | np.ndarray,
    sentences: np.ndarray | None = None,
    event_time: str,
    context: str = "",
    keywords: list[str] | None = None,
    entities: list[str] | None = None,
    tags: list[str] | None = None,
    dates: list[dict] | None = None,
    speaker: str | None = None,
    cluster_id: int | None = None,
) -> int:
    raw_ids = list(raw_ids)
    ts = now()
    keywords = keywords or []
    cur = conn.execute(
        """INSERT INTO notes(raw_id, content, context, keywords, entities, tags, dates, speaker, event_time,
                             cluster_id, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            raw_ids[0] if raw_ids else None, content, context, json.dumps(keywords), json.dumps(entities or []),
            json.dumps(tags or []), json.dumps(dates or []), speaker, event_time, cluster_id, ts, ts,
        ),
    )
    note_id = cur.lastrowid
    conn.executemany("INSERT OR IGNORE INTO note_sources(note_id, raw_id) VALUES (?, ?)", [(note_id, r) for r in raw_ids])
    _fts_row(conn, note_id, content, context, keywords)
    _vec_row(conn, note_id, embedding)
    _sentence_rows(conn, note_id, sentences)
    return note_id


def get(conn: Any, note_id: int) -> Note | None:
    row = conn.execute(_SELECT + " WHERE n.id = ?", (note_id,)).fetchone()
    return _note(row) if row else None


def get_many(conn: Any, ids: Sequence[int]) -> list[Note]:
    """Notes in the order of ``ids`` (missing ids skipped)."""
    if not ids:
        return []
    found: dict[int, Note] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start:start + 500])
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(_SELECT + f" WHERE n.id IN ({marks})", chunk):
            found[row["id"]] = _note(row)
    return [found[i] for i in ids if i in found]


def update(
    conn: Any,
    note_id: int,
    *,
    content: str | None = None,
    context: str | None = None,
    keywords: list[str] | None = None,
    tags: list[str] | None = None,
    dates: list[dict] | None = None,
    embedding: Sequence[float] | np.ndarray | None = None,
) -> Note:
    """Rewrite derived fields of an active note (merge, evolution); bumps its version. New content
    drops the note's sentence vectors (they described the old text): retrieval then scores it by its
    note vector."""
    note = get(conn, note_id)
    if note is None:
        raise KeyError(note_id)
    if content is not None and content != note.content:
        _sentence_rows(conn, note_id, None)
    note.content = content if content is not None else note.content
    note.context = context if context is not None else note.context
    note.keywords = keywords if keywords is not None else note.keywords
    note.tags = tags if tags is not None else note.tags
    note.dates = dates if dates is not None else note.dates
    conn.execute(
        "UPDATE notes SET content = ?, context = ?, keywords = ?, tags = ?, dates = ?, version = version + 1, updated_at = ? WHERE id = ?",
        (note.content, note.context, json.dumps(note.keywords), json.dumps(note.tags), json.dumps(note.dates), now(), note_id),
    )
    if note.status == "active":
        _fts_row(conn, note_id, note.content, note.context, note.keywords)
        if embedding is not None:
            _vec_row(conn, note_id, embedding)
    note.version += 1
    return note


def add_sources(conn: Any, note_id: int, raw_ids: Iterable[int]) -> None:
    conn.executemany("INSERT OR IGNORE INTO note_sources(note_id, raw_id) VALUES (?, ?)", [(note_id, r) for r in raw_ids])


def mark_merged(conn: Any, note_id: int, into: int) -> None:
    conn.execute("UPDATE notes SET status = 'merged', merged_into = ?, updated_at = ? WHERE id = ?", (into, now(), note_id))
    conn.execute("DELETE FROM notes_fts WHERE rowid = ?", (note_id,))
    conn.execute("DELETE FROM note_vec WHERE note_id = ?", (note_id,))
    _sentence_rows(conn, note_id, None)


def delete(conn: Any, note_id: int) -> None:
    """Hard delete (forget): index rows first, then the row; links and memberships cascade."""
    conn.execute("DELETE FROM notes_fts WHERE rowid = ?", (note_id,))
    conn.execute("DELETE FROM note_vec WHERE note_id = ?", (note_id,))
    conn.execute("UPDATE notes SET merged_into = NULL WHERE merged_into = ?", (note_id,))
    conn.execute("DELETE FROM notes WHERE id = ?", (note_id,))


def by_raw(conn: Any, raw_id: int) -> list[int]:
    return [r[0] for r in conn.execute("SELECT note_id FROM note_sources WHERE raw_id = ?", (raw_id,))]


def knn(conn: Any, vector: Sequence[float] | np.ndarray, k: int) -> list[tuple[int, float]]:
    """Active notes nearest to ``vector``: (note id, cosine similarity), best first."""
    if k <= 0:
        return []
    rows = conn.execute(
        "SELECT note_id, distance FROM note_vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (blob(vector), k),
    )
    return [(r[0], 1.0 - float(r[1])) for r in rows]


def vectors(conn: Any, ids: Sequence[int]) -> dict[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start:start + 500])
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(f"SELECT note_id, embedding FROM note_vec WHERE note_id IN ({marks})", chunk):
            out[row[0]] = np.frombuffer(row[1], dtype=np.float32)
    return out


def speakers(conn: Any, ids: Sequence[int]) -> dict[int, str]:
    """The speaker of each of ``ids`` that has one."""
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start:start + 500])
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(f"SELECT id, speaker FROM notes WHERE id IN ({marks}) AND speaker IS NOT NULL", chunk):
            out[row[0]] = row[1]
    return out


_SPOKEN = "status = 'active' AND speaker IS NOT NULL AND speaker != ''"  # the notes_speaker index's condition


def speaker_names(conn: Any) -> list[str]:
    """Every speaker of an active note (a conversation's participants; a notes-only store has none),
    in byte order. A skip scan: each step seeks the next name in the ``notes_speaker`` index, so the
    cost grows with the number of speakers, not of notes."""
    return [row[0] for row in conn.execute(f"""
        WITH RECURSIVE names(name) AS (
            SELECT (SELECT speaker FROM notes WHERE {_SPOKEN} ORDER BY speaker LIMIT 1)
            UNION ALL
            SELECT (SELECT speaker FROM notes WHERE {_SPOKEN} AND speaker > names.name ORDER BY speaker LIMIT 1)
            FROM names WHERE names.name IS NOT NULL
        )
        SELECT name FROM names WHERE name IS NOT NULL""")]


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def fts_query(text: str) -> str:
    """An FTS5 query matching any word of ``text``; every token quoted so no syntax leaks through."""
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text) if len(w) > 1 or w.isdigit())
    return " OR ".join(f'"{w}"' for w in words)


def fts(conn: Any, text: str, k: int) -> list[tuple[int, float]]:
    """Active notes matching any word of ``text`` ranked by FTS5 bm25: (note id, score), best first."""
    query = fts_query(text)
    if not query or k <= 0:
        return []
    rows = conn.execute(
        "SELECT rowid, bm25(notes_fts) AS score FROM notes_fts WHERE notes_fts MATCH ? ORDER BY score LIMIT ?",
        (query, k),
    )
    return [(r[0], -float(r[1])) for r in rows]


def count_active(conn: Any) -> int:
    return conn.execute("SELECT count(*) FROM notes WHERE status = 'active'").fetchone()[0]


def iter_active(conn: Any) -> Iterator[Note]:
    for row in conn.execute(_SELECT + " WHERE n.status = 'active' ORDER BY n.id"):
        yield _note(row)


def active_texts(conn: Any) -> Iterator[tuple[int, str]]:
    """(id, content) of each active note, oldest first: a scan that needs only the words."""
    yield from conn.execute("SELECT id, content FROM notes WHERE status = 'active' ORDER BY id")


def active_ids(conn: Any) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM notes WHERE status = 'active' ORDER BY id")]


def recent(conn: Any, limit: int) -> list[Note]:
    """The ``limit`` active notes with the latest event times, newest first."""
    rows = conn.execute("SELECT id FROM notes WHERE status = 'active' ORDER BY event_time DESC, id DESC LIMIT ?", (limit,))
    return get_many(conn, [r[0] for r in rows])


def provenance(conn: Any, ids: Sequence[int]) -> dict[int, tuple[str | None, list[str]]]:
    """For each note: the uri of its first source (the session) and the external ids of its turns."""
    out: dict[int, tuple[str | None, list[str]]] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start:start + 500])
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"""SELECT ns.note_id, s.uri, r.ext_id FROM note_sources ns
                JOIN raw_turns r ON r.id = ns.raw_id JOIN sources s ON s.id = r.source_id
                WHERE ns.note_id IN ({marks}) ORDER BY ns.note_id, r.id""",
            chunk,
        )
        for row in rows:
            uri, ext = out.get(row[0], (row[1], []))
            if row[2]:
                ext.append(row[2])
            out[row[0]] = (uri, ext)
    return out

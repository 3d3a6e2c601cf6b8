"""Named, transactional migrations creating the data model of DESIGN.md "Data model".

Each migration is a name and a function returning SQL for a store of embedding dimension ``dim``.
A migration runs inside one transaction together with the row that records it in ``migrations``, so
a crash leaves the store either before or after it. Never edit a migration that has shipped: add one.
"""

from __future__ import annotations

from collections.abc import Callable


def _initial(dim: int) -> str:
    return f"""
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Where raw text came from: a conversation session, a remembered note, a file, an import.
CREATE TABLE sources (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('conversation', 'note', 'file', 'import')),
    uri          TEXT NOT NULL,
    title        TEXT,
    content_hash TEXT,
    mtime        REAL,
    created_at   TEXT NOT NULL,
    meta         TEXT NOT NULL DEFAULT '{{}}',
    UNIQUE (kind, uri)
);

-- Verbatim text with its event time (Principle 1: raw is sacred; never updated).
CREATE TABLE raw_turns (
    id          INTEGER PRIMARY KEY,
    source_id   INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    speaker     TEXT,
    text        TEXT NOT NULL,
    event_time  TEXT NOT NULL,
    ingested_at TEXT NOT NULL,
    ext_id      TEXT,
    UNIQUE (source_id, seq)
);
CREATE INDEX raw_turns_event_time ON raw_turns(event_time);
CREATE TRIGGER raw_turns_append_only BEFORE UPDATE ON raw_turns
BEGIN
    SELECT RAISE(ABORT, 'raw_turns are append-only');
END;

CREATE TABLE clusters (
    id              INTEGER PRIMARY KEY,
    summary         TEXT NOT NULL DEFAULT '',
    tags            TEXT NOT NULL DEFAULT '[]',
    size            INTEGER NOT NULL DEFAULT 0,
    profiled_size   INTEGER NOT NULL DEFAULT 0,
    changes         INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE VIRTUAL TABLE cluster_vec USING vec0(
    cluster_id INTEGER PRIMARY KEY,
    centroid float[{dim}] distance_metric=cosine
);

-- The memory unit (CLAG m_i / MemFly n_t). Derived: rebuildable from raw_turns.
CREATE TABLE notes (
    id          INTEGER PRIMARY KEY,
    raw_id      INTEGER REFERENCES raw_turns(id) ON DELETE CASCADE,
    content     TEXT NOT NULL,
    context     TEXT NOT NULL DEFAULT '',
    keywords    TEXT NOT NULL DEFAULT '[]',
    entities    TEXT NOT NULL DEFAULT '[]',
    tags        TEXT NOT NULL DEFAULT '[]',
    dates       TEXT NOT NULL DEFAULT '[]',
    speaker     TEXT,
    event_time  TEXT NOT NULL,
    cluster_id  INTEGER REFERENCES clusters(id) ON DELETE SET NULL,
    status      TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'merged', 'forgotten')),
    merged_into INTEGER REFERENCES notes(id) ON DELETE SET NULL,
    version     INTEGER NOT NULL DEFAULT 1,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX notes_raw ON notes(raw_id);
CREATE INDEX notes_cluster ON notes(cluster_id) WHERE status = 'active';
CREATE INDEX notes_event_time ON notes(event_time);

-- Which raw turns a note stands on (a merge adds the other note's turns). A join table rather than
-- a JSON column so that forgetting a raw turn cascades to every note built on it.
CREATE TABLE note_sources (
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    raw_id  INTEGER NOT NULL REFERENCES raw_turns(id) ON DELETE CASCADE,
    PRIMARY KEY (note_id, raw_id)
) WITHOUT ROWID;
CREATE INDEX note_sources_raw ON note_sources(raw_id);

-- Sparse pathway: rowid = notes.id.
CREATE VIRTUAL TABLE notes_fts USING fts5(content, context, keywords, tokenize = 'porter unicode61');
INSERT INTO notes_fts(notes_fts, rank) VALUES ('secure-delete', 1);

-- Dense pathway.
CREATE VIRTUAL TABLE note_vec USING vec0(
    note_id INTEGER PRIMARY KEY,
    embedding float[{dim}] distance_metric=cosine
);

CREATE TABLE links (
    id         INTEGER PRIMARY KEY,
    src        INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    dst        INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('SUPPORTS', 'CONFLICTS', 'RELATED', 'SUPERSEDES')),
    strength   REAL NOT NULL DEFAULT 1.0,
    made_by    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (src, dst, kind)
);
CREATE INDEX links_dst ON links(dst);

-- MemFly hierarchy: keyword index, membership, Leiden topics with centroids.
CREATE TABLE topics (
    id         INTEGER PRIMARY KEY,
    label      TEXT NOT NULL DEFAULT '',
    size       INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE VIRTUAL TABLE topic_vec USING vec0(
    topic_id INTEGER PRIMARY KEY,
    centroid float[{dim}] distance_metric=cosine
);
CREATE TABLE keywords (
    id       INTEGER PRIMARY KEY,
    term     TEXT NOT NULL UNIQUE,
    df       INTEGER NOT NULL DEFAULT 0,
    topic_id INTEGER REFERENCES topics(id) ON DELETE SET NULL
);
CREATE TABLE note_keywords (
    note_id    INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    keyword_id INTEGER NOT NULL REFERENCES keywords(id) ON DELETE CASCADE,
    PRIMARY KEY (note_id, keyword_id)
) WITHOUT ROWID;
CREATE INDEX note_keywords_keyword ON note_keywords(keyword_id);

-- MemFlow Tier-1 profile: newest value current (valid_to NULL), older values kept with validity.
CREATE TABLE profile (
    id         INTEGER PRIMARY KEY,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('preference', 'identity', 'rule')),
    valid_from TEXT NOT NULL,
    valid_to   TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX profile_key ON profile(key, valid_to);
CREATE TABLE profile_sources (
    profile_id INTEGER NOT NULL REFERENCES profile(id) ON DELETE CASCADE,
    note_id    INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    PRIMARY KEY (profile_id, note_id)
) WITHOUT ROWID;

-- Durable queue of ingestion and consolidation work.
CREATE TABLE jobs (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    payload    TEXT NOT NULL DEFAULT '{{}}',
    priority   INTEGER NOT NULL DEFAULT 10,
    status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'parked')),
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX jobs_pending ON jobs(status, priority, id);

-- One row per answered query (Principle 8).
CREATE TABLE traces (
    id         TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    question   TEXT NOT NULL,
    answer     TEXT NOT NULL,
    route_tag  TEXT,
    route_layer TEXT,
    tier       INTEGER,
    data       TEXT NOT NULL DEFAULT '{{}}'
);

-- Audit log of memory operations with before/after.
CREATE TABLE ops (
    id         INTEGER PRIMARY KEY,
    op         TEXT NOT NULL,
    note_id    INTEGER,
    before     TEXT,
    after      TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX ops_note ON ops(note_id);

-- Counters (model calls, fallbacks, ...), shown by `edgemem status`.
CREATE TABLE stats (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL DEFAULT 0
);
"""


def _watches(dim: int) -> str:  # noqa: ARG001 - every migration takes the store's dimension
    return """
-- Folders the daemon's watcher keeps in step with the store (DESIGN "daemon/watcher.py").
CREATE TABLE watches (
    path     TEXT PRIMARY KEY,
    added_at TEXT NOT NULL
);
"""


def _speaker_index(dim: int) -> str:  # noqa: ARG001 - every migration takes the store's dimension
    return """
-- The store's speakers are read for every question (retrieval matches a question's content without
-- their names): a skip scan over this index reads one entry per speaker instead of every note.
CREATE INDEX notes_speaker ON notes(speaker) WHERE status = 'active' AND speaker IS NOT NULL AND speaker != '';
"""


def _note_sentences(dim: int) -> str:  # noqa: ARG001 - every migration takes the store's dimension
    return """
-- Each sentence of a note of several sentences, embedded on its own (float16, the store's dimension),
-- for the sentence re-ranking retrieval once had; since ``recall/retrieve.py`` ``fused_rank`` ordered
-- candidates by the whole line (measured better), nothing reads it, and the write path still fills it.
-- Read by note id only, never searched by distance, so a plain table serves.
CREATE TABLE note_sentences (
    note_id   INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (note_id, seq)
) WITHOUT ROWID;
"""


MIGRATIONS: list[tuple[str, Callable[[int], str]]] = [
    ("0001_initial", _initial),
    ("0002_watches", _watches),
    ("0003_notes_speaker", _speaker_index),
    ("0004_note_sentences", _note_sentences),
]

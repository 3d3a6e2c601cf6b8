-- index jobs_pending
CREATE INDEX jobs_pending ON jobs(status, priority, id);
-- index links_dst
CREATE INDEX links_dst ON links(dst);
-- index note_keywords_keyword
CREATE INDEX note_keywords_keyword ON note_keywords(keyword_id);
-- index note_sources_raw
CREATE INDEX note_sources_raw ON note_sources(raw_id);
-- index notes_cluster
CREATE INDEX notes_cluster ON notes(cluster_id) WHERE status = 'active';
-- index notes_event_time
CREATE INDEX notes_event_time ON notes(event_time);
-- index notes_raw
CREATE INDEX notes_raw ON notes(raw_id);
-- index notes_speaker
CREATE INDEX notes_speaker ON notes(speaker) WHERE status = 'active' AND speaker IS NOT NULL AND speaker != '';
-- index ops_note
CREATE INDEX ops_note ON ops(note_id);
-- index profile_key
CREATE INDEX profile_key ON profile(key, valid_to);
-- index raw_turns_event_time
CREATE INDEX raw_turns_event_time ON raw_turns(event_time);
-- table cluster_vec
CREATE VIRTUAL TABLE cluster_vec USING vec0(
    cluster_id INTEGER PRIMARY KEY,
    centroid float[384] distance_metric=cosine
);
-- table cluster_vec_chunks
CREATE TABLE "cluster_vec_chunks"(chunk_id INTEGER PRIMARY KEY AUTOINCREMENT,size INTEGER NOT NULL,validity BLOB NOT NULL,rowids BLOB NOT NULL);
-- table cluster_vec_info
CREATE TABLE "cluster_vec_info" (key text primary key, value any);
-- table cluster_vec_rowids
CREATE TABLE "cluster_vec_rowids"(rowid INTEGER PRIMARY KEY AUTOINCREMENT,id,chunk_id INTEGER,chunk_offset INTEGER);
-- table cluster_vec_vector_chunks00
CREATE TABLE "cluster_vec_vector_chunks00"(rowid PRIMARY KEY,vectors BLOB NOT NULL);
-- table clusters
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
-- table jobs
CREATE TABLE jobs (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    payload    TEXT NOT NULL DEFAULT '{}',
    priority   INTEGER NOT NULL DEFAULT 10,
    status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'parked')),
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
-- table keywords
CREATE TABLE keywords (
    id       INTEGER PRIMARY KEY,
    term     TEXT NOT NULL UNIQUE,
    df       INTEGER NOT NULL DEFAULT 0,
    topic_id INTEGER REFERENCES topics(id) ON DELETE SET NULL
);
-- table links
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
-- table meta
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- table migrations
CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
-- table note_keywords
CREATE TABLE note_keywords (
    note_id    INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    keyword_id INTEGER NOT NULL REFERENCES keywords(id) ON DELETE CASCADE,
    PRIMARY KEY (note_id, keyword_id)
) WITHOUT ROWID;
-- table note_sentences
CREATE TABLE note_sentences (
    note_id   INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (note_id, seq)
) WITHOUT ROWID;
-- table note_sources
CREATE TABLE note_sources (
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    raw_id  INTEGER NOT NULL REFERENCES raw_turns(id) ON DELETE CASCADE,
    PRIMARY KEY (note_id, raw_id)
) WITHOUT ROWID;
-- table note_vec
CREATE VIRTUAL TABLE note_vec USING vec0(
    note_id INTEGER PRIMARY KEY,
    embedding float[384] distance_metric=cosine
);
-- table note_vec_chunks
CREATE TABLE "note_vec_chunks"(chunk_id INTEGER PRIMARY KEY AUTOINCREMENT,size INTEGER NOT NULL,validity BLOB NOT NULL,rowids BLOB NOT NULL);
-- table note_vec_info
CREATE TABLE "note_vec_info" (key text primary key, value any);
-- table note_vec_rowids
CREATE TABLE "note_vec_rowids"(rowid INTEGER PRIMARY KEY AUTOINCREMENT,id,chunk_id INTEGER,chunk_offset INTEGER);
-- table note_vec_vector_chunks00
CREATE TABLE "note_vec_vector_chunks00"(rowid PRIMARY KEY,vectors BLOB NOT NULL);
-- table notes
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
-- table notes_fts
CREATE VIRTUAL TABLE notes_fts USING fts5(content, context, keywords, tokenize = 'porter unicode61');
-- table notes_fts_config
CREATE TABLE 'notes_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;
-- table notes_fts_content
CREATE TABLE 'notes_fts_content'(id INTEGER PRIMARY KEY, c0, c1, c2);
-- table notes_fts_data
CREATE TABLE 'notes_fts_data'(id INTEGER PRIMARY KEY, block BLOB);
-- table notes_fts_docsize
CREATE TABLE 'notes_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);
-- table notes_fts_idx
CREATE TABLE 'notes_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;
-- table ops
CREATE TABLE ops (
    id         INTEGER PRIMARY KEY,
    op         TEXT NOT NULL,
    note_id    INTEGER,
    before     TEXT,
    after      TEXT,
    created_at TEXT NOT NULL
);
-- table profile
CREATE TABLE profile (
    id         INTEGER PRIMARY KEY,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('preference', 'identity', 'rule')),
    valid_from TEXT NOT NULL,
    valid_to   TEXT,
    created_at TEXT NOT NULL
);
-- table profile_sources
CREATE TABLE profile_sources (
    profile_id INTEGER NOT NULL REFERENCES profile(id) ON DELETE CASCADE,
    note_id    INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    PRIMARY KEY (profile_id, note_id)
) WITHOUT ROWID;
-- table raw_turns
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
-- table sources
CREATE TABLE sources (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('conversation', 'note', 'file', 'import')),
    uri          TEXT NOT NULL,
    title        TEXT,
    content_hash TEXT,
    mtime        REAL,
    created_at   TEXT NOT NULL,
    meta         TEXT NOT NULL DEFAULT '{}',
    UNIQUE (kind, uri)
);
-- table stats
CREATE TABLE stats (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL DEFAULT 0
);
-- table topic_vec
CREATE VIRTUAL TABLE topic_vec USING vec0(
    topic_id INTEGER PRIMARY KEY,
    centroid float[384] distance_metric=cosine
);
-- table topic_vec_chunks
CREATE TABLE "topic_vec_chunks"(chunk_id INTEGER PRIMARY KEY AUTOINCREMENT,size INTEGER NOT NULL,validity BLOB NOT NULL,rowids BLOB NOT NULL);
-- table topic_vec_info
CREATE TABLE "topic_vec_info" (key text primary key, value any);
-- table topic_vec_rowids
CREATE TABLE "topic_vec_rowids"(rowid INTEGER PRIMARY KEY AUTOINCREMENT,id,chunk_id INTEGER,chunk_offset INTEGER);
-- table topic_vec_vector_chunks00
CREATE TABLE "topic_vec_vector_chunks00"(rowid PRIMARY KEY,vectors BLOB NOT NULL);
-- table topics
CREATE TABLE topics (
    id         INTEGER PRIMARY KEY,
    label      TEXT NOT NULL DEFAULT '',
    size       INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
-- table traces
CREATE TABLE traces (
    id         TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    question   TEXT NOT NULL,
    answer     TEXT NOT NULL,
    route_tag  TEXT,
    route_layer TEXT,
    tier       INTEGER,
    data       TEXT NOT NULL DEFAULT '{}'
);
-- table watches
CREATE TABLE watches (
    path     TEXT PRIMARY KEY,
    added_at TEXT NOT NULL
);
-- trigger raw_turns_append_only
CREATE TRIGGER raw_turns_append_only BEFORE UPDATE ON raw_turns
BEGIN
    SELECT RAISE(ABORT, 'raw_turns are append-only');
END;

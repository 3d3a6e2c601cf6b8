"""The store on a real file: sqlite-vec KNN, FTS5, migrations, refusal of foreign/corrupt files."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from edgemem.errors import StoreError
from edgemem.store import db, notes, raw
from edgemem.store.db import Store

SCHEMA_FILE = Path(__file__).parent.parent / "data" / "schema.sql"


def schema_dump(store: Store) -> str:
    rows = store.conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type, name"
    )
    return "\n".join(f"-- {r['type']} {r['name']}\n{r['sql']};" for r in rows) + "\n"


def test_schema_is_pinned(tmp_path: Path) -> None:
    # Regenerate deliberately with: UPDATE_SCHEMA_PIN=1 pytest tests/store/test_store.py -k pinned
    with Store(tmp_path / "s.db", embed_model="all-MiniLM-L6-v2", dim=384) as store:
        dump = schema_dump(store)
        applied = [r[0] for r in store.conn.execute("SELECT name FROM migrations ORDER BY name")]
    if os.environ.get("UPDATE_SCHEMA_PIN"):
        SCHEMA_FILE.write_text(dump)
    assert applied and applied[0] == "0001_initial"
    assert dump == SCHEMA_FILE.read_text()


def _add(conn, store_text: str, vector: np.ndarray, source: int) -> int:
    raw_id = raw.append_turn(conn, source, store_text, "2024-01-02T10:00:00")
    return notes.insert(conn, raw_ids=[raw_id], content=store_text, embedding=vector, event_time="2024-01-02T10:00:00",
                        keywords=store_text.lower().split()[:3])


def test_round_trip_with_real_embeddings(tmp_path: Path, embedder) -> None:
    texts = [
        "Ana's birthday is on 14 March and she loves orchids.",
        "The car is parked on level 3 of the airport garage.",
        "My dentist appointment moved to Thursday at 9am.",
        "I started learning the cello in September.",
    ]
    vectors = embedder.embed(texts)
    path = tmp_path / "m.db"
    with Store(path, embed_model=embedder.name, dim=embedder.dim) as store:
        with store.transaction() as conn:
            src = raw.ensure_source(conn, "note", "notes")
            ids = [_add(conn, t, v, src) for t, v in zip(texts, vectors, strict=True)]
    # Reopen: everything is on disk, KNN and FTS5 answer from the file.
    with Store(path, embed_model=embedder.name, dim=embedder.dim) as store:
        conn = store.conn
        query = embedder.embed(["where did I leave my car?"])[0]
        nearest = notes.knn(conn, query, 2)
        assert nearest[0][0] == ids[1]
        assert nearest[0][1] > nearest[1][1]
        assert [i for i, _ in notes.fts(conn, "orchids birthday", 5)] == [ids[0]]
        assert notes.get(conn, ids[3]).content == texts[3]
        assert notes.get(conn, ids[3]).source_turns
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_merged_notes_leave_both_indexes(tmp_path: Path) -> None:
    v = np.ones(8, dtype=np.float32) / np.sqrt(8)
    with Store(tmp_path / "m.db", embed_model="x", dim=8) as store:
        with store.transaction() as conn:
            src = raw.ensure_source(conn, "note", "notes")
            a = _add(conn, "alpha beta gamma", v, src)
            b = _add(conn, "alpha beta delta", v, src)
            notes.mark_merged(conn, b, a)
        assert [i for i, _ in notes.knn(store.conn, v, 5)] == [a]
        assert [i for i, _ in notes.fts(store.conn, "delta", 5)] == []


def test_raw_turns_are_append_only(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db", embed_model="x", dim=8) as store:
        with store.transaction() as conn:
            src = raw.ensure_source(conn, "note", "notes")
            turn = raw.append_turn(conn, src, "original", "2024-01-01T00:00:00")
        with pytest.raises(db.IntegrityError, match="append-only"):
            store.conn.execute("UPDATE raw_turns SET text = 'changed' WHERE id = ?", (turn,))
        assert raw.get_turn(store.conn, turn).text == "original"


def test_nested_transaction_rolls_back_inner_only(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db", embed_model="x", dim=8) as store:
        with store.transaction() as conn:
            src = raw.ensure_source(conn, "note", "notes")
            raw.append_turn(conn, src, "kept", "2024-01-01T00:00:00")
            with pytest.raises(RuntimeError):
                with store.transaction():
                    raw.append_turn(conn, src, "dropped", "2024-01-01T00:00:00")
                    raise RuntimeError("inner failure")
        assert [t.text for t in raw.turns_of_source(store.conn, src)] == ["kept"]


def test_other_embedder_is_refused(tmp_path: Path) -> None:
    Store(tmp_path / "m.db", embed_model="all-MiniLM-L6-v2", dim=384).close()
    with pytest.raises(StoreError, match="rebuild --embeddings"):
        Store(tmp_path / "m.db", embed_model="bge-small", dim=768)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_corrupt_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    path.write_bytes(os.urandom(8192))
    before = _digest(path)
    with pytest.raises(StoreError, match="not a SQLite database"):
        Store(path, embed_model="x", dim=8)
    assert _digest(path) == before


def test_foreign_sqlite_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = db.driver.connect(str(path))
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    conn.commit()
    conn.close()
    before = _digest(path)
    with pytest.raises(StoreError, match="not an edgemem store"):
        Store(path, embed_model="x", dim=8)
    assert _digest(path) == before


def test_damaged_edgemem_store_gives_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    Store(path, embed_model="x", dim=8).close()
    data = bytearray(path.read_bytes())
    data[100:4096] = os.urandom(3996)  # keep the header, wreck the schema page
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as err:
        Store(path, embed_model="x", dim=8)
    assert "\n" not in str(err.value)


def test_speaker_names_skip_through_the_speaker_index(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db", embed_model="all-MiniLM-L6-v2", dim=384) as store:
        conn = store.conn
        rows = [("Nate", "active"), ("Joanna", "active"), ("Nate", "active"), ("", "active"), (None, "active"),
                ("Zed", "forgotten"), ("Audrey", "merged"), ("Ängel", "active")]
        for number, (speaker, status) in enumerate(rows):
            conn.execute("INSERT INTO notes (content, speaker, status, event_time, created_at, updated_at) "
                         "VALUES (?, ?, ?, '2024-01-01', '2024-01-01', '2024-01-01')", (f"line {number}", speaker, status))
        assert notes.speaker_names(conn) == ["Joanna", "Nate", "Ängel"]
        plan = " ".join(str(tuple(r)) for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT speaker FROM notes WHERE status = 'active' AND speaker IS NOT NULL "
            "AND speaker != '' AND speaker > 'A' ORDER BY speaker LIMIT 1"))
        assert "notes_speaker" in plan
    with Store(tmp_path / "empty.db", embed_model="all-MiniLM-L6-v2", dim=384) as store:
        assert notes.speaker_names(store.conn) == []

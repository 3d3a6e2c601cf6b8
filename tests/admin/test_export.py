"""Export to JSON and Markdown; a JSON export imports into an empty store and gives the same store."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np
import pytest

from edgemem import admin
from edgemem.errors import BadInput
from edgemem.ingest import raw as accept
from edgemem.store import archive, notes
from edgemem.store.db import Store, now


def fill(memory, tmp_path: Path) -> None:
    """Turns from a conversation, a note and a file, plus derived rows the later stages would make."""
    memory.remember("I adopted a beagle called Biscuit last spring.", speaker="Caroline", when="2023-05-08T13:56:00", session="s1")
    memory.remember("Biscuit hates the vacuum cleaner.", speaker="Melanie", when="2023-05-08T13:57:00", session="s1")
    memory.remember("Dentist on 12 June at 9:00.", when="2023-06-01T08:00:00")
    doc = tmp_path / "recipes.md"
    doc.write_text("Pancakes: flour, milk, two eggs.\n\nLine two of the recipe\ncontinues here.\n")
    accept.ingest_file(memory.store, doc, max_bytes=memory.settings.max_file_bytes)
    memory.worker.drain()
    memory.remember("Unprocessed: the plumber comes Thursday.", process=False)
    conn = memory.store.conn
    ids = notes.active_ids(conn)
    ts = now()
    with memory.store.transaction() as tx:
        cluster = tx.execute("INSERT INTO clusters(summary, tags, size, created_at, updated_at) VALUES ('pets', '[\"dog\"]', 2, ?, ?)", (ts, ts)).lastrowid
        tx.execute("INSERT INTO cluster_vec(cluster_id, centroid) VALUES (?, ?)", (cluster, notes.blob(notes.vectors(tx, [ids[0]])[ids[0]])))
        tx.execute("UPDATE notes SET cluster_id = ? WHERE id IN (?, ?)", (cluster, ids[0], ids[1]))
        tx.execute("INSERT INTO links(src, dst, kind, strength, made_by, created_at) VALUES (?, ?, 'SUPPORTS', 0.8, 'gate', ?)", (ids[1], ids[0], ts))
        profile = tx.execute("INSERT INTO profile(key, value, kind, valid_from, created_at) VALUES ('pet', 'beagle Biscuit', 'identity', ?, ?)", (ts, ts)).lastrowid
        tx.execute("INSERT INTO profile_sources(profile_id, note_id) VALUES (?, ?)", (profile, ids[0]))
        topic = tx.execute("INSERT INTO topics(label, size, created_at) VALUES ('pets', 1, ?)", (ts,)).lastrowid
        kw = tx.execute("INSERT INTO keywords(term, df, topic_id) VALUES ('biscuit', 2, ?)", (topic,)).lastrowid
        tx.executemany("INSERT INTO note_keywords(note_id, keyword_id) VALUES (?, ?)", [(ids[0], kw), (ids[1], kw)])
        tx.execute("INSERT INTO topic_vec(topic_id, centroid) VALUES (?, ?)", (topic, notes.blob(notes.vectors(tx, [ids[1]])[ids[1]])))
        # A merged note: inactive, pointing at a later survivor (the import must defer that reference).
        tx.execute("UPDATE notes SET status = 'merged', merged_into = ? WHERE id = ?", (ids[3], ids[2]))
        tx.execute("DELETE FROM notes_fts WHERE rowid = ?", (ids[2],))
        tx.execute("DELETE FROM note_vec WHERE note_id = ?", (ids[2],))
        tx.execute("INSERT INTO traces(id, created_at, question, answer, data) VALUES ('q1', ?, 'dog?', 'Biscuit', '{\"retrieved\": [1]}')", (ts,))
        tx.execute("INSERT INTO watches(path, added_at) VALUES (?, ?)", (str(tmp_path), ts))


def snapshot(store: Store) -> dict:
    conn = store.conn
    out = {t: list(archive.dump_rows(conn, t)) for t in archive.TABLES}
    out["vectors"] = {t: archive.dump_vectors(conn, t) for t in archive.VECTOR_TABLES}
    out["fts"] = [tuple(r) for r in conn.execute("SELECT rowid, content, context, keywords FROM notes_fts ORDER BY rowid")]
    return out


def fresh(settings, embedder, name: str) -> Store:
    return Store(settings.data_dir / name, embed_model=embedder.name, dim=embedder.dim)


def test_json_round_trip_gives_the_same_store(memory, settings, embedder, tmp_path: Path) -> None:
    fill(memory, tmp_path)
    target = tmp_path / "export.json"
    result = admin.export_json(memory.store, target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert result["tables"]["raw_turns"] == 5 and result["tables"]["jobs"] == 1  # the pending note job travels
    before = snapshot(memory.store)

    with fresh(settings, embedder, "copy.db") as copy:
        report = admin.import_json(copy, target)
        assert report["vectors"] == "exported"
        after = snapshot(copy)
        assert after == before
        # The copy answers like the original on both pathways.
        vec = embedder.embed(["What is the dog called?"])[0]
        assert notes.knn(copy.conn, vec, 3) == notes.knn(memory.store.conn, vec, 3)
        assert notes.fts(copy.conn, "Biscuit vacuum", 3) == notes.fts(memory.store.conn, "Biscuit vacuum", 3)
        assert copy.integrity_check() == "ok"


def test_import_recomputes_vectors_when_the_export_has_none(memory, settings, embedder, tmp_path: Path) -> None:
    fill(memory, tmp_path)
    data = admin.export_data(memory.store, vectors=False)
    assert "vectors" not in data
    with fresh(settings, embedder, "copy.db") as copy:
        with pytest.raises(BadInput, match="embedder"):
            admin.import_json(copy, data)
        assert archive.is_empty(copy.conn)  # refused before writing anything
        assert admin.import_json(copy, data, embed=embedder.embed)["vectors"] == "recomputed"
        original = archive.dump_vectors(memory.store.conn, "note_vec")
        recomputed = archive.dump_vectors(copy.conn, "note_vec")
        assert original.keys() == recomputed.keys()
        for key in original:
            assert np.dot(original[key], recomputed[key]) > 0.999
        # Cluster and topic centroids come back as the normalised mean of their notes.
        members = archive.members(copy.conn, "cluster_vec")
        for cid, centroid in archive.dump_vectors(copy.conn, "cluster_vec").items():
            mean = np.mean([recomputed[n] for n in members[cid]], axis=0)
            assert np.allclose(centroid, mean / np.linalg.norm(mean), atol=1e-6)
        assert set(archive.dump_vectors(copy.conn, "topic_vec")) == set(archive.dump_vectors(memory.store.conn, "topic_vec"))


def test_import_refuses_a_store_with_memories_and_foreign_files(memory, settings, embedder, tmp_path: Path) -> None:
    fill(memory, tmp_path)
    target = tmp_path / "export.json"
    admin.export_json(memory.store, target)
    rows_before = snapshot(memory.store)
    with pytest.raises(BadInput, match="already holds"):
        admin.import_json(memory.store, target)
    assert snapshot(memory.store) == rows_before

    with fresh(settings, embedder, "copy.db") as copy:
        junk = tmp_path / "junk.json"
        junk.write_text(json.dumps({"hello": "world"}))
        with pytest.raises(BadInput, match="not an edgemem JSON export"):
            admin.import_json(copy, junk)
        junk.write_text("{not json")
        with pytest.raises(BadInput, match="not a JSON export"):
            admin.import_json(copy, junk)
        data = json.loads(target.read_text())
        data["tables"]["raw_turns"][0]["source_id"] = 999  # a turn of a source that is not there
        with pytest.raises(BadInput, match="inconsistent"):
            admin.import_json(copy, data)
        assert archive.is_empty(copy.conn)
        data = json.loads(target.read_text())
        data["tables"]["notes"][0]["mood"] = "happy"
        with pytest.raises(BadInput, match="notes.mood"):
            admin.import_json(copy, data)
        assert archive.is_empty(copy.conn)


def test_markdown_export_reads_per_source_with_times(memory, tmp_path: Path) -> None:
    fill(memory, tmp_path)
    target = tmp_path / "memory.md"
    admin.export_markdown(memory.store, target)
    text = target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    conversation = text.index("## s1")
    assert text.index("- 2023-05-08 13:56:00 — **Caroline**: I adopted a beagle called Biscuit last spring.") > conversation
    assert text.index("- 2023-05-08 13:57:00 — **Melanie**: Biscuit hates the vacuum cleaner.") > conversation
    assert "- 2023-06-01 08:00:00 — Dentist on 12 June at 9:00." in text
    assert "## recipes.md" in text
    # A multi-line turn stays inside its list item.
    assert "Line two of the recipe\n  continues here." in text
    assert "Unprocessed: the plumber comes Thursday." in text  # raw, even before it became a note
    assert "- identity: pet = beagle Biscuit" in text

"""Forget: preview before confirm, hard delete everywhere, nothing of the text left in the file's bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgemem import admin
from edgemem.errors import BadInput, NotFound
from edgemem.store import notes
from edgemem.store.db import now

CANARY = "zebracanary7319"


def all_cells(conn) -> list[tuple[str, object]]:
    """Every value of every table (virtual tables' shadow tables included) as (table, value)."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    cells = []
    for table in tables:
        for row in conn.execute(f'SELECT * FROM "{table}"'):
            cells += [(table, v) for v in tuple(row)]
    return cells


def holds(value: object, needle: str) -> bool:
    if isinstance(value, str):
        return needle in value.lower()
    if isinstance(value, bytes):
        return needle.encode() in value
    return False


def file_bytes(db: Path) -> bytes:
    data = db.read_bytes()
    for suffix in ("-wal", "-journal"):
        extra = Path(f"{db}{suffix}")
        if extra.exists():
            data += extra.read_bytes()
    return data


def _derived_rows(conn, canary_note: int, other: int, unrelated: int) -> dict[str, int]:
    """What the organising steps would have built around the canary note (clusters, links, keywords,
    topics, profile, ops, traces), written directly: those steps are not under test here."""
    ts = now()
    with_canary = conn.execute(
        "INSERT INTO clusters(summary, tags, size, created_at, updated_at) VALUES (?, ?, 2, ?, ?)",
        (f"Locker codes such as {CANARY} and flowers", json.dumps([CANARY, "flowers"]), ts, ts),
    ).lastrowid
    alone = conn.execute("INSERT INTO clusters(summary, size, created_at, updated_at) VALUES ('Roofs', 1, ?, ?)", (ts, ts)).lastrowid
    vecs = notes.vectors(conn, [canary_note, other])
    conn.execute("INSERT INTO cluster_vec(cluster_id, centroid) VALUES (?, ?)", (with_canary, notes.blob(vecs[canary_note])))
    conn.execute("UPDATE notes SET cluster_id = ? WHERE id IN (?, ?)", (with_canary, canary_note, other))
    conn.execute("UPDATE notes SET cluster_id = ? WHERE id = ?", (alone, unrelated))
    conn.execute("INSERT INTO links(src, dst, kind, made_by, created_at) VALUES (?, ?, 'RELATED', 'test', ?)", (canary_note, other, ts))
    topic = conn.execute("INSERT INTO topics(label, size, created_at) VALUES (?, 2, ?)", (f"{CANARY} / orchids", ts)).lastrowid
    secret_kw = conn.execute("INSERT INTO keywords(term, df, topic_id) VALUES (?, 1, ?)", (CANARY, topic)).lastrowid
    shared_kw = conn.execute("INSERT INTO keywords(term, df, topic_id) VALUES ('orchids', 2, ?)", (topic,)).lastrowid
    conn.executemany("INSERT INTO note_keywords(note_id, keyword_id) VALUES (?, ?)",
                     [(canary_note, secret_kw), (canary_note, shared_kw), (other, shared_kw)])
    secret_fact = conn.execute(
        "INSERT INTO profile(key, value, kind, valid_from, created_at) VALUES ('locker code', ?, 'identity', ?, ?)", (CANARY, ts, ts)
    ).lastrowid
    shared_fact = conn.execute(
        "INSERT INTO profile(key, value, kind, valid_from, created_at) VALUES ('likes', 'orchids', 'preference', ?, ?)", (ts, ts)
    ).lastrowid
    conn.executemany("INSERT INTO profile_sources(profile_id, note_id) VALUES (?, ?)",
                     [(secret_fact, canary_note), (shared_fact, canary_note), (shared_fact, other)])
    conn.execute("INSERT INTO ops(op, note_id, before, after, created_at) VALUES ('evolve', ?, ?, ?, ?)",
                 (canary_note, json.dumps({"context": "old"}), json.dumps({"context": f"code {CANARY}"}), ts))
    conn.execute("INSERT INTO traces(id, created_at, question, answer, data) VALUES ('q-secret', ?, 'what is my code?', ?, ?)",
                 (ts, f"Your locker code is {CANARY}.", json.dumps({"retrieved": [canary_note, other], "tier": 2})))
    conn.execute("INSERT INTO traces(id, created_at, question, answer, data) VALUES ('q-roof', ?, 'roof?', 'Fix the roof.', ?)",
                 (ts, json.dumps({"retrieved": [unrelated]})))
    return {"cluster": with_canary, "alone": alone, "topic": topic, "shared_kw": shared_kw, "shared_fact": shared_fact}


def test_forgotten_canary_is_nowhere_in_the_file_or_any_query(memory) -> None:
    conn = memory.store.conn
    other = memory.note_of(memory.remember("Ana loves orchids and hates chocolate cake.", speaker="Caroline")[0])
    unrelated = memory.note_of(memory.remember("The garden shed needs a new roof before winter.")[0])
    secret = memory.note_of(memory.remember(f"My locker code is {CANARY}, keep it safe; orchids are on the shelf.", speaker="Caroline")[0])
    with memory.store.transaction() as tx:
        ids = _derived_rows(tx, secret, other, unrelated)
    assert any(holds(v, CANARY) for _, v in all_cells(conn))

    preview = admin.forget(memory.store, note_ids=[secret])
    assert preview["deleted"] is False
    assert [n["id"] for n in preview["preview"]["notes"]] == [secret]
    assert CANARY in preview["preview"]["notes"][0]["content"]
    assert notes.get(conn, secret) is not None  # nothing deleted without confirm

    result = admin.forget(memory.store, note_ids=[secret], confirm=True)
    assert result["deleted"] and result["purged"]
    assert result["notes"] == 1 and result["raw_turns"] == 1 and result["profile"] == 1

    # Through any query: every cell of every table, then the named paths one by one.
    leaks = [table for table, v in all_cells(conn) if holds(v, CANARY)]
    assert leaks == []
    assert conn.execute("SELECT count(*) FROM notes WHERE content LIKE ?", (f"%{CANARY}%",)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?", (f'"{CANARY}"',)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM raw_turns WHERE text LIKE ?", (f"%{CANARY}%",)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM ops WHERE coalesce(before, '') || coalesce(after, '') LIKE ?", (f"%{CANARY}%",)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM profile WHERE value LIKE ?", (f"%{CANARY}%",)).fetchone()[0] == 0
    # Nor in the bytes of the database file and its WAL.
    assert CANARY.encode() not in file_bytes(memory.store.path)

    # Everything else stands: the other notes, their indexes, the shared fact and keyword.
    assert notes.get(conn, other) is not None and notes.get(conn, unrelated) is not None
    assert [i for i, _ in notes.fts(conn, "orchids", 5)] == [other]
    assert {i for i, _ in notes.knn(conn, notes.vectors(conn, [other])[other], 5)} == {other, unrelated}
    assert conn.execute("SELECT count(*) FROM links").fetchone()[0] == 0
    assert conn.execute("SELECT id FROM profile").fetchall()[0][0] == ids["shared_fact"]
    assert [r[0] for r in conn.execute("SELECT term FROM keywords")] == ["orchids"]
    assert conn.execute("SELECT df FROM keywords WHERE id = ?", (ids["shared_kw"],)).fetchone()[0] == 1
    assert [r[0] for r in conn.execute("SELECT id FROM traces")] == ["q-roof"]
    # The cluster that held it is marked for a new profile; the untouched one is not.
    cluster = conn.execute("SELECT summary, tags, size FROM clusters WHERE id = ?", (ids["cluster"],)).fetchone()
    assert tuple(cluster) == ("", "[]", 1)
    queued = conn.execute("SELECT payload, priority FROM jobs WHERE kind = 'cluster_profile' AND status = 'pending'").fetchall()
    assert [(json.loads(p)["cluster_id"], prio) for p, prio in queued] == [(ids["cluster"], 20)]
    assert conn.execute("SELECT summary FROM clusters WHERE id = ?", (ids["alone"],)).fetchone()[0] == "Roofs"
    # The audit row says what went, by id, without the text.
    op = conn.execute("SELECT after FROM ops WHERE op = 'forget'").fetchone()
    assert json.loads(op[0])["note_ids"] == [secret]


def test_emptied_cluster_goes_and_profile_jobs_are_not_duplicated(memory) -> None:
    conn = memory.store.conn
    a = memory.note_of(memory.remember("Pottery class on Tuesdays at the community centre.")[0])
    b = memory.note_of(memory.remember("Pottery glaze order arrives next week.")[0])
    c = memory.note_of(memory.remember("Pottery kiln needs repair.")[0])
    d = memory.note_of(memory.remember("Pottery wheel for sale.")[0])
    ts = now()
    with memory.store.transaction() as tx:
        shared = tx.execute("INSERT INTO clusters(summary, size, created_at, updated_at) VALUES ('pottery', 3, ?, ?)", (ts, ts)).lastrowid
        single = tx.execute("INSERT INTO clusters(summary, size, created_at, updated_at) VALUES ('kiln', 1, ?, ?)", (ts, ts)).lastrowid
        tx.execute("INSERT INTO cluster_vec(cluster_id, centroid) VALUES (?, ?)", (single, notes.blob(notes.vectors(tx, [c])[c])))
        tx.execute("UPDATE notes SET cluster_id = ? WHERE id IN (?, ?, ?)", (shared, a, b, d))
        tx.execute("UPDATE notes SET cluster_id = ? WHERE id = ?", (single, c))
    admin.forget(memory.store, note_ids=[a], confirm=True)
    admin.forget(memory.store, note_ids=[c], confirm=True)
    assert conn.execute("SELECT count(*) FROM clusters WHERE id = ?", (single,)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM cluster_vec WHERE cluster_id = ?", (single,)).fetchone()[0] == 0
    jobs_for = [json.loads(r[0])["cluster_id"] for r in conn.execute("SELECT payload FROM jobs WHERE kind = 'cluster_profile'")]
    assert jobs_for == [shared]
    # A second forget in the same cluster while its job waits does not queue another.
    admin.forget(memory.store, note_ids=[d], confirm=True)
    assert conn.execute("SELECT count(*) FROM jobs WHERE kind = 'cluster_profile'").fetchone()[0] == 1


def test_forget_by_query_matches_every_word_and_reaches_unprocessed_turns(memory) -> None:
    conn = memory.store.conn
    keep = memory.note_of(memory.remember("The dentist appointment is on Friday.")[0])
    also_keep = memory.note_of(memory.remember("My bank is open on Saturday mornings.")[0])
    gone = memory.note_of(memory.remember("My bank password hint is the name of my first dog.")[0])
    queued = memory.remember("Reminder: the bank password changes monthly.", process=False)[0]  # not yet a note

    plan = admin.forget_preview(memory.store, query="bank password")
    assert plan.note_ids == [gone]
    assert set(plan.raw_ids) == {notes.get(conn, gone).source_turns[0], queued}

    result = admin.forget(memory.store, query="bank password", confirm=True)
    assert result["notes"] == 1 and result["raw_turns"] == 2
    assert conn.execute("SELECT count(*) FROM raw_turns WHERE text LIKE '%password%'").fetchone()[0] == 0
    # The unprocessed turn's note job went with it: the worker has nothing to rebuild it from.
    assert memory.worker.drain() == 0
    assert {n.id for n in notes.iter_active(conn)} == {keep, also_keep}


def test_forget_by_source_uri_or_id(memory, tmp_path: Path) -> None:
    from edgemem.ingest import raw as accept

    conn = memory.store.conn
    doc = tmp_path / "diary.md"
    doc.write_text("Monday: walked by the canal.\n\nTuesday: met Priya for lunch at the noodle bar.\n")
    acc = accept.ingest_file(memory.store, doc, max_bytes=memory.settings.max_file_bytes)
    memory.worker.drain()
    chat = memory.remember("Let's plan the trip to Lisbon.", session="s1")
    memory.remember("Book the train tickets too.", session="s1")
    assert notes.count_active(conn) == len(acc.raw_ids) + 2

    by_uri = admin.forget_preview(memory.store, source=str(doc))
    assert by_uri.source_ids == [acc.source_id] and len(by_uri.note_ids) == len(acc.raw_ids)
    admin.forget(memory.store, source=str(doc), confirm=True)
    assert conn.execute("SELECT count(*) FROM sources WHERE kind = 'file'").fetchone()[0] == 0

    session = conn.execute("SELECT source_id FROM raw_turns WHERE id = ?", (chat[0],)).fetchone()[0]
    result = admin.forget(memory.store, source=session, confirm=True)
    assert result["notes"] == 2 and result["raw_turns"] == 2
    assert notes.count_active(conn) == 0 and conn.execute("SELECT count(*) FROM raw_turns").fetchone()[0] == 0


def test_forget_refuses_unclear_requests_and_deletes_nothing(memory) -> None:
    conn = memory.store.conn
    memory.remember("A note that must survive bad requests.")
    with pytest.raises(BadInput):
        admin.forget(memory.store, confirm=True)
    with pytest.raises(BadInput):
        admin.forget(memory.store, note_ids=[1], query="note", confirm=True)
    with pytest.raises(NotFound):
        admin.forget(memory.store, note_ids=[999], confirm=True)
    with pytest.raises(NotFound):
        admin.forget(memory.store, source="/no/such/file.md", confirm=True)
    with pytest.raises(BadInput):
        admin.forget(memory.store, query="  ?! ", confirm=True)
    assert admin.forget(memory.store, query="unmatched words", confirm=True)["notes"] == 0
    assert notes.count_active(conn) == 1


def test_a_forgotten_file_in_a_watched_folder_does_not_come_back(memory, tmp_path: Path) -> None:
    from edgemem.ingest import raw as accept
    from edgemem.store import watches

    folder = tmp_path / "watched"
    folder.mkdir()
    doc = folder / "secret.md"
    doc.write_text("The spare key is under the blue flowerpot.")
    with memory.store.transaction() as tx:
        watches.add(tx, str(folder))
    accept.ingest_file(memory.store, doc, max_bytes=memory.settings.max_file_bytes)
    memory.worker.drain()
    result = admin.forget(memory.store, source=str(doc), confirm=True)
    assert result["notes"] == 1 and result["sources"] == 0
    conn = memory.store.conn
    # The source row stays as a tombstone (uri and hash, no text): the unchanged file is not re-ingested.
    assert conn.execute("SELECT count(*) FROM sources WHERE uri = ?", (str(doc),)).fetchone()[0] == 1
    assert accept.ingest_file(memory.store, doc, max_bytes=memory.settings.max_file_bytes).unchanged
    assert conn.execute("SELECT count(*) FROM raw_turns").fetchone()[0] == 0


def test_preview_shows_every_note_a_forget_reaches(memory) -> None:
    conn = memory.store.conn
    absorbed = memory.note_of(memory.remember("Mia's cat is called Pixel.")[0])
    survivor = memory.note_of(memory.remember("Mia has a grey cat named Pixel who likes boxes.")[0])
    bystander = memory.note_of(memory.remember("The library closes at six.")[0])
    turn = notes.get(conn, survivor).source_turns[0]
    with memory.store.transaction() as tx:  # what the gate's merge leaves behind (MemFly §3.3)
        notes.mark_merged(tx, absorbed, survivor)
        notes.add_sources(tx, survivor, notes.get(tx, absorbed).source_turns)
        # A second note derived from the survivor's turn (e.g. a file chunk re-noted).
        other = notes.insert(tx, raw_ids=[turn], content="Pixel likes boxes.", embedding=notes.vectors(tx, [survivor])[survivor],
                             event_time="2024-05-07T10:00:00")
    plan = admin.forget_preview(memory.store, note_ids=[absorbed])
    assert plan.note_ids == sorted([absorbed, survivor, other])
    assert [n["id"] for n in plan.notes] == plan.note_ids
    result = admin.forget(memory.store, note_ids=[absorbed], confirm=True)
    assert result["notes"] == 3 and result["raw_turns"] == 2
    assert notes.active_ids(conn) == [bystander]

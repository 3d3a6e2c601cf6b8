"""Online backup while another thread writes; atomic restore that refuses foreign files and a live daemon."""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import threading
from pathlib import Path

import pytest

from edgemem import admin
from edgemem.errors import BadInput, StoreError
from edgemem.ingest import raw as accept
from edgemem.store import db, lock, notes
from edgemem.store.db import Store


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_backup_while_another_thread_writes(memory, embedder, tmp_path: Path) -> None:
    for i in range(5):
        memory.remember(f"Seed fact number {i}: the cat sleeps on shelf {i}.")
    stop = threading.Event()
    written: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:  # the daemon's ingestion, on its own thread and connection
        try:
            i = 0
            while not stop.is_set():
                accept.remember(memory.store, f"Streamed turn {i} about the weather.", max_bytes=4096)
                written.append(i)
                i += 1
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(written) < 20:
            threading.Event().wait(0.01)
        counts = []
        for n in range(3):
            low = len(written)
            result = admin.backup(memory.store, tmp_path / f"backup-{n}.db")
            high = len(written)
            counts.append((low, result["raw_turns"] - 5, high + 1))
    finally:
        stop.set()
        thread.join(30)
    assert not errors and not thread.is_alive()
    for low, seen, high in counts:
        assert low <= seen <= high  # a consistent snapshot taken while the writer ran
    assert counts[-1][1] > counts[0][1] - 1
    for n in range(3):
        copy = tmp_path / f"backup-{n}.db"
        assert stat.S_IMODE(copy.stat().st_mode) == 0o600
        with Store(copy, embed_model=embedder.name, dim=embedder.dim, create=False) as store:
            assert store.integrity_check() == "ok"
            vec = embedder.embed(["Where does the cat sleep?"])[0]
            assert len(notes.knn(store.conn, vec, 3)) == 3  # vec0 pages came along
            assert notes.fts(store.conn, "shelf", 10)
    assert not list(tmp_path.glob(".*.tmp"))


def test_backup_refuses_to_overwrite_or_to_copy_onto_itself(memory, tmp_path: Path) -> None:
    memory.remember("Something worth backing up.")
    target = tmp_path / "b.db"
    target.write_text("precious")
    with pytest.raises(BadInput, match="exists"):
        admin.backup(memory.store, target)
    assert target.read_text() == "precious"
    with pytest.raises(BadInput, match="live store"):
        admin.backup(memory.store, memory.store.path, overwrite=True)
    assert admin.backup(memory.store, target, overwrite=True)["raw_turns"] == 1


def test_restore_replaces_the_store_atomically_and_keeps_the_previous(memory, embedder, tmp_path: Path) -> None:
    memory.remember("Before the backup: the boat is blue.")
    backup = tmp_path / "backup.db"
    admin.backup(memory.store, backup)
    memory.remember("After the backup: the boat was painted red.")
    database = memory.store.path
    memory.store.close()

    result = admin.restore(database, backup)
    assert result["raw_turns"] == 1 and result["previous"] == f"{database}.pre-restore"
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    with Store(database, embed_model=embedder.name, dim=embedder.dim, create=False) as store:
        assert [n.content for n in notes.iter_active(store.conn)] == ["Before the backup: the boat is blue."]
    with Store(Path(result["previous"]), embed_model=embedder.name, dim=embedder.dim, create=False) as previous:
        assert len(list(notes.iter_active(previous.conn))) == 2  # nothing lost: the replaced store is kept
    assert not [p for p in database.parent.iterdir() if p.name.endswith(".tmp")]


def test_restore_refuses_foreign_files_and_leaves_the_store_alone(memory, tmp_path: Path) -> None:
    memory.remember("The store that must survive.")
    database = memory.store.path
    memory.store.checkpoint()
    memory.store.close()
    before = digest(database)

    text = tmp_path / "notes.txt"
    text.write_text("just some text, not a database")
    foreign = tmp_path / "other.db"
    conn = db.driver.connect(str(foreign))
    conn.execute("CREATE TABLE t(x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    truncated = tmp_path / "truncated.db"
    admin_src = Store(tmp_path / "full.db", embed_model="all-MiniLM-L6-v2", dim=384)
    admin_src.conn.execute("INSERT INTO meta(key, value) VALUES ('filler', ?)", ("x" * 200_000,))
    admin_src.checkpoint()
    admin_src.close()
    data = (tmp_path / "full.db").read_bytes()
    truncated.write_bytes(data[: len(data) // 2])

    with pytest.raises(StoreError, match="not a SQLite database"):
        admin.restore(database, text)
    with pytest.raises(StoreError, match="not an edgemem store"):
        admin.restore(database, foreign)
    with pytest.raises(StoreError):
        admin.restore(database, truncated)
    with pytest.raises(BadInput):
        admin.restore(database, tmp_path / "missing.db")
    assert digest(database) == before
    assert not Path(f"{database}.pre-restore").exists()
    assert not [p for p in database.parent.iterdir() if p.name.endswith(".tmp")]


def test_restore_refuses_while_a_daemon_holds_the_lock(memory, tmp_path: Path) -> None:
    memory.remember("Served by a running daemon.")
    backup = tmp_path / "backup.db"
    admin.backup(memory.store, backup)
    database = memory.store.path
    memory.store.checkpoint()
    before = digest(database)
    fd = os.open(lock.lock_path(database), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what the daemon holds while it serves
        with pytest.raises(StoreError, match="daemon"):
            admin.restore(database, backup)
    finally:
        os.close(fd)
    assert digest(database) == before
    memory.store.close()
    assert admin.restore(database, backup)["raw_turns"] == 1  # lock released: allowed

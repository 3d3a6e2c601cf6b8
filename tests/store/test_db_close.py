"""Closing the store while another thread writes: close() waits for the transaction in flight, and a
transaction that starts during the close waits for it, instead of using a connection being closed
(a daemon shutting down while a cancelled answer records its trace segfaulted before)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from edgemem.store.db import Store


def test_close_waits_for_a_transaction_in_flight(tmp_path: Path, embedder) -> None:
    store = Store(tmp_path / "s.db", embed_model=embedder.name, dim=embedder.dim)
    store.conn.execute("CREATE TABLE t (x INTEGER)")
    inside, release, done = threading.Event(), threading.Event(), []

    def writer() -> None:
        with store.transaction() as conn:
            conn.execute("INSERT INTO t VALUES (1)")
            inside.set()
            release.wait(5)
            conn.execute("INSERT INTO t VALUES (2)")
        done.append(True)

    thread = threading.Thread(target=writer)
    thread.start()
    assert inside.wait(5)
    closer = threading.Thread(target=store.close)
    closer.start()
    time.sleep(0.2)
    assert closer.is_alive()  # waiting for the writer's transaction
    release.set()
    thread.join(5)
    closer.join(5)
    assert done == [True] and not closer.is_alive()
    with Store(tmp_path / "s.db", embed_model=embedder.name, dim=embedder.dim) as again:
        assert again.conn.execute("SELECT count(*) FROM t").fetchone()[0] == 2

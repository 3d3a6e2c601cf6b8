"""kill -9 in the middle of ingestion: nothing acknowledged is lost, nothing is processed twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from edgemem.ingest.worker import Worker
from edgemem.runtime.fake import HashEmbedder
from edgemem.store import jobs, notes, raw
from edgemem.store.db import Store

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent(
    """
    import sys, time
    from edgemem.ingest.raw import accept_turns
    from edgemem.ingest.worker import Worker
    from edgemem.runtime.fake import HashEmbedder
    from edgemem.store.db import Store

    class SlowStep:
        name = "slow"
        def plan(self, ctx, draft):
            time.sleep(0.05)  # model work happens here, outside any transaction
            return self
        def apply(self, conn, draft, note_id):
            return note_id

    store = Store(sys.argv[1], embed_model="hash-embedder", dim=384)
    embedder = HashEmbedder()
    worker = Worker(store, None, embedder.embed, steps=[SlowStep()])
    for i in range(10_000):
        acc = accept_turns(store, [("Ana", f"turn number {i} about orchids", f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}", None)],
                           kind="conversation", uri="chat")
        print(acc.raw_ids[0], flush=True)  # acknowledged: the transaction has committed
        worker.run_one()
    """
)


def test_kill_9_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, text=True)
    acknowledged: list[int] = []
    deadline = time.monotonic() + 60
    while len(acknowledged) < 40 and time.monotonic() < deadline:
        line = child.stdout.readline()
        if line:
            acknowledged.append(int(line))
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)
    child.stdout.close()
    assert len(acknowledged) >= 40

    store = Store(db, embed_model="hash-embedder", dim=384)
    try:
        assert store.integrity_check() == "ok"
        conn = store.conn
        present = {t.id for t in raw.iter_turns(conn)}
        assert set(acknowledged) <= present
        worker = Worker(store, None, HashEmbedder().embed, steps=[])
        worker.recover()
        worker.drain()
        assert jobs.counts(conn) == {"done": len(present)}
        per_raw = dict(conn.execute("SELECT raw_id, count(*) FROM note_sources GROUP BY raw_id").fetchall())
        assert set(per_raw) == present and set(per_raw.values()) == {1}
        assert notes.count_active(conn) == len(present)
    finally:
        store.close()


def test_failing_job_is_parked_not_lost(tmp_path: Path) -> None:
    from edgemem.ingest.raw import accept_turns

    class Broken:
        name = "broken"

        def plan(self, ctx, draft):
            raise RuntimeError("model exploded")

    store = Store(tmp_path / "m.db", embed_model="hash-embedder", dim=384)
    try:
        acc = accept_turns(store, [(None, "keep me", "2024-01-01T00:00:00", None)], kind="note", uri="notes")
        worker = Worker(store, None, HashEmbedder().embed, steps=[Broken()])
        worker.drain()
        assert jobs.counts(store.conn) == {"parked": 1}
        (parked,) = jobs.parked(store.conn)
        assert parked["attempts"] == jobs.MAX_ATTEMPTS and "model exploded" in parked["last_error"]
        assert raw.get_turn(store.conn, acc.raw_ids[0]).text == "keep me"
    finally:
        store.close()

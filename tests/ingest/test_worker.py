"""The worker owns note insertion: every note job inserts its note once, then the steps organise it.

The gate only decides whether the new note stays new or merges into an existing one; the steps after
it see the note that survives. Real store, hash embedder, no model (the gate's repeat rule merges)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgemem.ingest.gate import GateStep
from edgemem.ingest.raw import accept_turns
from edgemem.ingest.worker import Worker
from edgemem.runtime.fake import HashEmbedder
from edgemem.store import jobs, notes
from edgemem.store.db import Store

HASH = HashEmbedder(384)


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "w.db", embed_model="hash-embedder", dim=384)
    yield s
    s.close()


class Recorder:
    """A write step that records the note id it is handed and whether that note exists and is active."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[int, str | None]] = []

    def plan(self, ctx, draft):
        return self

    def apply(self, conn, draft, note_id):
        found = notes.get(conn, note_id)
        self.seen.append((note_id, found.status if found else None))
        return note_id


def feed(store: Store, steps, turns) -> None:
    accept_turns(store, [(spk, text, when, None) for spk, text, when in turns], kind="conversation", uri="chat")
    Worker(store, None, HASH.embed, steps=steps).drain()
    assert set(jobs.counts(store.conn)) == {"done"}, jobs.parked(store.conn)


def rows(store: Store) -> list[tuple]:
    return [tuple(r) for r in store.conn.execute("SELECT id, status, merged_into FROM notes ORDER BY id")]


def test_without_steps_each_turn_becomes_one_note(store) -> None:
    feed(store, [], [("Ana", "I repot my orchids in spring.", "2024-03-01T09:00:00"),
                     ("Ana", "The kiln at the studio is fixed.", "2024-03-02T09:00:00")])
    assert [status for _, status, _ in rows(store)] == ["active", "active"]


def test_every_step_gets_the_inserted_note_and_later_steps_the_merge_survivor(store) -> None:
    before, after = Recorder(), Recorder()
    feed(store, [before, GateStep(floor=0.3), after], [
        ("Jon", "Thanks, Gina!", "2023-05-08T13:56:00"),
        ("Jon", "Thanks, Gina!", "2023-06-20T10:00:00"),  # a repeat: the gate merges it by rule
    ])
    (first, _, _), (second, status, into) = rows(store)
    assert (status, into) == ("merged", first)  # inserted once, then merged: one row per raw turn
    # A step before the gate sees each new note, active and stored; a step after it sees the survivor.
    assert before.seen == [(first, "active"), (second, "active")]
    assert after.seen == [(first, "active"), (first, "active")]
    assert notes.get(store.conn, first).source_turns == [1, 2]


def test_a_failing_step_leaves_no_note_behind_and_the_job_is_retried(store) -> None:
    class Failing(Recorder):
        def apply(self, conn, draft, note_id):
            super().apply(conn, draft, note_id)
            raise RuntimeError("step failed")

    failing = Failing()
    accept_turns(store, [("Ana", "I repot my orchids in spring.", "2024-03-01T09:00:00", None)],
                 kind="conversation", uri="chat")
    assert Worker(store, None, HASH.embed, steps=[failing]).run_one()
    # The insert and the step share the job's transaction: the failure rolled the insert back.
    assert failing.seen and rows(store) == [] and jobs.counts(store.conn) == {"pending": 1}
    Worker(store, None, HASH.embed, steps=[]).drain()
    assert [status for _, status, _ in rows(store)] == ["active"]


def test_an_aborted_job_stays_queued_without_counting_as_an_attempt(store) -> None:
    """The daemon's shutdown deadline: ``stop`` lets the job in hand finish, ``abort`` interrupts it
    where its model call would stop (check_cancelled), and the job waits for the next start."""
    import threading

    from edgemem.runtime.scheduler import check_cancelled

    entered = threading.Event()

    class Slow(Recorder):  # a plan that only ends when its caller is cancelled, as a long generation would
        def plan(self, ctx, draft):
            entered.set()
            while True:
                check_cancelled("generate")
                threading.Event().wait(0.01)

    accept_turns(store, [("Ana", "I repot my orchids in spring.", "2024-03-01T09:00:00", None)],
                 kind="conversation", uri="chat")
    stop, wake, abort = threading.Event(), threading.Event(), threading.Event()
    worker = Worker(store, None, HASH.embed, steps=[Slow()])
    thread = threading.Thread(target=worker.run_forever, args=(stop, wake), kwargs={"abort": abort, "idle_wait": 0.05})
    thread.start()
    assert entered.wait(10)
    stop.set()
    thread.join(0.3)
    assert thread.is_alive()  # stopping alone waits for the job in hand
    abort.set()
    thread.join(10)
    assert not thread.is_alive()
    assert rows(store) == []
    (row,) = store.conn.execute("SELECT status, attempts, last_error FROM jobs").fetchall()
    assert tuple(row) == ("pending", 0, None)

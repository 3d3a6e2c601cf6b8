"""The worker prepares note jobs in batches (one embedding call), keeps each job's transaction, takes
only model-free steps for file chunks, and waits while an interactive request runs.

Real SQLite with sqlite-vec and the real embedder; the model is scripted (and must not be called for
file chunks)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from edgemem import config
from edgemem.ingest import steps as write_steps
from edgemem.ingest.raw import accept_turns, chunk_document, ingest_file
from edgemem.ingest.worker import Worker, backlog
from edgemem.runtime.fake import ScriptedLLM
from edgemem.runtime.runtime import Runtime
from edgemem.store import jobs, notes
from edgemem.store.db import Store

TURNS = [("Ana" if i % 2 else "Ben", text, f"2024-03-{i + 1:02d}T09:00:00", None) for i, text in enumerate([
    "I repot my orchids in spring.", "The kiln at the studio is fixed.", "We went hiking near the lake yesterday.",
    "My sister Mia starts at the bakery next week.", "The car is parked on level 3.", "I never eat mushrooms.",
    "Book the train to Lisbon for Friday.", "The plumber comes on Thursday at ten.", "Our cat Pixel likes boxes.",
    "I finished the pottery course last month.", "The wifi password is on the fridge.", "Dinner with Priya on Sunday.",
])]


def open_store(path: Path, embedder) -> Store:
    return Store(path, embed_model=embedder.name, dim=embedder.dim)


def vectors_by_raw(store: Store) -> dict[int, np.ndarray]:
    conn = store.conn
    by_note = notes.vectors(conn, notes.active_ids(conn))
    return {notes.get(conn, i).raw_id: v for i, v in by_note.items()}


def sentences_by_raw(store: Store) -> dict[int, np.ndarray]:
    conn = store.conn
    by_note = notes.sentence_vectors(conn, notes.active_ids(conn))
    return {notes.get(conn, i).raw_id: v for i, v in by_note.items()}


def test_batched_embeddings_equal_one_by_one(tmp_path: Path, embedder) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text("# Guide\n\n" + "\n\n".join(f"## Part {i}\n\n" + f"Step {i} of the guide explains the setup. " * (8 + 9 * i)
                                              for i in range(6)) + "\n")
    got, spans = {}, {}
    for batch in (32, 1):
        store = open_store(tmp_path / f"b{batch}.db", embedder)
        try:
            accept_turns(store, TURNS, kind="conversation", uri="chat")
            ingest_file(store, doc, max_bytes=1 << 20)
            worker = Worker(store, None, embedder.embed, steps=[], batch=batch, embed_budget_s=30.0)
            n = worker.drain()
            assert n == len(TURNS) + len(chunk_document(doc.read_text()))
            assert jobs.counts(store.conn) == {"done": n} and backlog(store.conn) == {"records": 0, "jobs": 0}
            assert worker.embed_calls == (n if batch == 1 else 2)  # the first batch is sized cautiously
            got[batch] = vectors_by_raw(store)
            spans[batch] = sentences_by_raw(store)
        finally:
            store.close()
    assert got[32].keys() == got[1].keys()
    for raw_id, v in got[32].items():
        np.testing.assert_allclose(v, got[1][raw_id], atol=1e-5)
    # The guide's chunks have several sentences each (the chat turns one): each chunk's sentence
    # vectors, float16 in the store, are the same batched or not.
    assert len(spans[32]) == len(chunk_document(doc.read_text())) and spans[32].keys() == spans[1].keys()
    for raw_id, v in spans[32].items():
        assert v.shape[0] >= 2
        np.testing.assert_allclose(v, spans[1][raw_id], atol=2e-3)


def test_file_chunks_get_their_heading_path_and_no_model_call(tmp_path: Path, embedder) -> None:
    text = ("# Garden\n\n## Tomatoes\n\n" + "Tomatoes need water every morning in summer. " * 30
            + "\n\n## Basil\n\n" + "The basil grows on the left of the shed near the door. " * 30 + "\n")
    doc = tmp_path / "garden.md"
    doc.write_text(text)
    llm = ScriptedLLM()  # no replies: a model call would fail the job
    store = open_store(tmp_path / "m.db", embedder)
    try:
        acc = ingest_file(store, doc, max_bytes=1 << 20)
        Worker(store, llm, embedder.embed, steps=write_steps.default_steps()).drain()
        assert llm.calls == [] and jobs.counts(store.conn) == {"done": len(acc.raw_ids)}
        contents = [notes.get(store.conn, i).content for i in notes.active_ids(store.conn)]
        assert contents[0].startswith("Garden > Tomatoes\n\n# Garden\n\n## Tomatoes\n\nTomatoes need water")
        assert contents[1].startswith("Garden > Basil\n\n## Basil\n\nThe basil grows")
        stats = dict(store.conn.execute("SELECT name, value FROM stats").fetchall())
        assert stats["notes_model_free"] == len(acc.raw_ids) and "gate_fallback" not in stats
    finally:
        store.close()


class Crash(BaseException):
    """Stands in for kill -9: not an Exception, so the worker does not record it as a job failure."""


class CrashOn:
    name = "crash"

    def __init__(self, text: str) -> None:
        self.text = text

    def plan(self, ctx, draft):
        if self.text in draft.content:
            raise Crash()
        return self

    def apply(self, conn, draft, note_id):
        return note_id


def test_a_crash_mid_batch_leaves_nothing_half_done(tmp_path: Path, embedder) -> None:
    store = open_store(tmp_path / "c.db", embedder)
    try:
        accept_turns(store, TURNS, kind="conversation", uri="chat")
        worker = Worker(store, None, embedder.embed, steps=[CrashOn("hiking")], embed_budget_s=30.0)
        with pytest.raises(Crash):
            worker.drain()
        conn = store.conn
        # Two notes committed with their jobs; the third job was claimed and wrote nothing; the rest
        # were embedded in memory only and are still pending.
        assert jobs.counts(conn) == {"done": 2, "running": 1, "pending": len(TURNS) - 3}
        assert [notes.get(conn, i).content for i in notes.active_ids(conn)] == [TURNS[0][1], TURNS[1][1]]
        restarted = Worker(store, None, embedder.embed, steps=[])
        assert restarted.recover() == 1
        restarted.drain()
        assert jobs.counts(conn) == {"done": len(TURNS)}
        per_raw = dict(conn.execute("SELECT raw_id, count(*) FROM note_sources GROUP BY raw_id").fetchall())
        assert sorted(per_raw) == list(range(1, len(TURNS) + 1)) and set(per_raw.values()) == {1}
    finally:
        store.close()


def test_the_worker_waits_while_an_interactive_request_runs(tmp_path: Path, embedder, settings: config.Settings) -> None:
    runtime = Runtime(settings, llm=ScriptedLLM(default="ok"), embedder=embedder)
    store = open_store(tmp_path / "y.db", embedder)
    try:
        accept_turns(store, TURNS, kind="conversation", uri="chat")
        worker = Worker(store, runtime.background, runtime.embed_background, steps=[], busy=runtime.interactive_busy)
        assert not runtime.interactive_busy()
        runtime.interactive.complete([{"role": "user", "content": "hi"}])  # an answer's stage just ended
        assert runtime.interactive_busy()
        started = time.monotonic()
        assert worker.drain(limit=1) == 1
        assert time.monotonic() - started >= 0.5 and worker.yielded == 1  # it waited for the grace period
        # While a request holds the model, nothing is organised; once it ends the worker goes on.
        hold = threading.Event()

        def ask() -> None:  # a request inside a model call (the runtime counts interactive calls in flight)
            with runtime._activity.hold():
                hold.wait(5)

        asker = threading.Thread(target=ask)
        asker.start()
        time.sleep(0.05)
        drainer = threading.Thread(target=worker.drain)
        drainer.start()
        time.sleep(0.5)
        assert backlog(store.conn)["records"] == len(TURNS) - 1  # nothing done while the request runs
        hold.set()
        asker.join(5)
        drainer.join(60)
        assert backlog(store.conn)["records"] == 0
    finally:
        store.close()
        runtime.close()


def test_back_to_back_requests_cannot_stop_the_write_path(tmp_path: Path, embedder, monkeypatch) -> None:
    """A client that never stops asking (busy all the time) delays the worker by MAX_YIELD_S per step,
    never for good."""
    from edgemem.ingest import worker as worker_mod

    monkeypatch.setattr(worker_mod, "MAX_YIELD_S", 0.3)
    store = open_store(tmp_path / "b.db", embedder)
    try:
        accept_turns(store, TURNS[:2], kind="conversation", uri="chat")
        worker = Worker(store, None, embedder.embed, steps=[], busy=lambda: True)
        started = time.monotonic()
        assert worker.drain() == 2
        assert time.monotonic() - started >= 0.3 and worker.yielded >= 1
        assert jobs.counts(store.conn) == {"done": 2}
    finally:
        store.close()


def test_sentences_are_the_spans_of_three_words_or_more() -> None:
    from edgemem.ingest.notes import MAX_SENTENCES, sentences

    assert sentences("I painted a lake sunrise last year.") == []  # one sentence: the note vector is it
    assert sentences("Wow! I painted a lake sunrise. It hangs in the hall now.") == [
        "Wow! I painted a lake sunrise.", "It hangs in the hall now."]  # "Wow!" joins the next sentence
    assert sentences("Thanks, Mel. Great!") == []
    assert sentences("I ran ten miles today. So tired. Yes!") == ["I ran ten miles today.", "So tired. Yes!"]
    assert sentences("I ran ten miles today. Yes!") == []  # the short tail joins the last span: one span
    long = " ".join(f"Sentence number {i} is here." for i in range(30))
    spans = sentences(long)
    assert len(spans) == 10 and spans[0] == "Sentence number 0 is here. Sentence number 1 is here. Sentence number 2 is here."
    assert len(spans) <= MAX_SENTENCES and " ".join(spans) == long

"""The durable background worker: ``jobs`` rows → notes → organised memory.

A job is claimed in one transaction (status 'running'); its model work happens outside any
transaction; then every write it makes and its completion commit together. A crash between the two
leaves it 'running' with none of its writes, and :func:`recover` puts it back to 'pending' — so
after ``kill -9`` nothing acknowledged is lost and nothing is applied twice. A job that raises is
retried up to ``jobs.MAX_ATTEMPTS`` times, then parked with its error (visible in ``status``).

Batches: when a note job comes up, the worker prepares it together with the note jobs queued behind
it (up to ``BATCH_MAX``): their model-free work (dates, keywords, a file chunk's heading path) and ONE
embedding call, sized so that it takes under ``EMBED_BUDGET_S``. Each job is still claimed, planned
and committed on its own, in order, so a note's plan sees the notes settled before it, and a crash
mid-batch leaves the prepared-but-unclaimed jobs pending with nothing written for them (a prepared
draft lives only in memory). Notes from files (bulk documents) take only the model-free paths of the
steps: the gate, routing and profile calls are meant for conversation turns (a 2 MB file's backlog
had 3 chunks organised after 9 minutes with them).

Yielding: before every job (and before each model step of a conversation turn) the worker waits
while an interactive request is using the model or the embedder (``busy``, from the runtime), so an
``ask`` during a backlog waits at most for the one step or embedding batch already running.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from edgemem.ingest import notes as note_step
from edgemem.ingest.notes import NoteDraft
from edgemem.runtime.scheduler import Cancelled, cancel_scope
from edgemem.store import jobs, notes, raw, stats
from edgemem.store.db import Store

log = logging.getLogger(__name__)

NOTE_JOB = "note"
BATCH_MAX = 32  # note jobs prepared together (one embedding call)
EMBED_BUDGET_S = 0.8  # one batch's embedding: what an interactive request may wait for the embedder
FIRST_BATCH_CHARS = 4_000  # before any embedding was timed: a small first batch
TEXT_OVERHEAD_CHARS = 100  # an embedded text's fixed cost, in characters' worth
MODEL_FREE_KINDS = frozenset({"file"})  # sources whose notes skip model calls: bulk document chunks
MAX_YIELD_S = 10.0  # the longest the worker waits for interactive requests at a time ...
OWN_TURN_S = 2.0  # ... before it works this long without yielding
YIELD_POLL_S = 0.05


@dataclass
class WriteContext:
    """What a write step needs: the store, the background model lane and the embedder."""

    store: Store
    llm: Any  # LLM protocol at background priority, or None when no model is available
    embed: Callable[[list[str]], Any]
    counters: dict[str, int] = field(default_factory=dict)

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n


class WriteStep(Protocol):
    """An organising step of the write path (gate, clusters, evolve, profile...).

    ``plan`` may read the store and call the model, but writes nothing; the plan it returns is applied
    inside the job's transaction (:func:`settle`).
    """

    name: str

    def plan(self, ctx: WriteContext, draft: NoteDraft) -> StepPlan: ...


class StepPlan(Protocol):
    def apply(self, conn: Any, draft: NoteDraft, note_id: int) -> int:
        """Organise note ``note_id`` and return the id later steps should work on: the same note, or
        the existing note it was merged into (only the gate merges, so it runs first)."""
        ...


def settle(conn: Any, draft: NoteDraft, plans: Sequence[StepPlan]) -> int:
    """Insert the draft as a note, then apply the steps' plans in order; returns the id of the note
    the draft became or was merged into. The insert happens here and only here, once per note job,
    so every raw turn has its own note row even when the gate merges it into an older note."""
    note_id = notes.insert(
        conn, raw_ids=draft.raw_ids, content=draft.content, embedding=draft.embedding,
        sentences=draft.sentence_vectors, event_time=draft.event_time,
        context=draft.context, keywords=draft.keywords, entities=draft.entities, tags=draft.tags, dates=draft.dates,
        speaker=draft.speaker,
    )
    for plan in plans:
        note_id = plan.apply(conn, draft, note_id)
    return note_id


def pending_notes(conn: Any, limit: int) -> list[int]:
    """Raw ids of the next pending note jobs in claim order (read only)."""
    rows = conn.execute("SELECT payload FROM jobs WHERE status = 'pending' AND kind = ? ORDER BY priority, id LIMIT ?",
                        (NOTE_JOB, limit))
    return [json.loads(r[0])["raw_id"] for r in rows]


def backlog(conn: Any) -> dict[str, int]:
    """What the worker has left: ``records`` (raw records without their note yet) and ``jobs`` (every
    pending or running job, the follow-up work of clusters and topics included)."""
    rows = conn.execute("SELECT kind = ?, count(*) FROM jobs WHERE status IN ('pending', 'running') GROUP BY 1", (NOTE_JOB,))
    counts = {bool(is_note): n for is_note, n in rows}
    return {"records": counts.get(True, 0), "jobs": counts.get(True, 0) + counts.get(False, 0)}


@dataclass
class Prepared:
    draft: NoteDraft
    model_free: bool


class Worker:
    """Runs jobs until the queue is empty or ``stop`` is set. ``steps`` are the organising steps.

    ``busy`` says an interactive request is running (the worker waits meanwhile); ``embed`` should be
    the runtime's background-priority embedding (the engine passes both)."""

    def __init__(self, store: Store, llm: Any, embed: Callable[[list[str]], Any], steps: list[WriteStep] | None = None,
                 *, busy: Callable[[], bool] | None = None, batch: int = BATCH_MAX,
                 embed_budget_s: float = EMBED_BUDGET_S) -> None:
        self.ctx = WriteContext(store, llm, embed)
        self.busy = busy
        self.steps = steps or []
        self.batch = max(1, batch)
        self.embed_budget_s = embed_budget_s
        self.handlers: dict[str, Callable[[WriteContext, jobs.Job], Callable[[Any], None]]] = {
            NOTE_JOB: self._note_job,
        }
        self.state = "idle"
        self.processed = 0
        self.yielded = 0  # how often the worker waited for an interactive request
        self._own_turn_until = 0.0  # after waiting MAX_YIELD_S, the worker does not yield until then
        self.embed_calls = 0
        self._prepared: dict[int, Prepared] = {}  # raw id -> its draft, embedded, waiting for its job
        self._paths: dict[int, tuple[str | None, int, dict[int, tuple[str, ...]]]] = {}  # source -> heading paths
        self._seconds_per_char: float | None = None  # measured embedding cost
        self._stop: threading.Event | None = None

    # -- note jobs ------------------------------------------------------------------------------
    def _note_job(self, ctx: WriteContext, job: jobs.Job) -> Callable[[Any], None]:
        conn = ctx.store.conn
        raw_id = job.payload["raw_id"]
        turn = raw.get_turn(conn, raw_id)
        if turn is None or notes.by_raw(conn, turn.id):  # forgotten meanwhile, or already derived
            self._prepared.pop(raw_id, None)
            return lambda conn: None
        ready = self._prepared.pop(raw_id, None)
        if ready is None:
            self._prepare(conn, turn)
            ready = self._prepared.pop(raw_id)
        d = ready.draft
        if ready.model_free:
            plan_ctx = WriteContext(ctx.store, None, ctx.embed, ctx.counters)
            plans = [step.plan(plan_ctx, d) for step in self.steps]
            for name in [k for k in ctx.counters if k.endswith("_fallback")]:  # not a failure: by design
                ctx.count(name.removesuffix("_fallback") + "_model_free", ctx.counters.pop(name))
            ctx.count("notes_model_free")
        else:
            plans = []
            for step in self.steps:
                self._yield()
                plans.append(step.plan(ctx, d))

        def apply(conn: Any) -> None:
            settle(conn, d, plans)

        return apply

    def _prepare(self, conn: Any, first: raw.Turn) -> None:
        """Drafts for ``first`` and the note jobs queued after it, embedded in one call."""
        turns = [first]
        if self.batch > 1:
            for raw_id in pending_notes(conn, self.batch):
                if len(turns) >= self.batch:
                    break
                if raw_id == first.id or raw_id in self._prepared:
                    continue
                turn = raw.get_turn(conn, raw_id)
                if turn is not None and not notes.by_raw(conn, turn.id):
                    turns.append(turn)
        allowed = (self.embed_budget_s / self._seconds_per_char) if self._seconds_per_char else FIRST_BATCH_CHARS
        items: list[tuple[raw.Turn, str | None, bool]] = []
        total = 0
        sources: dict[int, Any] = {}
        for turn in turns:
            if turn.source_id not in sources:
                sources[turn.source_id] = raw.source_by_id(conn, turn.source_id)
            source = sources[turn.source_id]
            text = self._note_text(conn, turn, source)
            # The note is embedded whole and sentence by sentence (note_step.sentences): both count.
            total += sum(len(t) + TEXT_OVERHEAD_CHARS for t in [text, *note_step.sentences(text)])
            if items and total > allowed:
                break
            items.append((turn if text == turn.text else dataclasses.replace(turn, text=text),
                          source.title if source else None, source is not None and source.kind in MODEL_FREE_KINDS))
        drafts = note_step.build([(t, title) for t, title, _ in items], self._embed_timed)
        for (turn, _, model_free), d in zip(items, drafts, strict=True):
            self._prepared[turn.id] = Prepared(d, model_free)

    def _embed_timed(self, texts: list[str]) -> Any:
        self._yield()
        started = time.perf_counter()
        vectors = self.ctx.embed(texts)
        took = time.perf_counter() - started
        self.embed_calls += 1
        chars = sum(len(t) + TEXT_OVERHEAD_CHARS for t in texts)
        if chars:
            rate = took / chars
            self._seconds_per_char = rate if self._seconds_per_char is None else 0.7 * self._seconds_per_char + 0.3 * rate
        return vectors

    def _note_text(self, conn: Any, turn: raw.Turn, source: Any) -> str:
        """What the note of ``turn`` says: a file chunk with its heading path and without the
        whitespace around it (the raw chunk keeps that); any other turn as it is."""
        if source is None or source.kind != "file":
            return turn.text
        from edgemem.ingest.raw import heading_paths, is_markdown, prefixed

        key = (source.content_hash, source.id)
        cached = self._paths.get(source.id)
        if cached is None or cached[:2] != key or turn.seq not in cached[2]:
            turns = raw.turns_of_source(conn, source.id)
            paths = heading_paths([t.text for t in turns], is_markdown(source.uri))
            if len(self._paths) >= 8:
                self._paths.clear()
            cached = (*key, {t.seq: p for t, p in zip(turns, paths, strict=True)})
            self._paths[source.id] = cached
        return prefixed(turn.text, cached[2].get(turn.seq, ()))

    def _yield(self) -> None:
        """Wait while an interactive request runs (or until the worker is stopped), at most
        MAX_YIELD_S at a time, then works OWN_TURN_S without yielding: back-to-back requests (a
        client polling ``search``) must not stop the write path for good. The model scheduler still
        serves interactive calls first."""
        if self.busy is None or time.monotonic() < self._own_turn_until or not self.busy():
            return
        self.yielded += 1
        end = time.monotonic() + MAX_YIELD_S
        while self.busy() and not (self._stop is not None and self._stop.is_set()):
            if time.monotonic() >= end:  # starved: work without yielding for a while
                self._own_turn_until = time.monotonic() + OWN_TURN_S
                return
            time.sleep(YIELD_POLL_S)

    # -- the queue ----------------------------------------------------------------------------------
    def recover(self) -> int:
        with self.ctx.store.transaction() as conn:
            return jobs.requeue_running(conn)

    def backlog(self) -> dict[str, int]:
        return backlog(self.ctx.store.conn)

    def run_one(self) -> bool:
        """Process one job; False when none is pending."""
        store = self.ctx.store
        self._yield()
        with store.transaction() as conn:
            job = jobs.claim(conn)
        if job is None:
            self._prepared.clear()  # drafts of jobs that went away (forgotten sources)
            return False
        handler = self.handlers.get(job.kind)
        try:
            if handler is None:
                raise ValueError(f"unknown job kind {job.kind!r}")
            self.ctx.counters = {}
            apply = handler(self.ctx, job)
            with store.transaction() as conn:
                apply(conn)
                for name, n in self.ctx.counters.items():
                    stats.incr(conn, name, n)
                jobs.complete(conn, job.id)
        except Cancelled:  # the daemon is stopping and could not wait for this job: it runs again later
            log.info("job %s (%s) interrupted by the shutdown; it runs again at the next start", job.id, job.kind)
            with store.transaction() as conn:
                jobs.release(conn, job.id)
            return False
        except Exception as exc:  # a failing job must not stop the queue: record it, retry, park
            log.warning("job %s (%s) failed: %s", job.id, job.kind, type(exc).__name__)
            log.debug("job %s failure detail", job.id, exc_info=True)
            with store.transaction() as conn:
                status = jobs.fail(conn, job.id, f"{type(exc).__name__}: {exc}")
                stats.incr(conn, f"jobs_{status}")
        self.processed += 1
        return True

    def drain(self, limit: int | None = None, stop: threading.Event | None = None) -> int:
        done = 0
        self.state = "running"
        self._stop = stop
        try:
            while (limit is None or done < limit) and not (stop and stop.is_set()):
                if not self.run_one():
                    break
                done += 1
        finally:
            self.state = "idle"
        return done

    def run_forever(self, stop: threading.Event, wake: threading.Event, idle_wait: float = 1.0,
                    abort: threading.Event | None = None) -> None:
        """Background loop for the daemon: drain, then sleep until woken or ``idle_wait`` passes.

        ``stop`` lets the job in hand finish; ``abort`` interrupts it too (its model call stops at the
        next token or prefill node, its transaction never happens, and the job stays queued)."""
        self.recover()
        with cancel_scope(abort) if abort is not None else contextlib.nullcontext():
            while not stop.is_set():
                self.drain(stop=stop)
                wake.wait(idle_wait)
                wake.clear()

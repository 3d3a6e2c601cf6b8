"""The durable background worker: ``jobs`` rows → notes → organised memory.

A job is claimed in one transaction (status 'running'); its model work happens outside any
transaction; then every write it makes and its completion commit together. A crash between the two
leaves it 'running' with none of its writes, and :func:`recover` puts it back to 'pending' — so
after ``kill -9`` nothing acknowledged is lost and nothing is applied twice. A job that raises is
retried up to ``jobs.MAX_ATTEMPTS`` times, then parked with its error (visible in ``status``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from edgemem.ingest import notes as note_step
from edgemem.ingest.notes import NoteDraft
from edgemem.store import jobs, notes, raw, stats
from edgemem.store.db import Store

log = logging.getLogger(__name__)


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
        conn, raw_ids=draft.raw_ids, content=draft.content, embedding=draft.embedding, event_time=draft.event_time,
        context=draft.context, keywords=draft.keywords, entities=draft.entities, tags=draft.tags, dates=draft.dates,
        speaker=draft.speaker,
    )
    for plan in plans:
        note_id = plan.apply(conn, draft, note_id)
    return note_id


def _note_job(ctx: WriteContext, job: jobs.Job, steps: list[WriteStep]) -> Callable[[Any], None]:
    conn = ctx.store.conn
    turn = raw.get_turn(conn, job.payload["raw_id"])
    if turn is None or notes.by_raw(conn, turn.id):  # forgotten meanwhile, or already derived
        return lambda conn: None
    source = raw.source_by_id(conn, turn.source_id)
    (d,) = note_step.build([(turn, source.title if source else None)], ctx.embed)
    plans = [step.plan(ctx, d) for step in steps]

    def apply(conn: Any) -> None:
        settle(conn, d, plans)

    return apply


class Worker:
    """Runs jobs until the queue is empty or ``stop`` is set. ``steps`` are the organising steps."""

    def __init__(self, store: Store, llm: Any, embed: Callable[[list[str]], Any], steps: list[WriteStep] | None = None) -> None:
        self.ctx = WriteContext(store, llm, embed)
        self.steps = steps or []
        self.handlers: dict[str, Callable[[WriteContext, jobs.Job], Callable[[Any], None]]] = {
            "note": lambda ctx, job: _note_job(ctx, job, self.steps),
        }
        self.state = "idle"
        self.processed = 0

    def recover(self) -> int:
        with self.ctx.store.transaction() as conn:
            return jobs.requeue_running(conn)

    def run_one(self) -> bool:
        """Process one job; False when none is pending."""
        store = self.ctx.store
        with store.transaction() as conn:
            job = jobs.claim(conn)
        if job is None:
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
        try:
            while (limit is None or done < limit) and not (stop and stop.is_set()):
                if not self.run_one():
                    break
                done += 1
        finally:
            self.state = "idle"
        return done

    def run_forever(self, stop: threading.Event, wake: threading.Event, idle_wait: float = 1.0) -> None:
        """Background loop for the daemon: drain, then sleep until woken or ``idle_wait`` passes."""
        self.recover()
        while not stop.is_set():
            self.drain(stop=stop)
            wake.wait(idle_wait)
            wake.clear()

"""One worker thread per model, a priority queue in front of it (DESIGN Principle 4).

Interactive calls (answering the user) run before background ones (consolidation); within a priority,
first come first served. A model is only ever touched from its worker thread, so llama.cpp's
one-call-at-a-time rule holds however many clients the daemon serves.

Cancellation: a caller runs its work inside :func:`cancel_scope` (the daemon does, per request); a
job carries its submitter's context to the worker thread, so a job whose request was cancelled
while it waited is dropped unrun, and a running generation sees the event through
:func:`check_cancelled` (the model stops at its next token, or aborts its prefill) and raises
:class:`Cancelled`. The worker is then free for the next job at once.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

INTERACTIVE = 0
BACKGROUND = 10
WARM = 20  # warming the prompt cache: whenever the model has nothing else to do

_STOP = object()

_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("edgemem_cancel", default=None)


class Cancelled(BaseException):
    """The work was cancelled by its requester (a client hung up or sent ``cancel``).

    A BaseException, like ``asyncio.CancelledError``: the read path's fallbacks (``except Exception``
    around a model call, e.g. a router falling back to its heuristic) must not swallow it.
    ``completion_tokens`` is what the stopped generation had produced (0 when none was running).
    """

    def __init__(self, message: str = "cancelled", *, completion_tokens: int = 0, stage: str | None = None) -> None:
        super().__init__(message)
        self.completion_tokens = completion_tokens
        self.stage = stage


@contextlib.contextmanager
def cancel_scope(event: threading.Event) -> Iterator[threading.Event]:
    """Work done in this block (and model jobs it submits) stops once ``event`` is set."""
    token = _CANCEL.set(event)
    try:
        yield event
    finally:
        _CANCEL.reset(token)


def current_cancel() -> threading.Event | None:
    """The cancel event of the work running now (on a worker thread: of the job's submitter)."""
    return _CANCEL.get()


def cancelled() -> bool:
    event = _CANCEL.get()
    return event is not None and event.is_set()


def check_cancelled(stage: str | None = None) -> None:
    """Raise :class:`Cancelled` if the work running now was cancelled."""
    if cancelled():
        raise Cancelled(stage=stage)


class Scheduler:
    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._seq = itertools.count()
        self._closed = False
        self.running = 0  # 1 while a job runs on the worker
        self._thread = threading.Thread(target=self._run, name=f"edgemem-{name}", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any, priority: int = INTERACTIVE, **kwargs: Any) -> Future:
        if self._closed:
            raise RuntimeError(f"scheduler {self.name} is closed")
        future: Future = Future()
        # The submitter's context travels with the job: its cancel event, above all.
        context = contextvars.copy_context()
        self._queue.put((priority, next(self._seq), fn, (context, args), kwargs, future))
        return future

    def call(self, fn: Callable[..., T], *args: Any, priority: int = INTERACTIVE, **kwargs: Any) -> T:
        future = self.submit(fn, *args, priority=priority, **kwargs)
        event = _CANCEL.get()
        if event is None:
            return future.result()
        # A cancelled caller stops waiting for a job still queued (the worker drops it unrun).
        while True:
            try:
                return future.result(timeout=0.05)
            except TimeoutError:
                if event.is_set() and future.cancel():
                    raise Cancelled(stage="queued") from None

    def busy(self) -> bool:
        """A job is running on the worker now."""
        return self.running > 0

    def alive(self) -> bool:
        return self._thread.is_alive()

    def pending(self) -> int:
        return self._queue.qsize()

    def _run(self) -> None:
        while True:
            priority, _, fn, (context, args), kwargs, future = self._queue.get()
            if fn is _STOP:
                future.set_result(None)
                return
            if not future.set_running_or_notify_cancel():
                continue
            event = context.get(_CANCEL)
            if event is not None and event.is_set():  # its requester is gone: do not run it
                future.set_exception(Cancelled(stage="queued"))
                continue
            self.running = 1
            try:
                future.set_result(context.run(fn, *args, **kwargs))
            except BaseException as exc:  # handed to the caller, who decides
                future.set_exception(exc)
            finally:
                self.running = 0

    def close(self, timeout: float | None = None) -> None:
        """Finish queued work, then stop the worker (the stop sentinel sorts after everything)."""
        if self._closed:
            return
        self._closed = True
        done: Future = Future()
        self._queue.put((1 << 30, next(self._seq), _STOP, (None, ()), {}, done))
        self._thread.join(timeout)


class Lane:
    """A model seen through a scheduler at a fixed priority: implements the same protocol.

    ``Lane(llm, scheduler, BACKGROUND)`` is what the write path gets; the read path gets the
    INTERACTIVE lane. Streaming callbacks run on the worker thread.
    """

    def __init__(self, model: Any, scheduler: Scheduler, priority: int) -> None:
        self._model = model
        self._scheduler = scheduler
        self.priority = priority

    def __getattr__(self, name: str) -> Any:
        if name in {"complete", "complete_json", "count_tokens", "count_messages", "embed", "keep_prefix"}:
            def scheduled(*args: Any, **kwargs: Any) -> Any:
                # The model is resolved on the worker thread, so a lazy load happens there too.
                return self._scheduler.call(lambda: getattr(self._model, name)(*args, **kwargs), priority=self.priority)

            return scheduled
        return getattr(self._model, name)

"""One worker thread per model, a priority queue in front of it (DESIGN Principle 4).

Interactive calls (answering the user) run before background ones (consolidation); within a priority,
first come first served. A model is only ever touched from its worker thread, so llama.cpp's
one-call-at-a-time rule holds however many clients the daemon serves.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

INTERACTIVE = 0
BACKGROUND = 10

_STOP = object()


class Scheduler:
    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._seq = itertools.count()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"edgemem-{name}", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any, priority: int = INTERACTIVE, **kwargs: Any) -> Future:
        if self._closed:
            raise RuntimeError(f"scheduler {self.name} is closed")
        future: Future = Future()
        self._queue.put((priority, next(self._seq), fn, args, kwargs, future))
        return future

    def call(self, fn: Callable[..., T], *args: Any, priority: int = INTERACTIVE, **kwargs: Any) -> T:
        return self.submit(fn, *args, priority=priority, **kwargs).result()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def pending(self) -> int:
        return self._queue.qsize()

    def _run(self) -> None:
        while True:
            priority, _, fn, args, kwargs, future = self._queue.get()
            if fn is _STOP:
                future.set_result(None)
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to the caller, who decides
                future.set_exception(exc)

    def close(self, timeout: float | None = None) -> None:
        """Finish queued work, then stop the worker (the stop sentinel sorts after everything)."""
        if self._closed:
            return
        self._closed = True
        done: Future = Future()
        self._queue.put((1 << 30, next(self._seq), _STOP, (), {}, done))
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
        if name in {"complete", "complete_json", "count_tokens", "count_messages", "embed"}:
            def scheduled(*args: Any, **kwargs: Any) -> Any:
                # The model is resolved on the worker thread, so a lazy load happens there too.
                return self._scheduler.call(lambda: getattr(self._model, name)(*args, **kwargs), priority=self.priority)

            return scheduled
        return getattr(self._model, name)

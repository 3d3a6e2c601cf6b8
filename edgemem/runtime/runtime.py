"""The loaded models and their schedulers, built from Settings.

The language model loads lazily on its own worker thread (``start_loading`` lets the daemon answer
``status`` while it loads); the embedder loads on first use. ``interactive`` and ``background`` are the
same model seen at two priorities (DESIGN Principle 4).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from edgemem.config import Settings
from edgemem.errors import ModelError
from edgemem.runtime import models, repack
from edgemem.runtime.scheduler import BACKGROUND, INTERACTIVE, WARM, Lane, Scheduler

log = logging.getLogger(__name__)


def repack_decision(settings: Settings, path: Any = None) -> repack.Decision:
    """The CPU weight layout for the configured model (``cpu_repack``; ``auto`` probes once in a child)."""
    if path is None:
        path, _ = models.model_file(settings)
    return repack.resolve(settings.cpu_repack, path, settings.models_dir, threads=settings.threads, n_gpu_layers=settings.n_gpu_layers)


def build_llm(settings: Settings) -> Any:
    """The configured GGUF model: its manifest's context and chat format, threads, GPU layers, CPU
    weight layout, prompt cache."""
    from edgemem.runtime.llm import LlamaCppLLM

    path, manifest = models.model_file(settings)
    decision = repack_decision(settings, path)
    n_ctx = min(settings.n_ctx, manifest.context_length) if manifest else settings.n_ctx
    llm = LlamaCppLLM(
        path,
        name=manifest.name if manifest else path.stem,
        n_ctx=n_ctx,
        n_threads=settings.threads,
        n_gpu_layers=settings.n_gpu_layers,
        chat_format=manifest.chat_format if manifest else None,
        cache_bytes=settings.prompt_cache_mb << 20,
        repack=decision.repack,
    )
    llm.repack_decision = decision
    return llm


class Runtime:
    def __init__(self, settings: Settings, *, llm: Any = None, embedder: Any = None) -> None:
        self.settings = settings
        self._llm = llm
        self._embedder = embedder
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._embed_lock = threading.Lock()  # loading the embedder must not wait for the model
        self._llm_sched = Scheduler("llm")
        self._embed_sched = Scheduler("embed")
        self._activity = _Activity()
        self._warming: list[Future] = []  # queued warm-up jobs: dropped unrun on close
        self.llm_state = "ready" if llm is not None else "not loaded"
        self.llm_error: str | None = None
        self.model_name = getattr(llm, "name", None) or settings.model

    # -- language model ----------------------------------------------------------------------
    def _load_llm(self) -> Any:
        with self._lock:
            if self._llm is not None:
                return self._llm
            self.llm_state = "loading"
            try:
                self._llm = build_llm(self.settings)
            except ModelError as exc:
                self.llm_state, self.llm_error = "failed", str(exc)
                raise
            self.model_name = self._llm.name
            self.llm_state = "ready"
            log.info("model %s loaded", self.model_name)
            return self._llm

    def start_loading(self) -> None:
        """Load the model on its worker thread, ahead of the first request."""
        self._llm_sched.submit(self._load_llm, priority=INTERACTIVE)

    def warm(self, pairs: Sequence[tuple[Sequence[dict], Sequence[dict]]]) -> list[Future]:
        """Queue each prompt kind's static part for the prompt cache (``keep_prefix``), one job per
        kind at the lowest priority: every request and write-path call goes first, and a request
        that comes meanwhile waits for at most one kind's prefill. A job finds the model loaded
        (``start_loading`` runs first) or does nothing: warming never loads it, nor retries a
        load that failed. Nothing is queued when the prompt cache is off."""
        if self.settings.prompt_cache_mb <= 0:
            return []

        def keep(a: Sequence[dict], b: Sequence[dict]) -> int:
            llm = self._llm
            keep_prefix = getattr(llm, "keep_prefix", None)
            return int(keep_prefix(a, b)) if keep_prefix is not None else 0

        jobs = [self._llm_sched.submit(keep, a, b, priority=WARM) for a, b in pairs]
        self._warming.extend(jobs)
        return jobs

    @property
    def warming(self) -> list[Future]:
        """The warm-up jobs queued so far (done, running, waiting or dropped)."""
        return list(self._warming)

    @property
    def llm(self) -> Any:
        return self._llm if self._llm is not None else self._load_llm()

    def lane(self, priority: int) -> Lane:
        return Lane(_Deferred(lambda: self.llm), self._llm_sched, priority)

    @property
    def interactive(self) -> Lane:
        return _Tracked(self.lane(INTERACTIVE), self._activity)  # type: ignore[return-value]

    @property
    def background(self) -> Lane:
        return self.lane(BACKGROUND)

    @property
    def tokenizer(self) -> Any:
        """Exact token counting: the loaded model, or just its vocabulary when it is not loaded."""
        if self._llm is not None:
            return self._llm
        if self._tokenizer is None:
            from edgemem.runtime.llm import LlamaTokenizer

            path, manifest = models.model_file(self.settings)
            n_ctx = min(self.settings.n_ctx, manifest.context_length) if manifest else self.settings.n_ctx
            self._tokenizer = LlamaTokenizer(path, n_ctx)
        return self._tokenizer

    # -- embedder --------------------------------------------------------------------------------
    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            with self._embed_lock:
                if self._embedder is None:
                    from edgemem.runtime.embed import FastEmbedder

                    folder = models.embedding_dir(self.settings)
                    self._embedder = FastEmbedder(self.settings.embed_model, folder, threads=self.settings.embed_threads)
        return self._embedder

    @property
    def embed_dim(self) -> int:
        from edgemem.runtime.embed import DIMS

        if self._embedder is not None:
            return self._embedder.dim
        return DIMS.get(self.settings.embed_model, 384)

    @property
    def embed_name(self) -> str:
        return self._embedder.name if self._embedder is not None else self.settings.embed_model

    def embed(self, texts: list[str], *, priority: int = INTERACTIVE) -> Any:
        if priority > INTERACTIVE:
            return self._embed_sched.call(lambda: self.embedder.embed(texts), priority=priority)
        with self._activity.hold():
            return self._embed_sched.call(lambda: self.embedder.embed(texts), priority=priority)

    def embed_background(self, texts: list[str]) -> Any:
        """The write path's embeddings: queued behind any interactive embedding."""
        return self.embed(texts, priority=BACKGROUND)

    def interactive_busy(self) -> bool:
        """An interactive request is using the model or the embedder, or did a moment ago (the gap
        between the stages of one answer): the background worker waits for it to finish."""
        return self._activity.busy()

    def model_info(self) -> dict[str, Any]:
        """The loaded model's CPU weight layout and prompt-cache accounting (empty before it loads)."""
        llm = self._llm
        out: dict[str, Any] = {}
        decision = getattr(llm, "repack_decision", None)
        if decision is not None:
            out["cpu_repack"] = decision.as_dict()
        elif self.settings.cpu_repack != "auto":
            out["cpu_repack"] = {"setting": self.settings.cpu_repack, "active": self.settings.cpu_repack}
        else:
            name = self.settings.model_path.name if self.settings.model_path else _manifest_file(self.settings)
            remembered = repack.saved(self.settings.models_dir, name) if name else None
            out["cpu_repack"] = remembered or {"setting": "auto", "active": "undecided (probed when the model first loads)"}
        summary = getattr(llm, "cache_summary", None)
        if callable(summary):
            out["prompt_cache"] = summary()
        return out

    def pending(self) -> dict[str, int]:
        return {"llm": self._llm_sched.pending(), "embed": self._embed_sched.pending()}

    def busy(self) -> dict[str, bool]:
        """Which workers are running a job now (the model slot is taken while ``llm`` is true)."""
        return {"llm": self._llm_sched.busy(), "embed": self._embed_sched.busy()}

    def close(self) -> None:
        for job in self._warming:  # a warm-up not started yet is not worth waiting for
            job.cancel()
        self._llm_sched.close(timeout=30)
        self._embed_sched.close(timeout=30)
        # Never close the model under a call still running on its worker (llama.cpp would crash).
        if self._llm is not None and not self._llm_sched.alive():
            self._llm.close()
        if self._tokenizer is not None:
            self._tokenizer.close()


def _manifest_file(settings: Settings) -> str | None:
    try:
        manifest = models.get_manifest(settings.model, settings)
    except Exception:  # an unknown model name is reported where the model is loaded
        return None
    src = manifest.source if isinstance(manifest.source, dict) else {}
    return Path(src["path"]).name if manifest.kind in ("package-file", "file") and "path" in src else manifest.file


class _Activity:
    """Counts interactive calls in flight and remembers when the last one ended."""

    GRACE_S = 1.0  # an answer's stages follow each other within this (retrieval and packing between calls)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._last = float("-inf")

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._lock:
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                self._last = time.monotonic()

    def busy(self) -> bool:
        return self._active > 0 or time.monotonic() - self._last < self.GRACE_S


class _Tracked:
    """The interactive lane, with each model call counted as interactive activity."""

    CALLS = {"complete", "complete_json", "embed"}

    def __init__(self, lane: Lane, activity: _Activity) -> None:
        self._lane = lane
        self._activity = activity

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._lane, name)
        if name not in self.CALLS or not callable(attr):
            return attr

        def tracked(*args: Any, **kwargs: Any) -> Any:
            with self._activity.hold():
                return attr(*args, **kwargs)

        return tracked


class _Deferred:
    """Resolves the model only when an attribute is first needed (i.e. on the worker thread)."""

    def __init__(self, get: Any) -> None:
        self._get = get

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)

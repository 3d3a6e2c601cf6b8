"""The loaded models and their schedulers, built from Settings.

The language model loads lazily on its own worker thread (``start_loading`` lets the daemon answer
``status`` while it loads); the embedder loads on first use. ``interactive`` and ``background`` are the
same model seen at two priorities (DESIGN Principle 4).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from edgemem.config import Settings
from edgemem.errors import ModelError
from edgemem.runtime import models
from edgemem.runtime.scheduler import BACKGROUND, INTERACTIVE, Lane, Scheduler

log = logging.getLogger(__name__)


def build_llm(settings: Settings) -> Any:
    """The configured GGUF model: its manifest's context and chat format, threads, GPU layers, prompt cache."""
    from edgemem.runtime.llm import LlamaCppLLM

    path, manifest = models.model_file(settings)
    n_ctx = min(settings.n_ctx, manifest.context_length) if manifest else settings.n_ctx
    return LlamaCppLLM(
        path,
        name=manifest.name if manifest else path.stem,
        n_ctx=n_ctx,
        n_threads=settings.threads,
        n_gpu_layers=settings.n_gpu_layers,
        chat_format=manifest.chat_format if manifest else None,
        cache_bytes=settings.prompt_cache_mb << 20,
    )


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

    @property
    def llm(self) -> Any:
        return self._llm if self._llm is not None else self._load_llm()

    def lane(self, priority: int) -> Lane:
        return Lane(_Deferred(lambda: self.llm), self._llm_sched, priority)

    @property
    def interactive(self) -> Lane:
        return self.lane(INTERACTIVE)

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

    def embed(self, texts: list[str]) -> Any:
        return self._embed_sched.call(lambda: self.embedder.embed(texts))

    def pending(self) -> dict[str, int]:
        return {"llm": self._llm_sched.pending(), "embed": self._embed_sched.pending()}

    def close(self) -> None:
        self._llm_sched.close(timeout=30)
        self._embed_sched.close(timeout=30)
        # Never close the model under a call still running on its worker (llama.cpp would crash).
        if self._llm is not None and not self._llm_sched.alive():
            self._llm.close()
        if self._tokenizer is not None:
            self._tokenizer.close()


class _Deferred:
    """Resolves the model only when an attribute is first needed (i.e. on the worker thread)."""

    def __init__(self, get: Any) -> None:
        self._get = get

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)

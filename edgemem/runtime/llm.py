"""The language model: an ``LLM`` protocol and its llama.cpp implementation.

- Chat template: the one embedded in the GGUF; the manifest's ``chat_format`` names the fallback for
  files without one (llama-cpp-python would otherwise silently use "llama-2", ENVIRONMENT.md).
- Prompts are rendered and tokenized here, so the token count is exact; a prompt that does not fit
  raises :class:`ContextTooLong` before the model is called (Principle 5).
- Structured replies use llama.cpp's JSON-schema grammar and are validated again in Python
  (Principle 3); a reply that does not validate raises :class:`SchemaError` for the caller's fallback.
- Prompts sharing a prefix reuse the KV cache: llama-cpp-python keeps the evaluated tokens of the last
  call, and with ``cache_bytes`` a bounded cache of prefix KV states (:mod:`edgemem.runtime.prefix_cache`)
  serves interleaved prompt kinds; this is why static prompt parts always come first.
- ``repack=False`` loads without llama.cpp's extra CPU buffer types (repacked / AMX weights), which
  crash on some CPUs; :mod:`edgemem.runtime.repack` decides which one a machine gets.
- One ``Llama`` serves one call at a time: calls are serialised by a lock (and by the scheduler).
- Cancellation (:func:`edgemem.runtime.scheduler.cancel_scope`): a generation stops at its next
  token; a prefill is aborted between compute-graph nodes through llama.cpp's abort callback
  (installed for the prefill only: it is a Python call per graph node). Either raises ``Cancelled``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from edgemem.errors import ContextTooLong, ModelError, SchemaError
from edgemem.runtime import grammar as grammar_sampler
from edgemem.runtime.prefix_cache import KVPrefixes, common_prefix
from edgemem.runtime.scheduler import Cancelled, current_cancel
from edgemem.runtime.schema import validate

log = logging.getLogger(__name__)

Message = dict[str, str]
OnToken = Callable[[str], None]


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    prefill_ms: float
    generate_ms: float
    finish_reason: str = "stop"
    value: Any = None  # the validated object for structured calls
    cached_tokens: int = 0  # prompt tokens the KV cache already held (not evaluated)


class LLM(Protocol):
    """What every pipeline stage needs from a language model."""

    name: str
    n_ctx: int

    def count_tokens(self, text: str) -> int: ...

    def count_messages(self, messages: Sequence[Message]) -> int: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        stop: Sequence[str] | None = None,
        on_token: OnToken | None = None,
    ) -> Completion: ...

    def complete_json(self, messages: Sequence[Message], schema: dict, *, max_tokens: int = 256) -> Completion: ...

    def close(self) -> None: ...


class LlamaCppLLM:
    """A GGUF model run by llama.cpp on CPU, CUDA or Metal (``n_gpu_layers``: 0 CPU, -1 all)."""

    def __init__(
        self,
        path: Path,
        *,
        name: str | None = None,
        n_ctx: int = 8192,
        n_threads: int = 2,
        n_gpu_layers: int = 0,
        chat_format: str | None = None,
        seed: int = 0,
        cache_bytes: int = 0,
        repack: bool = True,
    ) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - installation problem
            raise ModelError(f"llama-cpp-python is not installed ({exc}); reinstall edgemem") from None
        if not Path(path).is_file():
            raise ModelError(f"model file {path} is missing; run `edgemem setup` or `edgemem models pull NAME`")
        self.name = name or Path(path).stem
        self.path = Path(path)
        self.repack = repack
        try:
            with _model_defaults(use_extra_bufts=repack):
                self._llama = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_threads_batch=n_threads,
                    n_gpu_layers=n_gpu_layers,
                    seed=seed,
                    verbose=False,
                )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"cannot load {path}: {exc}") from None
        self.n_ctx = self._llama.n_ctx()
        # Greedy grammar calls check the model's own pick first (edgemem.runtime.grammar).
        self.fast_grammar = grammar_sampler.install(self._llama)
        # Prompt-prefix KV states: router, gate, profile, cluster and answer prompts each start with a
        # static system prompt, and interleaved calls would otherwise re-evaluate it every time.
        self.prefixes = KVPrefixes(self._llama, cache_bytes) if cache_bytes > 0 else None
        self.usage = PrefillLedger()
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self._formatter, self.template_source = _formatter(self._llama, chat_format)
        self._abort_event: threading.Event | None = None  # what the abort callback watches
        self._abort_cb: Any = None  # the ctypes callback, kept alive while installed

    # -- cancellation -----------------------------------------------------------------------------
    def _abort_during_prefill(self, event: threading.Event | None) -> None:
        """Let llama.cpp abort a prompt evaluation once ``event`` is set (None uninstalls)."""
        if self._abort_cb is None and event is None:
            return
        try:
            import llama_cpp

            ctx = self._llama._ctx.ctx
            if event is None:
                llama_cpp.llama_set_abort_callback(ctx, llama_cpp.ggml_abort_callback(), None)
                self._abort_cb = self._abort_event = None
                return
            if self._abort_cb is None:
                def aborted(_data: Any) -> bool:
                    watched = self._abort_event
                    return bool(watched is not None and watched.is_set())

                self._abort_cb = llama_cpp.ggml_abort_callback(aborted)
                llama_cpp.llama_set_abort_callback(ctx, self._abort_cb, None)
            self._abort_event = event
        except (AttributeError, TypeError) as exc:  # another llama-cpp-python: stop at tokens only
            log.debug("no llama.cpp abort callback (%s); a prefill runs to its end", exc)

    # -- tokens ---------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _render(self, messages: Sequence[Message]) -> tuple[list[int], list[str]]:
        rendered = self._formatter(messages=list(messages))
        tokens = self._llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=not getattr(rendered, "added_special", False), special=True)
        stop = rendered.stop if isinstance(rendered.stop, list) else ([rendered.stop] if rendered.stop else [])
        return tokens, stop

    def count_messages(self, messages: Sequence[Message]) -> int:
        return len(self._render(messages)[0])

    def keep_prefix(self, messages: Sequence[Message], other: Sequence[Message]) -> int:
        """Warm the prompt cache with what ``messages`` and ``other`` share: two prompts of one kind
        that differ only in their variable part (the packed context, the question), so that the
        first real prompt of that kind evaluates only its own part. Returns the tokens kept (0 when
        the cache is off, or they were cached already, or too few are shared to be worth keeping)."""
        if self.prefixes is None:
            return 0
        a, _ = self._render(messages)
        b, _ = self._render(other)
        arr = np.asarray(a, dtype=np.intc)
        # Less the token where they part, as KVPrefixes.prepare keeps: a real context's first word
        # may merge into it ("(profile" is one token; the pair's contexts share only the "(").
        shared = common_prefix(arr, np.asarray(b, dtype=np.intc)) - 1
        if shared < self.prefixes.cache.min_tokens or shared >= len(arr):
            return 0
        with self._lock:
            live = common_prefix(np.asarray(self._llama._input_ids, dtype=np.intc), arr[:shared])
            return shared if self.prefixes.keep(arr[:shared], live) else 0

    # -- generation -----------------------------------------------------------------------------
    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        stop: Sequence[str] | None = None,
        on_token: OnToken | None = None,
        grammar: Any = None,
    ) -> Completion:
        tokens, template_stop = self._render(messages)
        if len(tokens) + max_tokens > self.n_ctx:
            raise ContextTooLong(len(tokens) + max_tokens, self.n_ctx)
        stops = [*template_stop, *(stop or [])]
        cancel = current_cancel()
        if cancel is not None and cancel.is_set():
            raise Cancelled(stage="prefill")
        with self._lock:
            start = time.perf_counter()
            first: float | None = None
            parts: list[str] = []
            finish = "stop"
            n_out = 0
            self._abort_during_prefill(cancel)
            try:
                arr = np.asarray(tokens, dtype=np.intc)
                live = common_prefix(np.asarray(self._llama._input_ids, dtype=np.intc), arr)
                restored = self.prefixes.prepare(arr, live) if self.prefixes is not None else 0
                # Prompt tokens this call does not evaluate (llama-cpp-python re-evaluates the last
                # token when the whole prompt is cached).
                reused = min(live + restored, max(len(tokens) - 1, 0))
                chunks = self._llama.create_completion(
                    prompt=tokens,
                    max_tokens=max_tokens,
                    temperature=0.0,
                    top_k=1,
                    repeat_penalty=1.0,
                    stop=stops or None,
                    grammar=grammar,
                    stream=True,
                )
                try:
                    for chunk in chunks:
                        if first is None:
                            first = time.perf_counter()
                            self._abort_during_prefill(None)  # generating: checked per token below
                        if cancel is not None and cancel.is_set():
                            break  # the generator is closed below: llama.cpp stops here
                        choice = chunk["choices"][0]
                        piece = choice.get("text") or ""
                        if piece:
                            n_out += 1
                            parts.append(piece)
                            if on_token is not None:
                                on_token(piece)
                        if choice.get("finish_reason"):
                            finish = choice["finish_reason"]
                finally:
                    chunks.close()
            except Cancelled as exc:  # raised by on_token: its caller stopped listening
                exc.completion_tokens = exc.completion_tokens or n_out
                exc.stage = exc.stage or "generate"
                raise
            except RuntimeError:  # llama_decode returned 2: the prefill was aborted
                if cancel is not None and cancel.is_set():
                    raise Cancelled(stage="prefill", completion_tokens=n_out) from None
                raise
            finally:
                self._abort_during_prefill(None)
            if cancel is not None and cancel.is_set():
                stage = "prefill" if first is None else "generate"
                log.info("generation cancelled after %d of at most %d tokens", n_out, max_tokens)
                raise Cancelled(stage=stage, completion_tokens=n_out)
            end = time.perf_counter()
        first = first or end
        text = "".join(parts)
        completion_tokens = self.count_tokens(text) if text else 0
        prefill_ms = (first - start) * 1000
        self.usage.add(len(tokens), max(len(tokens) - reused, 1), prefill_ms, restored)
        return Completion(
            text=text,
            prompt_tokens=len(tokens),
            completion_tokens=completion_tokens,
            prefill_ms=prefill_ms,
            generate_ms=(end - first) * 1000,
            finish_reason=finish,
            cached_tokens=reused,
        )

    def cache_summary(self) -> dict[str, Any]:
        """The prefix cache's own accounting, plus the prefill time its restored states saved."""
        out: dict[str, Any] = self.prefixes.summary() if self.prefixes is not None else {"capacity_bytes": 0, "bytes": 0}
        out.update(self.usage.summary(out.get("tokens_restored", 0)))
        return out

    def complete_json(self, messages: Sequence[Message], schema: dict, *, max_tokens: int = 256) -> Completion:
        # The schema's own property order, not sorted: the grammar makes the model write properties in
        # this order, so each schema declares the order its step was measured with (profile.schema,
        # gate.schema say why theirs).
        key = json.dumps(schema)
        grammar = self._grammars.get(key)
        if grammar is None:
            from llama_cpp import LlamaGrammar

            grammar = LlamaGrammar.from_json_schema(key, verbose=False)
            self._grammars[key] = grammar
        result = self.complete(messages, max_tokens=max_tokens, grammar=grammar)
        result.value = parse_json(result.text, schema)
        return result

    def close(self) -> None:
        with self._lock:
            llama, self._llama = getattr(self, "_llama", None), None
            if llama is not None:
                llama.close()


@dataclass
class PrefillLedger:
    """Prompt tokens seen and evaluated, and prefill time: what prices the prefix cache's work."""

    calls: int = 0
    prompt_tokens: int = 0
    evaluated_tokens: int = 0
    prefill_ms: float = 0.0
    restored_tokens: int = 0

    def add(self, prompt: int, evaluated: int, prefill_ms: float, restored: int) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.evaluated_tokens += evaluated
        self.prefill_ms += prefill_ms
        self.restored_tokens += restored

    def summary(self, restored: int) -> dict[str, Any]:
        rate = self.evaluated_tokens / (self.prefill_ms / 1000) if self.prefill_ms > 0 else 0.0
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "evaluated_tokens": self.evaluated_tokens,
            "prefill_s": round(self.prefill_ms / 1000, 2),
            "prefill_tok_s": round(rate, 1),
            # What the restored tokens would have cost at this process's measured prefill speed.
            "prefill_saved_s": round(restored / rate, 2) if rate else 0.0,
        }


@contextmanager
def _model_defaults(*, use_extra_bufts: bool) -> Iterator[None]:
    """Build the next ``Llama`` with ``use_extra_bufts`` set (llama-cpp-python has no argument for it).

    ``Llama.__init__`` starts from ``llama_model_default_params()``; this wraps that function for the
    duration of one construction, under a lock so concurrent loads cannot see each other's value.
    The lock also keeps two loads from interleaving llama-cpp-python's redirection of stdout and
    stderr to /dev/null (process-wide; interleaved, the second restores the first's /dev/null).
    """
    import llama_cpp.llama as llama_module

    with _DEFAULTS_LOCK:
        if use_extra_bufts:
            yield
            return
        original = llama_module.llama_cpp.llama_model_default_params

        def defaults() -> Any:
            params = original()
            params.use_extra_bufts = False
            return params

        llama_module.llama_cpp.llama_model_default_params = defaults
        try:
            yield
        finally:
            llama_module.llama_cpp.llama_model_default_params = original


_DEFAULTS_LOCK = threading.Lock()


def parse_json(text: str, schema: dict) -> Any:
    """Decode and validate a structured reply; SchemaError when it is not valid."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"model reply is not JSON ({exc.msg})") from None
    return validate(value, schema)


def _formatter(llama: Any, chat_format: str | None) -> tuple[Any, str]:
    from llama_cpp import llama_chat_format as lcf

    template = llama.metadata.get("tokenizer.chat_template")
    if template:
        def token_text(token_id: int) -> str:
            return llama.detokenize([token_id], special=True).decode("utf-8", errors="ignore") if token_id >= 0 else ""

        formatter = lcf.Jinja2ChatFormatter(
            template=template,
            eos_token=token_text(llama.token_eos()),
            bos_token=token_text(llama.token_bos()),
            stop_token_ids=[llama.token_eos()],
        )
        return formatter, "gguf"
    named = {
        "chatml": getattr(lcf, "format_chatml", None),
        "llama-3": getattr(lcf, "format_llama3", None),
        "gemma": getattr(lcf, "format_gemma", None),
        "qwen": getattr(lcf, "format_qwen", None),
    }.get(chat_format or "")
    if named is None:
        raise ModelError("the model file has no chat template and its manifest names no known chat_format (chatml, llama-3, gemma, qwen)")
    return named, chat_format


class LlamaTokenizer:
    """Only the model's tokenizer (llama.cpp ``vocab_only``): exact token counts without the weights."""

    def __init__(self, path: Path, n_ctx: int) -> None:
        from llama_cpp import Llama

        with _model_defaults(use_extra_bufts=True):
            self._llama = Llama(model_path=str(path), vocab_only=True, verbose=False)
        self.n_ctx = n_ctx

    def count_tokens(self, text: str) -> int:
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def close(self) -> None:
        self._llama.close()

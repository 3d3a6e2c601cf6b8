"""Greedy decoding under a grammar, checking the model's own choice first.

llama-cpp-python samples a grammar-constrained reply with a chain that runs the grammar over the
whole vocabulary before the greedy pick: every token of the reply matches ~150k token texts against
the grammar's stacks. Measured on the 2-core test machine with the default 1.5B model and the
profile step's JSON schema, that decoded 10 tokens/s where the same prompt without a grammar decoded
16-18 (the model's own speed there); the write path's structured calls spent a third of their time
in it.

At temperature 0 the token chosen is the highest-logit token the grammar allows. When the overall
highest-logit token is allowed, that is it, and asking the grammar about that one token is enough;
only when it is rejected do more candidates need checking: the next best few, then, if none of those
is allowed, the whole vocabulary. The chosen token is the same as the stock chain's, so the reply is
the same text; llama.cpp's own sampler does the same ("grammar first" off in its common sampling).

:func:`install` puts this in place of llama-cpp-python's sampler for the calls it serves (a grammar,
greedy, no penalties or logits processors) and leaves every other call to the stock chain. It reaches
into the pinned llama-cpp-python (``Llama._init_sampler`` and the sampler C API); if those are not
as expected it installs nothing and decoding stays on the stock path.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any

import numpy as np

from edgemem.errors import SchemaError

log = logging.getLogger(__name__)

TOP_CANDIDATES = 32  # checked after the best token is rejected, before the whole vocabulary

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.float32), ("p", np.float32)], align=True)


class GreedyGrammar:
    """A sampler object for ``Llama.generate``: ``sample(ctx, idx)`` returns the next token."""

    def __init__(self, llama_cpp: Any, vocab: Any, n_vocab: int, grammar: Any) -> None:
        self._c = llama_cpp
        self.n_vocab = n_vocab
        self._smpl = llama_cpp.llama_sampler_init_grammar(vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self._smpl:
            raise ValueError("llama.cpp rejected the grammar")
        self.checks = {"first": 0, "top": 0, "vocab": 0}  # which stage found each token

    def _allowed(self, ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        """The grammar's verdict on candidates ``ids``: a mask of the allowed ones."""
        data = np.zeros(len(ids), dtype=_TOKEN_DATA)
        data["id"] = ids
        data["logit"] = logits
        array = self._c.llama_token_data_array(
            data=data.ctypes.data_as(ctypes.POINTER(self._c.llama_token_data)), size=len(ids), selected=-1, sorted=False)
        self._c.llama_sampler_apply(self._smpl, ctypes.byref(array))
        return np.isfinite(data["logit"])

    def sample(self, ctx: Any, idx: int = -1) -> int:
        ptr = self._c.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
        best = int(np.argmax(logits))
        one = np.array([best], dtype=np.intc)
        if self._allowed(one, logits[one])[0]:
            token, stage = best, "first"
        else:
            top = np.argpartition(-logits, TOP_CANDIDATES)[:TOP_CANDIDATES].astype(np.intc)
            top = top[np.argsort(-logits[top], kind="stable")]
            ok = self._allowed(top, logits[top])
            if ok.any():
                token, stage = int(top[int(np.argmax(ok))]), "top"
            else:
                ok = self._allowed(np.arange(self.n_vocab, dtype=np.intc), logits)
                if not ok.any():  # the caller takes its fallback, as for any reply that fails its schema
                    raise SchemaError("the grammar allows no next token")
                masked = np.where(ok, logits, -np.inf)
                token, stage = int(np.argmax(masked)), "vocab"
        self._c.llama_sampler_accept(self._smpl, token)
        self.checks[stage] += 1
        return token

    def close(self) -> None:
        if self._smpl:
            self._c.llama_sampler_free(self._smpl)
            self._smpl = None

    def __del__(self) -> None:
        self.close()


def install(llama: Any) -> bool:
    """Route ``llama``'s greedy grammar calls through :class:`GreedyGrammar`; False if it cannot."""
    try:
        import llama_cpp

        stock = llama._init_sampler
        vocab = llama._model.vocab
        n_vocab = int(llama.n_vocab())
        for name in ("llama_sampler_init_grammar", "llama_sampler_apply", "llama_sampler_accept",
                     "llama_sampler_free", "llama_get_logits_ith", "llama_token_data_array", "llama_token_data"):
            getattr(llama_cpp, name)
        if ctypes.sizeof(llama_cpp.llama_token_data) != _TOKEN_DATA.itemsize:
            raise TypeError("llama_token_data is not (int32, float, float)")
    except (AttributeError, ImportError, TypeError) as exc:
        log.info("grammar decoding stays on llama-cpp-python's sampler (%s)", exc)
        return False

    def init_sampler(**kw: Any) -> Any:
        grammar = kw.get("grammar")
        plain = (kw.get("temp") == 0.0 and kw.get("logits_processor") is None and kw.get("repeat_penalty", 1.0) == 1.0
                 and not kw.get("frequency_penalty") and not kw.get("presence_penalty"))
        if grammar is None or not plain:
            return stock(**kw)
        try:
            return GreedyGrammar(llama_cpp, vocab, n_vocab, grammar)
        except ValueError:
            return stock(**kw)

    llama._init_sampler = init_sampler
    return True

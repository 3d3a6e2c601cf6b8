"""A bounded cache of KV states for shared prompt prefixes (``prompt_cache_mb``).

Every prompt kind (router, gate, cluster route, profile, answer, judge) starts with a static system
prompt. llama.cpp reuses the KV cache only for the prefix the new prompt shares with the one evaluated
just before, so interleaved kinds would evaluate their static part again on every call. This cache
keeps the KV state of each shared prefix (llama.cpp's per-sequence state API: the K and V cells of
sequence 0, nothing else) and restores the longest one that a new prompt starts with.

Which prefixes: no caller marks them. The cache remembers the token lists of the last 32 prompts;
when a new prompt shares at least ``min_tokens`` leading tokens with one of them, that common part is
a prefix worth keeping (the static part of a prompt kind shows itself on its second call). States are
evicted least-recently-used so that everything the cache holds, states, keys and remembered prompts,
stays within ``capacity_bytes``.

llama-cpp-python's own ``LlamaRAMCache`` was replaced because each of its entries also copies the
logits array (n_batch x n_vocab floats, ~311 MB for Qwen's vocabulary) that its capacity does not
count: a daemon grew past 7 GB with a 512 MB setting.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

KEY_OVERHEAD = 64  # bytes per entry for the dict slot and the two objects' headers, rounded up


@dataclass
class CacheStats:
    lookups: int = 0
    hits: int = 0  # a cached state gave a longer prefix than the live KV cache
    tokens_restored: int = 0  # prompt tokens not evaluated thanks to a restored state
    saves: int = 0
    evictions: int = 0
    too_big: int = 0  # states larger than the whole capacity, never kept


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


class PrefixCache:
    """Token prefixes → opaque state buffers, LRU, bounded by the bytes held (pure bookkeeping)."""

    def __init__(self, capacity_bytes: int, *, min_tokens: int = 32, history: int = 32) -> None:
        self.capacity = int(capacity_bytes)
        self.min_tokens = min_tokens
        self._entries: OrderedDict[bytes, tuple[np.ndarray, Any]] = OrderedDict()
        self._recent: deque[np.ndarray] = deque(maxlen=history)
        self._state_bytes = 0
        self._key_bytes = 0
        self.stats = CacheStats()

    # -- accounting -------------------------------------------------------------------------------
    @property
    def bytes(self) -> int:
        """Everything the cache holds: states, their keys, and the remembered recent prompts."""
        return self._state_bytes + self._key_bytes + sum(p.nbytes for p in self._recent)

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _size(state: Any) -> int:
        return ctypes.sizeof(state) if isinstance(state, ctypes.Array) else len(state)

    # -- lookups ----------------------------------------------------------------------------------
    def longest(self, tokens: np.ndarray) -> tuple[int, Any]:
        """The longest cached prefix of ``tokens``: (its length, its state), or (0, None)."""
        self.stats.lookups += 1
        best_key, best_len = None, 0
        for key, (prefix, _) in self._entries.items():
            n = len(prefix)
            if best_len < n <= len(tokens) and np.array_equal(prefix, tokens[:n]):
                best_key, best_len = key, n
        if best_key is None:
            return 0, None
        self._entries.move_to_end(best_key)
        return best_len, self._entries[best_key][1]

    def shared_prefix(self, tokens: np.ndarray) -> int:
        """The longest leading run ``tokens`` shares with a recent prompt (0 below ``min_tokens``)."""
        best = max((common_prefix(p, tokens) for p in self._recent), default=0)
        return best if best >= self.min_tokens else 0

    def note_prompt(self, tokens: np.ndarray) -> None:
        self._recent.append(np.array(tokens, dtype=np.intc, copy=True))
        self._shrink()

    # -- updates ----------------------------------------------------------------------------------
    def put(self, prefix: Sequence[int] | np.ndarray, state: Any) -> bool:
        """Keep ``state`` for ``prefix``, evicting the least recently used; False if it cannot fit."""
        prefix = np.array(prefix, dtype=np.intc, copy=True)
        key = prefix.tobytes()
        size = self._size(state)
        cost = size + prefix.nbytes + KEY_OVERHEAD
        if cost > self.capacity:
            self.stats.too_big += 1
            return False
        if key in self._entries:
            self._drop(key)
        self._entries[key] = (prefix, state)
        self._state_bytes += size
        self._key_bytes += prefix.nbytes + KEY_OVERHEAD
        self.stats.saves += 1
        self._shrink()
        return key in self._entries

    def discard(self, prefix: np.ndarray) -> None:
        key = np.asarray(prefix, dtype=np.intc).tobytes()
        if key in self._entries:
            self._drop(key)

    def clear(self) -> None:
        self._entries.clear()
        self._recent.clear()
        self._state_bytes = self._key_bytes = 0

    def _drop(self, key: bytes) -> None:
        prefix, state = self._entries.pop(key)
        self._state_bytes -= self._size(state)
        self._key_bytes -= prefix.nbytes + KEY_OVERHEAD

    def _shrink(self) -> None:
        while self.bytes > self.capacity and self._entries:
            self._drop(next(iter(self._entries)))
            self.stats.evictions += 1
        while self.bytes > self.capacity and self._recent:
            self._recent.popleft()

    def summary(self) -> dict[str, Any]:
        s = self.stats
        return {
            "capacity_bytes": self.capacity,
            "bytes": self.bytes,
            "entries": len(self._entries),
            "lookups": s.lookups,
            "hits": s.hits,
            "hit_rate": round(s.hits / s.lookups, 3) if s.lookups else 0.0,
            "tokens_restored": s.tokens_restored,
            "saves": s.saves,
            "evictions": s.evictions,
        }


class KVPrefixes:
    """The glue between a :class:`PrefixCache` and a live ``llama_cpp.Llama`` (sequence 0 only)."""

    def __init__(self, llama: Any, capacity_bytes: int, *, min_tokens: int = 32) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._llama = llama
        self.cache = PrefixCache(capacity_bytes, min_tokens=min_tokens)

    def prepare(self, arr: np.ndarray, live: int) -> int:
        """Bring the KV cache to the longest known prefix of ``arr`` (the prompt's tokens) before
        generating; ``live`` is how many of them the KV cache holds now.

        Also keeps the prefix this prompt shares with a recent one, when that is new. Returns how
        many prompt tokens a restored state saved from evaluation. llama-cpp-python's ``generate``
        then evaluates only what follows the prefix the KV cache holds.
        """
        cache = self.cache
        known, state = cache.longest(arr)
        restored = 0
        if state is not None and known > live:
            if self._restore(state, arr[:known]):
                restored, live = known - live, known
                cache.stats.hits += 1
                cache.stats.tokens_restored += restored
            else:
                cache.discard(arr[:known])
                known = live = 0
        # Keep all but the last shared token. Where two prompts part, the text after it may merge into
        # it in a third: packs opening "(8 May…" and "(2 June…" share a "(" token, but "(profile" is
        # one token, so a state ending in "(" is a prefix of no profile-led prompt's tokens. A
        # repeated prompt shares all of itself, and its last token's logits are needed anyway.
        shared = max(cache.shared_prefix(arr) - 1, 0)
        cache.note_prompt(arr)
        # Keep a new prefix state only when it is well past what is cached, leaves a suffix to
        # evaluate, and the live KV holds no more of this prompt than the prefix and the one token
        # left out of it (never discard more work than that token).
        if shared - known >= cache.min_tokens and shared < len(arr) and live <= shared + 1:
            self._advance(arr, live, shared)
            saved = self._save()
            if saved is not None:
                cache.put(arr[:shared], saved)
        return restored

    def keep(self, arr: np.ndarray, live: int) -> bool:
        """Cache the KV state of exactly ``arr`` ahead of any prompt that starts with it (a prompt
        kind's static part, warmed before its first call); ``live`` is how many of its tokens the KV
        cache holds now. False when it was cached already or its state cannot be kept."""
        cache = self.cache
        known, state = cache.longest(arr)
        if known == len(arr):
            return False
        if state is not None and known > live and self._restore(state, arr[:known]):
            live = known
        self._advance(arr, live, len(arr))
        saved = self._save()
        return saved is not None and cache.put(arr, saved)

    def _advance(self, arr: np.ndarray, live: int, upto: int) -> None:
        """Make the KV cache hold exactly ``arr[:upto]`` (evaluating what is missing)."""
        llama = self._llama
        llama.n_tokens = live
        if live < upto:
            llama.eval(arr[live:upto].tolist())
        llama._ctx.kv_cache_seq_rm(-1, upto, -1)
        llama.n_tokens = upto
        llama._requires_eval = True  # the logits are not for the prompt's last token

    def _save(self) -> Any:
        lib, ctx = self._lib, self._llama._ctx.ctx
        size = lib.llama_state_seq_get_size(ctx, 0)
        if size <= 0 or size + KEY_OVERHEAD > self.cache.capacity:
            self.cache.stats.too_big += size > 0
            return None
        buf = (ctypes.c_uint8 * size)()
        written = lib.llama_state_seq_get_data(ctx, buf, size, 0)
        return buf if written == size else None

    def _restore(self, state: Any, prefix: np.ndarray) -> bool:
        lib, llama = self._lib, self._llama
        ctx = llama._ctx.ctx
        lib.llama_memory_clear(lib.llama_get_memory(ctx), True)
        ok = lib.llama_state_seq_set_data(ctx, state, ctypes.sizeof(state), 0) > 0
        if not ok:
            lib.llama_memory_clear(lib.llama_get_memory(ctx), True)
            llama.n_tokens = 0
            return False
        n = len(prefix)
        llama.input_ids[:n] = prefix
        llama.n_tokens = n
        llama._requires_eval = True
        return True

    def summary(self) -> dict[str, Any]:
        return self.cache.summary()

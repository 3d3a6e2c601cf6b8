"""The prompt-prefix cache holds at most ``prompt_cache_mb``, every byte counted, and changes speed only."""

from __future__ import annotations

import numpy as np
import pytest

from edgemem.runtime.prefix_cache import KEY_OVERHEAD, PrefixCache, common_prefix


def toks(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.intc)


def test_longest_cached_prefix_wins_and_is_refreshed() -> None:
    cache = PrefixCache(1 << 20, min_tokens=2)
    cache.put(toks(1, 2), b"short")
    cache.put(toks(1, 2, 3, 4), b"long")
    cache.put(toks(9, 9, 9), b"other")
    assert cache.longest(toks(1, 2, 3, 4, 5)) == (4, b"long")
    assert cache.longest(toks(1, 2, 7)) == (2, b"short")
    assert cache.longest(toks(1)) == (0, None)
    assert cache.longest(toks(1, 2, 3)) == (2, b"short")  # a key longer than the prompt never matches


def test_bytes_count_states_keys_and_recent_prompts() -> None:
    cache = PrefixCache(1 << 20, min_tokens=2)
    cache.put(toks(1, 2, 3), b"x" * 1000)
    cache.note_prompt(toks(*range(50)))
    assert cache.bytes == 1000 + 3 * 4 + KEY_OVERHEAD + 50 * 4


def test_many_distinct_prompts_never_exceed_the_capacity() -> None:
    capacity = 64 * 1024
    cache = PrefixCache(capacity, min_tokens=4)
    rng = np.random.default_rng(7)
    for i in range(500):
        prompt = rng.integers(0, 150_000, size=int(rng.integers(20, 400)), dtype=np.intc)
        cache.longest(prompt)
        cache.note_prompt(prompt)
        cache.put(prompt[: len(prompt) // 2], bytes(int(rng.integers(1_000, 20_000))))
        assert cache.bytes <= capacity, i
    assert cache.stats.evictions > 0 and len(cache) >= 1
    assert cache.put(toks(1, 2, 3), bytes(capacity)) is False and cache.stats.too_big == 1


def test_least_recently_used_goes_first() -> None:
    cache = PrefixCache(3 * (100 + 4 + KEY_OVERHEAD), min_tokens=1)
    for key in (1, 2, 3):
        cache.put(toks(key), bytes(100))
    cache.longest(toks(1, 5))  # touch 1
    cache.put(toks(4), bytes(100))
    assert cache.longest(toks(2))[1] is None and cache.longest(toks(1))[1] is not None


def test_shared_prefix_needs_min_tokens() -> None:
    cache = PrefixCache(1 << 20, min_tokens=3)
    cache.note_prompt(toks(1, 2, 3, 4, 5))
    assert cache.shared_prefix(toks(1, 2, 3, 4, 9)) == 4
    assert cache.shared_prefix(toks(1, 2, 8)) == 0
    assert common_prefix(toks(), toks(1)) == 0 and common_prefix(toks(1, 2), toks(1, 2)) == 2


# -- the real thing ------------------------------------------------------------------------------
SYSTEMS = [  # six prompt kinds, each with its own static part (they differ from their first word)
    f"{kind} You sort short personal memories into one of a fixed set of topics. Read the memory, think "
    "about which topic fits best, and answer with the topic's name only. Topics: family, work, health, "
    "travel, hobbies, money, home."
    for kind in ("Router.", "Gate.", "Profile.", "Clusters.", "Answer.", "Judge.")
]


@pytest.mark.model
def test_real_states_stay_within_capacity_and_answer_identically(small_llm) -> None:
    from edgemem.runtime.llm import LlamaCppLLM

    # SmolLM2-135M holds ~23 KB of KV per token, ~1.4 MB per static prefix here: room for the six
    # kinds of the first phase, not for the twelve more of the second.
    capacity = 10 << 20
    cached = LlamaCppLLM(small_llm.path, n_ctx=2048, n_threads=2, cache_bytes=capacity, repack=small_llm.repack)

    def prompt(kind: str, i: int) -> list[dict[str, str]]:
        return [{"role": "system", "content": kind}, {"role": "user", "content": f"Memory {i}: I walked {i} km today."}]

    try:
        for i in range(18):  # interleaved kinds: each one's static part is restored, not re-evaluated
            messages = prompt(SYSTEMS[i % len(SYSTEMS)], i)
            got = cached.complete(messages, max_tokens=4)
            if i % 3 == 0:
                assert got.text == small_llm.complete(messages, max_tokens=4).text
        summary = cached.cache_summary()
        assert summary["hits"] >= 6 and summary["tokens_restored"] > 6 * 40 and summary["evictions"] == 0
        assert summary["prefill_saved_s"] > 0
        for i in range(24):  # twelve more kinds: evictions, never more than the capacity
            cached.complete(prompt(f"Kind {i % 12} of twelve. " + SYSTEMS[0], i), max_tokens=1)
            assert cached.prefixes.cache.bytes <= capacity
        summary = cached.cache_summary()
        assert summary["bytes"] <= summary["capacity_bytes"] == capacity
        assert summary["evictions"] > 0 and summary["calls"] == 42
    finally:
        cached.close()


@pytest.mark.model
def test_a_repeated_prompt_restores_all_but_its_last_token(small_llm) -> None:
    from edgemem.runtime.llm import LlamaCppLLM

    cached = LlamaCppLLM(small_llm.path, n_ctx=2048, n_threads=2, cache_bytes=64 << 20, repack=small_llm.repack)
    try:
        a = [{"role": "system", "content": SYSTEMS[0]}, {"role": "user", "content": "Memory: I planted basil."}]
        b = [{"role": "system", "content": SYSTEMS[1]}, {"role": "user", "content": "Memory: I booked a flight."}]
        n = cached.count_messages(a)
        first = cached.complete(a, max_tokens=4)
        cached.complete(b, max_tokens=4)
        cached.complete(a, max_tokens=4)  # a's whole prompt is now a cached prefix
        cached.complete(b, max_tokens=4)
        again = cached.complete(a, max_tokens=4)
        assert again.text == first.text and again.cached_tokens == n - 1
    finally:
        cached.close()


@pytest.mark.model
def test_a_prefix_kept_from_two_prompts_serves_a_third_whose_text_merges_where_they_part(small_llm) -> None:
    """Two prompts of one kind part after a shared token (the space before "1 January …" and
    "2 February …"); the third merges that space into its first word (" profile" is one token here,
    as "(profile" is for the default model after a shared "("). The state kept from the first two
    must still be a prefix of its tokens: it ends before the token where they part."""
    from edgemem.runtime.llm import LlamaCppLLM

    def prompt(system: str, memory: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": system}, {"role": "user", "content": f"Memory: {memory}"}]

    cached = LlamaCppLLM(small_llm.path, n_ctx=2048, n_threads=2, cache_bytes=64 << 20, repack=small_llm.repack)
    try:
        cached.complete(prompt(SYSTEMS[3], "1 January 2020, A: One."), max_tokens=2)
        cached.complete(prompt(SYSTEMS[3], "2 February 2021, B: Two."), max_tokens=2)  # its shared part is kept
        cached.complete(prompt(SYSTEMS[0], "I booked a flight."), max_tokens=2)  # the live KV holds another kind
        third = prompt(SYSTEMS[3], "profile: maya — diet: pescatarian (identity)")
        system_part = cached.count_messages(prompt(SYSTEMS[3], "")) - 8
        got = cached.complete(third, max_tokens=2)
        assert got.cached_tokens >= system_part > 40
    finally:
        cached.close()


@pytest.mark.model
def test_a_warmed_prefix_serves_the_first_prompt_of_its_kind(small_llm) -> None:
    """``keep_prefix`` caches what two prompts of one kind share, so the first real prompt of that
    kind evaluates only its own part, and answers as an uncached model does."""
    from edgemem.runtime.llm import LlamaCppLLM

    def prompt(system: str, memory: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": system}, {"role": "user", "content": f"Memory: {memory}"}]

    cached = LlamaCppLLM(small_llm.path, n_ctx=2048, n_threads=2, cache_bytes=64 << 20, repack=small_llm.repack)
    off = LlamaCppLLM(small_llm.path, n_ctx=2048, n_threads=2, cache_bytes=0, repack=small_llm.repack)
    try:
        shared = common_prefix(np.asarray(small_llm._render(prompt(SYSTEMS[4], "I planted basil."))[0]),
                               np.asarray(small_llm._render(prompt(SYSTEMS[4], "We moved house."))[0]))
        kept = cached.keep_prefix(prompt(SYSTEMS[4], "I planted basil."), prompt(SYSTEMS[4], "We moved house."))
        assert kept == shared - 1 > 40
        assert cached.keep_prefix(prompt(SYSTEMS[4], "A"), prompt(SYSTEMS[4], "B")) == 0  # cached already
        assert off.keep_prefix(prompt(SYSTEMS[4], "A"), prompt(SYSTEMS[4], "B")) == 0  # no cache, nothing kept
        cached.complete(prompt(SYSTEMS[0], "I booked a flight."), max_tokens=4)  # the live KV holds another kind
        first = prompt(SYSTEMS[4], "I walked 5 km today.")
        got = cached.complete(first, max_tokens=4)
        assert got.cached_tokens >= kept and cached.cache_summary()["hits"] == 1
        assert got.text == small_llm.complete(first, max_tokens=4).text
        # Warmed on contexts opening "1 January …" and "2 February …", which share the space token
        # before them: a real one opening with a word merges that space into it (" profile" is one
        # token here, as "(profile" is for the default model) and still finds the warmed prefix.
        kept = cached.keep_prefix(prompt(SYSTEMS[2], "1 January 2020, A: One."), prompt(SYSTEMS[2], "2 February 2021, B: Two."))
        cached.complete(prompt(SYSTEMS[0], "I booked a flight."), max_tokens=4)
        got = cached.complete(prompt(SYSTEMS[2], "profile: maya — diet: pescatarian (identity)"), max_tokens=4)
        assert kept > 40 and got.cached_tokens >= kept
    finally:
        cached.close()
        off.close()

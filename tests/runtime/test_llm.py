"""Real llama.cpp on the smallest installed GGUF: schema-valid JSON, streaming, typed context errors."""

from __future__ import annotations

import pytest

from edgemem.errors import ContextTooLong, SchemaError
from edgemem.runtime.llm import parse_json

pytestmark = pytest.mark.model

SCHEMA = {
    "type": "object",
    "properties": {
        "mood": {"type": "string", "enum": ["happy", "sad", "neutral"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 24}, "minItems": 1, "maxItems": 3},
    },
    "required": ["mood", "score", "tags"],
    "additionalProperties": False,
}


def test_schema_constrained_json_is_valid(small_llm) -> None:
    messages = [
        {"role": "system", "content": "Classify the user's message. Reply in JSON."},
        {"role": "user", "content": "I finally finished the marathon and I feel amazing!"},
    ]
    result = small_llm.complete_json(messages, SCHEMA, max_tokens=160)
    assert result.value["mood"] in {"happy", "sad", "neutral"}
    assert 0 <= result.value["score"] <= 10
    assert 1 <= len(result.value["tags"]) <= 3
    assert result.prompt_tokens == small_llm.count_messages(messages)


def test_streaming_tokens_join_to_the_text(small_llm) -> None:
    pieces: list[str] = []
    result = small_llm.complete([{"role": "user", "content": "Count from one to five."}], max_tokens=24, on_token=pieces.append)
    assert pieces and "".join(pieces) == result.text
    assert result.completion_tokens > 0 and result.generate_ms >= 0


def test_oversized_prompt_raises_before_calling(small_llm) -> None:
    big = "memory " * (small_llm.n_ctx + 50)
    with pytest.raises(ContextTooLong) as err:
        small_llm.complete([{"role": "user", "content": big}], max_tokens=16)
    assert err.value.tokens > err.value.limit == small_llm.n_ctx
    # The model is still usable afterwards.
    assert small_llm.complete([{"role": "user", "content": "Hi"}], max_tokens=4).completion_tokens >= 0


def test_token_count_uses_the_model_tokenizer(small_llm) -> None:
    assert small_llm.count_tokens("") == 0
    assert small_llm.count_tokens("orchids") >= 1
    assert small_llm.count_tokens("orchids " * 10) > small_llm.count_tokens("orchids")


def test_replies_are_validated_even_under_a_grammar() -> None:
    with pytest.raises(SchemaError):
        parse_json('{"mood": "ecstatic", "score": 3, "tags": ["x"]}', SCHEMA)
    with pytest.raises(SchemaError):
        parse_json("not json", SCHEMA)
    assert parse_json('{"mood": "sad", "score": 3, "tags": ["x"]}', SCHEMA)["mood"] == "sad"


def test_prompt_cache_gives_the_same_replies(small_llm) -> None:
    """A RAM cache of prefix states must change speed only: interleaved prompts answer identically."""
    from edgemem.runtime.llm import LlamaCppLLM

    a = [{"role": "system", "content": "You sort memories into topics."}, {"role": "user", "content": "Topic of: I planted basil."}]
    b = [{"role": "system", "content": "You extract dates."}, {"role": "user", "content": "Date of: we met on 7 May 2023."}]
    plain = [small_llm.complete(m, max_tokens=12).text for m in (a, b, a, b)]
    cached = LlamaCppLLM(small_llm.path, n_ctx=2048, n_threads=2, cache_bytes=256 << 20, repack=small_llm.repack)
    try:
        assert [cached.complete(m, max_tokens=12).text for m in (a, b, a, b)] == plain
    finally:
        cached.close()


def test_the_daemon_and_the_eval_harness_build_the_same_model(settings) -> None:
    """One builder: the configured manifest's model with its context, and the prompt cache when set
    (the harness's own copy once dropped the cache, so evaluations measured a slower system)."""
    import dataclasses

    from edgemem.eval.harness import load_default_llm
    from edgemem.runtime.runtime import Runtime

    chosen = dataclasses.replace(settings, model="smollm2-135m", n_ctx=1024, prompt_cache_mb=64)
    built = [load_default_llm(chosen), Runtime(chosen).llm]
    try:
        for llm in built:
            assert (llm.name, llm.n_ctx) == ("smollm2-135m", 1024)
            assert llm.prefixes is not None and llm.prefixes.cache.capacity == 64 << 20
            assert llm._llama.cache is None  # never llama-cpp-python's own (unbounded) RAM cache
            assert llm.repack_decision.setting == "auto"
        uncached = load_default_llm(dataclasses.replace(chosen, prompt_cache_mb=0))
        assert uncached.prefixes is None
        built.append(uncached)
    finally:
        for llm in built:
            llm.close()


def test_greedy_grammar_decoding_checks_the_models_pick_first_and_replies_as_the_stock_sampler(small_llm) -> None:
    """edgemem.runtime.grammar asks the grammar about the best token only, then the next few, then
    the whole vocabulary; the reply must be the very text llama-cpp-python's own chain gives."""
    from edgemem.runtime.grammar import GreedyGrammar

    llama = small_llm._llama
    assert small_llm.fast_grammar and "_init_sampler" in vars(llama)
    fast = llama._init_sampler
    prompts = ["I finally finished the marathon and I feel amazing!", "My cat died last week.", "Meeting moved to 3pm."]
    used = {"first": 0, "top": 0, "vocab": 0}
    try:
        for text in prompts:
            messages = [{"role": "system", "content": "Classify the user's message. Reply in JSON."}, {"role": "user", "content": text}]
            replies = []
            for path in ("stock", "fast"):
                if path == "stock":
                    del llama._init_sampler  # the class's own method: llama-cpp-python's chain
                else:
                    llama._init_sampler = fast
                llama.reset()  # both evaluate the whole prompt: the same logits
                replies.append(small_llm.complete_json(messages, SCHEMA, max_tokens=160).text)
                sampler = llama._sampler
                assert isinstance(sampler, GreedyGrammar) == (path == "fast")
            for stage, n in sampler.checks.items():
                used[stage] += n
            assert replies[0] == replies[1]
    finally:
        llama._init_sampler = fast
    assert used["first"] > 0 and used["top"] + used["vocab"] > 0, used  # every stage that decided was exercised
    assert sum(used.values()) >= 3 * 5


def test_a_reply_writes_its_properties_in_the_schemas_order(small_llm) -> None:
    """The grammar follows the schema as declared (kind before key in a profile fact), not sorted."""
    schema = {
        "type": "object",
        "properties": {"tags": SCHEMA["properties"]["tags"], "mood": SCHEMA["properties"]["mood"], "kind": {"type": "string", "enum": ["a", "b"]}},
        "required": ["tags", "mood", "kind"],
        "additionalProperties": False,
    }
    messages = [{"role": "system", "content": "Classify the user's message. Reply in JSON."}, {"role": "user", "content": "What a lovely day."}]
    text = small_llm.complete_json(messages, schema, max_tokens=120).text
    assert text.index('"tags"') < text.index('"mood"') < text.index('"kind"')

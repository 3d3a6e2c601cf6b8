"""The grounding judge: skipped on an extractive answer; otherwise it continues the answer prompt so
llama.cpp's KV cache already holds the system prompt and the packed context."""

from __future__ import annotations

from edgemem import prompts
from edgemem.recall.answer import messages_for
from edgemem.recall.validator import extractive, judge_messages, validate
from edgemem.runtime.fake import ScriptedLLM

CONTEXT = (
    "(6 June 2024) Biscuit's vet is Dr. Amelia Patel at the Riverside clinic on Elm Street.\n"
    "(7 June 2024) Biscuit loves the dog park by the river."
)
QUESTION = "Where does Biscuit see the vet?"


def test_an_extractive_answer_skips_the_judge() -> None:
    llm = ScriptedLLM()
    answer = "Biscuit's vet is Dr. Amelia Patel at the Riverside clinic"
    verdict = validate(QUESTION, answer, CONTEXT, llm, prefix=messages_for("targeted-extraction", QUESTION, CONTEXT))
    assert (verdict.grounded, verdict.stage, verdict.judge) == (True, "extractive", "skipped: extractive span of a context line")
    assert not llm.calls
    # every content word in one line, reordered, is extractive too; a word from nowhere is not
    assert extractive("At the Riverside clinic on Elm Street, with Dr. Amelia Patel", CONTEXT)
    assert extractive("At the Riverside clinic on Oak Street, with Dr. Amelia Patel", CONTEXT) is None


def test_otherwise_the_judge_continues_the_answer_prompt() -> None:
    llm = ScriptedLLM(['"no"'])
    prefix = messages_for("targeted-extraction", QUESTION, CONTEXT)
    answer = "Biscuit sees Dr. Patel at a clinic that also treats horses and exotic birds."
    verdict = validate(QUESTION, answer, CONTEXT, llm, prefix=prefix)
    assert (verdict.grounded, verdict.stage, verdict.judge) == (False, "judge", "ran (shared prefix)")
    sent = llm.calls[0].messages
    assert sent[:2] == prefix  # same system and context messages, first and unchanged
    assert sent[2:] == [{"role": "assistant", "content": answer},
                        {"role": "user", "content": prompts.render("validator_followup")}]
    assert llm.calls[0].schema == {"type": "string", "enum": ["yes", "no"]} and llm.calls[0].max_tokens == 8


def test_the_judge_prompt_extends_the_answer_prompt_token_for_token(small_llm) -> None:
    """Through the GGUF's own chat template: the rendered answer prompt is a token prefix of the
    rendered judge prompt, so the judge call re-evaluates only the answer and its own question."""
    prefix = messages_for("targeted-extraction", QUESTION, CONTEXT)
    answer_tokens = small_llm._render(prefix)[0]
    drafted = small_llm.complete(prefix, max_tokens=12)
    judge = judge_messages(prefix, drafted.text.strip() or "Dr. Patel")
    judge_tokens = small_llm._render(judge)[0]
    assert judge_tokens[: len(answer_tokens)] == answer_tokens
    result = small_llm.complete_json(judge, {"type": "string", "enum": ["yes", "no"]}, max_tokens=8)
    assert result.value in {"yes", "no"}
    assert result.cached_tokens >= len(answer_tokens) - 1  # the context was not prefilled a second time

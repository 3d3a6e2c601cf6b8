"""Validator (MemFlow Appendix B.3): is the answer grounded in the packed context?

Three stages, cheapest first: hard-failure detection (empty, ESCALATE_REQUIRED, "not found" patterns:
no model call) → short-answer passthrough (≤ 6 words, numbers, yes/no) → the model as a yes/no
grounding judge (schema-constrained to "yes"/"no", ≤ 8 tokens) with a token-overlap fallback
(τ = 0.07) when the model is unavailable or its reply does not validate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from edgemem import prompts
from edgemem.errors import ContextTooLong, SchemaError
from edgemem.ingest.keywords import STOPWORDS, tokens

OVERLAP_TAU = 0.07
SHORT_WORDS = 6
CONTEXT_CHARS = 6000  # B.3 truncates the context snippet to 6,000 characters

_HARD_FAILURE = re.compile(
    r"escalate[_ ]?required|could not find|couldn'?t find|not (?:mentioned|found|available|specified|stated)|"
    r"no (?:information|mention|record|relevant)|(?:does|do) not (?:mention|say|contain|specify)|"
    r"i (?:do not|don'?t) know|unknown|cannot be determined|there is no",
    re.IGNORECASE,
)
_NUMERIC = re.compile(r"^\s*[-+]?\d[\d,.]*\s*(?:\w+)?\s*\.?\s*$")
_JUDGE_SCHEMA = {"type": "string", "enum": ["yes", "no"]}  # the reply is the JSON string "yes" or "no"


@dataclass
class Verdict:
    grounded: bool
    stage: str  # hard_failure | short_answer | judge | overlap
    score: float | None = None
    tokens: int = 0


def is_hard_failure(answer: str) -> bool:
    return not answer.strip() or bool(_HARD_FAILURE.search(answer))


def is_short(answer: str) -> bool:
    text = answer.strip().rstrip(".")
    return len(text.split()) <= SHORT_WORDS or bool(_NUMERIC.match(text)) or text.lower() in {"yes", "no"}


def overlap(answer: str, context: str) -> float:
    """Share of the answer's content words that appear in the context."""
    words = {t for t in tokens(answer) if t not in STOPWORDS and len(t) > 2}
    if not words:
        return 0.0
    ctx = set(tokens(context))
    return len(words & ctx) / len(words)


_POSSESSIVE = re.compile(r"\b([A-Z][a-z]+)'s\s+([a-z]{3,})\b")
_LINE_SPEAKER = re.compile(r"^\((?:[^,()]*,\s*)?([^,()]+)\)\s")


def wrong_owner(question: str, answer: str, context: str) -> bool:
    """True when every context line holding the answer gives the asked-about thing to someone else.

    LoCoMo's adversarial questions swap the speaker ("What country is Melanie's grandma from?" when
    only Caroline spoke of "my grandma"); a short answer would pass unchecked (B.3 stage 2). The
    packed lines start "(date, speaker)", so "my grandma" in a line spoken by Caroline belongs to
    Caroline. Only an explicit first-person owner who is not the one asked about counts against the
    answer; a line that does not say whose it is never does."""
    asked = _POSSESSIVE.search(question)
    words = {t for t in tokens(answer) if t not in STOPWORDS and len(t) > 2}
    if not asked or not words:
        return False
    owner, thing = asked.group(1), asked.group(2)[:4]  # a prefix: "favorite" / "favourite"
    holding = [line for line in context.splitlines() if words & set(tokens(line))]
    if not holding:
        return False
    for line in holding:
        said_by = _LINE_SPEAKER.match(line)
        speaker = said_by.group(1).strip() if said_by else None
        mine = re.search(rf"\b(?:my|our)\s+(?:\w+\s+)?{re.escape(thing)}", line, re.IGNORECASE)
        if not mine or speaker is None or speaker == owner:
            return False  # this line does not give the thing to someone else
    return True


def validate(question: str, answer: str, context: str, llm: Any | None) -> Verdict:
    if is_hard_failure(answer):
        return Verdict(False, "hard_failure")
    if wrong_owner(question, answer, context):
        return Verdict(False, "wrong_owner")
    if is_short(answer):
        return Verdict(True, "short_answer")
    if llm is not None:
        messages = [
            {"role": "system", "content": prompts.render("validator_system")},
            {"role": "user", "content": prompts.render(
                "validator_user", question=question, context=context[:CONTEXT_CHARS], answer=answer)},
        ]
        try:
            result = llm.complete_json(messages, _JUDGE_SCHEMA, max_tokens=8)
            return Verdict(result.value == "yes", "judge", tokens=result.prompt_tokens + result.completion_tokens)
        except (SchemaError, ContextTooLong):
            pass  # fall through to the deterministic check below (counted by the caller via the stage)
    score = overlap(answer, context)
    return Verdict(score >= OVERLAP_TAU, "overlap", score)

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
from edgemem.text import STOPWORDS, tokens

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
_YOU = re.compile(r"\b(?:you|you're|you've|your|yours)\b", re.IGNORECASE)
_LINE_SPEAKER = re.compile(r"^\((?:[^,()]*,\s*)?([^,()]+)\)\s")


def _answer_words(answer: str) -> set[str]:
    return {t for t in tokens(answer) if t not in STOPWORDS and len(t) > 2}


def _owned_by_other(question: str, answer: str, lines: list[str]) -> bool:
    """"X's <thing>" asked, and every line holding the answer says "my <thing>" in someone else's voice."""
    asked = _POSSESSIVE.search(question)
    words = _answer_words(answer)
    if not asked or not words:
        return False
    owner, thing = asked.group(1), asked.group(2)[:4]  # a prefix: "favorite" / "favourite"
    holding = [line for line in lines if words & set(tokens(line))]
    if not holding:
        return False
    for line in holding:
        said_by = _LINE_SPEAKER.match(line)
        speaker = said_by.group(1).strip() if said_by else None
        mine = re.search(rf"\b(?:my|our)\s+(?:\w+\s+)?{re.escape(thing)}", line, re.IGNORECASE)
        if not mine or speaker is None or speaker == owner:
            return False  # this line does not give the thing to someone else
    return True


def _said_by_other(question: str, answer: str, lines: list[str]) -> bool:
    """The question names one speaker of the context, and the lines that best hold the answer were all
    said by someone else without naming that speaker (a vocative "Wow, Caroline!" does not count)."""
    headers = [_LINE_SPEAKER.match(line) for line in lines]
    speakers = {m.group(1).strip() for m in headers if m}
    asked = [name for name in speakers if re.search(rf"\b{re.escape(name)}\b", question)]
    words = _answer_words(answer)
    if len(asked) != 1 or not words or re.search(r"\d", answer):
        return False  # "7 years": the number is the answer, and "years" alone says nothing about whose
    person = asked[0]
    shared = [len(words & set(tokens(line))) for line in lines]
    best = max(shared, default=0)
    if best == 0 or 2 * best < len(words):
        return False  # no line holds most of the answer: nothing to say whose it is
    named = re.compile(rf"\b{re.escape(person)}\b(?!\s*[,!?.])")
    for line, header, n in zip(lines, headers, shared, strict=True):
        if n != best:
            continue
        body = line[header.end():] if header else ""
        if header is None or header.group(1).strip() == person or named.search(body):
            return False
        if _YOU.search(body):
            return False  # "love your bowls!" gives them to the listener; only "I / my ..." is the speaker's own
    return True


def wrong_owner(question: str, answer: str, context: str) -> bool:
    """True when the context gives the answer to someone other than the person asked about.

    LoCoMo's adversarial questions (category 5) swap the speaker: "What are the new shoes that
    Caroline got used for?" when only Melanie got new shoes. A short answer would pass unchecked
    (B.3 stage 2) and the 1.5B answerer takes the line whoever said it. The packed lines start
    "(date, speaker)", so the speaker of each line is known. Two rules, either suffices:

    * "X's <thing>" is asked and every line holding the answer says "my <thing>" in another voice;
    * the question names exactly one speaker of the context, and every line holding most of the
      answer's words was said by another speaker without naming the one asked about.

    A line that speaks to the listener ("love your bowls!") gives the thing to the listener, and a
    numeric answer ("7 years") is not checked by the second rule: "years" alone says nothing of whose.

    Measured on LoCoMo conv-26 with the turns behind the notes edgemem packed for each of its 199 questions
    (retrieval-only run) and, as the answer, the gold answer (categories 1-4) or the adversarial
    answer (category 5): flagged 22 of 47 adversarial questions and 1 of 152 answerable ones, a
    dataset slip ("Melanie's hand-painted bowl" whose only evidence is Caroline's "my hand-painted
    bowl"). The first rule alone flagged 2 of 47. Without the listener and number exceptions the
    second rule flagged 26 of 47 but 4 of 152.
    """
    lines = context.splitlines()
    return _owned_by_other(question, answer, lines) or _said_by_other(question, answer, lines)


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

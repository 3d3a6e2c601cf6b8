"""The read path, MemFlow Algorithm 1: active-context check → route → tier → pack → answer →
validate → (one escalation along Table 11) → answer or a calibrated abstention.

:func:`run` returns an :class:`Outcome` (the text, the note ids it cites, the trace); the engine
turns it into the user-facing :class:`Answer`. ``now`` is when the question is asked: Tier 3's
date math measures "how long ago" against its day. Every stage's tokens and milliseconds go into
the trace (DESIGN Principle 8). ``on_stage(name, data)`` hears each stage as it is reached (route,
notes, checking, retry), for streaming clients.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from edgemem.recall import answer as answer_agent
from edgemem.recall import packer, tiers, validator
from edgemem.store.notes import Note, speaker_names
from edgemem.text import STOPWORDS, tokens

ABSTAIN = "I could not find reliable information."  # Algorithm 1's calibrated abstention

ACTIVE_OVERLAP = 0.6
ACTIVE_TURNS = 8
GIFT_LINES = 2  # the notes must name someone this often before a gift for them is read from those lines
# Answers drawn from many lines (a summary) or made from them (a suggestion): no one line holds them.
DIGESTS = frozenset({"broad-summarization", "profile-injection"})
_NOT_THEIRS = frozenset({"other_owner", "answer_is_asker", "off_premise"})  # the validator found the answer someone else's

ESCALATION = {  # Table 11: one retry, tag -> heavier tag
    "profile-injection": "targeted-extraction",
    "targeted-extraction": "conflict-resolution",
    "temporal-reasoning": "targeted-extraction",
    "conflict-resolution": "targeted-extraction",
    "broad-summarization": "targeted-extraction",
    "constraint-validation": "targeted-extraction",
    "state-tracking": "conflict-resolution",
}


@dataclass
class Outcome:
    """What :func:`run` produced: the answer text, the note ids it cites, the trace."""

    text: str
    note_ids: list[int] = field(default_factory=list)
    trace: dict = field(default_factory=dict)


@dataclass
class Answer:
    """An answered question as the user sees it: the trace row's id and the cited notes."""

    query_id: str
    question: str
    text: str
    notes: list[Note] = field(default_factory=list)
    trace: dict = field(default_factory=dict)


def _content(text: str) -> set[str]:
    return {t for t in tokens(text) if t not in STOPWORDS}


def active_context(question: str, recent: Sequence[str]) -> str | None:
    """Algorithm 1 stage 1: a recent turn covering ≥ 60% of the question's words answers it."""
    asked = _content(question)
    if not asked or not recent:
        return None
    best, score = None, 0.0
    for turn in recent[-ACTIVE_TURNS:]:
        overlap = len(asked & _content(turn)) / len(asked)
        if overlap > score:
            best, score = turn, overlap
    return best if score >= ACTIVE_OVERLAP else None


def run(
    conn: Any,
    question: str,
    *,
    llm: Any,
    embed: Callable[[list[str]], Any],
    router: Any,
    recent: Sequence[str] = (),
    on_token: Callable[[str], None] | None = None,
    on_reset: Callable[[], None] | None = None,
    on_stage: Callable[[str, dict], None] | None = None,
    retrieval_only: bool = False,
    now: datetime | None = None,
    evidence: Sequence[int] | None = None,
    cluster_model: bool = False,
    question_days: Sequence[tuple[date, date]] = (),
    question_window: Sequence[tuple[date, date]] = (),
) -> Outcome:
    """Answer ``question`` from memory; ``now`` (when it is asked) is the reference date of Tier 3.
    ``evidence`` (note ids) replaces retrieval: the evaluation's reading ceiling. ``cluster_model``:
    the model picks among close clusters (else the centroid margin decides, no model call).
    ``question_days``: the spans of days the question's own dates name, resolved by the caller (the
    engine, with the write path's resolver): a proposal for days a stored plan takes is a clash.
    ``question_window``: those spans and the loose ones ("the next couple of months"): an overview
    of them keeps the notes whose dates fall there."""
    shown = {"any": False}  # has the user seen tokens since the last reset?
    sink = on_token

    def stream(piece: str) -> None:
        shown["any"] = True
        sink(piece)

    def reset() -> None:
        if shown["any"] and on_reset is not None:
            on_reset()
        shown["any"] = False

    on_token = stream if sink is not None else None
    trace: dict[str, Any] = {"system": "edgemem", "stages": {}}
    reference = now.date() if now is not None else None
    if reference is not None:
        trace["reference_date"] = reference.isoformat()
    stages = trace["stages"]
    start = time.perf_counter()

    span = active_context(question, recent)
    if span is not None:
        trace.update(route_tag=None, route_layer="active-context", tier=0)
        _report(on_stage, "route", tag=None, layer="active-context")
        if on_token:
            on_token(span)
        return Outcome(span, [], trace)

    t = time.perf_counter()
    route = router.route(question)
    stages["route"] = {"ms": _ms(t), "tokens": getattr(route, "tokens", 0)}
    trace.update(route_tag=route.tag, route_layer=route.layer, route_tag_first=route.tag)
    _report(on_stage, "route", tag=route.tag, layer=route.layer)
    tag = route.tag
    ceiling = packer.ceiling_for(llm.n_ctx) if not retrieval_only else packer.ceiling_for(8192)
    count = llm.count_tokens

    nothing_packed = False  # the first attempt packed no note: its escalation needs no model call
    # The first answer was given to someone other than the one asked about: the retry's answer must
    # be held by a line about them (LoCoMo's adversarial questions swap the speaker; a wider
    # retrieval otherwise gives the model a second chance to paraphrase past the check).
    owner_strict = False
    digest = route.tag in DIGESTS  # the question asks for a summary or a suggestion, whatever the retry's tag
    computed: tuple[str, list[int]] | None = None  # an answer Tier 3 computed from the notes
    suggest_for: list[tuple[str, list]] = []  # whom a suggestion is for, and the lines naming them
    first_items: list = []
    own_lines: list | None = None  # the question's targeted retrieval, once made (a suggestion reads it)
    for attempt in (0, 1):
        t = time.perf_counter()
        if evidence is None:
            gathered = tiers.gather(conn, tag, question, embed, llm=llm if cluster_model and not retrieval_only else None,
                                    reference=reference, asked_days=question_window)
        else:  # the evaluation's oracle: these notes instead of what retrieval would find
            gathered = tiers.given(conn, tag, evidence)
        notes_budget = None
        gift_asked = gathered.tier == 1 and evidence is None and attempt == 0 and not retrieval_only
        asked_for = answer_agent.gift_for(question) if gift_asked else []
        named = next(((name, lines) for name in asked_for
                      if len(lines := tiers.naming_lines(conn, name, embed)) >= GIFT_LINES), None)
        purpose = None  # a suggestion that is no gift: it must suit what the lines say they like and need
        people: list[tuple[str, list]] = []
        if gift_asked and not asked_for and answer_agent.asks_suggestion(question):  # no store scan otherwise
            people = [(name, lines) for name in answer_agent.suggestion_for(question)
                      if len(lines := tiers.naming_lines(conn, name, embed, needs=True, question=question)) >= GIFT_LINES
                      and answer_agent.is_person(name, lines, question)]
            named = answer_agent.suggested_for(question, people)
            purpose = question
        if attempt == 0:
            suggest_for = people if purpose is not None else [named] if named is not None else []
        if named is not None:
            # A gift for someone: what the lines naming them say they like, read by one small
            # constrained call, is what the suggestion rests on (answer.gift_suggestion); the model's
            # own suggestion from those lines and the user's leads it (answer.free_suggestion).
            # Nothing found, the usual path.
            spent = answer_agent.Drafted(text="")
            gift = answer_agent.gift_suggestion(llm, named[0], named[1], spent=spent, question=purpose)
            free = None
            if gift is not None:
                own = tiers.gather(conn, "targeted-extraction", question, embed, reference=reference).items
                free = answer_agent.free_suggestion(llm, question, answer_agent.suggestion_lines(own, suggest_for),
                                                    spent=spent)
            stages["gift"] = {"ms": _ms(t), "prompt_tokens": spent.prompt_tokens, "completion_tokens": spent.completion_tokens}
            if gift is not None:
                text = f"{free[0]}{gift.basis()}" if free is not None else gift.text()
                cited = list(dict.fromkeys([*(free[1] if free is not None else []), *gift.cited]))
                return _told(text, cited, trace, start, on_token, tier=1, retrieved=cited, used=cited,
                             verdict="computed", escalated=False, final_tag=tag, cited=cited, cite_reason="computed")
        if gathered.tier == 1 and gathered.items and evidence is None:
            # A tailored suggestion needs the notes about what is asked beside the stated likes; one
            # for someone else leans on their facts, not the asker's.
            gathered.items = answer_agent.profile_for(question, gathered.items)
            own_lines = tiers.gather(conn, "targeted-extraction", question, embed, reference=reference).items
            gathered.items += answer_agent.profile_notes(own_lines, question)
            notes_budget = packer.PROFILE_NOTES_BUDGET
        stages[f"retrieve{attempt}"] = {"ms": _ms(t), "tier": gathered.tier, **gathered.info}
        computed = computed or gathered.computed
        if attempt == 0:
            first_items = gathered.items  # what a day asked of the week is read from, if nothing passes
        if tag == "targeted-extraction" and evidence is None and own_lines is None:
            own_lines = gathered.items  # a suggestion's escalation: the user's lines a suggestion reads
        t = time.perf_counter()
        packed = packer.pack(question, tag, gathered.items, count, ceiling=ceiling, tier2_budget=notes_budget)
        stages[f"pack{attempt}"] = {"ms": _ms(t), "tokens": packed.total_tokens, "by_slot": packed.tokens_by_slot}
        if attempt == 0:
            trace.update(tier=gathered.tier, retrieved=gathered.retrieved, packed_tokens=packed.total_tokens,
                         packed_by_slot=packed.tokens_by_slot)
        elif nothing_packed:
            # The first attempt packed nothing (a profile question with no profile): the escalation,
            # made without a model call, is the retrieval the answer comes from (what recall@k ranks).
            trace["retrieved"] = gathered.retrieved
        trace["used"] = [i for i in packed.items_used if i > 0]
        nothing_packed = not packed.items_used
        _report(on_stage, "notes", found=len(gathered.retrieved), packed=len(trace["used"]), tier=gathered.tier,
                attempt=attempt)
        if retrieval_only:
            if not packed.items_used and attempt == 0:  # what answering would do: escalate, no model call
                tag = ESCALATION[tag]
                trace["escalated_to"] = tag
                continue
            trace["total_ms"] = _ms(start)
            return Outcome("", trace["used"], trace)

        if gathered.unheld is not None and attempt == 0:
            # Tier 3 found that the notes say it only of other people ("How many food bank shifts
            # has Sam done?", every such line the asker's): the premise is someone else's, as with an
            # answer refused for its owner, and a retry would only let the model count them anyway.
            trace.update(unheld=True, owner_refused=True)
            break
        if gathered.direct is not None and attempt == 0:
            # Tier 3 read the answer off the notes (an overview: the dated lines about the subject; a
            # state: each reading with its date): no model call, and it quotes the notes it cites, so
            # there is nothing to judge.
            text, cited = gathered.direct
            text = answer_agent.date_not_told(question, text) or text
            return _told(text, cited, trace, start, on_token, verdict="computed", escalated=False, final_tag=tag,
                         cited=cited, cite_reason="computed")
        used = []
        if not packed.items_used:
            text, drafted = answer_agent.ESCALATE, None  # nothing to answer from: no model call
        else:
            t = time.perf_counter()
            used = [e for e in gathered.items if e.note_id in set(packed.items_used)]
            drafted = answer_agent.answer(llm, tag, question, packed.text, used, on_token=on_token,
                                          asked_days=question_days)
            text = drafted.text
            stages[f"answer{attempt}"] = {
                "ms": _ms(t), "prompt_tokens": drafted.prompt_tokens, "completion_tokens": drafted.completion_tokens,
                "prefill_ms": drafted.prefill_ms, "generate_ms": drafted.generate_ms, "tool_calls": drafted.tool_calls,
            }
        if drafted is not None:
            _report(on_stage, "checking", attempt=attempt)
        t = time.perf_counter()
        # The ownership check reads a wider pack than the model (packer.CHECK_BUDGET): it costs no
        # prefill, and whose a line is shows in the lines around it.
        wide = packer.check_budget(tag) if notes_budget is None else None
        owners = packed.text if wide is None else packer.pack(
            question, tag, gathered.items, count, ceiling=ceiling, tier2_budget=wide).text
        # A question whose best lines are all someone else's: its answer must come from a line about
        # the person it names (LoCoMo's adversarial questions ask one speaker what the other did).
        premise = not digest and validator.unheld_premise(question, owners)
        verdict = validator.validate(question, text, packed.text, llm, prefix=drafted.messages if drafted else None,
                                     owner_strict=owner_strict or premise, digest=digest, owner_context=owners,
                                     suggestion=route.tag == "profile-injection",
                                     ruled=drafted is not None and drafted.rule is not None,
                                     speakers=speaker_names(conn))
        stages[f"validate{attempt}"] = {"ms": _ms(t), "stage": verdict.stage, "grounded": verdict.grounded,
                                        "tokens": verdict.tokens, "judge": verdict.judge, "reason": verdict.reason,
                                        "cached_tokens": verdict.cached_tokens, "premise_unheld": premise}
        if verdict.grounded:
            cited, trace["cite_reason"] = answer_agent.citations(conn, question, text, used, drafted)
            if route.tag == "targeted-extraction" and drafted is not None and drafted.rule is None:
                # The validated answer, less the words it repeats from the question (what the
                # stream showed is the model's sentence; the reply's answer is its fact). Its retry
                # too: 9 escalated LoCoMo tune answers, Mem0 F1 35.8 -> 42.3.
                text = answer_agent.fact_only(question, text)
            text = answer_agent.date_not_told(question, text) or text  # "what date?" told "September 2026"
            trace.update(verdict=verdict.stage, escalated=attempt == 1, final_tag=tag, cited=cited)
            trace["pipeline_tokens"] = _pipeline_tokens(stages)
            trace["total_ms"] = _ms(start)
            return Outcome(text, cited, trace)
        if attempt == 0 and verdict.reason in _NOT_THEIRS and validator.names_someone(question, owners):
            # The notes say it of someone other than the person asked about: the question's premise is
            # someone else's (LoCoMo's adversarial questions swap the speaker). A retry with wider
            # retrieval only gives the model a second chance to paraphrase past the check. Measured on
            # LoCoMo's tune conversations (150-question sample): 7 of the 8 first answers refused so
            # were to adversarial questions, and the eighth scored F1 0 after its retry. The user's own
            # name given as a named person's relation ("answer_is_asker") is the same premise.
            trace["owner_refused"] = True
            break
        if attempt == 0:
            owner_strict = verdict.reason == "other_owner" or premise
            tag = ESCALATION[tag]
            trace["escalated_to"] = tag
            _report(on_stage, "retry", tag=tag)
            reset()

    trace["pipeline_tokens"] = _pipeline_tokens(stages)
    trace["total_ms"] = _ms(start)
    reset()
    if computed is None and evidence is None:
        computed = answer_agent.weekday_told(question, first_items)  # "What day of the week was ...?"
    if computed is not None and not trace.get("owner_refused"):
        # Both attempts failed, but Tier 3 read the answer off the notes ("how has my weight
        # changed?": each reading with its date): that, citing the notes it comes from, not "not found".
        text, cited = computed
        return _told(text, cited, trace, start, on_token, verdict="computed", escalated=True, final_tag=tag,
                     cited=cited, cite_reason="computed")
    if (route.tag == "profile-injection" and evidence is None and not trace.get("owner_refused")
            and answer_agent.asks_something_made(question)):
        # A suggestion is never "not found" while there are lines to make one from: the validator
        # rejected both attempts (on the tune personas, 9 of 52 suggestions ended so; the model's
        # own suggestion from the user's lines was right on 5 of them: answer.free_suggestion).
        t = time.perf_counter()
        spent = answer_agent.Drafted(text="")
        if own_lines is None:
            own_lines = tiers.gather(conn, "targeted-extraction", question, embed, reference=reference).items
        free = answer_agent.free_suggestion(llm, question, answer_agent.suggestion_lines(own_lines, suggest_for),
                                            spent=spent)
        stages["suggest"] = {"ms": _ms(t), "prompt_tokens": spent.prompt_tokens, "completion_tokens": spent.completion_tokens}
        if free is not None:
            text, cited = free
            return _told(text, cited, trace, start, on_token, verdict="suggested", escalated=True, final_tag=tag,
                         cited=cited, cite_reason="supporting")
    trace.update(verdict="abstain", escalated=not trace.get("owner_refused"), final_tag=tag)
    if on_token:
        on_token(ABSTAIN)
    return Outcome(ABSTAIN, [], trace)  # an abstention cites nothing; the trace keeps what was seen


def _told(text: str, note_ids: list[int], trace: dict, start: float, on_token: Callable[[str], None] | None,
          **fields: Any) -> Outcome:
    """An answer made without the validator (computed from the notes, or a suggestion), streamed
    whole: ``fields`` go into the trace with the query's tokens and time."""
    trace.update(fields)
    trace["pipeline_tokens"] = _pipeline_tokens(trace["stages"])
    trace["total_ms"] = _ms(start)
    if on_token:
        on_token(text)
    return Outcome(text, note_ids, trace)


def _report(on_stage: Callable[[str, dict], None] | None, name: str, **data: Any) -> None:
    """Tell the caller (a streaming client) which stage the query reached: route, notes, checking, retry."""
    if on_stage is not None:
        on_stage(name, data)


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 1)


def _pipeline_tokens(stages: dict) -> int:
    """Every model token of the query: router, answer rounds (prompt + completion), validator."""
    total = 0
    for name, stage in stages.items():
        if name.startswith("answer") or name in ("gift", "suggest"):
            total += stage["prompt_tokens"] + stage["completion_tokens"]
        elif name == "route" or name.startswith("validate"):
            total += int(stage.get("tokens", 0))
    return total

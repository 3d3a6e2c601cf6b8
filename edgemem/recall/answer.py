"""Answer agent (MemFlow §3.2, Appendix B.2): a tag-specific system prompt over the packed context,
with at most three bounded ``TOOL:`` rounds executed in code (Algorithm 1, lines 7-12).

Tokens stream to ``on_token`` as they are generated; a round that turns out to be a tool call is
not streamed past its ``TOOL:`` line (the user sees answers, not tool syntax).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from nltk.stem import PorterStemmer

from edgemem import prompts
from edgemem.text import MONTH_NAMES, STOPWORDS, day_label
from edgemem.recall import preprocess, tools
from edgemem.errors import ContextTooLong, SchemaError
from edgemem.recall.evidence import ASSISTANT_SPEAKERS, NOW_TERMS, Evidence, answer_terms, parse_iso_day, supporting, terms
from edgemem.recall.limits import limits
from edgemem.recall.rules import (
    CONSTRAINT, DAY_WORD, DAYS, MONTHS_IN_FULL, SENTENCES, WH_QUESTION, RuleVerdict, applies, current_rules, is_proposal,
    names_when, norm, proposes, quoted, rule_verdict,
)

ESCALATE = "ESCALATE_REQUIRED"
ANSWER_TOKENS = 160


@dataclass
class Drafted:
    text: str
    rounds: int = 0
    tool_calls: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prefill_ms: float = 0.0
    generate_ms: float = 0.0
    messages: list[dict[str, str]] = field(default_factory=list)  # the last round's prompt (the judge continues it)
    rule: RuleVerdict | None = None  # set when stored rules decided a yes/no proposal without the model


def system_prompt(tag: str, question: str = "") -> str:
    """The tag's B.2 prompt, its tools' instructions when the question may use them
    (:func:`edgemem.recall.tools.tools_for`), and the grounding instruction. A constraint question asks for a Yes/No
    verdict only when it proposes something (:func:`rules.proposes`): told to open with "Yes — " or
    "No — ", the model did so for "What does Melanie do to keep herself busy …?" too."""
    name = "constraint-proposal" if tag == "constraint-validation" and proposes(question, tag) else tag
    return _system(tag, name, bool(tools.tools_for(tag, question)))


def _system(tag: str, name: str, with_tools: bool) -> str:
    head = prompts.render("answer_" + name)
    if with_tools:  # how to call them, only where a tool may be called
        head = f"{head.rstrip()} {prompts.render('answer_tools_' + tag)}"
    # A suggestion has no "not found": offered the escalation word, the 1.5B model took it on four of
    # five profile questions of the personal tune set whose notes held what to suggest.
    grounding = "answer_grounding_suggest" if tag == "profile-injection" else "answer_grounding"
    return f"{head}\n{prompts.render(grounding)}"


def messages_for(tag: str, question: str, context: str) -> list[dict[str, str]]:
    return _messages(system_prompt(tag, question), question, context)


def _messages(system: str, question: str, context: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": prompts.render("answer_user", context=context, question=question)},
    ]


# The tags in the order the prompt cache is warmed: the most asked first (LoCoMo dev and the personal
# sets: targeted extraction, then temporal questions), since a question can come before the last.
WARM_ORDER = ("targeted-extraction", "temporal-reasoning", "profile-injection", "broad-summarization",
              "state-tracking", "conflict-resolution", "constraint-validation")


def warm_prompts() -> list[tuple[list[dict[str, str]], list[dict[str, str]]]]:
    """Every answer prompt's static part, as pairs of prompts that differ only in their packed context
    and question (``keep_prefix`` keeps what a pair shares: the system prompt and the user turn up to
    the context's first character, less its last token). Every packed line starts with its "(" header
    (:meth:`Evidence.header`), so both contexts do too."""
    pairs = []
    for tag in WARM_ORDER:
        names = ("constraint-proposal", tag) if tag == "constraint-validation" else (tag,)
        for name in names:
            for with_tools in (False, True) if tools.TAG_TOOLS.get(tag) else (False,):
                system = _system(tag, name, with_tools)
                pairs.append((_messages(system, "What was said?", "(1 January 2020, A) One."),
                              _messages(system, "Who said it?", "(2 February 2021, B) Two.")))
    return pairs


_HELD = ("TOOL", ESCALATE)  # reply openings the user must not see: tool syntax, the escalation signal


def _is_held(text: str) -> bool:
    head = text.lstrip(" >*`_-").upper()
    return any(head.startswith(h) for h in _HELD)


def _may_become_held(text: str) -> bool:
    head = text.lstrip(" >*`_-").upper()
    return any(h.startswith(head) for h in _HELD)


class _ToolLineFilter:
    """Forwards streamed text until a TOOL: line or ESCALATE_REQUIRED appears, then holds the rest back."""

    def __init__(self, sink: Callable[[str], None] | None) -> None:
        self.sink = sink
        self.pending = ""
        self.blocked = False

    def __call__(self, piece: str) -> None:
        if self.sink is None or self.blocked:
            return
        self.pending += piece
        lines = self.pending.split("\n")
        for line in lines[:-1]:
            if _is_held(line):
                self.blocked = True
                return
            self.sink(line + "\n")
        self.pending = lines[-1]
        if _is_held(self.pending):
            self.blocked = True
            return
        if _may_become_held(self.pending):
            return  # might be a tool line or the escalation signal: wait for more
        self.sink(self.pending)
        self.pending = ""

    def flush(self) -> None:
        if self.sink is not None and not self.blocked and self.pending and not _is_held(self.pending):
            self.sink(self.pending)
        self.pending = ""


def answer(llm: Any, tag: str, question: str, context: str, evidence: Sequence[Evidence],
           on_token: Callable[[str], None] | None = None, asked_days: Sequence[tuple[date, date]] = ()) -> Drafted:
    messages = messages_for(tag, question, context)
    proposal = proposes(question, tag)
    decided = rule_verdict(question, evidence, context, asked_days=asked_days, proposal=proposal)
    if decided is not None:  # stored rules decide a yes/no proposal: no model call (Principle 2)
        if on_token is not None:
            on_token(decided.text)
        return Drafted(text=decided.text, messages=messages, rule=decided)
    out = Drafted(text="")
    covered = covered_verdict(llm, question, evidence, context, spent=out, proposal=proposal)
    if covered is not None:  # "a stand-up at 8:30" against "no meetings before 9": the model says a stand-up is one
        if on_token is not None:
            on_token(covered.text)
        return covered
    current = current_verdict(llm, tag, question, evidence, context, spent=out)
    if current is not None:  # "Is pottery still on Wednesdays?": a later line that changed it decides
        if on_token is not None:
            on_token(current.text)
        return current
    allowed = tools.tools_for(tag, question)
    while True:
        stream = _ToolLineFilter(on_token)
        result = llm.complete(messages, max_tokens=ANSWER_TOKENS, on_token=stream)
        out.prompt_tokens += result.prompt_tokens
        out.completion_tokens += result.completion_tokens
        out.prefill_ms += result.prefill_ms
        out.generate_ms += result.generate_ms
        call = tools.parse_tool_call(result.text) if allowed else None
        if call is None or out.rounds >= tools.MAX_TOOL_ROUNDS:
            stream.flush()
            out.text = without_verdict(question, _strip_tool_lines(result.text).strip())
            if proposal and tag == CONSTRAINT:
                ruled = with_rule(question, out.text, evidence, context)
                if ruled is not None:  # the model's verdict, the rule it rests on chosen in code
                    out.text, out.rule = ruled.text, ruled
            weekday = weekday_of(question, out.text, evidence, context)
            if weekday:  # "What day of the week is Mum's 80th?" answered "2 June 2026": its weekday, in code
                out.text += weekday
                if on_token is not None:
                    on_token(weekday)
            instead = said_not_told(question, out.text, evidence) or told_instead(question, out.text, evidence)
            told = "" if instead else as_told(question, out.text, evidence)
            if instead:  # "29 May 2023" for "last week" said on 9 June: "The week before 9 June 2023"
                out.text = instead
            if told:  # "8 July 2022" told as "last Friday" on 10 July: " (the Friday before 10 July 2022)"
                out.text += told
                if on_token is not None:
                    on_token(told)
            out.messages = list(messages)
            return out
        out.rounds += 1
        outcome = (tools.execute(call, evidence, question) if call.name in allowed
                   else f"{tools.ERROR_PREFIX}tool not available here")
        out.tool_calls.append(f"{call} -> {outcome}")
        messages = [
            *messages,
            {"role": "assistant", "content": result.text.strip()},
            {"role": "user", "content": f"{tools.RESULT_PREFIX}{outcome}\nNow give the final answer."},
        ]


# --- how things stand now --------------------------------------------------------------------------
# "Is pottery still on Wednesday evenings?", "Did we go to Cornwall at October half term?", "Is Sam
# on day shifts?": a yes/no question about something that may have changed since it was first said.
# Given the whole packed context, the 1.5B model answered "Yes" from the line the question restates,
# with the newer line ("it moves to Tuesday evenings", "had to cancel Cornwall") in context and
# marked outdated (eleventh session, personal tune set); asked "yes, no or unknown?" over the few
# lines about it, it still flipped between runs. What it does decide is a smaller question: does a
# later line cancel, move or replace the line the question restates? When one does, the answer is
# "No", quoting that line; when none does, the ordinary answer follows.
_YES_NO = re.compile(r"^\s*(?:is|are|am|was|were|do|does|did|has|have|had|will)\b", re.IGNORECASE)
_STILL = re.compile(r"\b(?:still|any\s?more|these\s+days|nowadays)\b", re.IGNORECASE)
LATER_LINES = 4  # the newest lines about the same thing the check reads
CURRENT_WORDS = 60  # each line cut to this many words


def asks_current(tag: str, question: str) -> bool:
    """A yes/no question about how something stands: on a conflict route, or asked with "still"."""
    if _YES_NO.match(question) is None or is_proposal(question):
        return False
    return tag == "conflict-resolution" or _STILL.search(question) is not None


def restated_and_later(question: str, evidence: Sequence[Evidence],
                       k: int = LATER_LINES) -> tuple[Evidence, list[Evidence]] | None:
    """The said line the question restates (most of its content terms; the oldest of a tie) and up
    to ``k`` lines said after it that share one of those terms (most shared, then retrieval score),
    oldest first; None when no line shares a term, none comes later, or the question names someone or
    something the line neither is by nor writes. The assistant's echoes only when nobody else's line is there."""
    asked = terms(question) - NOW_TERMS
    said = [e for e in evidence if e.kind == "raw"]
    people = [e for e in said if (e.speaker or "").casefold() not in ASSISTANT_SPEAKERS] or said
    shared = {e.note_id: asked & terms(e.text) for e in people}
    best = max((len(v) for v in shared.values()), default=0)
    if best == 0:
        return None
    first = min((e for e in people if len(shared[e.note_id]) == best), key=lambda e: e.event_time)
    # Every name the question writes (a capitalised word after the first) must be the line's speaker
    # or written in it: "Did Ines change her phone number too?" is not restated by Maya's new number.
    names = {w.casefold().removesuffix("'s") for w in re.findall(r"(?<!^)(?<![.?!] )\b[A-Z][\w'’-]*", question.strip())
             if w != "I" and not w.startswith("I'")}
    line = f"{first.speaker or ''} {first.text}".casefold()
    if any(n not in line for n in names):
        return None  # someone or something else's line: the question's premise is not what it says
    about = shared[first.note_id]
    later = [e for e in people if e.event_time > first.event_time and shared[e.note_id] & about]
    later = sorted(later, key=lambda e: (-len(shared[e.note_id] & about), -e.score))[:k]
    return (first, sorted(later, key=lambda e: e.event_time)) if later else None


def _cut(text: str, words: int = CURRENT_WORDS) -> str:
    parts = text.split()
    return " ".join(parts) if len(parts) <= words else " ".join(parts[:words]) + " …"


def _quote_from(item: Evidence, question: str, flat: str) -> str | None:
    """The sentence of ``item`` to quote: the whole note when the context shows it whole, else the
    shown sentence sharing most of the question's terms; None when the context shows none of it."""
    whole = " ".join(item.text.split())
    if norm(whole) and norm(whole) in flat:
        return whole
    asked = terms(question)
    shown = [s for s in SENTENCES.split(whole) if norm(s) and norm(s) in flat]
    return max(shown, key=lambda s: len(asked & terms(s)), default=None)


def current_verdict(llm: Any, tag: str, question: str, evidence: Sequence[Evidence], context: str, *,
                    spent: Drafted | None = None) -> Drafted | None:
    """'No — as of 28 October 2025, Tom said: "had to cancel Cornwall …"' for a yes/no question
    about how things stand, when a short constrained call per later line (oldest first) finds one that
    cancels, moves or replaces the line the question restates; None (the ordinary answer follows)
    otherwise. The calls' tokens and times are added to ``spent`` (returned, with the text, on a "No")."""
    if llm is None or not asks_current(tag, question):
        return None
    found = restated_and_later(question, evidence)
    if found is None:
        return None
    first, later = found
    schema = {"type": "object", "properties": {"changed": {"type": "boolean"}}, "required": ["changed"],
              "additionalProperties": False}
    spent = spent if spent is not None else Drafted(text="")
    item = None
    for candidate in later:  # oldest first: the first line that changes it; the prompts share their prefix
        messages = [
            {"role": "system", "content": prompts.render("answer_current")},
            {"role": "user", "content": prompts.render("answer_current_user", question=question,
                                                       first=f"{first.header()} {_cut(first.text)}",
                                                       later=f"{candidate.header()} {_cut(candidate.text)}")},
        ]
        value = _ask(llm, messages, schema, spent)
        if value is None:
            return None
        if value["changed"] is True:
            item = candidate
            break
    if item is None:
        return None
    quote = _quote_from(item, question, norm(context))
    if quote is None or '"' in quote:
        return None
    who = f", {item.speaker} said" if item.speaker else ""
    when = f"as of {day_label(item.day)}" if item.day else "later"
    text = f'No — {when}{who}: "{quote}"'
    spent.text, spent.messages, spent.rule = text, messages, RuleVerdict(text, [item], "no")
    return spent


def _ask(llm: Any, messages: list[dict[str, str]], schema: dict, spent: Drafted, *, max_tokens: int = 12) -> dict | None:
    """One short schema-constrained check; its tokens and times are added to ``spent``. None when the
    reply does not parse or the prompt does not fit."""
    try:
        reply = llm.complete_json(messages, schema, max_tokens=max_tokens)
    except (SchemaError, ContextTooLong):
        return None
    spent.prompt_tokens += reply.prompt_tokens
    spent.completion_tokens += reply.completion_tokens
    spent.prefill_ms += reply.prefill_ms
    spent.generate_ms += reply.generate_ms
    return reply.value


_VERDICT_OPENING = re.compile(r"^\s*(?:yes|no)\s*[—–-]+\s*", re.IGNORECASE)


# "No — this is not ok." to "The GP wants to put me on amoxicillin. Is that ok?": the verdict without
# the rule it rests on (tune personas: 2 of 74 constraint answers, both judged wrong for it; the
# check's count showed 2 of 12). The answer quotes the rule the context shows that the question's
# words and retrieval rank closest; a verdict the model gave a reason of its own (any term the
# question does not hold: "Sundays are off limits for work") keeps it.
_NO_REASON = terms("ok okay fine alright good idea allowed possible cannot can")


def with_rule(question: str, text: str, evidence: Sequence[Evidence], context: str) -> RuleVerdict | None:
    """A bare "No" (see above) with the rule it rests on: "No — <the closest rule shown in the
    context>", citing it; None for any other answer (it stands as the model wrote it)."""
    m = re.match(r"^\s*no\b[\s.,!—–-]*", text, re.IGNORECASE)
    if m is None or answer_terms(text[m.end():]) - terms(question) - _NO_REASON:
        return None
    flat = norm(context)
    asked = terms(question)
    found = [(item, quoted(item, sentence), (applies(question, sentence) == "match", names_when(question, sentence)))
             for item, sentence, _ in current_rules(evidence) if norm(quoted(item, sentence)) in flat]
    if not found:
        return None
    # A rule that covers the proposal, and of those one about the day it asks for, before one that only
    # shares words with it: "no client calls on fridays" for a call this Friday, not "no Tokyo trip in
    # March, a video call instead".
    item, rule, _ = max(found, key=lambda f: (f[2], len(asked & terms(f[1])), f[0].score))
    return RuleVerdict(f"No — {rule}", [item], "no")


def without_verdict(question: str, text: str) -> str:
    """A wh-question has no yes/no answer: a "Yes — " or "No — " opening the model put on one goes."""
    if WH_QUESTION.match(question) and _VERDICT_OPENING.match(text):
        rest = _VERDICT_OPENING.sub("", text, count=1)
        return rest[:1].upper() + rest[1:] if rest else text
    return text


_ASKS_WEEKDAY = re.compile(r"\b(?:day\s+of\s+the\s+week|what\s+weekday|which\s+weekday)\b", re.IGNORECASE)
def weekday_of(question: str, text: str, evidence: Sequence[Evidence], context: str) -> str:
    """" (a Tuesday)" for an answer to "what day of the week" that gives one day and no weekday: a
    full date the answer writes (:func:`tools.dates_in_text`), else the day the notes state
    (:func:`tools.known_days`, the context's labels) whose day and month the answer writes
    ("13 September" → 13 September 2025)."""
    if not _ASKS_WEEKDAY.search(question) or DAY_WORD.search(text):
        return ""
    days = {a for _, a, b, _ in tools.dates_in_text(text) if a == b}
    if not days:
        stated = tools.known_days(evidence) | {a for _, a, b, _ in tools.dates_in_text(context) if a == b}
        days = {d for d in stated
                if re.search(rf"\b(?:{day_label(d, year=False)}|{MONTH_NAMES[d.month - 1]} {d.day})\b", text, re.IGNORECASE)}
    if len(days) != 1:
        return ""
    return f" (a {days.pop().strftime('%A')})"


# "What day of the week was Callum's interview at Trafford College?" with the note "interview at
# Trafford on Wednesday [4 February 2026]" packed, and the model answering that it could not find it
# (3 of the 14 tune weekday questions): the day is the note's, the weekday is arithmetic. When no
# answer passed, the event's stored day (tools.ground) gives it: of the 14, the 12 whose event has one
# exact day all got the weekday right; Oskar's "go back aboard at the end of the off-period" got
# another line's day (a wrong answer where there was none). Only a day the line states exactly, from
# a line holding two of the event's words (one, if it has one).
_WEEKDAY_ASKED = re.compile(r"^\W*(?:(?:on|so)\s+)?(?:what|which)\s+(?:day\s+of\s+the\s+week|weekday)\s+"
                            r"(?:is|was|does|did|do|are|were|will)?\s*", re.IGNORECASE)
_WEEKDAY_TAIL = re.compile(r"\s+(?:fall\s+)?on\W*$|\W+$", re.IGNORECASE)


def weekday_told(question: str, evidence: Sequence[Evidence]) -> tuple[str, list[int]] | None:
    """"A Wednesday (4 February 2026)" for "what day of the week was <event>?", from the day stored
    on the line that tells of the event (see above), citing it; None when the question asks no
    weekday or no line states the event's day exactly."""
    m = _WEEKDAY_ASKED.match(question)
    if m is None:
        return None
    event = _WEEKDAY_TAIL.sub("", question[m.end():])
    found = tools.ground(event, evidence)
    if found is None or not found.exact or found.start != found.end or not (found.note_id or 0) > 0:
        return None  # a note's day (a profile fact or computed line cites no note of its own)
    line = next((e for e in evidence if e.note_id == found.note_id), None)
    wanted = terms(event) - NOW_TERMS
    if line is None or len(wanted & terms(line.text)) < min(2, len(wanted)):
        return None
    return f"A {found.start.strftime('%A')} ({found.label})", [found.note_id]


# --- a date as it was told ------------------------------------------------------------------------
# An answer to "When did ...?" gives the day the write path resolved ("8 July 2022"); the note says
# "last Friday", said on 10 July 2022. The resolution is the resolver's reading, the phrase and the
# day it was said are what the user wrote: the answer shows both, "8 July 2022 (the Friday before 10
# July 2022)", which is also how LoCoMo's gold answers write such days. A phrase that names its day
# exactly ("yesterday", "tomorrow", "three days ago") leaves no reading to show: the date alone answers.
# On the LoCoMo tune conversations' 90 temporal questions the 17 such answers all read the date right
# and LoCoMo writes them as the date ("7 May 2023" for "yesterday" said on 8 May): Mem0 F1 56.3 -> 64.3.
_WEEKDAYS = {d[:3]: d.capitalize() for d in DAYS}
_TOLD = re.compile(
    r"^(?:(?P<back>yesterday|last\s+night)|(?P<fwd>tomorrow)"
    r"|(?:(?P<last>last|this\s+past)|(?P<next>next))\s+(?P<unit>week|weekend|month|year|(?P<day>mon|tue|wed|thu|fri|sat|sun)\w*)"
    r"|(?P<count>a\s+few|a\s+couple\s+of|\w+)\s+(?P<units>days|weeks|weekends|months|years)\s+ago)$",
    re.IGNORECASE,
)


def _as_told(phrase: str, said: date) -> str | None:
    """"the Friday before 10 July 2022" for "last Friday" said then; None for a phrase that names no
    day relative to when it was said ("recently", "in June") or names it exactly ("yesterday")."""
    m = _TOLD.match(" ".join(phrase.lower().split()))
    if m is None or m.group("back") or m.group("fwd") or (m.group("units") or "").lower() == "days":
        return None
    when = day_label(said)
    if m.group("units"):
        return f"{m.group('count')} {m.group('units')} before {when}"
    unit = _WEEKDAYS[m.group("day")[:3]] if m.group("day") else m.group("unit")
    return f"the {unit} {'after' if m.group('next') else 'before'} {when}"


def _one_date_given(question: str, text: str) -> date | None:
    """The one date an answer to a when-question gives; None for any other question or answer."""
    if not preprocess.asks_date(question):
        return None
    given = {a for _, a, _, _ in tools.dates_in_text(text)}
    return given.pop() if len(given) == 1 else None


def _told_of(question: str, text: str, evidence: Sequence[Evidence]) -> tuple[str, dict] | None:
    """The phrase (see above) that told the one date an answer to a when-question gives, and the
    stored date it was resolved to; None otherwise."""
    day = _one_date_given(question, text)
    if day is None:
        return None
    for item in evidence:
        said = item.day
        for d in item.dates if said is not None else ():
            if d.get("start") == day.isoformat() and (told := _as_told(d.get("phrase", ""), said)):
                return told, d
    return None


def as_told(question: str, text: str, evidence: Sequence[Evidence]) -> str:
    """" (the Friday before 10 July 2022)" for an answer to a when-question that gives one date, the
    day a note resolved from a phrase relative to when it was said (see above); "" otherwise."""
    found = _told_of(question, text, evidence)
    return "" if found is None or found[0] in text else f" ({found[0]})"


def said_not_told(question: str, text: str, evidence: Sequence[Evidence]) -> str | None:
    """The event's day in place of the day its line was said: "When did Maria's grandma pass away?"
    answered "6 March 2023", the header of "Last week [week of 27 February 2023], my grandma passed
    away", said on 6 March, is "The week before 6 March 2023". Only for an answer to a when-question
    giving one date that is the day some lines were said, each stating one earlier day; of those, the
    line the question's words ground to (:func:`tools.ground`), told as :func:`told_instead` and
    :func:`as_told` tell it. None otherwise."""
    day = _one_date_given(question, text)
    if day is None:
        return None
    lines = [e for e in evidence if e.day == day and e.note_id > 0 and len(e.dates) == 1
             and (parse_iso_day(e.dates[0].get("start")) or day) < day]
    if not lines:
        return None
    found = tools.ground(WH_QUESTION.sub("", question, count=1), lines)
    line = next((e for e in lines if found is not None and e.note_id == found.note_id), None)
    if line is None:
        return None
    d = line.dates[0]
    told = _as_told(d.get("phrase", ""), day)
    start = parse_iso_day(d.get("start"))
    if told is None or start is None:
        return None
    if d.get("end", d.get("start")) != d.get("start") or d.get("approximate"):
        return _stretch_told(d, told)
    return f"{day_label(start)} ({told})"


def _stretch_told(stored: dict, told: str) -> str:
    """A stretch as an answer: a month or a year by its name ("last month" said on 18 April 2023 is
    "March 2023", not "the month before 18 April 2023"), a week or a weekend as told ("The week before
    9 June 2023")."""
    start = parse_iso_day(stored.get("start"))
    if start is not None and stored.get("granularity") == "month":
        return f"{MONTH_NAMES[start.month - 1]} {start.year}"
    if start is not None and stored.get("granularity") == "year":
        return str(start.year)
    return told[:1].upper() + told[1:]


def told_instead(question: str, text: str, evidence: Sequence[Evidence]) -> str | None:
    """"The week before 9 June 2023" in place of an answer giving "29 May 2023", the first day of the
    week a note told as "last week" on 9 June: the day is the resolver's bound, not the event's, and
    writing it claims a precision nobody told. So for a weekend and "a few weeks ago"; a day told
    exactly ("last Friday") keeps its date (:func:`as_told`). On the 90 temporal questions of the
    LoCoMo tune conversations all 15 answers it rewrites scored higher (Mem0 F1 64.3 -> 68.4 there),
    LoCoMo's gold writing such days the same way."""
    found = _told_of(question, text, evidence)
    if found is None:
        return None
    told, stored = found
    if stored.get("end", stored.get("start")) == stored.get("start") and not stored.get("approximate"):
        return None
    return _stretch_told(stored, told)


# --- a date asked, a month or a year told ---------------------------------------------------------
# "What date is the Dublin half marathon?" answered "September 2026", "When is Emil and Tuva's wedding
# exactly?" "2027": the notes give the month or the year, not the date asked, and the short answer
# passed the validator. Of the tune sets' 22 questions asking a date so (LoCoMo conv-26/30/41 ask none),
# every answerable one has a day in its gold answer and the four without one are must-abstain. The
# answer says so, and what the notes do say.
_ASKS_EXACT_DATE = re.compile(r"\b(?:(?:what|which)\s+(?:exact\s+)?date|exact\s+(?:date|day))\b|\bwhen\b.*\bexactly\b",
                              re.IGNORECASE)
_SOME_DAY = re.compile(r"\b(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?\b(?!\s*(?:%|years?|days?|weeks?|months?|hours?|nights?)\b)"
                       r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day|\b(?:today|tomorrow|yesterday|tonight)\b",
                       re.IGNORECASE)
_VAGUE_WHEN = re.compile(r"\b(?:" + "|".join(MONTH_NAMES) + r"|spring|summer|autumn|fall|winter|(?:19|20)\d\d)\b",
                         re.IGNORECASE)


def date_not_told(question: str, text: str) -> str | None:
    """"The exact date is not mentioned in your notes (they say: September 2026)." for an answer to a
    question asking for a date ("what date …", "when … exactly") that names a month, a season or a
    year and no day; None for any other answer."""
    if not _ASKS_EXACT_DATE.search(question) or _SOME_DAY.search(text) or not _VAGUE_WHEN.search(text):
        return None
    return f"The exact date is not mentioned in your notes (they say: {text.strip().rstrip('.')})."


def _strip_tool_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip(" >*`_-").upper().startswith("TOOL"))


# --- a rule about the thing proposed, under another name ------------------------------------------
# The code verdict needs a word shared by the rule and the proposal: "a design review this Friday at
# 3pm" shares none with "no meetings on Friday afternoons", nor "pork-belly" with "pescatarian". MiniLM
# does not bridge them (cosine: design review / meetings 0.18, dinner / meetings 0.42), the 1.5B model
# answering over the whole context did not either, and a list of meeting words would be a cue list. So
# the day, month and time stay in code (:func:`applies` with ``any_subject``) and the model is asked
# one small constrained question per rule that fits them: is the proposal the kind of thing the rule
# forbids? A "true" makes the verdict "No — <rule>", the rule quoted from the notes.
# Asked alone, the model says "true" for nearly any sentence with a negation in it: on 36 labelled
# (sentence, proposal) pairs from the tune personas, 30 "true" of which 18 wrong ("cant sleep." for a
# bonfire on the allotment, "never take calls before 10am" for a 7am flight). A second question, asked
# only after a "true", makes it name what the sentence rules out first, "nothing" for a remark or a
# report (:data:`COVERS_NOTHING`): both together said "true" 16 times, 7 wrong, and missed 3 of 12.
# Having named both things, the second reply's own "forbids" must agree too: over the tune personas'
# 86 constraint questions the check then fired 10 times, 4 wrong (16, 8 wrong, reading only its
# "rules_out"): "overnight flights" for hosting a friend on a Saturday, "sleeping" for a podiatrist at
# 4pm, named and then judged not to forbid them. The answers: one right verdict lost ("design review"
# for "no meetings on Friday afternoons"), two gained.
COVER_RULES = 2  # rules asked about, at most, the best-ranked first
COVERS_NOTHING = frozenset({"", "nothing", "none", "n/a"})
COVERS_KIND_TOKENS = 60  # two short strings and the boolean
_COVERS = {"type": "object", "properties": {"forbids": {"type": "boolean"}}, "required": ["forbids"],
           "additionalProperties": False}
_COVERS_KIND = {"type": "object", "properties": {"rules_out": {"type": "string", "maxLength": 40},
                                                 "proposed": {"type": "string", "maxLength": 40},
                                                 "forbids": {"type": "boolean"}},
                "required": ["rules_out", "proposed", "forbids"], "additionalProperties": False}


# A line that tells what someone else did opens with them: "He brought prawns for lunch, which I can't
# touch", "Arild made kimchi again". It may hold a rule in passing, but it is no rule of the user's.
_NARRATED = re.compile(r"^\W*(?:(?:he|she|they|it)\b|[A-Z][a-z]+\s+(?:\w+ed|brought|made|got|went|came|said|told|took|"
                       r"gave|had|was|were|did|sent|bought|cooked)\b)", re.IGNORECASE)


def standing_rule(sentence: str) -> bool:
    """``sentence`` may state a rule of the user's own: it does not open by telling what someone else did."""
    return _NARRATED.match(sentence) is None


def covered_verdict(llm: Any, question: str, evidence: Sequence[Evidence], context: str, *,
                    spent: Drafted | None = None, proposal: bool | None = None) -> Drafted | None:
    """'No — <rule>' for a proposal a stored prohibition covers under another name (see above), or None.
    The calls' tokens and times are added to ``spent`` (returned, with the text, on a "No"). ``proposal``:
    whether the question proposes something (:func:`rules.proposes`; None: in its own words)."""
    if llm is None or not (is_proposal(question) if proposal is None else proposal):
        return None
    flat = norm(context)
    candidates = []
    for item, sentence, polarity in current_rules(evidence):
        rule = quoted(item, sentence)
        if polarity != "prohibit" or limits(sentence) or norm(rule) not in flat or applies(question, sentence):
            continue  # a limit, not shown, or already judged in code
        if applies(question, sentence, any_subject=True) == "match" and rule not in (r for _, r in candidates):
            candidates.append((item, rule))
    spent = spent if spent is not None else Drafted(text="")
    # A rule the user states ("I am allergic to all shellfish") before a line that tells what someone
    # else did ("He brought prawns for lunch, which I can't touch"); then the rules retrieval ranked highest.
    candidates.sort(key=lambda found: (not standing_rule(found[1]), -found[0].score))
    for item, rule in candidates[:COVER_RULES]:
        messages = [
            {"role": "system", "content": prompts.render("answer_covers")},
            {"role": "user", "content": prompts.render("answer_covers_user", rule=rule, question=question)},
        ]
        value = _ask(llm, messages, _COVERS, spent)
        if value is None:
            return None
        if value["forbids"] is not True:
            continue
        kind = _ask(llm, [{"role": "system", "content": prompts.render("answer_covers_kind")},
                          {"role": "user", "content": prompts.render("answer_covers_kind_user", rule=rule, question=question)}],
                    _COVERS_KIND, spent, max_tokens=COVERS_KIND_TOKENS)
        if kind is None:
            return None
        if kind["forbids"] is True and kind["rules_out"].strip().strip('."').lower() not in COVERS_NOTHING:
            text = f"No — {rule}"
            spent.text, spent.messages, spent.rule = text, messages, RuleVerdict(text, [item], "no")
            return spent
    return None


# --- citations -------------------------------------------------------------------------------------


def citations(conn: Any, question: str, text: str, evidence: Sequence[Evidence],
              drafted: Drafted | None = None) -> tuple[list[int], str]:
    """The note ids an answer cites, and how they were chosen: the rules a verdict rests on, else
    the evidence whose terms the answer shares (:func:`edgemem.recall.evidence.supporting`), else
    the top-ranked note. A profile fact cites the notes it was compiled from; a computed fact
    (negative id, no note) cites nothing by itself."""
    from edgemem.recall.tiers import PROFILE_ID_BASE
    from edgemem.store import profile as profile_store

    if drafted is not None and drafted.rule is not None:
        items, reason = list(drafted.rule.rules), "rule"
    else:
        items, reason = supporting(question, text, evidence)
    ids: list[int] = []
    for item in items:
        if item.note_id > 0:
            ids.append(item.note_id)
        elif item.note_id <= -PROFILE_ID_BASE:
            fact = profile_store.get(conn, -item.note_id - PROFILE_ID_BASE)
            ids.extend(fact.sources if fact is not None else ())
    if not ids:
        notes = [e for e in evidence if e.note_id > 0]
        if notes:
            ids, reason = [max(notes, key=lambda e: e.score).note_id], "top_ranked"
    return list(dict.fromkeys(ids)), reason


PROFILE_NOTES = 5


def profile_notes(items: Sequence[Evidence], question: str, k: int = PROFILE_NOTES) -> list[Evidence]:
    """The few retrieved notes a profile-injection answer may combine with the profile: the user's
    own lines sharing a content term with the question, in the order retrieval ranked them (at most
    ``k``). The assistant's replies are left out: they restate a line ("Noted: ...") and took the
    slots. On the tune personas' 20 suggestion questions, the gold lines among the notes packed went
    from 12 to 28 (3 notes by score, replies included → 5 of the user's, by rank)."""
    wanted = terms(question)
    found = [e for e in items if e.kind == "raw" and e.note_id > 0 and terms(e.text) & wanted
             and (e.speaker or "").casefold() not in ASSISTANT_SPEAKERS]
    return found[:k]


# Who a suggestion is for, when it is not the asker: a name, or a family or social role.
_ROLE_WORDS = {
    "mum", "mom", "mother", "dad", "father", "parents", "sister", "brother", "wife", "husband", "partner", "son",
    "daughter", "grandma", "gran", "granny", "grandmother", "grandpa", "grandad", "grandfather", "aunt", "uncle",
    "cousin", "niece", "nephew", "friend", "boss", "girlfriend", "boyfriend", "fiance", "fiancee", "kids", "children",
    "mama", "papa", "nan", "nana",
}


_FOR_SOMEONE = re.compile(r"\b(?:get|take|buy|give|for|invite|visit|surprise|treat|cook\s+for|with)\s+"
                          r"([A-ZÀ-ÖØ-Þ](?:[^\W\d_]|['’-])+)|(?<=\s)([A-ZÀ-ÖØ-Þ][^\W\d_]+)['’]s\b")
_NOT_PEOPLE = terms(" ".join(DAYS) + " " + " ".join(MONTHS_IN_FULL) + " christmas easter new year birthday weekend")


def _others(question: str) -> set[str]:
    """The people a question names besides the asker: a role ("Mum", "my sister") or a capitalised
    name right after a verb or preposition of giving ("take Sue", "a gift for Ana")."""
    words = {w.lower().removesuffix("'s").removesuffix("’s")
             for w in re.findall(r"[^\W\d_](?:[^\W\d_]|['’-])*", question)}
    named = {(m.group(1) or m.group(2)).lower().removesuffix("'s").removesuffix("’s") for m in _FOR_SOMEONE.finditer(question)}
    return {w for w in (words & _ROLE_WORDS) | named if not terms(w) & _NOT_PEOPLE}


def profile_for(question: str, facts: Sequence[Evidence]) -> list[Evidence]:
    """The profile facts a suggestion may lean on. A suggestion for someone else ("What should I
    get Mum for her birthday?") drops the asker's identity facts that share no word with the
    question: "maya — dog: 4 year old whippet" was pinned first and answered it. Facts about the
    other person, and the asker's preferences and rules ("gift style: handmade or living gifts"),
    which govern what they do for others too, stay."""
    others = _others(question)
    if not others:
        return list(facts)
    wanted = terms(question)
    kept = []
    for fact in facts:
        subject = fact.text.split(" — ", 1)[0].strip().lower()
        identity = fact.text.rstrip().endswith("(identity)")
        if subject in others or not identity or terms(fact.text) & wanted:
            kept.append(fact)
    return kept


# --- a gift for someone ---------------------------------------------------------------------------
# "what should i get finn for his next bday?": the 1.5B model, given the profile and the notes,
# suggested the Meyer lemon tree his mother was given, a salt mine tour for a boy who asked for a
# dinosaur, a chess clock for a grandmother who gardens. What it does do is the smaller task: read the
# lines that name the person and list what they like, in the notes' words. The list, checked against
# those lines, is the suggestion; the lines are its citations.
_GIFT = re.compile(r"\b(?:gifts?|presents?|get|buy|give)\b", re.IGNORECASE)
LIKES = 3
LIKES_TOKENS = 60
_LIKES = {"type": "object", "properties": {"likes": {"type": "array", "maxItems": LIKES,
                                                      "items": {"type": "string", "minLength": 2, "maxLength": 40}}},
          "required": ["likes"], "additionalProperties": False}


_GIFT_TO = re.compile(r"\b(?:get|buy|give|for|to)\s+([^\W\d_][\w'’-]*)", re.IGNORECASE)
_POSSESSIVE = re.compile(r"\b([^\W\d_][\w-]*)['’]s\b")
_NOT_RECIPIENTS = _NOT_PEOPLE | terms("him her them me my myself his their our us you your a an the some something "
                                      "anything someone somebody one it this that what which who whom gift gifts "
                                      "present presents idea ideas bday next last new good nice suggest recommend plan help draft any")
_NOT_OWNERS = frozenset({"it", "what", "that", "let", "there", "he", "she", "who", "where", "here", "how", "today"})


def gift_for(question: str) -> list[str]:
    """The people a question may ask a gift for, most likely first: whoever a gift verb or "for" takes
    ("get finn", "a present for mémé"), whoever the question gives something of ("Emil's birthday"), a
    family role ("mums bday"), the word it opens with ("sipho graduates in december, what should i get
    him?"); none when it asks no gift. The caller keeps the first the notes name."""
    if not _GIFT.search(question) or _NOT_FOR_THEM.search(question):
        return []  # "Can you write the text I'd send to get Figue's weigh-in booked?" asks for a text
    found = [m.group(1) for m in _GIFT_TO.finditer(question)]
    found += [m.group(1) for m in _POSSESSIVE.finditer(question) if m.group(1).lower() not in _NOT_OWNERS]
    words = re.findall(r"[^\W\d_][\w'’-]*", question)
    found += [w for w in words if w.lower() in _ROLE_WORDS or (w.lower().endswith("s") and w.lower()[:-1] in _ROLE_WORDS)]
    found += words[:1]
    out: list[str] = []
    for word in found:
        name = word.lower().removesuffix("'s").removesuffix("’s")
        if name not in _ROLE_WORDS and name.endswith("s") and name[:-1] in _ROLE_WORDS:
            name = name[:-1]  # "mums bday"
        if len(name) > 1 and not terms(name) & _NOT_RECIPIENTS and name not in STOPWORDS and name not in out:
            out.append(name)
    return out


def suggestion_for(question: str) -> list[str]:
    """The people a suggestion that is no gift may be for, most likely first: whoever a verb of doing
    for or with takes ("cook for Papá", "take Sue", "bring Brisk a treat", "dinner w amaka"), whoever
    the question gives something of ("when mama's staying"), a family role, a capitalised word inside
    the question ("What could I cook when Nina and Diego come over?"), the word it opens with
    ("Sigrid, Jonas and Ingrid are coming for Christmas ..."). Whether a word is a person at all is the
    notes' to say (:func:`is_person`): "for dinner" names no one."""
    found = [m.group(1) for m in _SUGGEST_TO.finditer(question)]
    found += [m.group(1) for m in _POSSESSIVE.finditer(question) if m.group(1).lower() not in _NOT_OWNERS]
    words = re.findall(r"[^\W\d_][\w'’-]*", question)
    found += [w for w in words if w.lower() in _ROLE_WORDS or (w.lower().endswith("s") and w.lower()[:-1] in _ROLE_WORDS)]
    found += [m.group(1) for m in _INNER_CAPITAL.finditer(question)]
    found += words[:1]
    out: list[str] = []
    for word in found:
        name = word.lower().removesuffix("'s").removesuffix("’s")
        if name not in _ROLE_WORDS and name.endswith("s") and name[:-1] in _ROLE_WORDS:
            name = name[:-1]
        if (len(name) > 1 and not terms(name) & _NOT_RECIPIENTS and name not in STOPWORDS and name not in _US
                and name not in out):
            out.append(name)
    return out


_US = frozenset({"us", "we", "me", "i"})
_SUGGEST_TO = re.compile(r"\b(?:get|buy|give|for|to|take|bring|treat|invite|visit|surprise|with|w/?)\s+([^\W\d_][\w'’-]*)",
                         re.IGNORECASE)
_INNER_CAPITAL = re.compile(r"(?<=[\w,]\s)([A-ZÀ-ÖØ-Þ][^\W\d_]+)")
PERSON_CAPITALISED = 0.5  # a word the notes write capitalised at least this often inside a sentence is a name


def is_person(name: str, lines: Sequence[Evidence], question: str = "") -> bool:
    """Is ``name`` someone? A family role is; any other word is when the question or the lines naming
    it write it with a capital inside a sentence ("when Dev and the kids come round"; "Sipho", even in
    a question all in lower case, at least half the time in the lines), which "dinner" and "lunch" are
    not; never what the lines place things in ("in Kraków")."""
    if name in _ROLE_WORDS or name.removesuffix("s") in _ROLE_WORDS:
        return True
    asked = re.search(rf"(?<=[\w,]\s){re.escape(name[:1].upper() + name[1:])}\b", question) is not None
    inner = capital = placed = 0
    pattern = re.compile(rf"(?<=[\w,;:)]\s)({re.escape(name)})(?:['’]?s)?\b", re.IGNORECASE)
    for e in lines:
        for m in pattern.finditer(e.text):
            inner += 1
            capital += m.group(1)[:1].isupper()
            placed += _PLACE_BEFORE.search(e.text, 0, m.start()) is not None
    return inner > 0 and (asked or capital >= PERSON_CAPITALISED * inner) and placed < PLACE_SHARE * inner


# A place, not a person, is where things are: "in Tokyo", "a week in Kraków" ("to" and "from" take
# people as well: "home to mama", "a text from Ana").
_PLACE_BEFORE = re.compile(r"\b(?:in|at|near|around|across|into|via|outside)\s+(?:the\s+)?$", re.IGNORECASE)
PLACE_SHARE = 1 / 3


# Asked to write something ("Draft a short message to the vet's to book Pepper's check-up"), or a
# suggestion for the asker alone ("I'm on my own tonight, Dara's out"): no one else's likes decide it.
_NOT_FOR_THEM = re.compile(r"\b(?:draft|write|message|text|e-?mail|speech|letter|on\s+my\s+own|by\s+myself|alone)\b",
                           re.IGNORECASE)


# Asking for a suggestion: "what should I cook", "where could we take", "any ideas", "suggest", "plan",
# "what's a nice outing". "Would Caroline likely have Dr. Seuss books?" (routed to the profile too) asks
# a yes or no about someone, which what they like does not answer.
_ASKS_SUGGESTION = re.compile(
    r"\b(?:what|where|which|how)\s+(?:\w+\s+)?(?:should|could|can|would|shall)\s+(?:i|we|you)\b|\bsuggest|\brecommend|"
    r"\bideas?\b|\bsuggestions?\b|\bplan\b|\bwhat(?:['’]s|\s+is)\s+a\s+(?:good|nice)\b|\bwhat\s+kind\s+of\b",
    re.IGNORECASE)


def asks_suggestion(question: str) -> bool:
    """The question asks a suggestion (see above), not something written."""
    return _ASKS_SUGGESTION.search(question) is not None and _NOT_FOR_THEM.search(question) is None


_WRITE = re.compile(r"\b(?:draft|write|compose|rewrite|help\s+me|gifts?|presents?)\b", re.IGNORECASE)


def asks_something_made(question: str) -> bool:
    """A suggestion (see above), a gift, or something to write ("Draft a short message to the vet's"): what
    the model makes from the lines, which no one line holds. Not a yes or no about someone ("Would
    Caroline likely have Dr. Seuss books?")."""
    return _ASKS_SUGGESTION.search(question) is not None or _WRITE.search(question) is not None


def suggested_for(question: str, people: Sequence[tuple[str, list[Evidence]]]) -> tuple[str, list[Evidence]] | None:
    """The people (up to three, in the question's order) and the lines naming them, as one: "sigrid,
    jonas and ingrid" and their lines, at most :data:`SUITS_LINES`, taken in turn from each. None
    when the question asks no suggestion (see above) or asks something written."""
    if not people or not asks_suggestion(question):
        return None
    low = question.lower()
    people = sorted(people, key=lambda p: low.find(p[0]) if p[0] in low else len(low))[:3]
    names = [p[0] for p in people]
    label = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    lines: list[Evidence] = []
    for turn in range(max(len(p[1]) for p in people)):
        for _, found in people:
            if turn < len(found) and found[turn] not in lines and len(lines) < SUITS_LINES:
                lines.append(found[turn])
    lines.sort(key=lambda e: (e.event_time or "", e.note_id))
    return label, lines


SUITS_LINES = 8


# A suggestion for someone that is no gift ("what should I cook when mama's staying?", "a treat for
# Brisk"): what the lines naming them say they like and what they cannot have or need (a diet, an
# allergy, an illness) is what the suggestion must suit. Measured on the tune personas (see
# docs/measurements.md, thirty-eighth session).
SUITS = 4
SUITS_TOKENS = 80
_SUITS = {"type": "object", "properties": {"facts": {"type": "array", "maxItems": SUITS,
                                                     "items": {"type": "string", "minLength": 2, "maxLength": 50}}},
          "required": ["facts"], "additionalProperties": False}


def gift_suggestion(llm: Any, name: str, lines: Sequence[Evidence], *, spent: Drafted,
                    question: str | None = None) -> Suits | None:
    """What Finn likes, from the lines naming him (see above): "crusaders fan", "rugby boots", with the
    notes they come from (:class:`Suits`); None when the model names nothing those lines say. The
    call's tokens and times are added to ``spent``. With ``question`` (a suggestion that is no gift),
    what the lines say matters for it, likes and needs: "diabetic", "loves her garden"."""
    if llm is None or not lines:
        return None
    shown = "\n".join(f"- {_cut(e.text)}" for e in lines)
    if question is None:
        messages = [{"role": "system", "content": prompts.render("answer_likes")},
                    {"role": "user", "content": prompts.render("answer_likes_user", person=name, notes=shown)}]
        value = _ask(llm, messages, _LIKES, spent, max_tokens=LIKES_TOKENS)
    else:
        messages = [{"role": "system", "content": prompts.render("answer_suits")},
                    {"role": "user", "content": prompts.render("answer_suits_user", person=name, notes=shown,
                                                               question=question.strip())}]
        value = _ask(llm, messages, _SUITS, spent, max_tokens=SUITS_TOKENS)
    if value is None:
        return None
    likes, cited = [], []
    for phrase in value["likes" if question is None else "facts"]:
        phrase = " ".join(phrase.split()).strip(" .,;")
        wanted = terms(phrase) - terms(name)
        holding = [e for e in lines if wanted and wanted <= terms(e.text)]
        if not holding or phrase.lower() in (x.lower() for x in likes):
            continue  # not in the notes as written: the model's own idea, or a repeat
        likes.append(phrase)
        cited.extend(e for e in holding if e not in cited)
    if not likes:
        return None
    return Suits(" ".join(w[:1].upper() + w[1:] if w != "and" else w for w in name.split()), likes,
                 [e.note_id for e in cited], needs=question is not None)


@dataclass
class Suits:
    """What the lines naming someone say matters for a suggestion (:func:`gift_suggestion`): ``who``
    as the question names them, the ``phrases`` in the notes' words, the notes they come from, and
    whether they are likes and needs (a suggestion that is no gift) or likes alone (a gift)."""

    who: str
    phrases: list[str]
    cited: list[int]
    needs: bool = False

    def text(self) -> str:
        """The answer when the model suggests nothing itself."""
        if self.needs:
            return f"Something that suits {self.who} — your notes say: {'; '.join(self.phrases)}."
        return f"Something to do with what {self.who} likes, from your notes: {self.listed()}."

    def listed(self) -> str:
        p = self.phrases
        return p[0] if len(p) == 1 else f"{', '.join(p[:-1])} or {p[-1]}"

    def basis(self) -> str:
        """What follows a suggestion: " (your notes on Finn: crusaders fan; rugby boots)"."""
        return f" (your notes on {self.who}: {'; '.join(self.phrases)})"


# --- a suggestion in the model's words -------------------------------------------------------------
# The suggestion questions of the tune personas (52), answered by one free call over the user's
# lines retrieval ranks highest and the lines naming whoever the suggestion is for (answer_suggest):
# 23 right against 22 for the path above, but right on different questions. It names a thing
# ("Le Jardin d'Hugo, a vegetarian restaurant"), where the lists above name only what it must suit;
# it was right on 5 of the 9 suggestions the path above ended in "not found", and on 5 of the 15 the
# needs list answered (4 right there). So it leads, the list it rests on follows, and a suggestion is
# never "not found" while there are lines to make one from (docs/measurements.md, fortieth session).
SUGGEST_LINES = 8  # the user's own lines, by retrieval score
SUGGEST_PERSON_LINES = 6  # of each person the suggestion is for (at most two)
SUGGEST_TOKENS = 90
SUGGEST_SENTENCES = 2
_MARKUP = re.compile(r"[*_#`]+")
# The model saying it has nothing to suggest (the validator's wider "not found" list also rejects a
# suggestion asked as a question, "How about a walk by the Rambla?").
_NOTHING_TO_SUGGEST = re.compile(r"escalate[_ ]?required|could not find|not (?:mentioned|found)|no information|"
                                 r"(?:i (?:do not|don'?t) know)", re.IGNORECASE)


def suggestion_lines(own: Sequence[Evidence], people: Sequence[tuple[str, Sequence[Evidence]]] = ()) -> list[Evidence]:
    """The lines a free suggestion reads: the user's own lines among ``own`` (retrieval's items; no
    assistant echo) with the highest scores, then each person's lines, oldest first."""
    mine = sorted((e for e in own if e.kind == "raw" and e.note_id > 0
                   and (e.speaker or "").casefold() not in ASSISTANT_SPEAKERS), key=lambda e: -e.score)[:SUGGEST_LINES]
    lines = list(mine)
    for _, found in list(people)[:2]:
        lines += [e for e in list(found)[:SUGGEST_PERSON_LINES] if e.note_id not in {x.note_id for x in lines}]
    return sorted(lines, key=lambda e: (e.event_time or "", e.note_id))


def free_suggestion(llm: Any, question: str, lines: Sequence[Evidence], *, spent: Drafted) -> tuple[str, list[int]] | None:
    """One concrete suggestion in the model's words from ``lines`` (:func:`suggestion_lines`) and the
    notes that support it, or None (no model, no lines, or the model found nothing to suggest). The
    call's tokens and times are added to ``spent``."""
    if llm is None or not lines:
        return None
    shown = "\n".join(f"{e.header()} {_cut(e.text)}" for e in lines)
    messages = [{"role": "system", "content": prompts.render("answer_suggest")},
                {"role": "user", "content": prompts.render("answer_suggest_user", notes=shown, question=question.strip())}]
    try:
        result = llm.complete(messages, max_tokens=SUGGEST_TOKENS)
    except ContextTooLong:
        return None
    spent.prompt_tokens += result.prompt_tokens
    spent.completion_tokens += result.completion_tokens
    spent.prefill_ms += result.prefill_ms
    spent.generate_ms += result.generate_ms
    text = " ".join(_MARKUP.sub("", result.text).split())
    text = " ".join(SENTENCES.split(text)[:SUGGEST_SENTENCES]).strip()
    if len(text) < 2 or _NOTHING_TO_SUGGEST.search(text):
        return None
    cited, _ = supporting(question, text, lines)
    return text, [e.note_id for e in cited]



# --- the fact, not the question again ---------------------------------------------------------------
# Asked "What activity did Maria take up with her friends from church in August 2023?", the 1.5B model
# answers "Maria took up community work with her friends from church in August 2023." although its
# prompt says not to repeat the question. The words the answer shares with the question, at its
# start and in a closing phrase ("with her friends from church in August 2023"), say nothing the
# asker did not: what is left between them is the fact ("took up community work"). Fitted on the
# LoCoMo tune conversations' targeted answers (79 in two runs): Mem0 F1 38.6 -> 43.9; on 292 tune
# persona answers over four routes no key verdict changed.
_ECHO_GLUE = frozenset(
    "a an the to of with for in on at by from and or is was were are be been did does do has have had "
    "her his their its he she they it that this which who what when where how about as into".split())
_CLOSING = frozenset("in on at during while from with for to of about after before since by into".split())
_NEGATION = frozenset({"not", "no", "never", "nor", "none", "nothing", "without"})
_ASKER = {"i": ("you",), "my": ("your",), "me": ("you",), "mine": ("yours",), "myself": ("yourself",)}
_ANSWER_WORD = re.compile(r"[^\W_][\w'’\-]*")  # "Melanie’s" is one word, as "Melanie's" is
_stem = PorterStemmer().stem


def _echo_key(word: str) -> str:
    word = word.lower().replace("\u2019", "'").removesuffix("'s")
    return _stem(word)


def fact_only(question: str, text: str) -> str:
    """``text`` without the words it repeats from ``question`` at its start and in a closing phrase.

    Only a one-line answer of four words or more to a wh-question is cut: a yes/no answer, a why
    answer (its reason restates), anything quoted, bracketed or listed on lines is kept whole, and
    a negation is never cut away nor left to open it. Nothing is left? The answer is kept."""
    if ("\n" in text or any(mark in text for mark in "\"“”([") or _YES_NO.match(question)
            or question.lstrip().lower().startswith("why")):
        return text
    asked = {_echo_key(w) for w in _ANSWER_WORD.findall(question)}
    asked |= {_echo_key(you) for w in _ANSWER_WORD.findall(question) for you in _ASKER.get(w.lower(), ())}
    words = list(_ANSWER_WORD.finditer(text))
    if len(words) < 4:
        return text

    def echo(m: re.Match[str]) -> bool:
        word = m.group().lower()
        return word not in _NEGATION and (word in _ECHO_GLUE or _echo_key(word) in asked)

    first = 0
    while first < len(words) and echo(words[first]):
        first += 1
    tail = len(words)
    while tail > first and echo(words[tail - 1]):
        tail -= 1
    # The closing phrase goes from its first preposition: "damaged many homes in John's old area"
    # loses "in John's old area", not "homes".
    last = next((i for i in range(tail, len(words)) if words[i].group().lower() in _CLOSING), len(words))
    if last <= first or (first == 0 and last == len(words)) or words[first].group().lower() in _NEGATION:
        return text  # nothing cut, nothing left, or a negation that would open the answer ("Not eat meat")
    kept = text[words[first].start():words[last - 1].end() if last < len(words) else len(text)].rstrip()
    return kept[:1].upper() + kept[1:]

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

from edgemem import prompts
from edgemem.text import MONTH_NAMES, day_label
from edgemem.recall import tools
from edgemem.errors import ContextTooLong, SchemaError
from edgemem.recall.evidence import ASSISTANT_SPEAKERS, NOW_TERMS, Evidence, parse_iso_day, profile_value, supporting, terms
from edgemem.recall.limits import Limit, amounts, asked_amount, limits

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
    verdict only when it proposes something: told to open with "Yes — " or "No — ", the model did so
    for "What does Melanie do to keep herself busy …?" too."""
    name = "constraint-proposal" if tag == "constraint-validation" and is_proposal(question) else tag
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
    decided = rule_verdict(question, evidence, context, asked_days=asked_days)
    if decided is not None:  # stored rules decide a yes/no proposal: no model call (Principle 2)
        if on_token is not None:
            on_token(decided.text)
        return Drafted(text=decided.text, messages=messages, rule=decided)
    out = Drafted(text="")
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
            weekday = weekday_of(question, out.text, evidence, context)
            if weekday:  # "What day of the week is Mum's 80th?" answered "2 June 2026": its weekday, in code
                out.text += weekday
                if on_token is not None:
                    on_token(weekday)
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
    if _norm(whole) and _norm(whole) in flat:
        return whole
    asked = terms(question)
    shown = [s for s in _SENTENCES.split(whole) if _norm(s) and _norm(s) in flat]
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
        try:
            reply = llm.complete_json(messages, schema, max_tokens=12)
        except (SchemaError, ContextTooLong):
            return None
        spent.prompt_tokens += reply.prompt_tokens
        spent.completion_tokens += reply.completion_tokens
        spent.prefill_ms += reply.prefill_ms
        spent.generate_ms += reply.generate_ms
        if reply.value["changed"] is True:
            item = candidate
            break
    if item is None:
        return None
    quote = _quote_from(item, question, _norm(context))
    if quote is None or '"' in quote:
        return None
    who = f", {item.speaker} said" if item.speaker else ""
    when = f"as of {day_label(item.day)}" if item.day else "later"
    text = f'No — {when}{who}: "{quote}"'
    spent.text, spent.messages, spent.rule = text, messages, RuleVerdict(text, [item], "no")
    return spent


_VERDICT_OPENING = re.compile(r"^\s*(?:yes|no)\s*[—–-]+\s*", re.IGNORECASE)


def without_verdict(question: str, text: str) -> str:
    """A wh-question has no yes/no answer: a "Yes — " or "No — " opening the model put on one goes."""
    if _WH.match(question) and _VERDICT_OPENING.match(text):
        rest = _VERDICT_OPENING.sub("", text, count=1)
        return rest[:1].upper() + rest[1:] if rest else text
    return text


_ASKS_WEEKDAY = re.compile(r"\b(?:day\s+of\s+the\s+week|what\s+weekday|which\s+weekday)\b", re.IGNORECASE)
def weekday_of(question: str, text: str, evidence: Sequence[Evidence], context: str) -> str:
    """" (a Tuesday)" for an answer to "what day of the week" that gives one day and no weekday: a
    full date the answer writes (:func:`tools.dates_in_text`), else the day the notes state
    (:func:`tools.known_days`, the context's labels) whose day and month the answer writes
    ("13 September" → 13 September 2025)."""
    if not _ASKS_WEEKDAY.search(question) or _DAY_WORD.search(text):
        return ""
    days = {a for _, a, b, _ in tools.dates_in_text(text) if a == b}
    if not days:
        stated = tools.known_days(evidence) | {a for _, a, b, _ in tools.dates_in_text(context) if a == b}
        days = {d for d in stated
                if re.search(rf"\b(?:{day_label(d, year=False)}|{MONTH_NAMES[d.month - 1]} {d.day})\b", text, re.IGNORECASE)}
    if len(days) != 1:
        return ""
    return f" (a {days.pop().strftime('%A')})"


def _strip_tool_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip(" >*`_-").upper().startswith("TOOL"))


# --- constraint-validation verdicts, decided in code (DESIGN Principle 2) ----------------------------
#
# "Can we meet on Friday?" against a stored "never schedule meetings on Fridays": a 1.5B model quotes
# the rule, hedges, or answers something else, and its wording then has to get past the validator.
# What decides the question is plain overlap: the proposal's content terms against the rule's object,
# with weekdays, months and clock times compared as values (Friday ≠ Thursday; 9am is before 10am),
# and the rule's polarity (never / don't / avoid / allergic … versus only / always / must). The model
# is asked only when no stored rule is about the thing proposed.

_PROHIBIT = re.compile(
    r"\b(?:never|avoid(?:s|ed|ing)?|allergic|intoleran[tc]e?|don['’]t|do\s+not|does\s+not|doesn['’]t|won['’]t|"
    r"will\s+not|can['’]t|cannot|must\s+not|mustn['’]t|should\s+not|shouldn['’]t|not\s+allowed|no\s+longer|"
    r"hate|hates|dislike|dislikes|stay\s+away|not\s+(?:before|after|on|during|until|past|later|earlier|more|any)|"
    r"no(?!\s*[,.!?])(?=\s+\w))\b",
    re.IGNORECASE,
)
_ONLY = re.compile(r"\b(?:only|exclusively|always|must|have\s+to|has\s+to|need\s+to)\b", re.IGNORECASE)
# A proposal asks whether to do something: a modal opening ("Can we meet on Friday?") or an
# acceptability phrase ("Is a 9am stand-up OK for me?", "Is it fine to ...", "a good idea?"). A plain
# "is/are/do" question asks for a fact ("Is Sam on day shifts?") and is not one.
_PROPOSAL = re.compile(
    r"^\s*(?:so\s+|and\s+|hey,?\s+)?(?:can|could|may|might|should|shall|ok|okay)\b|"
    r"\b(?:allowed|(?:ok(?:ay)?|fine|alright|acceptable)\s+(?:to|if|for\s+me|with\s+me|by\s+me)|"
    r"a\s+good\s+(?:idea|pick|choice|plan)|yes\s+or\s+no)\b|\b(?:ok(?:ay)?|fine|alright)\s*[?.!]*$",
    re.IGNORECASE,
)
_WH = re.compile(r"\s*(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)  # a wh-question
_SENTENCES = re.compile(r"(?<=[.!?;])\s+(?=\S)")
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_WORD = re.compile(r"\b(mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?s?\b|\b(weekends?|weekdays?)\b",
                       re.IGNORECASE)
_MONTH_WORD = re.compile(r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE)
_MONTH_NAMES = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december"}
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b|\b(noon|midnight)\b", re.IGNORECASE)
_BOUND = re.compile(r"\b(before|earlier\s+than|until|till|after|later\s+than|past)\s+(?:about\s+)?$", re.IGNORECASE)
# Words that carry the rule's polarity or the question's form, not what either is about.
_FORM_TERMS = terms(
    "never avoid avoids avoided avoiding allergic intolerant allowed rule rules policy always must only exclusively "
    "need have has hate hates dislike dislikes stay away longer please okay fine idea good possible able "
    "before earlier after later until till past noon midnight weekend weekends weekday weekdays"
)
_DAY_TERMS = terms(" ".join(_DAYS)) | terms("mon tue tues wed thu thur thurs fri sat sun")
_MONTH_TERMS = terms("january february march april may june july august september october november december "
                     "jan feb mar apr jun jul aug sep oct nov dec")


@dataclass
class RuleVerdict:
    text: str  # "No — <rule as stored>" / "Yes — ..." (the rule quoted verbatim from the evidence)
    rules: list[Evidence]  # the evidence items holding the rules it rests on
    decision: str  # "no" | "yes"


def _days(text: str) -> set[int]:
    out: set[int] = set()
    for m in _DAY_WORD.finditer(text):
        if m.group(2):
            out |= {5, 6} if m.group(2).lower().startswith("weekend") else {0, 1, 2, 3, 4}
            continue
        head = m.group(1).lower()[:3]
        if m.group(0).lower() in {"sun", "sat", "wed", "mon"}:  # three-letter words alone are too ambiguous
            continue
        out.add(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].index(head))
    return out


def _months(text: str) -> set[int]:
    """Months named in full ("March") or abbreviated ("Mar"); "may" alone is left out (the verb)."""
    names = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    out = set()
    for m in _MONTH_WORD.finditer(text):
        word = m.group(0).lower()
        if word == "may" and not m.group(0)[0].isupper():
            continue
        if word == "may" and m.start() == len(text) - len(text.lstrip()):
            continue  # "May I ...": the verb that opens a question
        if word in _MONTH_NAMES or word in names or word == "sept":
            out.add(names.index(word[:3]))
    return out


def _minutes(m: re.Match[str]) -> int:
    if m.group(4):
        return 12 * 60 if m.group(4).lower() == "noon" else 0
    hour, minute = int(m.group(1)) % 12, int(m.group(2) or 0)
    return (hour + (12 if m.group(3).lower() == "p" else 0)) * 60 + minute


# A bare hour after a bound ("no meetings before 9", "nothing after 7"): the working-day reading, a
# morning hour for 5-11 before a bound word and an afternoon or evening one otherwise.
_BARE_BOUND = re.compile(
    r"\b(before|earlier\s+than|until|till|after|later\s+than|past)\s+(?:about\s+)?(\d{1,2})(?::(\d{2}))?"
    r"(?!\s*(?:[ap]\.?m\b|[:.]?\d|%|st\b|nd\b|rd\b|th\b|\s*(?:minutes?|mins?|hours?|days?|weeks?|months?|years?|k\b|km|miles?|kg|lbs?)))",
    re.IGNORECASE,
)


def _clock(text: str) -> tuple[list[int], list[tuple[str, int]]]:
    """Clock times of a text: plain ones, and bounded ones ("before 10am" → ("before", 600))."""
    plain, bounded = [], []

    def side(word: str) -> str:
        return "before" if word.lower().startswith(("before", "earlier", "until", "till")) else "after"

    for m in _CLOCK.finditer(text):
        bound = _BOUND.search(text[: m.start()])
        if bound:
            bounded.append((side(bound.group(1)), _minutes(m)))
        else:
            plain.append(_minutes(m))
    for m in _BARE_BOUND.finditer(text):
        hour, minute = int(m.group(2)), int(m.group(3) or 0)
        if not 1 <= hour <= 12:
            continue
        morning = side(m.group(1)) == "before" and 5 <= hour <= 11
        bounded.append((side(m.group(1)), (hour % 12 + (0 if morning else 12)) * 60 + minute))
    return plain, bounded


def _plain_terms(text: str) -> set[str]:
    """What a rule or a proposal is about: content terms less polarity words, weekdays, months, times."""
    return {t for t in terms(text) if t not in _FORM_TERMS and t not in _DAY_TERMS and t not in _MONTH_TERMS}


def _quoted(item: Evidence, sentence: str) -> str:
    """The rule as stored: the sentence of a note, or a profile fact's value."""
    if item.kind == "profile":
        return profile_value(item.text)
    return sentence.strip()


def _rule_sentences(items: Sequence[Evidence]) -> list[tuple[Evidence, str, str]]:
    """(item, sentence, polarity) for each sentence holding rule language; notes before profile facts
    (a note is the rule as the user wrote it; the profile fact is the model's copy of it)."""
    out = []
    ordered = sorted(items, key=lambda e: (e.kind == "profile", e.kind == "summary"))
    for item in ordered:
        if item.kind == "summary" or item.stale:
            continue  # computed facts ("No always/never rule ... was found") and superseded rules
        text = _quoted(item, item.text) if item.kind == "profile" else item.text
        for sentence in _SENTENCES.split(text.strip()):
            if _prohibits(sentence):
                out.append((item, sentence, "prohibit"))
            elif _ONLY.search(sentence):
                out.append((item, sentence, "only"))
    return out


# "no" before a word that makes an idiom, not a prohibition: "no time with the move", "no idea".
_NO_IDIOM = re.compile(r"\bno\s+(?:time|idea|way|one|clue|doubt|problem|problems|worries|rush|matter|wonder|joke)\b",
                       re.IGNORECASE)
_EMOTIVE = re.compile(r"\b(?:hate|hates|dislike|dislikes)\b", re.IGNORECASE)
_THIRD_PERSON = re.compile(r"\b(?:he|she|they|he['’]ll|she['’]ll|they['’]ll|he['’]s|she['’]s|they['’]re)\b", re.IGNORECASE)


def _prohibits(sentence: str) -> bool:
    """Prohibiting language in ``sentence``: not an idiom ("no time"), and a dislike that is not
    someone else's feeling reported ("he'll pretend to hate it")."""
    found = [m for m in _PROHIBIT.finditer(sentence)
             if not (m.group().lower() == "no" and _NO_IDIOM.match(sentence, m.start()))]
    if not found:
        return False
    if all(_EMOTIVE.fullmatch(m.group()) for m in found):
        before = sentence[: found[0].start()]
        return _THIRD_PERSON.search(before) is None
    return True


def _applies(question: str, sentence: str) -> str | None:
    """Does the rule sentence speak to the proposal? "match" (it covers the proposal), "other" (it is
    about the same thing but a different day / month / time), or None (it is about something else)."""
    shared = _plain_terms(question) & _plain_terms(sentence)
    if not shared:
        return None
    rule_days, asked_days = _days(sentence), _days(question)
    rule_months, asked_months = _months(sentence), _months(question)
    if rule_days and asked_days and not asked_days <= rule_days:
        return "other"
    if rule_days and not asked_days:
        return None  # "never on Fridays", asked with no day: it depends; the model says so
    if rule_months and asked_months and not asked_months <= rule_months:
        return "other"
    rule_plain, rule_bounds = _clock(sentence)
    asked_times, _ = _clock(question)
    if (rule_bounds or rule_plain) and not asked_times:
        return None
    for kind, limit in rule_bounds:
        for t in asked_times:
            inside = t < limit if kind == "before" else t > limit
            if not inside:
                return "other"
    if rule_plain and asked_times and not set(asked_times) <= set(rule_plain):
        return "other"
    return "match"


def is_proposal(question: str) -> bool:
    """A yes/no question about doing something: "Can we meet on Friday?", "Is it ok to order pizza?".
    What is proposed may be told first and asked last: "The US team wants a call at 9am on Tuesday.
    Can I take it?" — each sentence of the question is read on its own."""
    return any(_PROPOSAL.search(part) and not _WH.match(part) for part in _SENTENCES.split(question.strip()))


def rule_verdict(question: str, evidence: Sequence[Evidence], context: str | None = None, *,
                 asked_days: Sequence[tuple[date, date]] = ()) -> RuleVerdict | None:
    """A yes/no verdict on a proposal from the stored rules, or None when no rule is about it.

    A prohibiting rule (never, don't, avoid, allergic, no …) whose object overlaps the proposal and
    whose day / month / time covers it → "No — <rule>". A limiting rule (only, always, must) that
    the proposal meets → "Yes — <rule>"; one it does not meet (other terms, another day) → "No — <rule>".
    A prohibiting rule on the same thing but another day or time → "Yes — nothing in your rules rules it
    out", quoting the closest rule. The rule is quoted as stored; with ``context`` (the packed text),
    only rules shown there verbatim are used, so the validator can check the quote.

    An amount in the question is judged by the newest limit on it (:func:`_limit_verdict`). Days in
    ``asked_days`` (the caller resolves the question's dates with the write path's resolver) that a
    stored plan already takes make the proposal "No — it clashes with ..." (:func:`_clash`)."""
    flat = _norm(context) if context is not None else None
    limit = _limit_verdict(question, evidence, flat)
    if not is_proposal(question):
        return limit
    if limit is not None and limit.decision == "no":
        return limit
    no, yes, near = [], [], []
    for item, sentence, polarity in _rule_sentences(evidence):
        rule = _quoted(item, sentence)
        if flat is not None and _norm(rule) not in flat:
            continue
        if limits(sentence):
            continue  # a limit: decided above by its newest value, or it depends on an amount not asked
        fit = _applies(question, sentence)
        if fit is None:
            continue
        if polarity == "prohibit":
            (no if fit == "match" else near).append((item, rule))
            continue
        extra_asked = _plain_terms(question) - _plain_terms(sentence) - _GENERIC_ASK
        extra_rule = _plain_terms(sentence) - _plain_terms(question)
        if fit == "other" or (extra_asked and extra_rule):
            no.append((item, rule))
        elif fit == "match" and not extra_rule:
            yes.append((item, rule))
    if no:
        return RuleVerdict(f"No — {no[0][1]}", _holding_rule(no), "no")
    clash = _clash(question, evidence, flat, asked_days)
    if clash is not None:
        return clash
    if limit is not None:
        return limit
    if yes:
        return RuleVerdict(f"Yes — {yes[0][1]}", _holding_rule(yes), "yes")
    if near:
        return RuleVerdict(f'Yes — nothing in your rules rules it out (closest: "{near[0][1]}")', _holding_rule(near), "yes")
    return None


_GENERIC_ASK = terms("bring go come try get take let")
# "Does a £45 dinner still fit my budget?": a yes/no question about an amount and a limit, not
# worded as a proposal.
_ASKS_LIMIT = re.compile(
    r"^\s*(?:do|does|did|is|are|would|will|can|could|should|am)\b.*\b(?:fit|fits|within|afford|over|under|budget|"
    r"limit|allowed|ok(?:ay)?|fine|too\s+(?:much|far|long|many))\b", re.IGNORECASE | re.DOTALL,
)


CLASH_MAX_DAYS = 14  # a stored span longer than this ("in June", "this spring") takes no particular day


def _clash(question: str, evidence: Sequence[Evidence], flat: str | None,
           asked_days: Sequence[tuple[date, date]]) -> RuleVerdict | None:
    """A proposal for days a stored plan already takes ("feed Mochi 22 to 26 December" while "Dublin
    from 21 to 27 December") → "No — it clashes with ...", quoting the sentence that dates the plan;
    the newest such note wins (a moved plan is told again). A note sharing what the proposal is about
    is the proposal itself, told earlier, not a clash."""
    asked = [(a, b) for a, b in asked_days if (b - a).days < CLASH_MAX_DAYS]
    if not asked:
        return None
    about = _plain_terms(question)
    found: list[tuple[str, int, Evidence, str, str]] = []
    for item in evidence:
        if item.kind in ("summary", "profile") or item.note_id <= 0:
            continue
        for d in item.dates:
            start, end = parse_iso_day(d.get("start")), parse_iso_day(d.get("end"))
            if start is None or d.get("approximate") or d.get("granularity", "day") != "day":
                continue
            end = end or start
            if (end - start).days >= CLASH_MAX_DAYS or not any(start <= b and a <= end for a, b in asked):
                continue
            label = d.get("label") or ""
            sentence = next((x for x in _SENTENCES.split(item.text.strip()) if label and f"[{label}]" in x),
                            item.text.strip())
            if _plain_terms(sentence) & about or (flat is not None and _norm(sentence) not in flat):
                continue
            found.append((item.event_time or "", item.note_id, item, sentence, label))
    if not found:
        return None
    _, _, item, sentence, label = max(found, key=lambda f: (f[0], f[1]))
    return RuleVerdict(f'No — it clashes with your plans for {label}: "{sentence.strip()}"', [item], "no")


# Words every limit and every question about one may use: they say nothing about what is limited.
_LIMIT_TERMS = terms("budget budgets limit limits max maximum cap capped spend spent fit fits within allowed afford "
                     "minimum least most total")


def _limit_verdict(question: str, evidence: Sequence[Evidence],
                   flat: str | None) -> RuleVerdict | None:
    """A verdict on an amount the question names ("a job about 40 miles away", "a £45 dinner") from the
    newest stored limit in its unit on the same thing (:mod:`edgemem.recall.limits`). The limit is about the question when they share a content word; a
    lone limit in the unit counts without one. Limits change: the newest note wins, a profile fact
    (the model's copy) only when no note states one."""
    asked_units = {a.unit for a in amounts(question)}
    asks = is_proposal(question) or any(_ASKS_LIMIT.search(part) for part in _SENTENCES.split(question.strip()))
    if not asked_units or not asks:
        return None
    found: list[tuple[Evidence, str, str, Limit]] = []
    for item in evidence:
        if item.kind == "summary":
            continue
        text = _quoted(item, item.text) if item.kind == "profile" else item.text
        for sentence in _SENTENCES.split(text.strip()):
            rule = _quoted(item, sentence)
            if flat is not None and _norm(rule) not in flat:
                continue
            found.extend((item, rule, sentence, lim) for lim in limits(sentence) if lim.amount.unit in asked_units)
    if not found:
        return None
    asked_terms = _plain_terms(question) - _LIMIT_TERMS
    about = [f for f in found if (_plain_terms(f[2]) - terms(f[3].amount.unit)) & asked_terms]
    if not about and len(found) == 1:
        about = found
    notes_only = [f for f in about if f[0].kind != "profile"]
    about = notes_only or about
    if not about:
        return None
    def when(f: tuple[Evidence, str, str, Limit]) -> tuple[str, int]:
        return (f[0].event_time or "", f[0].note_id)

    best = max(about, key=when)
    # A newer limit in the unit that names the value it replaces ("up to 40 miles now, not 30") or
    # shares what it limits with the one found is its update, even when it does not name the thing.
    for f in sorted(found, key=when):
        if when(f) <= when(best) or (f[0].kind == "profile" and best[0].kind != "profile"):
            continue
        old_value = best[3].amount.show().lstrip("£$€").split()[0]
        names_old = re.search(rf"(?<![\d.,]){re.escape(old_value)}(?![\d.,]*\d)", f[2].replace(best[3].amount.written, "")) is not None
        shared = (_plain_terms(f[2]) & _plain_terms(best[2])) - _LIMIT_TERMS - terms(best[3].amount.unit)
        if names_old or shared:
            best = f
    item, rule, _, lim = best
    asked = asked_amount(question, lim.amount.unit)
    if asked is None:
        return None
    bounded = [a for a in limits(question, budget=False) if a.amount.unit == lim.amount.unit]
    if bounded:  # "Do I still only take jobs within 30 miles?" asks what the limit is, not about 30 miles
        if bounded[0].amount.value == lim.amount.value and bounded[0].upper == lim.upper:
            return RuleVerdict(f'Yes — "{rule}"', [item], "yes")
        return RuleVerdict(f'No — the newest limit is {lim.amount.show()}: "{rule}"', [item], "no")
    value, parts = asked
    shown = " + ".join(a.show() for a in parts) + (f" = {lim.amount.show(value)}" if len(parts) > 1 else "")
    if lim.allows(value):
        return RuleVerdict(f'Yes — {shown} is within the limit: "{rule}"', [item], "yes")
    side = "over the limit" if lim.upper else "under the minimum"
    return RuleVerdict(f'No — {shown} is {side}: "{rule}"', [item], "no")


def _holding_rule(found: list[tuple[Evidence, str]]) -> list[Evidence]:
    """The items stating the rule quoted (the first found): its note, and the profile fact copied
    from it ("never schedule meetings on Fridays" inside "Rule: never schedule meetings on Fridays.")."""
    quoted = _norm(found[0][1])
    out: list[Evidence] = []
    for item, rule in found:
        same = _norm(rule)
        if (same in quoted or quoted in same) and all(item is not o for o in out):
            out.append(item)
    return out


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("’", "'")).strip().lower().rstrip(".!;")


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


PROFILE_NOTES = 3


def profile_notes(items: Sequence[Evidence], question: str, k: int = PROFILE_NOTES) -> list[Evidence]:
    """The few retrieved notes a profile-injection answer may combine with the profile: raw notes
    sharing a content term with the question, best scored first (at most ``k``)."""
    wanted = terms(question)
    found = [e for e in items if e.kind == "raw" and e.note_id > 0 and terms(e.text) & wanted]
    return sorted(found, key=lambda e: -e.score)[:k]


# Who a suggestion is for, when it is not the asker: a name, or a family or social role.
_ROLE_WORDS = {
    "mum", "mom", "mother", "dad", "father", "parents", "sister", "brother", "wife", "husband", "partner", "son",
    "daughter", "grandma", "gran", "granny", "grandmother", "grandpa", "grandad", "grandfather", "aunt", "uncle",
    "cousin", "niece", "nephew", "friend", "boss", "girlfriend", "boyfriend", "fiance", "fiancee", "kids", "children",
}


_FOR_SOMEONE = re.compile(r"\b(?:get|take|buy|give|for|invite|visit|surprise|treat|cook\s+for|with)\s+([A-Z][a-z'’-]+)"
                          r"|(?<=\s)([A-Z][a-z]+)['’]s\b")
_NOT_PEOPLE = terms(" ".join(_DAYS) + " " + " ".join(_MONTH_NAMES) + " christmas easter new year birthday weekend")


def _others(question: str) -> set[str]:
    """The people a question names besides the asker: a role ("Mum", "my sister") or a capitalised
    name right after a verb or preposition of giving ("take Sue", "a gift for Ana")."""
    words = {w.lower().removesuffix("'s").removesuffix("’s") for w in re.findall(r"[A-Za-z][A-Za-z'’-]*", question)}
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

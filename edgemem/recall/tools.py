"""The answer agent's bounded tools, executed in code (MemFlow §3.2, Appendix B.2, Algorithm 1).

For temporal and summarization questions the answer agent may end its reply with one ``TOOL:`` line;
the pipeline parses it, runs the tool here and feeds the result back as a ``TOOL_RESULT:`` line, at
most :data:`MAX_TOOL_ROUNDS` times (Algorithm 1, lines 8-12). The model cannot pick arbitrary tools
or loop: only the four below exist, and a call that cannot be run comes back as an error string the
model can read — never an exception into the pipeline (DESIGN Principle 2: date arithmetic and
counting are code, never prompts).

Both call forms are accepted: the paper's ``TOOL: days_between | 2023-05-07 | 2023-05-25`` and the
function form ``TOOL: days_between(7 May 2023, 25 May 2023)``. Dates may be written the ways the
notes write them: "7 May 2023", "7th May, 2023", "May 7, 2023", "2023-05-07", an ISO timestamp, or a
date label from ingestion ("around 7 May 2023", "week of 29 May 2023" — its first day).

The calendar functions here are also what Tier-3 preprocessing uses for its pre-computed facts, so
the numbers the model is shown and the numbers a tool returns always agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta

from dateutil.relativedelta import relativedelta

from edgemem.recall.events import anchors
from edgemem.recall.evidence import ANNOTATION, ASSISTANT_SPEAKERS, Evidence, jaccard, parse_iso_day, same_teller, terms
from edgemem.text import HOLIDAY_PATTERN, MONTH_NAMES, NUMBER_WORDS, STOPWORDS, day_label

__all__ = [
    "MAX_TOOL_ROUNDS", "TOOL_NAMES", "TAG_TOOLS", "tools_for", "ERROR_PREFIX", "RESULT_PREFIX",
    "ToolCall", "Count", "CountedEvent", "Grounded", "parse_tool_call", "execute", "parse_date",
    "parse_span", "dates_in_text", "known_days", "ground", "ground_operands", "format_events",
    "days_between", "weeks_between", "months_between", "count_occurrences",
    "describe_days", "describe_weeks", "describe_months",
]

MAX_TOOL_ROUNDS = 3  # Algorithm 1: "while tool call in a and tool_rounds < 3"
RESULT_PREFIX = "TOOL_RESULT: "
ERROR_PREFIX = "error: "

TOOL_NAMES = ("days_between", "weeks_between", "months_between", "count_occurrences")
# Appendix B.2: the temporal prompt offers the date tools, the broad-summarization prompt the counter.
TAG_TOOLS = {
    "temporal-reasoning": ("days_between", "weeks_between", "months_between"),
    "broad-summarization": ("count_occurrences",),
}
# The tools compute numbers: a count, a duration. A question that asks for none ("What's happening
# in December?", "Give me a rundown of the wedding") gets no tool, and its prompt offers none: offered
# the counter, the 1.5B model answered such questions with "5" or "December is mentioned 12 times".
_ASKS_QUANTITY = re.compile(
    r"\bhow\s+(?:many|much|long|often|old|far|soon)\b|\b(?:number|count)\s+of\b|\bhow\s+frequently\b",
    re.IGNORECASE,
)


def tools_for(tag: str, question: str) -> tuple[str, ...]:
    """The tools the answer agent may call for ``question`` under ``tag``: the tag's (Appendix B.2)
    when the question asks for a quantity, none otherwise."""
    allowed = TAG_TOOLS.get(tag, ())
    return allowed if allowed and _ASKS_QUANTITY.search(question) else ()


_ARITY = {"days_between": 2, "weeks_between": 2, "months_between": 2, "count_occurrences": 1}


# --- dates --------------------------------------------------------------------------------------

_MONTH_NUMBER = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<m>[A-Za-z]{3,9})\.?"
_DAY = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>\d{4})"
_DATE_FORMS = (
    re.compile(r"(?P<y>\d{4})[-/.](?P<mn>\d{1,2})[-/.](?P<d>\d{1,2})(?:[T ][\d:.+\-Z]*)?"),
    re.compile(rf"{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}"),
    re.compile(rf"{_MONTH}\s+{_DAY},?\s+{_YEAR}"),
)
# Prefixes that ingestion's date labels and small models put before a date.
_LABEL_PREFIX = re.compile(
    r"^(?:(?:around|about|approximately|approx\.?|circa|on|the|week\s+of|weekend\s+of)\s+)+",
    re.IGNORECASE,
)


def _one_day(cleaned: str) -> date | None:
    cleaned = re.sub(r"^[A-Za-z]+day,?\s+", "", cleaned)  # "Sunday, 7 May 2023"
    for form in _DATE_FORMS:
        m = form.fullmatch(cleaned)
        if m is None:
            continue
        month = int(m.group("mn")) if "mn" in m.groupdict() else _MONTH_NUMBER.get(m.group("m").lower())
        if month is None:
            return None
        try:
            return date(int(m.group("y")), month, int(m.group("d")))
        except ValueError:
            return None  # 31 June, month 13
    return None


# A range label from ingestion: "18–22 June 2026", "30 June–2 July 2026", "30 December 2025–2 January
# 2026", "20 March to 3 April 2023". The first part borrows what it leaves out from the second.
_RANGE_SPLIT = re.compile(r"\s*[–—]\s*|\s+(?:to|until|till|through)\s+|\s+-\s+|(?<=\d)-(?=\d)")
_PARTIAL = re.compile(r"(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:\s+(?:of\s+)?(?P<m>[A-Za-z]{3,9})\.?)?")


def _clean(text: str) -> tuple[str, str]:
    """(cleaned text, prefix): label prefixes ("around", "week of") and quoting removed."""
    stripped = text.strip().strip("\"'`[]() ").strip()
    m = _LABEL_PREFIX.match(stripped)
    prefix = m.group(0).lower() if m else ""
    return stripped[len(prefix):], prefix


def parse_span(text: str) -> tuple[date, date]:
    """The days written in ``text`` as (first, last): one day, an ingestion range label, or a
    "week of" / "weekend of" label. ValueError with a one-line message if there is none."""
    cleaned, prefix = _clean(text)
    day = _one_day(cleaned)
    if day is not None:
        if "weekend of" in prefix:
            return day, day + timedelta(days=1)
        if "week of" in prefix:
            return day, day + timedelta(days=6)
        return day, day
    parts = _RANGE_SPLIT.split(cleaned, maxsplit=1)
    if len(parts) == 2:
        end = _one_day(parts[1].strip())
        first = _PARTIAL.fullmatch(parts[0].strip())
        start = _one_day(parts[0].strip())
        if end is not None and (start is not None or first is not None):
            if start is None and first is not None:
                month = _MONTH_NUMBER.get(first.group("m").lower()) if first.group("m") else end.month
                try:
                    start = date(end.year, month, int(first.group("d"))) if month else None
                except ValueError:
                    start = None
                if start is not None and start > end:
                    start = start.replace(year=end.year - 1)
            if start is not None and start <= end:
                return start, end
    raise ValueError(f"cannot read {text.strip()!r} as a date; write it like 7 May 2023 or 2023-05-07")


def parse_date(text: str) -> date:
    """The calendar day written in ``text`` (a range or week label: its first day); ValueError with
    a one-line message if there is none."""
    return parse_span(text)[0]


# Dates as notes write them inside a text: absolute dates and bracketed labels ("[18–22 June 2026]").
_IN_TEXT = re.compile(
    r"\[(?P<label>[^\]]{4,60})\]"
    r"|(?P<iso>\b\d{4}-\d{2}-\d{2}\b)"
    r"|(?P<dmy>\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?[A-Za-z]{3,9}\.?,?\s+\d{4}\b)"
    r"|(?P<mdy>\b[A-Za-z]{3,9}\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b)"
)


def dates_in_text(text: str) -> list[tuple[int, date, date, str]]:
    """(offset, first day, last day, label) of every readable date written in ``text``."""
    found = []
    for m in _IN_TEXT.finditer(text):
        try:
            start, end = parse_span(m.group(0))
        except ValueError:
            continue
        found.append((m.start(), start, end, day_label(start) if start == end else m.group(0).strip("[]")))
    return found


def _ordered(first: date, second: date) -> tuple[date, date]:
    return (first, second) if first <= second else (second, first)


def days_between(first: date, second: date) -> int:
    """Whole days between two days, whichever comes first (a duration is never negative)."""
    a, b = _ordered(first, second)
    return (b - a).days


def weeks_between(first: date, second: date) -> tuple[int, int]:
    """(whole weeks, remaining days) between two days."""
    return divmod(days_between(first, second), 7)


def months_between(first: date, second: date) -> tuple[int, int]:
    """(whole calendar months, remaining days) between two days, calendar-correct: 31 Jan 2024 →
    1 Mar 2024 is one month (to 29 Feb, the month's last day) and one day."""
    a, b = _ordered(first, second)
    delta = relativedelta(b, a)
    return delta.years * 12 + delta.months, delta.days


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def describe_days(first: date, second: date) -> str:
    return _plural(days_between(first, second), "day")


def describe_weeks(first: date, second: date) -> str:
    weeks, days = weeks_between(first, second)
    total = days_between(first, second)
    head = _plural(weeks, "week") if days == 0 else f"{_plural(weeks, 'week')} and {_plural(days, 'day')}"
    return f"{head} ({_plural(total, 'day')})"


def describe_months(first: date, second: date) -> str:
    months, days = months_between(first, second)
    total = days_between(first, second)
    head = _plural(months, "month") if days == 0 else f"{_plural(months, 'month')} and {_plural(days, 'day')}"
    return f"{head} ({_plural(total, 'day')})"


_DESCRIBE = {"days_between": describe_days, "weeks_between": describe_weeks, "months_between": describe_months}


# --- grounding: operands from the notes, not from the model -----------------------------------


@dataclass(frozen=True)
class Grounded:
    """The date of one event, read from the stored, resolved dates of the note that mentions it."""

    event: str  # the words that named it (a question anchor, or what the model wrote)
    start: date
    end: date
    label: str
    exact: bool  # one day, not approximate (a span or "around ..." is not)
    note_id: int | None  # the evidence item it came from; None when the question itself wrote the date


def _text(item: Evidence | str) -> str:
    return item.text if isinstance(item, Evidence) else str(item)


# A stored date's phrase as written, its annotation right after it: "the Friday [13 February 2026] rota".
_ANNOTATED = re.compile(r"\s*\[")


def _phrase_offsets(text: str, stored: Sequence[dict]) -> list[int]:
    """Where each stored date's phrase is written in ``text`` (-1: nowhere): the occurrence its
    annotation follows, each taken once, so that "crew change is on Fridays … with the Friday [13
    February 2026] rota" places 13 February at the rota, not at "Fridays"; else the first whole-word
    occurrence not yet taken, else the first occurrence at all."""
    low = text.lower()
    taken: set[int] = set()
    out = []
    for d in stored:
        phrase = str(d.get("phrase") or "").lower()
        found = [m.start() for m in re.finditer(re.escape(phrase), low)] if phrase else []
        whole = [at for at in found if not (at > 0 and low[at - 1].isalnum())
                 and not (at + len(phrase) < len(low) and low[at + len(phrase)].isalnum())]
        annotated = [at for at in whole if _ANNOTATED.match(low, at + len(phrase))]
        at = next((at for group in (annotated, whole) for at in group if at not in taken), found[0] if found else -1)
        taken.add(at)
        out.append(at)
    return out


def _note_dates(item: Evidence | str) -> list[tuple[int, date, date, str, bool]]:
    """(offset in the text, first day, last day, label, exact) of each date stored on an item.

    The note's resolved dates (Evidence.dates, what ingestion stored) come first; dates written in
    the text (bracketed labels, absolute dates) fill in for items without them."""
    text = _text(item)
    out = []
    stored = item.dates if isinstance(item, Evidence) else []
    for d, where in zip(stored, _phrase_offsets(text, stored), strict=True):
        try:
            start = date.fromisoformat(str(d.get("start"))[:10])
            end = date.fromisoformat(str(d.get("end") or d.get("start"))[:10])
        except ValueError:
            continue
        label = d.get("label") or day_label(start)
        exact = start == end and not d.get("approximate", False)
        out.append((where if where >= 0 else len(text), start, end, label, exact))
    if not out:
        out = [(at, a, b, label, a == b and not label.startswith("around")) for at, a, b, label in dates_in_text(text)]
    return out


def _said_day(item: Evidence | str) -> date | None:
    return item.day if isinstance(item, Evidence) else None


def known_days(evidence: Sequence[Evidence | str]) -> set[date]:
    """Every day the evidence states: each stored date's first and last day, and each day said."""
    days: set[date] = set()
    for item in evidence:
        for _, start, end, _, _ in _note_dates(item):
            days.update((start, end))
        said = _said_day(item)
        if said is not None:
            days.add(said)
    return days


def _positions(text: str, wanted: set[str]) -> list[int]:
    """Offsets of the words in ``text`` whose term is wanted (annotations left out)."""
    plain = re.sub(r"\[[^\]]*\]", lambda m: " " * len(m.group(0)), text)
    return [m.start() for m in re.finditer(r"[A-Za-z0-9][\w'-]*", plain) if terms(m.group(0)) & wanted]


# Words that name a date, not an event: an anchor made only of them ("today") is not looked up.
_DATE_ONLY = terms("today now tonight yesterday tomorrow date present moment")


# "my last parkrun of 2025", "the first gig": one of a kind of event, by its place in time.
_NTH = re.compile(
    r"^(?:(?:my|our|the|his|her|their)\s+)?(?:[A-Za-z][\w-]*['’]s\s+)?"
    r"(?P<which>first|second|third|fourth|fifth|last|latest|final|most\s+recent)\s+"
    r"(?P<thing>[A-Za-z][\w'’-]*(?:\s+[A-Za-z][\w'’-]*){0,2}?)(?:\s+(?:of|in)\s+(?P<year>(?:19|20)\d\d))?$",
    re.IGNORECASE,
)


_NTH_INDEX = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4}


def nth_event(event: str) -> tuple[int, str, int | None] | None:
    """(which one: 0 for the first, 1 for the second …, -1 for the last; the kind of event; the year
    or None) for "my first parkrun of 2026", "mum's second eye operation", "the last gig"; None for
    any other event words."""
    m = _NTH.match(" ".join(event.split()))
    if not m:
        return None
    which = _NTH_INDEX.get(m.group("which").lower(), -1)
    return which, m.group("thing"), int(m.group("year")) if m.group("year") else None


def _ground_nth(event: str, evidence: Sequence[Evidence | str]) -> Grounded | None:
    """"my last parkrun of 2025": the distinct events of that kind the notes tell of (what counting
    finds: :func:`count_occurrences`), in that year, and the first or last of them."""
    nth = nth_event(event)
    if nth is None:
        return None
    which, thing, year = nth
    if thing.lower() == "one":
        return None  # "her second one": the kind is the other anchor's (preprocess._the_one)
    # Not a moved plan's first dates ("first real gig, feb 21st", then "the gig MOVED ... march 6").
    told = [e for e in evidence if not (isinstance(e, Evidence) and (e.kind == "summary" or e.stale or
                                                                      (e.speaker or "").casefold() in ASSISTANT_SPEAKERS))]
    within = [(date(year, 1, 1), date(year, 12, 31))] if year else []
    words = thing.split()
    # "the band's first gig" told as "our first real gig is 6 March": the line that says the ordinal
    # of that kind of event gives its date, before any counting ("My mother's second operation is
    # still on 2 December").
    ordinal = _NTH.match(" ".join(event.split())).group("which").lower()
    said = re.compile(rf"\b{ordinal}\s+(?:[\w'’-]+\s+){{0,2}}?{re.escape(words[-1])}(?:e?s)?\b", re.IGNORECASE)
    for item in sorted(told, key=lambda e: _said_day(e) or date.min) if which >= 0 else ():
        m = said.search(_text(item))
        stored = [d for d in _note_dates(item) if not within or any(d[1] <= b and d[2] >= a for a, b in within)] if m else []
        if stored:
            at, start, end, label, exact = min(stored, key=lambda d: abs(d[0] - m.start()))
            return Grounded(event, start, end, label, exact, item.note_id if isinstance(item, Evidence) else None)
    events = [e for e in count_occurrences(thing, told, within).events if e.start is not None]
    if not events and len(words) == 2 and not any(w.lower() in STOPWORDS for w in words):
        # "her first cataract operation" is told as "the left-eye operation", "the second operation":
        # the kind of event is its last word.
        events = [e for e in count_occurrences(words[-1], told, within).events if e.start is not None]
    if not events or which >= len(events):
        return None
    chosen = events[which]
    return Grounded(event, chosen.start, chosen.end or chosen.start, chosen.label, chosen.start == chosen.end,
                    chosen.note_ids[0] if isinstance(told[0], Evidence) else None)


def ground(event: str, evidence: Sequence[Evidence | str]) -> Grounded | None:
    """The date of ``event``: a full date written in the event words themselves ("my dentist
    appointment (14 January 2026)"); for "my last parkrun of 2025", the last of the events counted
    (:func:`_ground_nth`); else the stored date of the evidence line that shares most content words
    with it, a line not marked outdated first — the one of that line's dates written nearest those
    words — else the day that line was said. None when no line mentions it."""
    written = dates_in_text(event)
    if written:
        _, start, end, label = written[0]
        return Grounded(event, start, end, label, start == end, None)
    nth = _ground_nth(event, evidence)
    if nth is not None:
        return nth
    wanted = terms(event) - _DATE_ONLY
    if not wanted:
        return None
    mine = _MY.search(event) is not None
    ordinals = {m.group(0).lower(): m.group(1) for m in _ORDINAL.finditer(event)}
    best: tuple[bool, bool, int, bool, bool, float, int] | None = None
    chosen: Evidence | str | None = None
    for i, item in enumerate(evidence):
        if isinstance(item, Evidence) and item.kind == "summary":
            continue  # computed facts restate dates; the notes are the source
        held = terms(_text(item))
        overlap = len(wanted & held) + len(_number_positions(ordinals, held, _text(item)))
        if overlap == 0:
            continue
        dated = bool(_note_dates(item)) or _said_day(item) is not None
        current = not (isinstance(item, Evidence) and item.stale)  # a moved plan's old dates are not its date
        # "when's my hair appointment?": "gemma's hair appt is tues" is hers, a line of the user's first
        own = not (mine and _owned_by_another(_text(item), wanted))
        # Of lines as close, one that states a day: "hen weekend in Marseille, 29 to 31 May" over "hen
        # weekend in a month".
        daily = isinstance(item, Evidence) and any(
            d.get("granularity", "day") == "day" and not d.get("approximate") for d in item.dates)
        key = (own, current, overlap, dated, daily, item.score if isinstance(item, Evidence) else 0.0, -i)
        if best is None or key > best:
            best, chosen = key, item
    if chosen is None:
        return None
    chosen = _told_again(chosen, best, evidence, wanted, mine)
    stored = _note_dates(chosen)
    note_id = chosen.note_id if isinstance(chosen, Evidence) else None
    if stored:
        # The date nearest the words that single the event out: in "saw Mum Thursday [14 May]. her
        # 80th is 2 June [2 June]", "80th" (in one line) places "Mum's 80th", not "Mum" (in many).
        held = wanted & terms(_text(chosen))
        spread = {t: sum(t in terms(_text(item)) for item in evidence) for t in held}
        rarest = {t for t, n in spread.items() if n == min(spread.values())}
        numbers = _number_positions(ordinals, held, _text(chosen))
        # "The kitchen did not start on 19 January in the end: ... started on Monday 2 February": a
        # date the line says did not happen is not the event's, when the line gives another.
        kept = [d for d in stored if not _NOT_ON.search(_text(chosen)[max(0, d[0] - 40):d[0]])]
        stored = kept or stored
        spots = (_positions(_text(chosen), rarest) + [at for ats in numbers.values() for at in ats]
                 or _positions(_text(chosen), wanted) or [0])
        at, start, end, label, exact = min(stored, key=lambda d: min(abs(d[0] - p) for p in spots))
        return Grounded(event, start, end, label, exact, note_id)
    said = _said_day(chosen)
    if said is None:
        return None
    return Grounded(event, said, said, day_label(said), True, note_id)


_ORDINAL = re.compile(r"\b(\d{1,3})(?:st|nd|rd|th)\b", re.IGNORECASE)
# A negated verb right before a date, in its clause: "did not start on", "wasn't on", "never made it on".
_NOT_ON = re.compile(r"\b(?:not|never|n['’]t|no\s+longer)\s+(?:\w+\s+){0,3}(?:on|in|for|at|by|until)?\s*(?:the\s+)?[^.;:!?,]{0,12}$",
                     re.IGNORECASE)
_BARE_NUMBER = re.compile(r"(?<![\d:.,/£$€-])\b\d{1,3}\b(?![:.,/]\d)")


def _number_positions(ordinals: dict[str, str], held: set[str], text: str) -> dict[str, list[int]]:
    """Where a line tells the event's ordinals as numbers, by number: "Callum's 16th birthday" is told
    "callum turned 16 yesterday", "Fiona's 50th" "she's 50 on saturday" (dates' own numbers aside)."""
    wanted = {number for word, number in ordinals.items() if word not in held}
    if not wanted:
        return {}
    plain = ANNOTATION.sub(lambda m: " " * len(m.group(0)), text)
    found: dict[str, list[int]] = {}
    for m in _BARE_NUMBER.finditer(plain):
        if m.group(0) in wanted:
            found.setdefault(m.group(0), []).append(m.start())
    return found


def _told_again(chosen: Evidence | str, best: tuple, evidence: Sequence[Evidence | str], wanted: set[str],
                mine: bool) -> Evidence | str:
    """The last telling of the plan ``chosen`` states: a later line of the same teller, as close to the
    event's words, whose days overlap the plan's while it was still ahead ("A possible Tokyo trip,
    8–12 September", said in July, then "tokyo confirmed: sunday 7 sept, land the 8th, back saturday
    13th" in August: the trip is flown on the 7th). Days that do not overlap are another event, or a
    move the recency step judges."""
    if not isinstance(chosen, Evidence) or chosen.day is None:
        return chosen
    spans = [(a, b) for _, a, b, _, _ in _note_dates(chosen) if b >= chosen.day]
    if not spans:
        return chosen
    out = chosen
    for item in evidence:
        if not isinstance(item, Evidence) or item.kind == "summary" or item.stale or item.day is None:
            continue
        if item.day <= out.day or not same_teller(item, chosen):
            continue
        if len(wanted & terms(item.text)) < best[2] or (mine and _owned_by_another(item.text, wanted)):
            continue
        later = [(a, b) for _, a, b, _, _ in _note_dates(item)]
        if any(c <= b and a <= d and (c, d) != (a, b) for a, b in spans for c, d in later):
            out = item
    return out


_MY = re.compile(r"\b(?:my|our)\b", re.IGNORECASE)


def _owned_by_another(text: str, wanted: set[str]) -> bool:
    """Another's possessive stands right before the first word of ``wanted`` the line holds ("gemma's
    hair appt", "Dave's MOT")."""
    for word in _WORD.finditer(text):
        if terms(word.group(0)) & wanted:
            owner = _OWNER_BEFORE.search(text, max(0, word.start() - 40), word.start())
            return owner is not None and not terms(owner.group(1)) & wanted
    return False


# A stretch of days closes with one of these just before its last day: "stay until the 2nd of
# January", "came home on Friday the 7th", "going back on Thursday 26 February", "moved our return
# flight to the 12th".
_CLOSES = re.compile(
    r"\b(?:until|till|til|back|home|return(?:s|ed|ing)?)(?:\s+(?:flight|trip|journey|date|leg))?"
    r"(?:\s+(?:is|was|now|to|moved\s+to|changed\s+to))*\s+(?:on\s+)?(?:the\s+)?"
    r"(?:(?:[a-z]+day|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?\s+)?(?:the\s+)?$",
    re.IGNORECASE,
)
_SENTENCE_GAP = re.compile(r"(?<=[.!?])\s+")
_HOLIDAY = re.compile(HOLIDAY_PATTERN, re.IGNORECASE)
_MOVES = re.compile(r"\b(?:moved|changed|pushed|postponed|rescheduled|brought\s+forward|delayed)\b", re.IGNORECASE)
_CLOSE_WINDOW = 30  # characters before a date searched for a closing word
_MOVED_END = 10  # days: a later line's new last day moves this stretch's end, no further away


_REPLACED = re.compile(r"\b(?:instead\s+of|rather\s+than|not)\s+(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?\b", re.IGNORECASE)


def _replaced_days(text: str) -> set[int]:
    """Days of the month a line says it replaces: "instead of the 16th", "not the 31st"."""
    return {int(m.group(1)) for m in _REPLACED.finditer(text)}


def _days_in(item: Evidence) -> list[tuple[int, date, date, str]]:
    """(offset, first day, last day, phrase) of each day-exact date or range stored on a line, in text order."""
    out = []
    for d, at in zip(item.dates, _phrase_offsets(item.text, item.dates), strict=True):
        if d.get("granularity", "day") != "day" or d.get("approximate"):
            continue
        start, end = parse_iso_day(d.get("start")), parse_iso_day(d.get("end") or d.get("start"))
        phrase = str(d.get("phrase") or "").lower()
        if start and end and at >= 0:
            out.append((at, start, end, phrase))
    return sorted(out)


def _closes(item: Evidence) -> list[tuple[int, date]]:
    return [(at, a) for at, a, b, _ in _days_in(item)
            if a == b and _CLOSES.search(item.text, max(0, at - _CLOSE_WINDOW), at)]


def _stretch_of(item: Evidence) -> tuple[date, date] | None:
    """The line's stretch: a range it stores ("27 dec to 2 jan"), else a day it closes with
    ("until the 2nd") and the first day before it, in that sentence or the one before, that is neither
    the day the line was said ("bought the ticket today, leaving 12 February and coming back 5 March")
    nor a holiday."""
    days = _days_in(item)
    ranges = [(a, b) for _, a, b, phrase in days if b > a and re.search(r"\d", phrase)]  # not "the weekend"
    if ranges:
        return ranges[0]
    for at, end in _closes(item):
        bounds = [0] + [m.end() for m in _SENTENCE_GAP.finditer(item.text, 0, at)]
        if _MOVES.search(item.text, bounds[-1], at):
            continue  # "a party on the 10th, so we moved our return flight to the 12th": a new last day only
        since = bounds[-2] if len(bounds) > 1 else 0
        # "christmas [25 December]: going to mum's on the 23rd": a holiday frames a stay, it does not open it.
        opens = [a for where, a, b, phrase in days
                 if since <= where < at and a == b and a < end and a != item.day and not _HOLIDAY.search(phrase)]
        if opens:
            return opens[0], end
    return None


def stretch(event: str, evidence: Sequence[Evidence], within: Sequence[tuple[date, date]] = ()) -> Grounded | None:
    """First and last day of a stay or stretch the notes tell ("How many nights did Martín stay with us
    over Christmas?"), from the stored dates: of the lines that hold a stretch (see :func:`_stretch_of`)
    overlapping ``within`` when the question names days, the one holding the rarest of ``event``'s
    words (then one not outdated, then the earliest told); a line that moved it gives the new dates;
    then a later line on the same thing that gives a new last day ("ended up staying until Sunday
    the 4th") moves its end. None when no line holds one."""
    wanted = terms(event) - _DATE_ONLY
    lines = [e for e in evidence if e.kind != "summary"]
    held_by = {id(e): wanted & terms(e.text) for e in lines}
    # A word few lines hold says more: "Ella's GCSEs" is the GCSE line, not Ella's mocks.
    spread = {t: sum(t in held for held in held_by.values()) for t in wanted}
    best: tuple | None = None
    chosen: tuple[Evidence, tuple[date, date]] | None = None
    for i, item in enumerate(lines):
        held = held_by[id(item)]
        span = _stretch_of(item) if held else None
        if span is None or (within and not any(a <= span[1] and span[0] <= b for a, b in within)):
            continue
        weight = round(sum(1 / spread[t] for t in held), 6)
        key = (weight, not item.stale, -(item.day or date.max).toordinal(), -i)
        if best is None or key > best:
            best, chosen = key, (item, span)
    if chosen is None:
        return None
    item, (start, end) = chosen
    newer = next((e for e in lines if item.stale and e.note_id == item.superseded_by), None)
    moved = _stretch_of(newer) if newer is not None else None
    # Outdated by a line that moved it ("Oslo kickoff moved to 26-28 january"): the new dates, when
    # that line holds at least half of what singled this one out (a line that outdated everything
    # naming Noor does not move Noor's mum's visit).
    # A line that moved it naming nothing ("ok changed flights, now 3rd-9th" for "ibiza!!! 2-9 july")
    # gives the new dates when they lie close to the old ones.
    near = (moved is not None and not held_by[id(newer)]
            and max(abs((moved[0] - start).days), abs((moved[1] - end).days)) <= _MOVED_END)
    if moved is not None and (sum(1 / spread[t] for t in held_by[id(newer)]) >= best[0] / 2 or near):
        item, (start, end) = newer, moved
    elif newer is not None and moved is None:
        # Moved one leg ("our return flight got pushed a day later", stored as the day it went to):
        # the day nearer the old last day is the new last day, nearer the old first day the new first.
        for _, a, b, _ in _days_in(newer):
            if a == b and a not in (start, end) and min(abs((a - start).days), abs((a - end).days)) <= _MOVED_END:
                if abs((a - end).days) < abs((a - start).days) and a > start:
                    end = a
                elif abs((a - start).days) < abs((a - end).days) and a < end:
                    start = a
    told = item.day
    # A later line on the same thing, or one that names the old last day it replaces ("Ryanair moved
    # my return flight. coming back Wednesday 17 Sept now instead of the 16th": no word of Seville).
    for later in sorted((e for e in lines if e.day and told and e.day > told
                         and (held_by[id(e)] or end.day in _replaced_days(e.text))), key=lambda e: e.day):
        for _, day in _closes(later):
            if start < day and abs((day - end).days) <= _MOVED_END:
                # A line that tells the trip anew ("I left on the 4th … going back on Thursday 26
                # February instead of 5 March"), or the one that moved it ("london got pushed a week,
                # now flying sun 18 oct, back sat 24 oct"), gives its first day too.
                # So does a later telling of the plan while it is still ahead, of the same teller
                # ("A possible Tokyo trip, 8-12 September", then "tokyo confirmed: sunday 7 sept, land
                # the 8th, back saturday 13th"): see :func:`_told_again`.
                retold = _stretch_of(later)
                ahead = (retold is not None and later.day <= start and same_teller(later, item)
                         and retold[0] <= end and start <= retold[1])
                anew = end.day in _replaced_days(later.text) or later.note_id == item.superseded_by or ahead
                retold = retold if anew else None
                if retold is not None and retold[1] == day:
                    item, start, end = later, retold[0], day  # the line that told it anew is the source
                else:
                    end = day
                break
    label = f"{day_label(start)} to {day_label(end)}"
    return Grounded(event, start, end, label, False, item.note_id)


def ground_operands(args: Sequence[str], evidence: Sequence[Evidence | str], question: str | None = None) -> list[date]:
    """The two days a date tool should measure between, taken from the notes.

    When the question names two events ("between X and Y") and both are found in the evidence (or
    the question writes their dates), their stored dates are the operands, whatever the model
    wrote. Otherwise each operand the model wrote is kept when it is a day the evidence states, and
    replaced when it is not (or is not a date but event words) by the stored date of the evidence
    line that best matches it, or the question's event in the same position. ValueError when an
    operand can be neither read nor found."""
    events = anchors(question) if question else []
    events = events if len(events) == 2 else []
    if events:
        grounded = [ground(e, evidence) for e in events]
        if all(g is not None for g in grounded):
            return [g.start for g in grounded if g is not None]
    stated = known_days(evidence)
    out = []
    for i, arg in enumerate(args):
        try:
            day: date | None = parse_date(arg)
        except ValueError:
            day = None
        if day is not None and (day in stated or not evidence):
            out.append(day)
            continue
        found = ground(arg, evidence) if day is None else None
        if found is None and i < len(events):
            found = ground(events[i], evidence)
        if found is not None:
            out.append(found.start)
        elif day is not None:
            out.append(day)  # not in the evidence, and nothing better: the model's day
        else:
            parse_date(arg)  # raises the one-line message
    return out


# --- counting -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CountedEvent:
    """One distinct event among the lines that mention a counted term."""

    name: str  # what it was: the name written next to the term ("Dune"), else the sentence
    start: date | None  # when: the line's resolved date nearest the term, else the day it was said
    end: date | None
    label: str  # "3 March 2026", "week of 2 March 2026", "unknown date"
    note_ids: tuple[int, ...]  # every line that mentions it (a repeat adds a line, not an event)
    quantity: int | None = None  # how many the line says it was: "three trout" 3, "a 5lb trout" 1


@dataclass(frozen=True)
class Count:
    term: str
    mentions: int  # matches over all evidence texts
    note_ids: tuple[int, ...]  # the evidence items with at least one match, in input order
    sessions: int  # distinct sessions among them (items without a session count by their day)
    events: tuple[CountedEvent, ...] = ()  # distinct events, oldest first (see count_occurrences)
    negated: int = 0  # mentions left out because the line says it did not happen ("no parkrun this week")
    windowed: bool = False  # only events on the days the question names are counted ("in 2025")
    planned: tuple[CountedEvent, ...] = ()  # mentioned as plans, not yet happened when said

    def describe(self) -> str:
        undone = f"; {_plural(self.negated, 'mention')} said it did not happen" if self.negated else ""
        if self.mentions == 0:
            return f"'{self.term}' is not mentioned in the notes" if not self.negated else f"'{self.term}': no event{undone}"
        return (
            f"'{self.term}' is mentioned {_plural(self.mentions, 'time')} in "
            f"{_plural(len(self.note_ids), 'note')} from {_plural(self.sessions, 'session')}{undone}"
        )

    def describe_events(self) -> str:
        """The tool's answer: distinct events first (repeats counted once), then the raw mentions."""
        if self.mentions == 0:
            return self.describe()
        # The number right after what is counted: told "distinct events of 'parkruns' (a repeat counts
        # once): 9 — ...", the 1.5B model answered "3" on three of five tune questions; told "number
        # of parkruns: 9 (...)", it answered 9.
        number, _, listed = format_events(self.events).partition(" — ")
        where = ", on the days asked" if self.windowed else ""
        ahead = f"; planned, not counted: {format_events(self.planned).partition(' — ')[2]}" if self.planned else ""
        return (f"number of {self.term}: {number} (distinct events{where}, a repeat counts once) — {listed}{ahead}; "
                f"{self.describe()}")


def format_events(events: Sequence[CountedEvent] | Count) -> str:
    """'3 — Dune (3 March 2026), Circe (20 March 2026), Piranesi (2 April 2026)': a count with its
    items and dates, oldest first, for counting and state-tracking answers."""
    items = events.events if isinstance(events, Count) else tuple(events)
    if not items:
        return "0"
    return f"{len(items)} — " + ", ".join(f"{e.name} ({e.label})" for e in items)


# English irregular verbs (base, past, participle): "How many times have I been to see Mum?" is
# told as "saw Mum on Thursday". Grammar, not a list fitted to examples.
_IRREGULAR = [
    ("be", "was were", "been"), ("begin", "began", "begun"), ("break", "broke", "broken"), ("bring", "brought", "brought"),
    ("build", "built", "built"), ("buy", "bought", "bought"), ("catch", "caught", "caught"), ("choose", "chose", "chosen"),
    ("come", "came", "come"), ("do", "did", "done"), ("draw", "drew", "drawn"), ("drink", "drank", "drunk"),
    ("drive", "drove", "driven"), ("eat", "ate", "eaten"), ("fall", "fell", "fallen"), ("feel", "felt", "felt"),
    ("fight", "fought", "fought"), ("find", "found", "found"), ("fly", "flew", "flown"), ("forget", "forgot", "forgotten"),
    ("get", "got", "gotten"), ("give", "gave", "given"), ("go", "went", "gone"), ("grow", "grew", "grown"),
    ("have", "had", "had"), ("hear", "heard", "heard"), ("hold", "held", "held"), ("keep", "kept", "kept"),
    ("know", "knew", "known"), ("leave", "left", "left"), ("lend", "lent", "lent"), ("lose", "lost", "lost"),
    ("make", "made", "made"), ("meet", "met", "met"), ("pay", "paid", "paid"), ("read", "read", "read"),
    ("ride", "rode", "ridden"), ("ring", "rang", "rung"), ("run", "ran", "run"), ("say", "said", "said"),
    ("see", "saw", "seen"), ("sell", "sold", "sold"), ("send", "sent", "sent"), ("shoot", "shot", "shot"),
    ("sing", "sang", "sung"), ("sit", "sat", "sat"), ("sleep", "slept", "slept"), ("speak", "spoke", "spoken"),
    ("spend", "spent", "spent"), ("stand", "stood", "stood"), ("swim", "swam", "swum"), ("take", "took", "taken"),
    ("teach", "taught", "taught"), ("tell", "told", "told"), ("think", "thought", "thought"), ("throw", "threw", "thrown"),
    ("wear", "wore", "worn"), ("win", "won", "won"), ("write", "wrote", "written"),
]
_VERB_FORMS: dict[str, set[str]] = {}
for _base, _past, _part in _IRREGULAR:
    _all = {_base, *_past.split(), _part, _base + ("es" if _base.endswith(("ch", "sh", "o")) else "s"),
            (_base[:-1] if _base.endswith("e") and not _base.endswith("ee") else _base) + "ing"}
    for _form in _all:
        _VERB_FORMS.setdefault(_form, set()).update(_all)
_VOWELS = set("aeiou")


def verb_forms(word: str) -> set[str]:
    """The irregular verb forms of ``word`` ("see" → saw, seen, seeing, sees); empty for any other word."""
    return set(_VERB_FORMS.get(word.lower(), ()))


# Words in -ing or -ed that are nouns or adjectives first: their stem is another word ("morn", "wed").
_NOT_GERUNDS = frozenset(
    "morning evening wedding meeting building ceiling clothing feeling thing nothing something anything everything "
    "spring string sibling pudding stuffing booking parking ring king wing sling swing during "
    "bed red shed need speed feed seed".split()
)


def _verb_bases(word: str) -> set[str]:
    """The verb a gerund or a past form may be made from: "climbing" → climb, "hiking" → hike,
    "swimming" → swim, "flooded" → flood; none for a word that is a noun first ("morning", "wedding")."""
    if word in _NOT_GERUNDS or not word.isalpha():
        return set()
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            bases = {stem, stem + "e"}
            if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "ls":
                bases.add(stem[:-1])  # swimming → swim, stopped → stop
            return bases
    return set()


def _word_forms(word: str) -> list[str]:
    """The word with its regular plural / singular forms ('class' ↔ 'classes', 'party' ↔ 'parties')
    and, for a word not written as a plural, its verb forms: regular ('visit' → 'visited',
    'visiting'; 'hike' → 'hiked'; 'stop' → 'stopped') and irregular ('see' → 'saw', 'seen')."""
    forms = {word, word + "s", word + "es"}
    if word.endswith("ies"):
        forms.add(word[:-3] + "y")
    if word.endswith("y"):
        forms.add(word[:-1] + "ies")
    if word.endswith("es"):
        forms.add(word[:-2])
    if word.endswith("s"):
        forms.add(word[:-1])
    else:  # "books" is the noun: "booked" is no book
        forms |= _VERB_FORMS.get(word, set())
        for base in _verb_bases(word):  # "go climbing" is told "climbed tonight", "swam 40 lengths"
            past = _VERB_FORMS.get(base, set()) - {base, base + "s"}  # not the base: "a camp chair" is no camping
            forms |= past | ({base + "ed" if not base.endswith("e") else base + "d"} if not past else set())
        if word.isalpha() and len(word) >= 3 and word not in _VERB_FORMS:
            stem = word[:-1] if word.endswith("e") else word
            forms |= {stem + "ed", stem + "ing"}
            if word.endswith("y") and word[-2] not in _VOWELS:
                forms.add(word[:-1] + "ied")
            if word[-1] in "bdgmnprt" and word[-2] in _VOWELS and word[-3] not in _VOWELS:
                forms |= {word + word[-1] + "ed", word + word[-1] + "ing"}
    return sorted(forms, key=len, reverse=True)


def _term_pattern(term: str) -> re.Pattern[str]:
    words = term.lower().split()
    head = r"\s+".join(re.escape(w) for w in words[:-1])
    last = "|".join(re.escape(f) for f in _word_forms(words[-1]))
    body = rf"{head}\s+(?:{last})" if head else rf"(?:{last})"
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def count_occurrences(term: str, evidence: Sequence[Evidence | str],
                      within: Sequence[tuple[date, date]] = (), *, only_own: bool = False,
                      owned: bool = False) -> Count:
    """How often ``term`` (whole words, case-insensitive, regular plurals included) occurs in the
    evidence texts, in how many items and in how many sessions (MemFlow B.2 counting tool), and how
    many distinct events those mentions describe (:func:`_distinct_events`).

    A line that dates several past days for the term ("parkruns: did the 29th and the 5th") tells
    of one event a day. A mention in a plan not yet done (:func:`_planned`: "goal is the parkrun by
    Easter", a day after the last note) is no event: it is kept apart as planned. ``within`` (the
    spans the question's dates name, "in 2025"): only events on those days count. ``only_own`` (the
    question asks of the user's own events): a sentence whose subject is someone else tells no event;
    ``owned`` (it asks of "my" or "our" thing): nor does a thing someone else owns (:func:`_someone_else`)."""
    cleaned = " ".join(term.strip().strip("\"'`").split())
    if not cleaned or not re.search(r"\w", cleaned):
        raise ValueError("count_occurrences needs a word or phrase to count")
    pattern = _term_pattern(cleaned)
    mentions = negated = 0
    ids: list[int] = []
    sessions: set[str] = set()
    lines: list[_Line] = []
    planned: list[_Line] = []
    proper = _proper([_text(item) for item in evidence])
    latest = max((d for d in map(_said_day, evidence) if d is not None), default=None)  # the notes' present
    for i, item in enumerate(evidence):
        text = item.text if isinstance(item, Evidence) else str(item)
        found = list(pattern.finditer(text))
        if not found:
            continue
        kept = [m for m in found if not _negated(text, m)]
        negated += len(found) - len(kept)
        contrast = _done_instead(item, text, found) if not kept else None
        found = kept
        if not found and contrast is None:  # "no parkrun this week, too tired": mentioned, no event
            continue
        if found and all(_BACK.search(text, max(0, m.start() - 24), m.start()) for m in found):
            # "still havent paid that ticket": the one told before, mentioned again, no event of its own
            mentions += len(found)
            continue
        if found and only_own and all(_someone_else(text, m, proper, owned) for m in found):
            # "Jo went climbing without me", "bf has a migraine", "Neighbor's basement flooded": theirs
            mentions += len(found)
            continue
        mentions += len(found) or 1
        if isinstance(item, Evidence):
            ids.append(item.note_id)
            sessions.add(item.session or (item.event_time or "")[:10] or f"#{item.note_id}")
        else:
            ids.append(i)
        if contrast is not None:  # "no parkruns in Portugal, but I did Phoenix Park on the 26th"
            lines.append(_line(item, ids[-1], contrast[0], cleaned, proper, day=contrast[1]))
            continue
        days = _event_days(item, text, found)
        if len(days) >= 2:
            # "two more physio sessions, the 19th and then thursday the 3rd": the two is the days
            # listed, one event each, not two on each day.
            for split in (_line(item, ids[-1], found[0], cleaned, proper, day=d) for d in days):
                if split.quantity == len(days):
                    split.quantity = None
                lines.append(split)
            continue
        line = _line(item, ids[-1], found[0], cleaned, proper)
        (planned if _planned(item, found[0], line, latest) else lines).append(line)
    recurs = not _OCCURRENCES.isdisjoint(_word_forms(cleaned.lower().split()[-1]))
    events = tuple(e for e in _distinct_events(lines, recurs) if _on_days(e, within))
    ahead = tuple(e for e in _distinct_events(planned, recurs) if _on_days(e, within))
    return Count(cleaned, mentions, tuple(ids), len(sessions) if sessions else len(ids), events, negated,
                 bool(within), ahead)


# Who else a sentence may be about: the people close to a user, as they write them.
_RELATION = (r"(?:wife|husband|partner|bf|gf|boyfriend|girlfriend|hubby|mum|mom|mother|dad|father|parents|sister|"
             r"brother|son|daughter|kids?|children|cousin|aunt|auntie|uncle|nephew|niece|friend|mate|colleague|"
             r"co-?worker|boss|manager|neighbou?rs?|flatmate|roommate|housemate|nan|gran|grandma|grandad|grandpa)")
# A sentence opening on someone else ("My wife go to doctor", "bf has a migraine", "Colleague attended
# the Oxford site visit", "our neighbours' basement"), or whose owner stands right before the thing
# ("Em's lido season ticket", "Neighbor's basement flooded").
_OTHER_OPENS = re.compile(rf"^\W*(?:(?:my|our|his|her|their|the)\s+(?:\w+\s+)?)?{_RELATION}\b(?!\s+(?:and|&)\s+(?:i|me)\b)",
                          re.IGNORECASE)
_OWNER_BEFORE = re.compile(r"(?<![\w'’])(?!(?:my|our|your|it|that|what|there|here|he|she|who)['’])([A-Za-z][\w-]*)['’]s\s+(?:\w+\s+)?$",
                           re.IGNORECASE)
_ME = re.compile(r"\b(?:i|i['’]m|i['’]ve|i['’]d|i['’]ll|im|ive|we|we['’]re|we['’]ve|weve)\b", re.IGNORECASE)


def _someone_else(text: str, match: re.Match, proper: set[str], owned: bool = False) -> bool:
    """The mention tells of someone else's event: its sentence opens on another person (a relation,
    or a name written capitalised elsewhere, followed by a verb) and says nothing of "I" or "we"
    before the mention; or, when the user's own thing is asked of (``owned``: "our basement"),
    another's possessive stands right before it ("Neighbor's basement"). Not otherwise: "Kieran's
    wedding" is one the user goes to."""
    lo, _ = _sentence_at(text, match.start())
    before = text[lo:match.start()]
    owner = _OWNER_BEFORE.search(before, max(0, len(before) - 40)) if owned else None
    if owner is not None and not terms(owner.group(1)) & terms(match.group(0)):
        return True  # "Em's lido" for the lido; "Lido's open" is the lido itself
    if _ME.search(before):
        return False
    if _OTHER_OPENS.match(before):
        return True
    first = re.match(r"\W*([A-Z][\w-]*)\s+(\w+)", before)
    return (first is not None and first.group(1) in proper
            and re.fullmatch(r"(?:went|has|had|got|did|was|is|took|came|saw|ran|swam|\w+ed|\w+s)", first.group(2)) is not None)


# A mention that points back at one told before: "that ticket", "the same ticket", "this same race".
_BACK = re.compile(r"\b(?:that|those|the\s+same|this\s+same|said)\s+(?:[a-z]+\s+)?$", re.IGNORECASE)


def _on_days(event: CountedEvent, within: Sequence[tuple[date, date]]) -> bool:
    """The event falls on one of the spans (any day, when there are none)."""
    if not within:
        return True
    return event.start is not None and any(event.start <= b and (event.end or event.start) >= a for a, b in within)


# What undoes an event said right before it in the same clause ("no parkrun this week", "didn't go
# fishing", "skipped the gym", "never made it to yoga"), or right after it ("the match was cancelled").
_NEGATORS = {
    "no", "not", "never", "didn't", "didnt", "don't", "dont", "wasn't", "weren't", "haven't", "hasn't", "won't",
    "couldn't", "can't", "cannot", "skipped", "skip", "skipping", "missed", "miss", "missing", "without",
    "cancelled", "canceled", "cancel", "instead", "nor",
}
_CALLED_OFF = r"cancel+ed|called off|rained off|postponed"
_UNDONE_AFTER = re.compile(rf"^\W*(?:\w+\W+){{0,2}}?(?:{_CALLED_OFF})\b", re.I)
# A day that did not happen as written: called off, or moved to another ("monday was easter monday so
# seun moved it").
_DAY_UNDONE = re.compile(rf"^\W*(?:\w+\W+){{0,2}}?(?:{_CALLED_OFF}|moved|rescheduled)\b", re.I)
_NEGATION_WINDOW = 3  # words before the term


def _clause_before(text: str, at: int) -> str:
    return re.split(r"[.!?;,:()\n]|\b(?:but|and|so|then)\b", text[:at])[-1]


def _negated_at(text: str, at: int) -> bool:
    """A negator among the few words before ``at``, in its clause: "missed the 12th", "no parkrun"."""
    words = [w.lower().replace("’", "'") for w in re.findall(r"[\w'’]+", _clause_before(text, at))]
    return any(w in _NEGATORS for w in words[-_NEGATION_WINDOW:])


def _negated(text: str, match: re.Match) -> bool:
    if _negated_at(text, match.start()):
        return True
    after = re.split(r"[.!?;\n]", text[match.end():])[0]
    return _UNDONE_AFTER.search(after) is not None or _NOT_THERE.search(after) is not None


# The user says they were not at it: "amaka went to her colleague zainabs wedding last sat, i didnt go".
_NOT_THERE = re.compile(r"\b(?:i|we)\s+(?:didn['’]?t|did\s+not|couldn['’]?t|could\s+not|never)\s+"
                        r"(?:go|went|make\s+it|attend(?:ed)?|come|came)\b", re.IGNORECASE)


# Words of intent: a mention in their clause is a plan or a wish, not an event ("goal is the parkrun
# by Easter", "we want to see Khruangbin", "I'll book the dentist").
_INTENT = {
    "goal", "goals", "aim", "aiming", "plan", "plans", "planning", "hope", "hoping", "want", "wants",
    "wanna", "gonna", "will", "i'll", "we'll", "she'll", "he'll", "they'll",
}


def _planned(item: Evidence | str, match: re.Match, line: _Line, latest: date | None) -> bool:
    """The mention is a plan not yet done: the day the line gives it is after the ``latest`` day
    anything was said, or its sentence dates nothing and a word of intent comes earlier in its
    clause ("started in feb. goal is the parkrun by easter": a deadline dates no event). A plan whose
    day has passed by then is counted: "Tokyo trip booked for 7 September", said in June."""
    if line.own_date and line.start is not None and latest is not None and line.start > latest:
        return True
    text = _text(item)
    lo, hi = _sentence_at(text, match.start())
    if any(lo <= d[0] < hi and not _DEADLINE.search(text, 0, d[0]) for d in _note_dates(item)):
        return False
    words = {w.lower().replace("’", "'") for w in re.findall(r"[\w'’]+", _clause_before(text, match.start()))}
    return bool(words & _INTENT)


# A date that is a deadline ("the parkrun by Easter") is no day the thing was done on.
_DEADLINE = re.compile(r"\b(?:by|before)\s+(?:the\s+)?$", re.IGNORECASE)


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    plain = re.sub(r"\[[^\]]*\]", lambda m: " " * len(m.group(0)), text)
    return [(s.start(), s.end()) for s in _SENTENCES.finditer(plain)]


def _sentence_at(text: str, at: int) -> tuple[int, int]:
    """(start, end) of the sentence holding offset ``at`` (the whole text when none does)."""
    return next(((a, b) for a, b in _sentence_spans(text) if a <= at < b), (0, len(text)))


def _event_days(item: Evidence | str, text: str, found: Sequence[re.Match]) -> list[tuple[date, str]]:
    """The past days a line gives the counted thing, one event each: "parkruns: did the 29th (33:40)
    and the 5th (33:05). missed the 12th" is 29 March and 5 April. A day counts in a sentence with
    the term, or in a later one that goes on with it (:func:`_adds_to_it`); not when a negator
    comes before it; none at all when one is still ahead when said (a plan)."""
    said = _said_day(item)
    exact = sorted((d for d in _note_dates(item) if d[4]), key=lambda d: d[0])
    if len(exact) < 2 or said is None:
        return []
    spans = _sentence_spans(text)
    own = [k for k, (a, b) in enumerate(spans) if any(a <= m.start() < b for m in found)]
    if not own:
        return []
    days: dict[date, str] = {}
    undone: set[date] = set()
    for at, start, _, label, _ in exact:
        k = next((k for k, (a, b) in enumerate(spans) if a <= at < b), None)
        if k is None or k < own[0]:
            continue
        if k not in own and not _adds_to_it(text[spans[k][0]:spans[k][1]]):
            continue
        if start > said:
            return []  # a day still ahead among them: a plan ("can play from 1 may" in its own sentence is not)
        if _negated_at(text, at) or _undone_after(text, at):
            undone.add(start)  # "monday was easter monday so seun moved it": that day is none, however written
        else:
            days.setdefault(start, label)
    return [(day, label) for day, label in days.items() if day not in undone]


def _undone_after(text: str, at: int) -> bool:
    """The day written at ``at`` is said not to have happened just after it ("then mon 23rd [23 March
    2026] got cancelled (seun was sick)")."""
    phrase = re.match(r"[^\[\].,;!?]{0,40}?\[[^\]]*\]", text[at:])
    return phrase is not None and _DAY_UNDONE.match(text[at + phrase.end():]) is not None


_DATE_WORDS = terms(" ".join(_MONTH_NUMBER) + " monday tuesday wednesday thursday friday saturday sunday"
                    " mon tue tues wed thu thur thurs fri sat sun")


def _adds_to_it(sentence: str) -> bool:
    """A sentence that goes on with the last thing named: it starts "and"/"also"/"plus" ("and I did
    18 oct, 31:35", "and the 23rd too, 19 min") or is mostly days, times and numbers ("physio done!!
    went thu 2nd, then tue 7th, n last one mon 13th")."""
    if re.match(r"\s*(?:and|also|plus)\b", sentence, re.IGNORECASE):
        return True
    words = terms(re.sub(r"\[[^\]]*\]", " ", sentence))
    dates = sum(bool(re.fullmatch(r"\d+(?:st|nd|rd|th)?", w)) or w in _DATE_WORDS for w in words)
    return 2 * dates >= len(words)


def _done_instead(item: Evidence | str, text: str,
                  found: Sequence[re.Match]) -> tuple[re.Match, tuple[date, str]] | None:
    """"no parkruns in portugal obvs but I did Phoenix Park on the 26th": the thing negated, then
    done after a "but" in the same sentence on a past day it names: that day's event."""
    said = _said_day(item)
    for m in found:
        end = _sentence_at(text, m.start())[1]
        turn = re.search(r"\bbut\b", text[m.end():end])
        if not turn:
            continue
        after = m.end() + turn.end()
        for at, start, _, label, exact in sorted(_note_dates(item)):
            if exact and after <= at < end and not _negated_at(text, at) and (said is None or start <= said):
                return m, (start, label)
    return None


@dataclass
class _Line:
    note_id: int
    said: date | None
    start: date | None
    end: date | None
    label: str
    own_date: bool  # the line states when (a resolved date), not only when it was said
    name: str
    named: bool  # the name is a proper name written next to the term, not the sentence
    rest: set[str]  # the sentence's content terms, without the counted term and dates
    quantity: int | None = None  # a number written just before the term ("three trout"), "a" = 1


_WORD = re.compile(r"[A-Za-z0-9][\w'’-]*")
_SENTENCES = re.compile(r"[^.!?\n]+[.!?]*")
_JOINERS = {"of", "the", "and", "de", "von", "van"}
_NOT_NAMES = {
    "i", "i'm", "i've", "i'd", "i'll", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
    "sunday", *_MONTH_NUMBER,
}


def _capitalised(word: str) -> bool:
    return (word[0].isupper() or (word[0].isdigit() and any(c.isupper() for c in word))) and word.lower() not in _NOT_NAMES


def _names_in(plain: str, lo: int, hi: int, proper: set[str]) -> list[tuple[int, int, str]]:
    """(start, end, text) of the name runs in plain[lo:hi]: capitalised words ("Dune", "5K") joined
    by "of"/"the"/...; a sentence's first word only when it is written capitalised mid-sentence
    somewhere in the evidence (``proper``): "Dune was great" yes, "Another 5K" no."""
    words = list(_WORD.finditer(plain, lo, hi))
    runs: list[tuple[int, int, str]] = []
    current: list[re.Match] = []
    for k, w in enumerate(words):
        token = w.group(0)
        first = k == 0
        if _capitalised(token) and (not first or token in proper):
            current.append(w)
            continue
        if current and token.lower() in _JOINERS and k + 1 < len(words) and _capitalised(words[k + 1].group(0)):
            current.append(w)
            continue
        if current:
            runs.append((current[0].start(), current[-1].end(), plain[current[0].start() : current[-1].end()]))
        current = []
    if current:
        runs.append((current[0].start(), current[-1].end(), plain[current[0].start() : current[-1].end()]))
    return runs


def _proper(texts: Sequence[str]) -> set[str]:
    """Words written capitalised somewhere other than at a sentence's start: names."""
    found = set()
    for text in texts:
        plain = re.sub(r"\[[^\]]*\]", " ", text)
        for sentence in _SENTENCES.finditer(plain):
            for w in list(_WORD.finditer(sentence.group(0)))[1:]:
                if _capitalised(w.group(0)):
                    found.add(w.group(0))
    return found


def _line(item: Evidence | str, note_id: int, match: re.Match, term: str, proper: set[str],
          day: tuple[date, str] | None = None) -> _Line:
    text = _text(item)
    plain = re.sub(r"\[[^\]]*\]", lambda m: " " * len(m.group(0)), text)  # positions kept
    sentence = next(
        (s for s in _SENTENCES.finditer(plain) if s.start() <= match.start() < s.end()), None
    )
    lo, hi = (sentence.start(), sentence.end()) if sentence else (0, len(plain))
    names = [n for n in _names_in(plain, lo, hi, proper) if not (n[0] <= match.start() < n[1])]
    after = [n for n in names if n[0] >= match.end()]
    before = [n for n in names if n[0] < match.start() and not re.search(r"['’]s$", n[2])]
    pick = after[0] if after else (before[-1] if before else None)  # "Melanie's camping": an owner
    stored = _note_dates(item)
    said = _said_day(item)
    if day is not None:  # one of several days the line gives it (_event_days)
        start = end = day[0]
        label = day[1]
    elif stored:
        _, start, end, label, _ = min(stored, key=lambda d: abs(d[0] - match.start()))
    else:
        start = end = said
        label = day_label(said) if said else "unknown date"
    date_words = {w for d in (item.dates if isinstance(item, Evidence) else []) for w in terms(str(d.get("phrase", "")))}
    quantity = None
    for found in reversed(list(re.finditer(r"[\w'’]+", plain[lo : match.start()]))[-_QUANTITY_WINDOW:]):
        token = found.group().lower()
        if token.isdigit() and (_AMOUNT_BEFORE.search(plain, 0, lo + found.start()) or _A_YEAR.fullmatch(token)):
            continue  # "a $40 parking ticket", "my 2004 mazda": an amount or a year, not how many
        if token.isdigit() and (_MONTH_AFTER.match(plain, lo + found.end())
                                or _MONTH_BEFORE.search(plain, 0, lo + found.start())):
            continue  # "19 to 21 june, surfed the pass": a day of the month, not how many
        if token.isdigit() or token in _NUMBER_WORDS:
            quantity = int(token) if token.isdigit() else _NUMBER_WORDS[token]
            break
    if quantity is None:  # "bouldering twice last week", "swam three times": how often, after the word
        often = _HOW_OFTEN.match(plain, match.end())
        if often and often.group(1):
            quantity = _TIMES[often.group(1).lower()]
        elif often:
            word = often.group(2).lower()
            quantity = int(word) if word.isdigit() else _NUMBER_WORDS[word]
    words = re.sub(r"\s+([,;:])", r"\1", " ".join(plain[lo:hi].split())).strip(" .!?").split()
    return _Line(
        note_id, said, start, end, label, bool(stored),
        pick[2] if pick else " ".join(words[:8]) + (" …" if len(words) > 8 else ""),
        pick is not None,
        terms(plain[lo:hi]) - terms(term) - date_words,
        quantity,
    )


# "had three trout", "two more trout", "a 4lb rainbow trout": a count written at most this many words
# before the counted word ("4lb" is a weight, not a count).
_AMOUNT_BEFORE = re.compile(r"[$£€¥₹]\s?$")
_A_YEAR = re.compile(r"(?:19|20)\d\d")
_MONTH_WORD = r"(?:" + "|".join([m.lower() for m in MONTH_NAMES] + [m[:3].lower() for m in MONTH_NAMES] + ["sept"]) + r")\.?"
_MONTH_AFTER = re.compile(rf"(?:st|nd|rd|th)?\s*(?:of\s+)?{_MONTH_WORD}(?![\w])", re.IGNORECASE)
_MONTH_BEFORE = re.compile(rf"(?<![\w]){_MONTH_WORD}\s*$", re.IGNORECASE)
_QUANTITY_WINDOW = 3
_NUMBER_WORDS = NUMBER_WORDS | {"a": 1, "an": 1, "no": 0, "couple": 2, "pair": 2}
# "bouldering twice last week", "swam three times": how often, written after the counted word; not a
# rate ("physio twice a week", "3 times per month"), which says how often it is planned, not how many.
_TIMES = {"once": 1, "twice": 2, "thrice": 3}
_HOW_OFTEN = re.compile(
    rf"\s+(?:[a-z]+\s+)?(?:({'|'.join(_TIMES)})\b|(\d+|{'|'.join(w for w in _NUMBER_WORDS if len(w) > 2)})\s+times\b)"
    r"(?!\s+(?:a|an|per|each|every)\s+(?:day|week|fortnight|month|year)\b)",
    re.IGNORECASE,
)


# Two lines tell of the same event when they share at least this much of what they say besides the
# counted term (the recency filter's value: preprocess.RECENCY_JACCARD).
SAME_EVENT_JACCARD = 1 / 3


def _overlap(a: _Line, b: _Line) -> bool:
    if a.start is None or b.start is None:
        return True
    return a.start <= (b.end or b.start) and b.start <= (a.end or a.start)


def _same_event(earlier: _Line, later: _Line) -> bool:
    """Same event: what the lines say matches (same proper name, or similar words), and their dates
    agree (spans overlap) — or the later line gives no date of its own and names the same thing:
    "I finished Dune" (3 March) and "as I said, I finished Dune last week" (10 March) are one book;
    "I ran a 5K" said on two different days, with no name to tie them, is two runs."""
    if earlier.named and later.named and earlier.name.casefold() != later.name.casefold():
        return False  # "I finished Dune" and "I finished Circe": two books, even on one day
    if _single_day(earlier) and _single_day(later) and earlier.start == later.start:
        return True  # "parkrun on the 5th" told twice: the day it names is the same, so is the run
    same_name = earlier.named and later.named
    similar = same_name or jaccard(earlier.rest, later.rest) >= SAME_EVENT_JACCARD or not (earlier.rest or later.rest)
    if not similar:
        return False
    if _overlap(earlier, later):
        return True
    return same_name and not later.own_date


def _apart(earlier: _Line, later: _Line) -> bool:
    """Said on different days, and the later line dates nothing of its own: its day is its own."""
    return not later.own_date and earlier.said is not None and later.said is not None and earlier.said != later.said \
        and not _overlap(earlier, later)


def _single_day(line: _Line) -> bool:
    return line.own_date and line.start is not None and line.start == line.end


def _precision(line: _Line) -> tuple[int, int, date]:
    """Sort key for the date an event is shown with: a single day stated, then a single day said,
    then the narrowest span; earliest among equals."""
    if line.start is None:
        return (9, 0, date.max)
    width = ((line.end or line.start) - line.start).days
    return (0 if width == 0 and line.own_date else 1 if width == 0 else 2, width, line.start)


# Words for what happens again and again: "Weekly call with the Tokyo team completed" on 5 and on 19
# May are two calls, though each names Tokyo and neither dates itself; "finished Dune" and "Dune was
# so good" a week later are one book.
_OCCURRENCES = frozenset(
    "call session visit class lesson game match meeting appointment shift run trip outing swim climb walk "
    "ride training rehearsal practice interview jab injection dose treatment".split()
)


def _distinct_events(lines: list[_Line], recurs: bool = False) -> tuple[CountedEvent, ...]:
    """Lines grouped into events (each line joins the first earlier event it repeats), oldest first.
    ``recurs``: the counted thing happens again and again, so lines said on different days that date
    nothing are different events, whatever name they share."""
    order = sorted(range(len(lines)), key=lambda i: (lines[i].said or date.min, i))
    groups: list[list[_Line]] = []
    for i in order:
        line = lines[i]
        for group in groups:
            if any(_same_event(member, line) and not (recurs and _apart(member, line)) for member in group):
                group.append(line)
                break
        else:
            groups.append([line])
    events = []
    for group in groups:
        when = min(group, key=_precision)
        head = next((m for m in group if m.named), group[0])
        quantities = [m.quantity for m in group if m.quantity is not None]
        events.append(CountedEvent(head.name, when.start, when.end, when.label, tuple(m.note_id for m in group),
                                   max(quantities) if quantities else None))
    return tuple(sorted(events, key=lambda e: e.start or date.max))


# --- parsing and execution ----------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    name: str  # lower-cased; may be unknown (execute() says so)
    args: tuple[str, ...]
    raw: str  # the TOOL: line as the model wrote it

    def __str__(self) -> str:
        return f"{self.name}({', '.join(self.args)})"


# "TOOL:" at the start of a line, allowing markdown the models like to add ("**TOOL:**", "`TOOL:").
_TOOL_LINE = re.compile(r"^[\s>*`_-]*TOOL\s*:[*`_]*\s*(?P<body>.*)$", re.MULTILINE)
_NAME = re.compile(r"(?P<name>[A-Za-z_][\w]*)\s*(?P<rest>.*)$", re.DOTALL)
_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'")
_KEYWORD = re.compile(r"^\w+\s*=\s*")


def _split_args(text: str) -> list[str]:
    text = text.strip()
    if not text:
        return []
    quoted = _QUOTED.findall(text)
    if quoted:
        return [a or b for a, b in quoted]
    separator = "|" if "|" in text else ","
    pieces = [p.strip() for p in text.split(separator)]
    if separator == ",":
        # "May 7, 2023, May 25, 2023": a piece that is only a year belongs to the date before it.
        merged: list[str] = []
        for piece in pieces:
            if merged and re.fullmatch(r"\d{4}", piece):
                merged[-1] = f"{merged[-1]}, {piece}"
            else:
                merged.append(piece)
        pieces = merged
    return [_KEYWORD.sub("", p).strip().strip("`") for p in pieces if p.strip()]


def parse_tool_call(text: str) -> ToolCall | None:
    """The first ``TOOL:`` line in a model reply as a call, or None when the reply has none.

    A line that starts with TOOL: but names nothing still comes back (with an empty name) so the
    pipeline can answer it with an error instead of treating the reply as final."""
    m = _TOOL_LINE.search(text)
    if m is None:
        return None
    line = m.group(0).strip()
    body = m.group("body").strip().rstrip(".;").strip()
    named = _NAME.match(body)
    if named is None:
        return ToolCall("", (), line)
    name, rest = named.group("name").lower(), named.group("rest").strip()
    if rest.startswith("("):
        close = rest.rfind(")")
        rest = rest[1:close] if close > 0 else rest[1:]
    elif rest.startswith("|") or rest.startswith(":"):
        rest = rest[1:]
    return ToolCall(name, tuple(_split_args(rest)), line)


def _is_date(text: str) -> bool:
    try:
        parse_date(text)
    except ValueError:
        return False
    return True


def execute(call: ToolCall, evidence: Sequence[Evidence | str] = (), question: str | None = None) -> str:
    """Run a parsed call; the result string, or one starting with ``error: `` for a bad call.

    ``evidence`` is what the answer agent was shown (the packed items): count_occurrences counts
    distinct events over it, and the date tools take their operands from its stored dates
    (:func:`ground_operands`, with the ``question``'s events), so the answers agree with the context
    the model reads, not with dates it typed."""
    if not call.name:
        return f"{ERROR_PREFIX}no tool named; use one of {', '.join(TOOL_NAMES)}"
    if call.name not in _ARITY:
        return f"{ERROR_PREFIX}unknown tool {call.name!r}; use one of {', '.join(TOOL_NAMES)}"
    want = _ARITY[call.name]
    if call.name != "count_occurrences" and len(call.args) > want:
        # "days_between(11 September 2025, 16 September 2025, RESULT: 5)": the model wrote its own
        # guess after the operands. Arguments that are no date are dropped; two dates remain, or the
        # call is wrong.
        kept = tuple(a for a in call.args if _is_date(a))
        call = replace(call, args=kept) if len(kept) == want else call
    if len(call.args) != want:
        form = "term" if call.name == "count_occurrences" else "date1, date2"
        arguments = "argument" if want == 1 else "arguments"
        return f"{ERROR_PREFIX}{call.name} takes {want} {arguments} ({form}), got {len(call.args)}"
    try:
        if call.name == "count_occurrences":
            return count_occurrences(call.args[0], evidence).describe_events()
        first, second = ground_operands(call.args, evidence, question)
    except ValueError as exc:
        return f"{ERROR_PREFIX}{exc}"
    a, b = _ordered(first, second)
    return f"{_DESCRIBE[call.name](a, b)} between {day_label(a)} and {day_label(b)}"

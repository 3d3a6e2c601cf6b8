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
from dataclasses import dataclass
from datetime import date

from dateutil.relativedelta import relativedelta

from edgemem.recall.evidence import Evidence
from edgemem.text import day_label

__all__ = [
    "MAX_TOOL_ROUNDS", "TOOL_NAMES", "TAG_TOOLS", "ERROR_PREFIX", "RESULT_PREFIX",
    "ToolCall", "Count", "parse_tool_call", "execute", "parse_date",
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


def parse_date(text: str) -> date:
    """The calendar day written in ``text``; ValueError with a one-line message if there is none."""
    cleaned = _LABEL_PREFIX.sub("", text.strip().strip("\"'`[]() ").strip())
    cleaned = re.sub(r"^[A-Za-z]+day,?\s+", "", cleaned)  # "Sunday, 7 May 2023"
    for form in _DATE_FORMS:
        m = form.fullmatch(cleaned)
        if m is None:
            continue
        month = int(m.group("mn")) if "mn" in m.groupdict() else _MONTH_NUMBER.get(m.group("m").lower())
        if month is None:
            break
        try:
            return date(int(m.group("y")), month, int(m.group("d")))
        except ValueError:
            break  # 31 June, month 13: fall through to the one error message
    raise ValueError(f"cannot read {text.strip()!r} as a date; write it like 7 May 2023 or 2023-05-07")


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


# --- counting -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Count:
    term: str
    mentions: int  # matches over all evidence texts
    note_ids: tuple[int, ...]  # the evidence items with at least one match, in input order
    sessions: int  # distinct sessions among them (items without a session count by their day)

    def describe(self) -> str:
        if self.mentions == 0:
            return f"'{self.term}' is not mentioned in the notes"
        return (
            f"'{self.term}' is mentioned {_plural(self.mentions, 'time')} in "
            f"{_plural(len(self.note_ids), 'note')} from {_plural(self.sessions, 'session')}"
        )


def _word_forms(word: str) -> list[str]:
    """The word with its regular plural / singular forms: 'class' ↔ 'classes', 'party' ↔ 'parties'."""
    forms = {word, word + "s", word + "es"}
    if word.endswith("ies"):
        forms.add(word[:-3] + "y")
    if word.endswith("y"):
        forms.add(word[:-1] + "ies")
    if word.endswith("es"):
        forms.add(word[:-2])
    if word.endswith("s"):
        forms.add(word[:-1])
    return sorted(forms, key=len, reverse=True)


def _term_pattern(term: str) -> re.Pattern[str]:
    words = term.lower().split()
    head = r"\s+".join(re.escape(w) for w in words[:-1])
    last = "|".join(re.escape(f) for f in _word_forms(words[-1]))
    body = rf"{head}\s+(?:{last})" if head else rf"(?:{last})"
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def count_occurrences(term: str, evidence: Sequence[Evidence | str]) -> Count:
    """How often ``term`` (whole words, case-insensitive, regular plurals included) occurs in the
    evidence texts, in how many items and in how many sessions (MemFlow B.2 counting tool)."""
    cleaned = " ".join(term.strip().strip("\"'`").split())
    if not cleaned or not re.search(r"\w", cleaned):
        raise ValueError("count_occurrences needs a word or phrase to count")
    pattern = _term_pattern(cleaned)
    mentions = 0
    ids: list[int] = []
    sessions: set[str] = set()
    for i, item in enumerate(evidence):
        text = item.text if isinstance(item, Evidence) else str(item)
        found = len(pattern.findall(text))
        if not found:
            continue
        mentions += found
        if isinstance(item, Evidence):
            ids.append(item.note_id)
            sessions.add(item.session or (item.event_time or "")[:10] or f"#{item.note_id}")
        else:
            ids.append(i)
    return Count(cleaned, mentions, tuple(ids), len(sessions) if sessions else len(ids))


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


def execute(call: ToolCall, evidence: Sequence[Evidence | str] = ()) -> str:
    """Run a parsed call; the result string, or one starting with ``error: `` for a bad call.

    ``evidence`` is what the answer agent was shown (the packed items): count_occurrences counts
    over it, so its answer agrees with the context the model reads."""
    if not call.name:
        return f"{ERROR_PREFIX}no tool named; use one of {', '.join(TOOL_NAMES)}"
    if call.name not in _ARITY:
        return f"{ERROR_PREFIX}unknown tool {call.name!r}; use one of {', '.join(TOOL_NAMES)}"
    want = _ARITY[call.name]
    if len(call.args) != want:
        form = "term" if call.name == "count_occurrences" else "date1, date2"
        arguments = "argument" if want == 1 else "arguments"
        return f"{ERROR_PREFIX}{call.name} takes {want} {arguments} ({form}), got {len(call.args)}"
    try:
        if call.name == "count_occurrences":
            return count_occurrences(call.args[0], evidence).describe()
        first, second = (parse_date(a) for a in call.args)
    except ValueError as exc:
        return f"{ERROR_PREFIX}{exc}"
    a, b = _ordered(first, second)
    return f"{_DESCRIBE[call.name](a, b)} between {day_label(a)} and {day_label(b)}"

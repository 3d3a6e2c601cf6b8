"""The events a temporal question relates: "between X and Y", "X or Y first", "how long after X did Y".

MemFlow A.2's dual-anchor retrieval and its Date Math Calculator both start from these two event
references; Tier 3 retrieves for each, and the date tools ground their operands on them. Its own
module so that :mod:`edgemem.recall.preprocess` and :mod:`edgemem.recall.tools` both use it without
importing each other.
"""

from __future__ import annotations

import re

_LEAD = re.compile(
    r"^(?:(?:how\s+many\s+(?:days|weeks|months|years)|how\s+long|which|what|when|did|does|do|was|were|"
    r"is|are|has|have|had|happen(?:ed)?|passed|elapsed|went\s+by|came|come|first|event|is\s+it|"
    r"there|it|been|the\s+time|time)\b[\s,:]*)+",
    re.IGNORECASE,
)
_BETWEEN = re.compile(r"\bbetween\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*[?.!]*$", re.IGNORECASE)
_FIRST_OR = re.compile(r"\bfirst\b[\s,:-]*(?P<a>.+?)\s+or\s+(?P<b>.+?)\s*[?.!]*$", re.IGNORECASE)
_OR_FIRST = re.compile(r"^(?P<a>.+?)\s+or\s+(?P<b>.+?)\s+first\s*[?.!]*$", re.IGNORECASE)
_HOW_LONG_AFTER = re.compile(
    r"^how\s+(?:many\s+\w+|long)\s+(?:before|after)\s+(?P<a>.+?)\s+(?:did|was|were|do|does|is|had|has)\s+"
    r"(?P<b>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
# "How long was it from my interview to starting the internship?": a duration from one event to another.
# ("How long is the drive from Dublin to Cork?" asks for no time between events.)
_FROM_TO = re.compile(r"^how\s+(?:many\s+\w+|long)\s+(?:was\s+it|did\s+it\s+take|passed|went\s+by|were\s+there|had\s+passed)"
                      r"\s+from\s+(?P<a>.+?)\s+(?:to|until|till)\s+(?P<b>.+?)\s*[?.!]*$", re.IGNORECASE)
# "How old was Tomás when I arrived?": the time from their birth to the event.
_HOW_OLD = re.compile(r"^how\s+old\s+(?:was|were|is|will)\s+(?P<a>.+?)\s+when\s+(?P<b>.+?)\s*[?.!]*$", re.IGNORECASE)
_BEFORE_AFTER = re.compile(r"^(?P<a>.+?)\s+(?:before|after)\s+(?P<b>.+?)\s*[?.!]*$", re.IGNORECASE)
# A second question after the events: "Which happened first, A or B, and how far apart were they?"
_FOLLOW_UP = re.compile(r",\s*(?:and\s+)?(?:how|what|when|which|where|who)\b[^,]*$", re.IGNORECASE)
_TRAIL = re.compile(r"(?:\s+(?:happen(?:ed)?|occur(?:red)?|come|came|take\s+place|took\s+place))+$", re.IGNORECASE)


def _clean_anchor(text: str) -> str:
    text = _LEAD.sub("", text.strip(" ,;:?.!"))
    return _TRAIL.sub("", text.strip(" ,;:?.!")).strip(" ,;:?.!")


_PRONOUN = re.compile(r"^(?:they|them|he|him|she|her|it)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-ZÀ-Þ][\w'’-]+")


def _resolve(b: str, a: str) -> str:
    """The second anchor with its leading pronoun replaced by the first anchor's names: in "from
    sending Helsa my proposal to them signing", "them" is Helsa (alone, "them signing" found the
    signing of a flat lease)."""
    names = [n for n in _NAME.findall(a) if n.lower() not in {"i", "i'm", "i've"}]
    return _PRONOUN.sub(" ".join(names), b, count=1) if names and _PRONOUN.match(b) else b


def anchors(question: str) -> list[str]:
    """The event references of a temporal question, for dual-anchor retrieval (A.2).

    "How many days passed between X and Y?", "Did X happen before Y?", "Which came first, X or Y?",
    "How long was it from X to Y?" give [X, Y]; "How old was X when Y?" gives ["X was born", Y]; any
    other question is its own single anchor."""
    text = " ".join(question.split())
    asked = _FOLLOW_UP.sub("", text)
    text = asked if _FIRST_OR.search(asked) or _BETWEEN.search(asked) or _OR_FIRST.search(asked) else text
    m = _HOW_OLD.search(text)
    if m:
        a, b = _clean_anchor(m.group("a")), _clean_anchor(m.group("b"))
        if a and b:
            return [f"{a} was born", b]
    for pattern in (_BETWEEN, _HOW_LONG_AFTER, _FROM_TO, _FIRST_OR, _OR_FIRST, _BEFORE_AFTER):
        m = pattern.search(text)
        if m:
            a, b = _clean_anchor(m.group("a")), _clean_anchor(m.group("b"))
            if a and b:
                return [a, _resolve(b, a)]
    return [text]

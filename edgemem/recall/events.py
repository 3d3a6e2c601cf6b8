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
_BEFORE_AFTER = re.compile(r"^(?P<a>.+?)\s+(?:before|after)\s+(?P<b>.+?)\s*[?.!]*$", re.IGNORECASE)
_TRAIL = re.compile(r"(?:\s+(?:happen(?:ed)?|occur(?:red)?|come|came|take\s+place|took\s+place))+$", re.IGNORECASE)


def _clean_anchor(text: str) -> str:
    text = _LEAD.sub("", text.strip(" ,;:?.!"))
    return _TRAIL.sub("", text.strip(" ,;:?.!")).strip(" ,;:?.!")


def anchors(question: str) -> list[str]:
    """The event references of a temporal question, for dual-anchor retrieval (A.2).

    "How many days passed between X and Y?", "Did X happen before Y?", "Which came first, X or Y?"
    give [X, Y]; any other question is its own single anchor."""
    text = " ".join(question.split())
    for pattern in (_BETWEEN, _HOW_LONG_AFTER, _FIRST_OR, _OR_FIRST, _BEFORE_AFTER):
        m = pattern.search(text)
        if m:
            a, b = _clean_anchor(m.group("a")), _clean_anchor(m.group("b"))
            if a and b:
                return [a, b]
    return [text]

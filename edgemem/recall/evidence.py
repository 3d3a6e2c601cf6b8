"""The unit of evidence on the read path: one note (or one computed fact) with its date and speaker.

MemFlow §3.1 and Appendix A.3: the Memory Agent hands the packer evidence in three kinds — pinned
profile facts (Tier 1), pre-computed summaries and aggregated facts (Tier 3), raw episodic chunks
(Tier 2). Every packed line carries when it was said and by whom (:meth:`Evidence.header`), because
a small model cannot recover a date it was never shown, and LoCoMo's temporal answers are dates.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from nltk.stem import PorterStemmer

from edgemem.text import ASSISTANT_SPEAKERS, STOPWORDS, day_label, tokens

__all__ = ["profile_line", "profile_value", "ANNOTATION", "ASSISTANT_SPEAKERS", "Evidence", "KINDS", "NOW_TERMS", "TIME_FRAME_TERMS", "parse_iso_day", "same_teller", "terms", "jaccard", "answer_terms", "line_terms", "supporting"]

KINDS = ("profile", "pinned", "summary", "raw")


def profile_line(subject: str, attribute: str, value: str, kind: str) -> str:
    """A profile fact as it is packed: "maya — diet: pescatarian (identity)".

    A slug value reads as words ("dinosaur_exhibit": "dinosaur exhibit"), and the attribute is left
    out when the value already says it: "melanie — keep my family happy (rule)", not "melanie — keep
    family happy: keep my family happy (rule)" (the profile step often names a fact by its value,
    which packed each such fact's words twice)."""
    attribute = attribute.replace("_", " ").strip()
    value = value.strip()
    if " " not in value:
        value = value.replace("_", " ")
    said = set(re.findall(r"\w+", value.lower()))
    if ": " not in value and (not attribute or set(re.findall(r"\w+", attribute.lower())) <= said):
        return f"{subject} — {value} ({kind})"
    return f"{subject} — {attribute}: {value} ({kind})"


_PROFILE_LINE = re.compile(r"^[^—]*—\s*(?:[^:]*:\s)?(.*?)\s*(?:\(\w+\))?\s*$", re.DOTALL)


def profile_value(text: str) -> str:
    """What a profile line (:func:`profile_line`) says: its value, without subject, attribute or kind."""
    m = _PROFILE_LINE.match(text)
    return m.group(1).strip() if m else text.strip()


def parse_iso_day(value: str | None) -> date | None:
    """The calendar day of an ISO 8601 date or timestamp, or None when there is none to read."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.strip()).date()
    except ValueError:
        return None


@dataclass
class Evidence:
    note_id: int
    text: str  # note content (may carry date annotations like "yesterday [7 May 2023]")
    event_time: str  # ISO 8601 of when it was said/written
    speaker: str | None = None
    session: str | None = None  # source uri / session key (for session diversity)
    dates: list[dict] = field(default_factory=list)  # {"phrase","start","end","granularity","approximate","label"}
    score: float = 0.0
    kind: str = "raw"  # "profile" | "pinned" | "summary" | "raw"
    stale: bool = False  # marked by the recency filter
    superseded_by: int | None = None
    ext_id: str | None = None  # e.g. LoCoMo dia_id
    stale_since: str | None = None  # ISO date of the newer statement that made this one stale

    @property
    def day(self) -> date | None:
        """The day this was said or written (None for a computed fact without a time)."""
        return parse_iso_day(self.event_time)

    def header(self) -> str:
        """'(8 May 2023, Caroline)': the date and speaker every packed line starts with.

        A profile fact's header is '(profile)': its date is when the fact was last written, which
        answers nothing asked of it, and at ten tokens a line it was a third of the pinned slot (the
        order of facts by date still decides which is current: :attr:`day` keeps it)."""
        parts = []
        day = self.day if self.kind != "profile" else None
        if day is not None:
            parts.append(day_label(day))
        if self.speaker:
            parts.append(self.speaker)
        if not parts:  # a computed fact or a profile entry without a time still says what it is
            parts.append("computed" if self.kind == "summary" else self.kind)
        return f"({', '.join(parts)})"

    def stale_marker(self) -> str:
        """' (outdated as of 25 May 2023)' for a fact the recency filter marked, else ''."""
        if not self.stale:
            return ""
        since = parse_iso_day(self.stale_since)
        return f" (outdated as of {day_label(since)})" if since else " (outdated)"

    def line(self) -> str:
        """The packed form: header, text, and the stale marker when there is one."""
        return f"{self.header()} {self.text}{self.stale_marker()}"


# Bracketed date annotations ("yesterday [7 May 2023]") say when, not what: they are left out of the
# terms that decide what a note is about, or every note of May would look alike.
ANNOTATION = re.compile(r"\[[^\]]*\]")  # a resolved-date label written into a note: "[7 May 2023]"
_stem = PorterStemmer().stem


# Words of letters and digits together: "80th", "5K", "HbA1c", "M60" (the word tokenizer keeps
# letters only, so "Mum's 80th" was about Mum alone and grounded to any line about her).
_ALNUM = re.compile(r"(?<![\w])(?=[a-z]*\d)(?=\d*[a-z])[a-z\d]{2,}(?![\w])")


# Texting shorthand for the words it stands for: "amaka's bday dinner" is about her birthday, "xmas"
# is Christmas (a chat history is often written this way; a question may be asked either way).
SHORTHAND = {"bday": "birthday", "bdays": "birthdays", "b'day": "birthday", "xmas": "christmas", "appt": "appointment",
             "appts": "appointments", "gf": "girlfriend", "bff": "friend", "tmrw": "tomorrow", "tmr": "tomorrow",
             "wk": "week", "wks": "weeks", "yr": "year", "yrs": "years", "hosp": "hospital", "op": "operation",
             "ops": "operations"}


def terms(text: str) -> set[str]:
    """Content terms of a text: stemmed words of three letters or more that are not stopwords, so
    'adopted' and 'adoption' meet, and words mixing letters and digits ("80th", "hba1c"). Used for
    subject overlap, query overlap and mention tests."""
    found = set()
    plain = ANNOTATION.sub(" ", text)
    for word in tokens(plain):
        word = word.removesuffix("'s")  # "Caroline's" is about Caroline
        word = SHORTHAND.get(word, word)
        if len(word) >= 3 and word not in STOPWORDS:
            found.add(_stem(word))
    found.update(_ALNUM.findall(plain.lower()))
    return found


# The time frame of a question is not what it is about: "this year", "last week", "since the start
# of the year" must not make a fact relevant ("maya — dog: 4 year old whippet" was pinned for "How
# many parkruns have I logged this year?").
TIME_FRAME_TERMS = terms(
    "year years month months week weeks day days today tonight yesterday tomorrow lately recently ago last past "
    "far time times"
)
# Words that ask "as of now" rather than name the subject ("Is pottery still on Wednesdays?").
NOW_TERMS = terms("still now these days currently current latest anymore nowadays today right")


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0.0 for two empty sets (nothing shared is no evidence of sameness)."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


# --- what an answer rests on ----------------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


def answer_terms(text: str) -> set[str]:
    """Content terms plus numbers ("4512", "14"): what an answer and a line are compared on."""
    return terms(text) | set(_NUMBER.findall(ANNOTATION.sub(" ", text)))


def line_terms(item: Evidence) -> set[str]:
    """The terms of an evidence line, with the date labels it was resolved to: an answer saying
    "7 May 2023" rests on the note whose "yesterday" was resolved to that day."""
    found = answer_terms(item.text) | set(_NUMBER.findall(item.text))
    for d in item.dates or ():
        label = d.get("label") or ""
        found |= answer_terms(label)
    return found


def supporting(question: str, answer: str, items: Sequence[Evidence]) -> tuple[list[Evidence], str]:
    """The evidence items an answer rests on, and how they were chosen.

    A greedy cover of the answer's terms: the terms the question did not already hold (what the
    answer adds) weigh most; the item covering most of what is still uncovered is taken, then the
    next, while one covers something left. A later item must cover two terms, or a number, so that
    one common word ("bring", "love") does not cite an unrelated note. No overlap at all: the top
    ranked item (highest retrieval score, else the first shown), reason "top_ranked"."""
    if not items:
        return [], "none"
    asked = terms(question)
    words = answer_terms(answer)
    novel = words - asked or words
    remaining = set(novel)
    chosen: list[Evidence] = []
    tables = [(item, line_terms(item)) for item in items]
    while remaining:
        best, best_key = None, None
        for rank, (item, held) in enumerate(tables):
            if any(item is c for c in chosen):
                continue
            covered = remaining & held
            if not covered:
                continue
            key = (len(covered), len(held & asked), item.kind != "summary", item.score, -rank)
            if best_key is None or key > best_key:
                best, best_key = item, key
        if best is None:
            break
        covered = remaining & line_terms(best)
        if chosen and len(covered) < 2 and not any(_NUMBER.fullmatch(t) for t in covered):
            break
        chosen.append(best)
        remaining -= covered
    if chosen:
        return chosen, "overlap"
    top = max(items, key=lambda e: (e.kind == "raw", e.score))
    return [top], "top_ranked"


def same_teller(a: Evidence, b: Evidence) -> bool:
    """Both lines are one person's telling: the same speaker, a line without one, or the assistant
    restating its user's ("Updated: no calls after 7"; "Tokyo is on: out Sunday 7 September")."""
    sa, sb = (a.speaker or "").strip().lower(), (b.speaker or "").strip().lower()
    return sa == sb or not sa or not sb or sa in ASSISTANT_SPEAKERS or sb in ASSISTANT_SPEAKERS

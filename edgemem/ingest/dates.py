"""Resolve the date expressions in a record against the time it was said.

DESIGN.md Principle 6, "Time is data": every raw record has an event time, and relative expressions
("yesterday", "last Friday", "two weeks ago") are resolved against that event time at ingestion and
stored on the note as absolute dates. Date arithmetic is code, never a prompt (Principle 2): the
small models edgemem runs get it wrong.

LoCoMo (Maharana et al., ACL 2024) grades temporal questions this way. A speaker says "yesterday" in
a session dated "1:56 pm on 8 May, 2023" and the gold answer is "7 May 2023"; vaguer phrases get
answers like "The week before 9 June 2023", "The weekend before 17 July 2023", "June 2023" or "2022"
("last year" said in 2023). So a phrase resolves to a *span* (first and last day) with a granularity
(day, week, month, year), and a label in that same human form: "7 May 2023", "week of 29 May 2023",
"June 2023", "2022"; vague phrases ("a few days ago", "the other day") are flagged approximate and
their label starts with "around ".

Conventions (where LoCoMo's gold answers show one, it is theirs):

- Weeks run Monday to Sunday (ISO 8601). "last week" is the week before the event's week; "this
  weekend" is the Saturday and Sunday of the event's week; "last weekend" is the one before it, so
  said on Monday it is the two days just gone, and said on Sunday it is the weekend before.
- "last Friday" is the most recent Friday strictly before the event date, even inside the same week.
  LoCoMo's gold agrees and the "Friday of the previous week" reading does not: "Last Friday" said on
  Sunday 23 July 2023 is answered "21 July 2023", "last Tues" said on Thursday 20 July 2023 is
  answered "The Tuesday before 20 July 2023". "next Friday" mirrors it: the first Friday strictly
  after the event date. "this Friday" is the nearest Friday on or before the event date in a
  past-tense sentence, else on or after it.
- Which occurrence a date without a year (or a weekday, or a day without a month) means follows the
  tense of its sentence: past gives the most recent one (begun by the event date), future the first
  one not yet over. A sentence with no past marker (present progressive "is getting married", a
  verbless plan "Leaving 18 June, back 22 June", a plain statement) is not past: the occurrence
  nearest the event date, ties to the future, where one more than a week back counts twice as far
  (such a sentence tells of what is coming more often than of what is gone: "Seville, 13 September"
  said in February is this September, not the last). So "20 June" said on 19 January is the coming
  June, said in mid-July the June just gone; "got married on 20 June" said in January is last June. A
  past form after a present "be" or "get" is a participle, not a past marker ("is getting married",
  "we're booked"); "since June" is always past.
- A bare "Friday" in a sentence with a tense is the most recent Friday strictly before the event
  date (past) or the first one strictly after (future). In a sentence without one: after "on", the
  nearest ("Dentist on Thursday" said on a Monday is that week's Thursday; today included, ties
  ahead); with a clock time after it, an appointment, "on" or not ("dentist Thursday at 10",
  "dentist on Monday at 8am" are the next such day, today if the time is still ahead); written as a
  plan's item ("bins Monday, boiler service Thursday", "fishing Sunday. had a 5lb trout!"), the
  nearest with one gone by counting twice as far; alone as a sentence ("WE MOVED. saturday."), by
  the tense of the sentence before; in a question ("dinner at mine fri?"), a proposal, the next one.
  Right after a present "be" ("Mother's Day is Sunday", "it's friday!!") it is today's or the coming
  one whatever else the sentence says. A comma and a new subject ("had to cancel it, I'm in
  Manchester Thursday") start a clause whose tense is its own. "my Friday class", "I do yoga on Fridays", "Ben's with me
  Monday, Tuesday and Friday" and "football tues and thurs" are never resolved. In the sentence of a
  day a week or more away, a weekday is that day's or one of the six after it ("the game on the
  21st, staying sat night"). Texted abbreviations count in lowercase ("thurs", "weds", "fri"); "sat",
  "sun" and "wed" only where a day is introduced ("for sat", "or sat") or a part of the day follows
  ("sat nite"). Two weekdays joined ("from Monday until Thursday") are one stretch in a sentence with
  a tense.
- Typed forms of the fixed days and units count: "2moro", "tmrw", "tonite", "yday", "this morn",
  "nxt wk", "this wknd", "in 2 wks", "3 yrs ago". A fortnight is two weeks. The British "a week on
  Friday", "Friday week", "a week today", "the Saturday after next" are a week after the day named.
- Dates in numbers: "21/06/2027", "on 3/2", "9/30". Day first where both numbers could be the month;
  a number over 12 decides. Fractions and rates ("1/2 price", "24/7") are no dates; a dotted date
  ("20.05") needs its year or "on".
- Holidays on a weekday of a month are placed by it (Memorial Day, Labor Day, MLK Day, Father's Day,
  the UK's bank holidays, Election Day), and those a fixed distance from Easter (Shrove Tuesday,
  Mothering Sunday, Palm Sunday). "Mother's Day" is not resolved: the US and the UK keep it on
  different Sundays. "the end of May" is around 31 May; "the first Monday of next month", "the week
  of the 26th" (the Monday-to-Sunday week holding it) and "the weekend after" (after the day told
  before it) are what they say.
- Ranges are one span: "18 to 22 June", "18-22 June", "from 18 June to 22 June", "June 18–22",
  "between 3 and 5 March", "from the 14th to the 18th"; placed by the rule above, an end before the
  start running into the next year ("30 December to 2 January"). Labelled "18–22 June 2026". A day
  of the month alone needs "on"/"by"/"from"/... before it and no noun after it ("on the 14th", not
  "the 14th floor"); its month follows the rule above.
- "N weeks ago" is the whole Monday-to-Sunday week N weeks back, "N months ago" the calendar month,
  "N years ago" the calendar year; "N days ago" is exact. "a few" counts as 3, "a couple" as 2,
  "several" as 3, and all three mark the result approximate. "in N days" / "in N weeks" is the day
  N days / weeks after the event date, "in N months" / "in N years" that calendar month / year; all
  are skipped in a past-tense sentence, where they are a duration ("we finished it in two weeks").
  "two weeks from Monday" is the day two weeks after that Monday, "for two weeks from Monday" the
  fourteen days starting on it; the Monday is the next one unless the sentence is past.
- "the past two weeks" / "the next few months" are spans running from or to the event date;
  "recently" and "lately" are the month up to it, "the other day" the week before it (approximate).
- "today", "tonight" and "this morning" resolve to the event date, idioms ("kids today") included.
- Tense is read from marker words in the phrase's sentence (was, went, -ed ... / will, 'll, gonna,
  going to ...); the nearest marker wins.

Library decision: rules over ``re`` plus python-dateutil's ``relativedelta`` (calendar-correct
month and year steps), not dateparser. dateparser's ``search_dates`` reads ordinary words in
conversation as dates ("we" as Wednesday, "now", "the sun", "may", "a second") and returns points,
not spans ("last week" becomes one day seven days back), so the granularity rules would be needed
anyway. Ambiguous words ("May", "March", "Sat", "Sun", "Wed") only
count when capitalised and in a date-shaped context: a day number, a year, or a word such as "in",
"last" or "on" before them. A bare month name ("June said hi") is never a date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Callable, Optional

from dateutil.relativedelta import relativedelta

from edgemem.text import HOLIDAY_PATTERN, MOVABLE_PATTERN, holiday_day, movable_feast, nth_weekday
from edgemem.text import MONTH_NAMES as _MONTH_NAMES
from edgemem.text import day_label as _day_label

__all__ = ["ResolvedDate", "resolve_dates", "find_spans", "annotate", "parse_when"]


@dataclass(frozen=True)
class ResolvedDate:
    """One date expression found in a text, as an absolute span of days."""

    phrase: str  # the matched text as written, e.g. "yesterday"
    start: date  # first day of the resolved span
    end: date  # last day (== start for a single day)
    granularity: str  # "day" | "week" | "month" | "year"
    approximate: bool  # True for vague phrases ("a few days ago", "the other day", "recently")
    explicit_range: bool = False  # written as a range ("18 to 22 June"): labelled "18–22 June 2026"

    def label(self) -> str:
        """Human form: "7 May 2023", "week of 1 May 2023", "May 2023", "2023", "18–22 June 2026",
        "around ..."."""
        if self.explicit_range and self.start != self.end:
            text = _range_label(self.start, self.end)
        else:
            text = _span_label(self.start, self.end, self.granularity)
        return f"around {text}" if self.approximate else text

    def iso(self) -> tuple[str, str]:
        """(start, end) as ISO 8601 days: the queryable form stored on a note."""
        return self.start.isoformat(), self.end.isoformat()


def resolve_dates(text: str, event_time: datetime) -> list[ResolvedDate]:
    """Every date expression in ``text``, resolved against ``event_time``, in reading order."""
    return [found.date for found in _find(text, event_time)]


def find_spans(text: str, event_time: datetime) -> list[tuple[int, int, ResolvedDate]]:
    """Every date expression as (begin, end, date): where its phrase lies in ``text``."""
    return [(found.begin, found.end, found.date) for found in _find(text, event_time)]


def annotate(text: str, event_time: datetime) -> str:
    """Text with each resolved phrase followed by its absolute label in brackets, e.g.
    'I went there yesterday [7 May 2023].' Used to build a note's content."""
    pieces: list[str] = []
    cursor = 0
    for found in _find(text, event_time):
        already_absolute = _YEAR_IN_PHRASE.search(found.date.phrase) is not None
        already_annotated = text.startswith(" [", found.end)  # annotating twice changes nothing
        if already_absolute or already_annotated:
            continue
        pieces.append(text[cursor : found.end])
        pieces.append(f" [{found.date.label()}]")
        cursor = found.end
    pieces.append(text[cursor:])
    return "".join(pieces)


_LOCOMO_TIME = re.compile(
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<ampm>[ap])\.?m\.?\s+on\s+"
    r"(?P<day>\d{1,2})\s+(?P<month>[A-Za-z]+)\.?,?\s+(?P<year>\d{4})",
    re.IGNORECASE,
)


def parse_when(value: str) -> datetime:
    """Parse a timestamp as found in chat exports: ISO 8601, and LoCoMo's '1:56 pm on 8 May, 2023'
    (also '10:37 am on 27 June, 2023'). Raise ValueError with a one-line message otherwise."""
    text = value.strip()
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass  # not ISO 8601: try the LoCoMo form below
    m = _LOCOMO_TIME.fullmatch(text)
    month = _month_number(m.group("month")) if m else None
    hour = int(m.group("hour")) if m else 0
    if m is None or month is None or not 1 <= hour <= 12:
        raise ValueError(
            f"unrecognised timestamp {value!r}: "
            "expected ISO 8601 or a form like '1:56 pm on 8 May, 2023'"
        )
    hour = hour % 12 + (12 if m.group("ampm").lower() == "p" else 0)  # 12 am is 0h, 12 pm is 12h
    try:
        return datetime(int(m.group("year")), month, int(m.group("day")), hour, int(m.group("minute")))
    except ValueError as exc:  # 31 June, minute 75 ...
        raise ValueError(f"impossible timestamp {value!r}: {exc}") from None


# --- labels -------------------------------------------------------------------------------------


def _month_label(day: date, *, year: bool = True) -> str:
    name = _MONTH_NAMES[day.month - 1]
    return f"{name} {day.year}" if year else name


def _span_label(start: date, end: date, granularity: str) -> str:
    if granularity == "year":
        return str(start.year) if start.year == end.year else f"{start.year} to {end.year}"
    if granularity == "month":
        if (start.year, start.month) == (end.year, end.month):
            return _month_label(start)
        return f"{_month_label(start, year=start.year != end.year)} to {_month_label(end)}"
    if granularity == "week" and start.weekday() == 0 and end - start == timedelta(days=6):
        return f"week of {_day_label(start)}"
    # Days, and any week-sized span that is not a calendar week ("the past week").
    if start == end:
        return _day_label(start)
    if start.weekday() == 5 and end - start == timedelta(days=1):
        return f"weekend of {_day_label(start)}"
    same_year = start.year == end.year
    same_month = same_year and start.month == end.month
    first = _day_label(start, month=not same_month, year=not same_year)
    return f"{first} to {_day_label(end)}"


def _range_label(start: date, end: date) -> str:
    """An explicit range: "18–22 June 2026", "30 June–2 July 2026", "30 December 2025–2 January 2026"."""
    same_year = start.year == end.year
    same_month = same_year and start.month == end.month
    return f"{_day_label(start, month=not same_month, year=not same_year)}–{_day_label(end)}"


# --- matching -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    begin: int  # where the phrase starts
    stop: int  # where the match ends (a lookahead or trailing context may follow the phrase)
    end: int  # where the phrase ends: annotate() puts the label here
    date: ResolvedDate


@dataclass(frozen=True)
class _Context:
    text: str
    when: datetime
    day: date


_Rule = Callable[[re.Match, _Context], Optional[ResolvedDate]]

_YEAR_IN_PHRASE = re.compile(r"\b(?:19|20)\d\d\b")

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50,
}
# Vague counts become a point estimate and mark the result approximate.
_VAGUE_COUNTS = {"few": 3, "couple": 2, "several": 3}

_COUNT = (
    r"(?P<count>\d{1,3}|(?:a\s+)?few|(?:a\s+)?couple(?:\s+of)?|several|"
    + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
    + r")"
)
_UNIT = r"(?P<unit>minute|hour|day|night|weekend|week|month|year|fortnight|wknd|wkend|wk|mnth|mth|yr)s?"
# Units as people type them: "nxt wk", "this wknd", "in 2 wks", "3 yrs ago"; a fortnight is two weeks.
_UNIT_SPELLINGS = {"wk": "week", "wknd": "weekend", "wkend": "weekend", "mth": "month", "mnth": "month", "yr": "year"}
_APPROX = r"(?:(?P<about>about|around|roughly|almost|nearly|over|more\s+than|less\s+than)\s+)?"

_WEEKDAY = (
    r"(?P<wd>mon(?:day)?|tue(?:s(?:day)?)?|wed(?:s|nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?"
    r"|sat(?:urday)?|sun(?:day)?)"
)
_WEEKDAY_FULL = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
_WEEKDAY_INDEX = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}

_MONTH_FULL = {name.lower() for name in _MONTH_NAMES}
_MONTH = (
    r"(?P<m>january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)(?:\.(?=\s*\d))?"  # "Sept. 5", not a full stop
)
_DAY = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>(?:19|20)\d\d)"

# Tense of the sentence around a phrase: the nearest marker wins. Only used where a phrase means
# different days in the past and the future ("on Friday", "in June", "in 3 days").
_PAST_MARKERS = re.compile(
    r"\b(?:was|were|did|had|went|got|made|took|saw|met|came|ran|ate|bought|found|gave|told|said|"
    r"felt|left|spent|thought|knew|heard|lost|won|began|became|brought|sent|wrote|drove|flew|fell|"
    r"paid|sold|built|taught|caught|kept|held|wore|sang|swam|slept|woke|done|ago|yesterday|used\s+to|"
    r"\w+ed)\b",
    re.IGNORECASE,
)
# "-ed" words that are usually adjectives, not a past tense ("I'm so excited for Friday").
_NOT_PAST = {
    "need", "indeed", "bed", "red", "feed", "seed", "speed", "weed", "shed", "wed", "proceed",
    "exceed", "succeed", "breed", "hundred", "sacred", "naked", "wicked", "beloved", "blessed",
    "excited", "interested", "tired", "bored", "scared", "worried", "pleased", "stressed",
    "talented", "dedicated", "related", "based", "supposed", "determined", "focused", "motivated",
    "thrilled", "overwhelmed", "pumped", "stoked", "concerned", "involved", "scheduled", "planned",
    "gutted", "knackered", "shattered", "chuffed", "annoyed", "delighted", "exhausted", "relieved", "terrified",
    # an arrangement made for the date, not the date gone by: "Oslo 19-21 January, flight booked"
    "booked", "confirmed", "arranged", "rebooked", "reserved",
    # an entry made for the day, the day still ahead: "entered golden gate 30k on 1 august" (said in May)
    "entered", "registered", "enrolled",
    # taking a note of it: "Noted the new address and the 28 February move"
    "noted",
}
# "left" before a side or a body part is the adjective: "left eye first, probably in January".
_SIDE_NOUN = re.compile(
    r"\s+(?:eye|eyes|ear|ears|hand|hands|arm|arms|leg|legs|knee|knees|foot|feet|hip|hips|shoulder|wrist|ankle|"
    r"elbow|heel|thumb|toe|side|lung|kidney|breast|lane|turn|wing|-hand|-handed)\b",
    re.IGNORECASE,
)
# A past form opening its clause and closed by a comma or colon is a label, not the verb of the date:
# "Updated, the move is on 7 March", "Confirmed: Friday at 10".
_LABEL_AFTER = re.compile(r"\s*[,:!]")
# Where a clause ends inside a sentence: its tense does not reach across ("my brother is throwing Ma a
# party on january 10th, so we moved our flight"): the past of the second clause is not the party's.
_CLAUSE_END = re.compile(r",\s*(?:so|but|because|cos|cause|though|although|whereas)\b", re.IGNORECASE)
# A comma and a new subject start a clause of their own (a comma splice, as chats write): "had to
# cancel the boiler service, I'm in Manchester for work Thursday" — the past before the comma is not
# the tense of the date after it. Only a boundary on the date's left: in "On Monday, I went" the
# clause after the comma holds the date's verb.
_SPLICE = re.compile(r",\s*(?:i|we|he|she|they|you)(?:['’](?:m|re|s|ve|ll|d))?\s|,\s*(?:im|ive|youre|theyre)\s", re.IGNORECASE)
# "As planned", "as scheduled" look back at the plan from the day it happened: no future of their own
# ("I went to Tokyo on 22 January as planned", said in February, is the January gone).
# A present progressive is a plan, its "be" written as chats write it too: "im getting promoted ...
# from 1 april", said 9 March after "folake called me in today", is this April, not last April.
_FUTURE_MARKERS = re.compile(
    r"(?:\b(?:will|shall|won['’]t|gonna|theyll|youll|itll|thatll|wont|can(?!['’]?t\b)|might|wanna|(?<!\bwas\s)(?<!\bwere\s)going\s+to|about\s+to|"
    r"plan(?:s|ning)?\s+(?:to|on)|hop(?:e|es|ing)\s+to|wants?\s+(?:to|a|an|me|us|him|her|them)|"
    r"can['’]?t\s+wait|cannot\s+wait|"
    r"looking\s+forward|excited\s+(?:to|for)|tomorrow|next|upcoming|soon|(?<!\bas\s)scheduled|(?<!\bas\s)planned|"
    r"(?:am|are|is|['’]m|['’]re|(?<![\w'’])(?:im|youre|theyre|hes|shes))\s+(?:going|heading|flying|leaving|off|(?:\w+ly\s+)?(?!\w*thing\b|morning\b|evening\b|"
    r"during\b|spring\b|string\b|bring\b)\w{2,}ing))\b|['’]ll\b)",
    re.IGNORECASE,
)
# A subject and a present simple verb of doing is a timetable, told ahead: "I go back aboard on the
# 25th" (said 14 June, after "I came ashore on Wednesday"), "you fly down on Friday" (said Saturday).
# Verbs of thinking, feeling and hearing report the present about any day ("I hear Ana moved on
# Friday"); "be", "have" and "do" are left to the other markers.
_PRESENT_PLAN = re.compile(
    r"\b(?:i|we|you|they|(?P<third>he|she))\s+(?:(?:also|still|then|just|only|always|both|all)\s+)?"
    r"(?!(?:think|know|guess|love|like|mean|feel|remember|reali[sz]e|see|hear|believe|suppose|reckon|wonder|wish|"
    r"miss|hate|say|tell|doubt|agree|bet|hope|need|want|am|are|is|was|were|be|been|have|has|had|do|does|did|"
    r"can|could|will|would|shall|should|may|might|must|got|get|gets|never|usually|often|normally|sometimes|"
    r"about|for|to|in|on|at|and|or|but|so|too|the|a|an|my|your|our|their|there|here|not|since|from|with|as|"
    r"guys|two|both|all|again|now|back|that|this|what|who|if|than|then|yet|ever|really)\b)"
    r"(?P<verb>[a-z]{2,})\b",
    re.IGNORECASE,
)


PLAN_REACH = 40  # characters from the subject and verb to the date they place


_MOVE_WORDS = re.compile(r"\b(?:now|instead|pushed|moved|postponed|rescheduled|changed|brought\s+forward)\b", re.IGNORECASE)


def _present_plans(text: str, left: int, begin: int, stop: int, right: int) -> list[re.Match]:
    """The subject + present verb of text[left:begin] that places the date at text[begin:stop] (see
    :data:`_PRESENT_PLAN`): right before it, with no comma between; a verb in its base form after
    I/we/you/they, in its -s form after he/she, never a past or -ing form, nor a question's ("did I
    tell you about the 5th of April one?") or a condition's ("call if he gains a kilo in a day"). A day that recurs is a habit, not a plan: "he calls every
    Sunday night", "we practice wednesday nights", "we open Tuesday to Sunday", "I keep my Monday off".
    A sentence that moves a plan leaves its weekday to the plan's week (:func:`_day_after_dated`)."""
    if _HABIT_BEFORE.search(text, max(left, begin - 12), begin) or _HABIT_AFTER.match(text, stop):
        return []
    if _MOVE_WORDS.search(text, left, right):
        return []  # "pushed a day later, so we fly home Thursday now": the moved plan's week, not the coming one
    out = []
    for m in _PRESENT_PLAN.finditer(text, max(left, begin - PLAN_REACH), begin):
        verb = m.group("verb").lower()
        if verb.endswith(("ed", "ing")) or _PAST_MARKERS.fullmatch(verb) or (m.group("third") and not verb.endswith("s")):
            continue
        if re.search(r"[,;:]", text[m.end():begin]) or _ASKED_BEFORE.search(text, max(left, m.start() - 8), m.start()):
            continue
        out.append(m)
    return out


_HABIT_BEFORE = re.compile(r"\b(?:every|each|my|our|his|her|their)\s+$|day\s*(?:to|till|until|through|-|–)\s*$",
                           re.IGNORECASE)
_HABIT_AFTER = re.compile(r"s\b|\s+(?:nights|mornings|evenings|afternoons|to|till|until|through|-|–)\b|\s*[-–]",
                          re.IGNORECASE)
_ASKED_BEFORE = re.compile(r"\b(?:did|do|does|didn['’]?t|don['’]?t|if|when|whenever|unless|once)\s+$", re.IGNORECASE)


# A present "be" with "now" states what a plan is after a change ("the school shifted it, it's now 16 to
# 20 october"): the past verb before it changed the plan, the date is the plan's (no tense: nearest).
_NOW_MARKER = re.compile(r"\b(?:(?:is|are|am|['’]s|['’]re)\s+now|now\s+(?:it['’]?s|it\s+is|(?:it|they)['’]re|is|on))\b",
                         re.IGNORECASE)
# Words that place the date's event without a tense of their own, so a past verb further off in the
# sentence does not decide it (it is the nearest marker that does): an infinitive after a verb that
# takes one ("got asked to play fête de la musique on june 21", said 4 June: this June), and a
# timetable's present ("hélène got the grant money, RA job starts may 11", said 2 April: this May).
# Either reads as no tense: the nearest occurrence.
_UNTENSED = re.compile(
    r"\b(?:(?:asked|invited|agreed|decided|offered|promised|booked|arranged|told|supposed|expected|due|set|chosen|"
    r"picked|selected|hired|paid|signed\s+up|lined\s+up)\s+(?:\w+\s+)?to\s+(?!the\b|a\b|an\b|my\b|our\b|his\b|her\b|"
    r"their\b|your\b)[a-z]+|(?:starts|begins|opens|closes|ends|finishes|kicks\s+off|resumes|restarts|launches|"
    r"leaves|departs|arrives|lands|returns)\b)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?\n]")
# Where a tense stops: a sentence's end, a spaced dash ("Madrid on 14 March — noted."): what
# follows it is a remark about the line, not the verb of its date; or an emoji, which ends a
# sentence in a chat ("tweaked my knee 🙄 physio is Laura, tuesdays for 4 weeks starting the 25th").
_TENSE_END = re.compile(r"[.!?\n]|\s[—–]\s|[\u2600-\u27bf\U0001f300-\U0001faff]")
_LABEL_COLON = re.compile(r":(?=\s)")
# A past form right after a present "be" or "get" is a participle, not a past tense: "is getting
# married", "we're booked", "the party is held on ...". ("has/have + -ed", the present perfect, stays
# past: the event is done.)
_PARTICIPLE_AFTER = re.compile(
    r"\b(?:am|is|are|be|being|get|gets|getting|become|becomes|becoming|['’]m|['’]re|im|youre|theyre|hes|shes)\s+"
    r"(?:\w+ly\s+)?$",
    re.IGNORECASE,
)
# "have got" is a present "have": "Kofi's got basketball camp, 28 july to 1 august", "I've got the
# dentist on the 9th".
_HAVE_GOT = re.compile(r"(?:['’]s|['’]ve|\bhave|\bhas)\s+$", re.IGNORECASE)


# An article, and maybe a length ("a 2 week paid trial"), before a past form makes it an adjective.
_ARTICLE_BEFORE = re.compile(
    r"\b(?:a|an|the)\s+(?:(?:\d+|one|two|three|four|five|six|ten)[\s-]+(?:day|week|month|year|hour)s?\s+)?$",
    re.IGNORECASE,
)


def _tense(ctx: _Context, begin: int, stop: int) -> Optional[str]:
    """'past', 'future' or None for the sentence holding text[begin:stop], by the nearest marker.

    A label before a colon is not the tense of what follows it: "Updated: your return flight is now
    17 September", "Booked: out 11 September" report a plan."""
    left = max((m.end() for m in _TENSE_END.finditer(ctx.text, 0, begin)), default=0)
    left = max([left] + [m.end() for m in _LABEL_COLON.finditer(ctx.text, left, begin)])
    left = max([left] + [m.end() for m in _CLAUSE_END.finditer(ctx.text, left, begin)])
    left = max([left] + [m.start() + 1 for m in _SPLICE.finditer(ctx.text, left, begin)])
    right_match = _TENSE_END.search(ctx.text, stop)
    right = right_match.start() if right_match else len(ctx.text)
    clause_end = _CLAUSE_END.search(ctx.text, stop, right)
    right = clause_end.start() if clause_end else right
    best: tuple[int, Optional[str]] | None = None
    for tense, pattern in (("past", _PAST_MARKERS), ("future", _FUTURE_MARKERS), (None, _NOW_MARKER), (None, _UNTENSED),
                           ("future", None)):
        found = pattern.finditer(ctx.text, left, right) if pattern is not None else _present_plans(ctx.text, left, begin, stop, right)
        for m in found:
            if m.start() < stop and m.end() > begin:
                continue  # part of the phrase itself
            if tense == "past" and m.group().lower() in _NOT_PAST:
                continue
            if tense == "past" and m.group().lower() == "left" and _SIDE_NOUN.match(ctx.text, m.end()):
                continue
            if tense == "past" and m.group().lower() == "got" and _HAVE_GOT.search(ctx.text, max(left, m.start() - 8), m.start()):
                continue
            if tense == "past" and not ctx.text[left:m.start()].strip() and _LABEL_AFTER.match(ctx.text, m.end()):
                continue  # "Noted, winter concert on 22 November": an acknowledgement, not a past
            if tense == "future" and pattern is not None and _titled_at(ctx.text, m.start()):
                continue  # "after Tomorrow, and Tomorrow, and Tomorrow": a title says no tense
            if tense == "past" and _PARTICIPLE_AFTER.search(ctx.text, max(left, m.start() - 40), m.start()):
                continue
            if tense == "past" and _ARTICLE_BEFORE.search(ctx.text, max(left, m.start() - 24), m.start()):
                continue  # "a paid trial sprint", "the finished kitchen": an adjective, not a tense
            distance = begin - m.end() if m.end() <= begin else m.start() - stop
            if best is None or distance < best[0]:  # ties go to the past, checked first
                best = (distance, tense)
    return best[1] if best else None


def _month_number(word: str) -> Optional[int]:
    """1-12 for a month name or abbreviation ("Sept", "jun"), else None."""
    key = word.lower()
    for number, name in enumerate(_MONTH_NAMES, start=1):
        if len(key) >= 3 and name.lower().startswith(key):
            return number
    return None


def _month_ok(word: str) -> bool:
    """'may' and 'march' the verbs, and abbreviations ('mar', 'dec') count only when capitalised."""
    ambiguous = word.lower() in ("may", "march") or word.lower() not in _MONTH_FULL
    return not ambiguous or word[0].isupper()


# "how many parkruns did I run in may?", "since march.": after "in", "since" ... and ending the
# sentence, the lowercase word is the month.
_MONTH_AT_END = re.compile(r"\s*(?:[.,!?;:)]|$)")


def _dated_month_ok(m: re.Match, group: str = "m") -> bool:
    """A month written next to a day number ("16th aug", "27 sept", "3rd may 32:20", "5 march now"):
    people type it lower-case, and a number beside it makes it a date. "may" stays the verb when a
    word follows with nothing to mark the number a day ("3 may be enough"): only an ordinal suffix,
    or no word after, makes it the month."""
    word = m.group(group)
    if _month_ok(word) or word.lower() != "may":
        return True
    phrase = m.group("p") if "p" in m.re.groupindex else m.group(0)
    if re.search(r"\d(?:st|nd|rd|th)\b", phrase, re.IGNORECASE):
        return True
    return not re.match(r"\s+[A-Za-z]", m.string[m.end(group):])


def _weekday_ok(word: str) -> bool:
    """Abbreviations ('Sat', 'Sun', 'Wed') count only when capitalised: 'we sat', 'the sun'."""
    return word.lower() in _WEEKDAY_FULL or word[0].isupper()


# The abbreviations that are also words ("we sat", "the sun", "to wed"); the others ("mon", "thurs",
# "fri") are a weekday however they are typed.
_WORDLIKE_WEEKDAYS = {"sat", "sun", "wed"}
# Where a lowercase "sat" or "sun" is a day: after a word that introduces one ("booked for sat", "or sat
# if ur busy"; "nxt sun" is read by the relative-weekday rule) or before a part of the day or a time
# ("sat nite", "sun 10am").
_DAY_WORD_BEFORE = re.compile(r"(?:\b(?:on|for|by|till|til|until|from|to|thru|through|and|or)|[&,/(])\s*$",
                              re.IGNORECASE)
_DAY_PART_AFTER = re.compile(r"\s*(?:nite|night|morning|morn|am\b|pm\b|eve\b|evening|afternoon|arvo|lunch|brunch|"
                             r"\d{1,2}(?::\d\d)?\s*(?:am|pm)|at\s+\d)", re.IGNORECASE)
_NOT_DAY_AFTER = re.compile(r"\s+(?:down|up|around|about|there|here|with|in|on|by|next|back|outside|beside|behind|"
                            r"shining|shone|was|is|cream|hat|bed|tan|set|rise|light|glasses)\b", re.IGNORECASE)


def _typed_weekday_ok(m: re.Match, ctx: _Context) -> bool:
    """A weekday abbreviation in lowercase, as people text ("dentist thurs at 3", "can u do school run
    weds & fri", "party at jess's sat nite"): the unambiguous ones always; "sat", "sun" and "wed" only
    where a day is introduced or a part of the day follows, and never after a subject or an article
    ("we sat", "the sun"); none inside a word with an apostrophe ("c'mon")."""
    word = m.group("wd")
    if _weekday_ok(word):
        return True
    at = m.start("wd")
    if at > 0 and ctx.text[at - 1] in "'’":
        return False
    if word.lower() not in _WORDLIKE_WEEKDAYS:
        return True
    before = max(0, at - _LOOK_BACK)
    if _NOT_A_DAY_BEFORE.search(ctx.text, before, at) or _NOT_DAY_AFTER.match(ctx.text, m.end("wd")):
        return False
    return bool(_DAY_WORD_BEFORE.search(ctx.text, before, at) or _DAY_PART_AFTER.match(ctx.text, m.end("wd")))


_LOOK_BACK = 24  # characters before a word searched for what introduces it (a long import stays linear)


_NOT_A_DAY_BEFORE = re.compile(r"\b(?:i|we|you|they|he|she|it|who|the|a|an)\s+$", re.IGNORECASE)


def _numbered_weekday_ok(m: re.Match, ctx: _Context) -> bool:
    """A weekday with a day number after it ("thu 12th", "sat 24 oct"): an abbreviation counts in
    lowercase too, the number shows it is a day, unless a subject or an article comes before it ("we
    sat 12th in the league", "the sun 3rd"); the weekday must still fit the day."""
    word = m.group("wd")
    return _weekday_ok(word) or not _NOT_A_DAY_BEFORE.search(ctx.text, 0, m.start("wd"))


def _unit(m: re.Match) -> str:
    word = m.group("unit").lower()
    return _UNIT_SPELLINGS.get(word, word)


def _counted(m: re.Match) -> tuple[int, bool, str]:
    """(count, approximate, unit) of "N <unit>": "a fortnight" is two weeks."""
    count, approximate = _count(m.group("count"))
    unit = _unit(m)
    return (count * 2, approximate, "week") if unit == "fortnight" else (count, approximate, unit)


def _count(word: str) -> tuple[int, bool]:
    """(number, approximate) for '3', 'two', 'a few', 'a couple of', 'several'."""
    key = word.lower().split()
    key = [w for w in key if w not in {"a", "of"}] or ["a"]
    if key[0] in _VAGUE_COUNTS:
        return _VAGUE_COUNTS[key[0]], True
    return (int(key[0]) if key[0].isdigit() else _NUMBER_WORDS[key[0]]), False


# Choosing an occurrence ---------------------------------------------------------------------------


def _since(m: re.Match, ctx: _Context) -> bool:
    """'since June', 'since the 14th': a starting point that has already passed."""
    return re.search(r"\bsince\s+(?:the\s+)?$", ctx.text[: m.start("p")], re.IGNORECASE) is not None


# A date that is the target of an arrangement ("booked flights for 16 September", "moved the party
# to the 26th", "postponed until 3 March") lies ahead of the arranging, whatever the verb's tense.
_TARGET = re.compile(r"\b(?:for|to|until|till|through|due)\s+(?:the\s+|on\s+(?:the\s+)?)?$", re.IGNORECASE)
_RANGE_START = re.compile(r"\b(?:from|between)\b[^.!?]{0,40}$", re.IGNORECASE)


def _target(m: re.Match, ctx: _Context) -> bool:
    before = ctx.text[max(0, m.start("p") - 60): m.start("p")]
    return _TARGET.search(before) is not None and _RANGE_START.search(before) is None


# Verbs of arranging: done in the past, but the dated thing they arrange lies ahead ("rebooked the
# same place for Easter instead, 4 to 11 April" said in October is next April).
_ARRANGED = re.compile(
    r"\b(?:re)?(?:book|reserv|schedul|arrang|organis|organiz|register|postpon)ed\b|\bsigned\s+up\b"
    r"|\bmoved\s+(?:it|them|the\s+\w+)\s+to\b",
    re.IGNORECASE,
)


def _arranged(m: re.Match, ctx: _Context) -> bool:
    """An arranging verb earlier in the sentence, and no other past marker between it and the date."""
    left = max((e.end() for e in _SENTENCE_END.finditer(ctx.text, 0, m.start("p"))), default=0)
    verbs = list(_ARRANGED.finditer(ctx.text, left, m.start("p")))
    if not verbs:
        return False
    between = ctx.text[verbs[-1].end(): m.start("p")]
    return not any(w.group().lower() not in _NOT_PAST for w in _PAST_MARKERS.finditer(between))


# A trip's legs written as participles ("bought the ticket today, leaving 12 February and coming back 5
# March"): the date is the leg's, and the participle has no tense of its own, so the past verb of the
# buying does not date the trip. Not after "was"/"were" ("we were leaving on the 3rd" is a past plan).
_LEG = re.compile(
    r"(?<!\bwas\s)(?<!\bwere\s)\b(?:leaving|returning|departing|arriving|flying|coming|getting|heading|going|"
    r"driving|travell?ing|setting\s+off|starting|moving)(?:\s+(?:back|home|out|in|over|down|up))?"
    r"\s+(?:on\s+)?(?:the\s+)?$",
    re.IGNORECASE,
)


def _reading(m: re.Match, ctx: _Context) -> Optional[str]:
    """'past', 'future' or None (not past: the nearest occurrence) for a date without a year."""
    if _since(m, ctx):
        return "past"
    if _target(m, ctx) or _arranged(m, ctx):
        return "future"
    if _LEG.search(ctx.text, max(0, m.start("p") - 40), m.start("p")):
        return None
    return _tense(ctx, m.start(), m.end())


def _distance(span: tuple[date, date], day: date) -> int:
    start, end = span
    if start <= day <= end:
        return 0
    return (start - day).days if start > day else (day - end).days


_PAST_WEIGHT = 2
# A past-tense day (no year written) more than _STALE_DAYS back yields to the same day within
# _SOON_DAYS ahead (see _choose).
_STALE_DAYS = 300
_SOON_DAYS = 60
_MONTH_DAYS = 27  # a span this long or longer may be a whole month


def _choose(spans: list[tuple[date, date]], ctx: _Context, tense: Optional[str]) -> Optional[tuple[date, date]]:
    """Which occurrence of a date without a year (or month, or week) is meant.

    Past tense: the most recent one that has begun by the event date. Future: the first one not over
    by it. Neither (present progressive, a verbless plan, a bare statement): the one nearest the event
    date, ties to the future; so "20 June" said in January is the coming June, said in mid-July the
    one just gone."""
    if tense == "past":
        begun = [s for s in spans if s[0] <= ctx.day]
        last = max(begun) if begun else None
        # A day without its year is rarely most of a year gone: "callums got an interview on the 4th
        # feb", said 21 January, is the interview in two weeks, the past verb the getting of it.
        # Days and ranges of days ("22–27 December"), not a month: "went to Spain in May" said in April
        # may well be last May.
        ahead = [s for s in spans if s[0] > ctx.day and (s[1] - s[0]).days < _MONTH_DAYS]
        if last is not None and (last[1] - last[0]).days < _MONTH_DAYS and ahead and (ctx.day - last[0]).days > _STALE_DAYS:
            soon = min(ahead)
            if (soon[0] - ctx.day).days <= _SOON_DAYS:
                return soon
        return last
    if tense == "future":
        open_ = [s for s in spans if s[1] >= ctx.day]
        return min(open_) if open_ else None
    if not spans:
        return None
    # Without a past marker a date is more often ahead than behind ("my sister is getting married
    # in Seville, 13 September" said in February): a past occurrence more than a week back counts
    # as twice as far away. Within a week, nearest wins ("parkrun on Saturday: 28:31!" said Tuesday).
    def away(s: tuple[date, date]) -> int:
        d = _distance(s, ctx.day)
        return d * _PAST_WEIGHT if s[1] < ctx.day and d > 7 else d

    return min(spans, key=lambda s: (away(s), -s[0].toordinal()))


def _years_around(ctx: _Context) -> range:
    """The years a date without one may fall in: four either side of the event date's."""
    return range(ctx.day.year - 4, ctx.day.year + 5)


def _yearly(month: int, day_number: int, ctx: _Context) -> list[tuple[date, date]]:
    """The day (month, day_number) in the years around the event date (29 February only in leap years)."""
    out = []
    for year in _years_around(ctx):
        try:
            day = date(year, month, day_number)
        except ValueError:
            continue
        out.append((day, day))
    return out


# Calendar spans -----------------------------------------------------------------------------------


def _week(day: date, offset: int) -> tuple[date, date]:
    monday = day - timedelta(days=day.weekday()) + timedelta(weeks=offset)
    return monday, monday + timedelta(days=6)


def _weekend(day: date, offset: int) -> tuple[date, date]:
    saturday = _week(day, offset)[0] + timedelta(days=5)
    return saturday, saturday + timedelta(days=1)


def _month(day: date, offset: int) -> tuple[date, date]:
    first = day.replace(day=1) + relativedelta(months=offset)
    return first, first + relativedelta(months=1, days=-1)


def _year(day: date, offset: int) -> tuple[date, date]:
    return date(day.year + offset, 1, 1), date(day.year + offset, 12, 31)


def _unit_span(unit: str, ctx: _Context, offset: int) -> tuple[date, date, str]:
    """The calendar unit `offset` units away from the event's own (0 = this week, -1 = last ...)."""
    if unit in ("day", "night"):
        day = ctx.day + timedelta(days=offset)
        return day, day, "day"
    if unit in ("hour", "minute"):
        day = (ctx.when + timedelta(**{f"{unit}s": offset})).date()
        return day, day, "day"
    if unit == "weekend":
        return (*_weekend(ctx.day, offset), "day")
    span = {"week": _week, "month": _month, "year": _year}[unit](ctx.day, offset)
    return (*span, unit)


def _make(
    m: re.Match, start: date, end: date, granularity: str, approximate: bool = False
) -> ResolvedDate:
    return ResolvedDate(m.group("p"), start, end, granularity, approximate)


def _preceded_by_the(m: re.Match, ctx: _Context) -> bool:
    """'the last Friday of June', 'the next week was hard': relative to something else, skip."""
    return re.search(r"\bthe\s+$", ctx.text[: m.start("p")], re.IGNORECASE) is not None


# Rules: each is a pattern with a group "p" (the phrase) and a function turning a match into a date
# or None (a near miss such as "I may go"). Overlapping matches are settled by length in _find.

_FIXED_DAYS = {
    "the day before yesterday": -2, "yesterday": -1, "last night": -1, "today": 0, "tonight": 0,
    "this morning": 0, "this afternoon": 0, "this evening": 0, "tomorrow": 1,
    "the day after tomorrow": 2,
}
# How people type them in a chat ("dentist 2moro", "tonite was fun", "interview went ok yday"), and
# the English of a speaker of another language ("after tomorrow I go to the doctor").
_FIXED_SPELLINGS = {
    "tomorrow": "tmrw, tmrow, tmoro, tmr, tmw, 2moro, 2morro, 2morrow, 2mrw, tomoz, tomoro, tomorow, tommorow, tommorrow",
    "today": "2day, tdy",
    "tonight": "tonite, 2nite, 2night, tnite",
    "yesterday": "yday, yest, ystday, yesterdy",
    "this morning": "this morn",
    "this afternoon": "this arvo, this aft",
    "last night": "last nite",
}
_FIXED_ALIASES = {alias: canon for canon, aliases in _FIXED_SPELLINGS.items() for alias in aliases.split(", ")}
_TOMORROW_WORDS = "tomorrow|" + "|".join(a for a, c in _FIXED_ALIASES.items() if c == "tomorrow")
_YESTERDAY_WORDS = "yesterday|" + "|".join(a for a, c in _FIXED_ALIASES.items() if c == "yesterday")
_FIXED_PATTERN = (
    rf"(?:the\s+)?day\s+before\s+(?:{_YESTERDAY_WORDS})|(?:the\s+)?day\s+after\s+(?:{_TOMORROW_WORDS})"
    r"|after\s+tomorrow(?=\s+(?:i|we|he|she|they|you|my|our)\b)"
    r"|yesterday|last\s+night|today|tonight|this\s+(?:morning|afternoon|evening)|tomorrow|"
    + "|".join(sorted((re.escape(a).replace("\\ ", r"\s+") for a in _FIXED_ALIASES), key=len, reverse=True))
)


def _fixed_name(phrase: str) -> str:
    """The canonical name of a fixed day however it is typed: "day after tmrw" -> "the day after tomorrow"."""
    written = " ".join(phrase.lower().split())
    key = _FIXED_ALIASES.get(written) or " ".join(_FIXED_ALIASES.get(w, w) for w in written.split())
    if key.startswith("day "):
        key = "the " + key
    return "the day after tomorrow" if key == "after tomorrow" else key


def _fixed_day(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    if _titled(m, ctx) and _fixed_name(m.group("p")) != "the day after tomorrow":
        return None  # "finished Tomorrow, and Tomorrow, and Tomorrow": a title, not a day
    day = ctx.day + timedelta(days=_FIXED_DAYS[_fixed_name(m.group("p"))])
    return _make(m, day, day, "day")


def _titled(m: re.Match, ctx: _Context) -> bool:
    """"Today", "Tomorrow" written capitalised inside a sentence is a name (a book, a show): a
    relative day is capitalised only where a sentence or a label starts."""
    return _titled_at(ctx.text, m.start("p"))


def _titled_at(text: str, at: int) -> bool:
    if not text[at].isupper():
        return False
    before = text[:at].rstrip(" \t")
    return bool(before) and before[-1] not in ".!?:;\n-–—\"'“‘("


def _vague(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    if m.group("p").lower().startswith("the"):  # "the other day": within the last week
        return _make(m, ctx.day - timedelta(days=7), ctx.day - timedelta(days=1), "day", True)
    # "recently", "lately": the month before the event; labelled by month to stay short.
    return _make(m, ctx.day - relativedelta(months=1), ctx.day, "month", True)


def _relative_unit(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    rel = " ".join(m.group("rel").lower().split()).replace("nxt", "next")
    unit = _unit(m)
    if rel in ("last", "next", "this") and _preceded_by_the(m, ctx):
        return None
    if rel in ("this past", "the past") and unit != "weekend":
        # A rolling span ending on the event date: "the past month" is not "last month".
        return _make(m, *_rolling_span(ctx, unit, -1))
    if rel in ("coming", "this coming", "the coming"):
        # The next one not yet begun: on a Saturday "the coming weekend" is next week's.
        offset = 1 if unit != "weekend" or ctx.day.weekday() >= 5 else 0
    else:
        offset = {"last": -1, "this past": -1, "the past": -1, "next": 1}.get(rel, 0)
    return _make(m, *_unit_span(unit, ctx, offset))


def _before_after(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    unit = _unit(m)
    offset = -2 if m.group("dir").lower().startswith("before") else 2
    return _make(m, *_unit_span(unit, ctx, offset))


def _unit_before(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    # A standalone "the week before" is usually relative to the event time, but may be relative to
    # another event in the conversation: resolve it, flagged approximate.
    return _make(m, *_unit_span(_unit(m), ctx, -1), approximate=True)


def _ago(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    count, approximate, unit = _counted(m)
    span = _unit_span(unit, ctx, -count)
    return _make(m, *span, approximate or bool(m.group("about")))


# A negated perfect or a "first time" before "in 4 years" makes it how long something has not happened.
_NOT_SINCE = re.compile(r"\b(?:haven['’]?t|hasn['’]?t|hadn['’]?t|have\s+not|has\s+not|had\s+not|never|first\s+time)\b",
                        re.IGNORECASE)


def _ahead(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    if m.group("p").lower().startswith("in"):
        if _tense(ctx, m.start(), m.end()) == "past":
            return None  # "we finished it in two weeks" is a duration
        left = max((e.end() for e in _TENSE_END.finditer(ctx.text, 0, m.start())), default=0)
        if _NOT_SINCE.search(ctx.text, left, m.start()):
            return None  # "haven't been back in 4 years", "the first time in ten years"
    count, approximate, unit = _counted(m)
    base = (m.groupdict().get("base") or "").lower()
    if base == "tomorrow" or base in _TOMORROW_WORDS.split("|"):  # "three weeks from tomorrow": counted from the day after the event date
        ctx = replace(ctx, day=ctx.day + timedelta(days=1))
    if unit == "week":  # "in 3 weeks": the day three weeks on, not the calendar week around it
        day = ctx.day + timedelta(weeks=count)
        span: tuple[date, date, str] = (day, day, "day")
    else:
        span = _unit_span(unit, ctx, count)
    return _make(m, *span, approximate or bool(m.group("about")))


def _week_on(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """The British "a week on Friday", "a fortnight on Saturday", "a week today", "a week tomorrow",
    "Friday week" and "the Saturday after next": a week (or a fortnight) after the coming such day."""
    groups = m.groupdict()
    if groups.get("wd") and not _typed_weekday_ok(m, ctx):
        return None
    if groups.get("count"):
        count, _, _ = _counted(m)
    else:
        count = 1
    base = (groups.get("base") or "").lower()
    if groups.get("wd"):
        start = _weekday_after(ctx.day, _weekday_index(m))
    else:
        start = ctx.day + timedelta(days=1 if base in _TOMORROW_WORDS.split("|") else 0)
    day = start + timedelta(weeks=count)
    return _make(m, day, day, "day")


def _from_weekday(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"two weeks from Monday" (the day two weeks after it), "for ten days from Friday" (the stretch
    starting that day). A stated start in a sentence that is not past is an upcoming day: had it
    begun, one would say "since"."""
    if not _weekday_ok(m.group("wd")):
        return None
    count, approximate = _count(m.group("count"))
    unit = m.group("unit").lower()
    if unit not in ("day", "night", "week", "month", "year"):
        return None
    rel = (m.group("rel") or "").lower()
    weekday = _weekday_index(m)
    past = rel == "last" or (not rel and _tense(ctx, m.start(), m.end()) == "past")
    anchor = _weekday_before(ctx.day, weekday) if past else _weekday_after(ctx.day, weekday)
    step = relativedelta(**{("days" if unit == "night" else unit + "s"): count})
    if m.group("for"):
        end = anchor + step - timedelta(days=1)
        return ResolvedDate(m.group("p"), anchor, end, "day", approximate, explicit_range=True)
    return _make(m, anchor + step, anchor + step, "day", approximate)


def _rolling_span(ctx: _Context, unit: str, count: int) -> tuple[date, date, str]:
    """From the event date `count` units forward, or back when negative: 'the past two weeks'."""
    step = relativedelta(**{{"night": "days", "weekend": "weeks"}.get(unit, unit + "s"): abs(count)})
    granularity = unit if unit in ("month", "year") else "day"
    if count > 0:
        return ctx.day, ctx.day + step, granularity
    return ctx.day - step, ctx.day, granularity


def _rolling(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    count, approximate = _count(m.group("count"))
    forward = m.group("dir").lower() in ("next", "coming")
    span = _rolling_span(ctx, m.group("unit").lower(), count if forward else -count)
    return _make(m, *span, approximate)


def _weekday_index(m: re.Match) -> int:
    return _WEEKDAY_INDEX[m.group("wd").lower()[:3]]


def _weekday_before(day: date, weekday: int, *, inclusive: bool = False) -> date:
    back = (day.weekday() - weekday) % 7
    return day - timedelta(days=back if back or inclusive else 7)


def _weekday_after(day: date, weekday: int, *, inclusive: bool = False) -> date:
    ahead = (weekday - day.weekday()) % 7
    return day + timedelta(days=ahead if ahead or inclusive else 7)


def _relative_weekday(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    # "last one this wed", "see you next sat": after "this", "next" or "last" an abbreviation is a
    # weekday written the way people text, capitalised or not ("the last sun of summer" is not one).
    if _preceded_by_the(m, ctx):
        return None
    rel = " ".join(m.group("rel").lower().split()).replace("nxt", "next")
    weekday = _weekday_index(m)
    if rel in ("last", "this past"):
        day = _weekday_before(ctx.day, weekday)
    elif rel in ("next", "coming", "this coming"):
        day = _weekday_after(ctx.day, weekday)
    elif _tense(ctx, m.start(), m.end()) == "past":  # "this Friday"
        day = _weekday_before(ctx.day, weekday, inclusive=True)
    else:
        day = _weekday_after(ctx.day, weekday, inclusive=True)
    return _make(m, day, day, "day")


_HABITUAL_PART = re.compile(r"\s+(?:mornings|afternoons|evenings|nights)\b", re.IGNORECASE)
# A clock time right after a weekday: "dentist Thursday at 10", "dentist on Monday at 8am, cleaning",
# "call Friday 3pm". Not "parkrun on Saturday: 28:31!" (a result after a colon).
_CLOCK_AFTER = re.compile(
    r"(?:\s+at\s+(?P<h>\d{1,2})(?:[:.](?P<mi>\d\d))?(?:\s*(?P<ap>[ap]\.?m\b\.?))?(?![\d:.]*\s*(?:%|k\b|km|kg|mins?\b|minutes))"
    r"|,?\s+(?P<h2>\d{1,2})(?:[:.](?P<mi2>\d\d))?\s*(?P<ap2>[ap]\.?m\b\.?)"
    r"|\s+at\s+(?P<noon>noon|midday))",
    re.IGNORECASE,
)

# A plural noun after the time names something that recurs: "no more Friday 5 pm syncs".
_RECURRING_AFTER = re.compile(r"\s+(?!(?:this|does|plus)\b)[a-z]{2,}[^s\W]s\b", re.IGNORECASE)


def _appointment(m: re.Match, ctx: _Context) -> Optional[date]:
    """The day of "<weekday> at <time>" in a sentence without a tense: an appointment, so the next
    such weekday, or today when its time is still ahead of when it was said.

    Nearest-occurrence reading (the rule for a verbless "on Thursday") put "dentist on Monday at 8am,
    cleaning", said on Thursday 12 March, on Monday 9 March; the clock time says it is arranged."""
    c = _CLOCK_AFTER.match(ctx.text, m.end("p"))
    if c is None or _RECURRING_AFTER.match(ctx.text, c.end()):
        return None
    if c.group("noon"):
        hour, minute = 12, 0
    else:
        hour = int(c.group("h") or c.group("h2"))
        minute = int(c.group("mi") or c.group("mi2") or 0)
        meridiem = (c.group("ap") or c.group("ap2") or "").lower()[:1]
        if hour > 23 or minute > 59 or (meridiem and not 1 <= hour <= 12):
            return None
        if meridiem == "p" and hour < 12:
            hour += 12
        elif meridiem == "a" and hour == 12:
            hour = 0
        elif not meridiem and hour < 8:
            hour += 12  # "at 3" is an afternoon
    weekday = _weekday_index(m)
    later_today = (hour, minute) > (ctx.when.hour, ctx.when.minute)
    return _weekday_after(ctx.day, weekday, inclusive=later_today)


# Before a weekday that names no one day: "my Friday class", "every Monday", "a Sunday roast".
_OWNED_BEFORE = re.compile(r"\b(?:my|our|your|his|her|their|its|every|each|a|an|the|one|any|some|that|on\s+a)\s+$",
                           re.IGNORECASE)
# After a weekday written alone in a plan: the end of the item, or what says more of the same day.
_ITEM_END = re.compile(
    r"\s*(?:[.,;:!?)\]]|$|[\u2600-\u27bf\U0001f300-\U0001faff])|\s*(?:&|\+)|\s+(?:and|or|then|to|till|until|for|"
    r"before|after|so|but|if|instead|too|as|when|morning|morn|afternoon|evening|eve|night|nite|lunchtime|"
    r"lunch|brunch|first\s+thing|pls|please|ok|okay|tho|then|u|you|i|we)\b",
    re.IGNORECASE,
)


# Weekdays named together ("Monday, Tuesday, Thursday and Friday", "mon-fri", "tues and thurs"), or a
# weekday beside a day of the month ("on the 16th, Tuesday"): a set of days, a range or an apposition.
_BESIDE = re.compile(
    r"(?:\b(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*|\b\d{1,2}(?:st|nd|rd|th)|\b(?:the\s+)\d{1,2})\s*[,&+/–-]?\s*"
    r"(?:and|to|till|until|thru|through)?\s*$",
    re.IGNORECASE)
_BESIDE_AFTER = re.compile(
    r"\s*[,&+/–-]?\s*(?:and|to|till|until|thru|through)?\s*(?:(?:the\s+)?\d|(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\b)",
    re.IGNORECASE)
# A sentence that speaks of what recurs: "Ben's at college Wednesdays", "every Friday", "days only".
_RECURS = re.compile(r"\b(?:every|each|usually|always|normally|weekly|(?:mon|tues|wednes|thurs|fri|satur|sun)days|"
                     r"weekdays|weeknights|weekends|school\s+nights|only)\b", re.IGNORECASE)


def _listed_day(m: re.Match, ctx: _Context) -> bool:
    """A weekday with no "on", no tense and no clock time is a plan's day when it is written as one:
    not owned or counted ("my Friday class", "every Monday"), ending its item or followed by what goes
    with a day ("bins Monday, ...", "back sun nite", "dinner at mine fri? or sat"), and neither one of
    several weekdays or days named together nor in a sentence about what recurs."""
    if _OWNED_BEFORE.search(ctx.text, max(0, m.start("p") - _LOOK_BACK), m.start("p")) \
            or _ITEM_END.match(ctx.text, m.end("p")) is None:
        return False
    return _alone(m, ctx)


def _alone(m: re.Match, ctx: _Context) -> bool:
    """Neither one of several weekdays or days named together, nor the day a plan moved from, nor in a
    sentence about what recurs."""
    if re.search(r"\bfrom\s+$", ctx.text[max(0, m.start("p") - 8): m.start("p")], re.IGNORECASE) \
            and re.match(r"\s+(?:to|till|until)\b", ctx.text[m.end("p"):]):
        return False  # "moved from tue to thu 9th": the day it was, relative to the plan
    if _BESIDE.search(ctx.text, max(0, m.start("p") - 16), m.start("p")) or _BESIDE_AFTER.match(ctx.text, m.end("p")):
        return False
    left = max((e.end() for e in _SENTENCE_END.finditer(ctx.text, 0, m.start("p"))), default=0)
    right = _SENTENCE_END.search(ctx.text, m.end("p"))
    return _RECURS.search(ctx.text, left, right.start() if right else len(ctx.text)) is None


# A present "be" right before the day: "the party is Saturday", "xmas do is thurs 16th", "it's friday".
# ("Bianchi's on Saturday" is whose place, not a "be").
_COPULA_BEFORE = re.compile(r"(?:\b(?:is|are)|\b(?:it|that|this|he|she|there|what)['’]s|['’]re)\s+(?:on\s+)?$",
                            re.IGNORECASE)


def _asked(m: re.Match, ctx: _Context) -> bool:
    """The weekday's sentence is a question."""
    right = _SENTENCE_END.search(ctx.text, m.end("p"))
    return right is not None and right.group() == "?"


def _fragment_tense(m: re.Match, ctx: _Context) -> Optional[str]:
    """The tense of the sentence before a weekday written as a sentence of its own ("WE MOVED.
    saturday. Villeurbanne is home now."), else None."""
    left = max((e.end() for e in _SENTENCE_END.finditer(ctx.text, 0, m.start("p"))), default=0)
    right = _SENTENCE_END.search(ctx.text, m.end("p"))
    rest = ctx.text[left: m.start("p")] + ctx.text[m.end("p"): right.start() if right else len(ctx.text)]
    if left == 0 or re.search(r"\w", rest):
        return None
    return _tense(ctx, left - 1, left - 1)


def _bare_weekday(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    abbreviated = m.group("wd").lower() not in _WEEKDAY_FULL
    if not _typed_weekday_ok(m, ctx):
        return None
    if abbreviated and m.group("wd")[0].isupper() and m.group("wd").lower() in _WORDLIKE_WEEKDAYS \
            and not m.group("on") and not _DAY_PART_AFTER.match(ctx.text, m.end("wd")):
        return None  # a lone "Sun" or "Wed" is too often something else (the Sun, a name)
    if not m.group("on") and (abbreviated or not _weekday_ok(m.group("wd"))) and not _alone(m, ctx):
        return None  # "nights wed thurs fri", "football tues and thurs": a set of days
    if _HABITUAL_PART.match(ctx.text, m.end("p")):
        return None  # "pottery on Tuesday evenings", "no meetings on Friday afternoons": every week
    tense = _tense(ctx, m.start(), m.end())
    if (_target(m, ctx) or _arranged(m, ctx)) and _alone(m, ctx):
        tense = "future"  # "moved jordan to sat", "rebooked it for Tuesday": where a plan went lies ahead
    weekday = _weekday_index(m)
    if _COPULA_BEFORE.search(ctx.text, max(0, m.start("p") - 12), m.start("p")) and _alone(m, ctx):
        # "Mother's Day is Sunday, did you order the flowers?", "it's friday!!": what a day is, stated
        # in the present, is today's or the coming one (the question after the comma has its own tense)
        day = _weekday_after(ctx.day, weekday, inclusive=True)
        return _make(m, day, day, "day")
    if tense is None and _asked(m, ctx):
        tense = "future"  # "dinner at mine fri?", "how abt tues or weds?": a proposal is for days ahead
    if tense is None:
        booked = _appointment(m, ctx)
        if booked is not None:
            return _make(m, booked, booked, "day")
        if not m.group("on"):
            if not _listed_day(m, ctx):
                return None  # "my Friday class": no way to tell which Friday
            told = _fragment_tense(m, ctx)
            if told is not None:  # "WE MOVED. saturday.": the sentence before says when
                day = _weekday_before(ctx.day, weekday) if told == "past" else _weekday_after(ctx.day, weekday)
                return _make(m, day, day, "day")
            # "bins Monday, boiler service Thursday", "fishing Sunday. had a 5lb trout!": the nearest
            # such day, one gone by counting twice as far (a plan is written like this more often).
            days = [ctx.day + timedelta(days=k) for k in range(-6, 7)]
            day = min((d for d in days if d.weekday() == weekday),
                      key=lambda d: ((d - ctx.day).days if d > ctx.day else 2 * (ctx.day - d).days, -d.toordinal()))
            return _make(m, day, day, "day")
        # "Dentist on Thursday": not past, so the nearest Thursday (today included), ties ahead.
        days = [ctx.day + timedelta(days=k) for k in range(-7, 8)]
        day = _choose([(d, d) for d in days if d.weekday() == weekday], ctx, None)[0]
    else:
        day = _weekday_before(ctx.day, weekday) if tense == "past" else _weekday_after(ctx.day, weekday)
    return _make(m, day, day, "day")


_SHIFTED_FROM = re.compile(r"\b(?:moved|pushed|changed|switched|swapped|rescheduled|postponed|shifted|brought)\b[^.!?]*$",
                           re.IGNORECASE)


def _weekday_range(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"I was in hospital from Monday until Thursday", "I'll be away Friday to Sunday": the days from
    the first weekday (placed by the sentence's tense, as a bare weekday) to the next such last one.
    Without a tense, or in a sentence about what recurs ("days only, mon-fri"), no days."""
    first_ok = _weekday_ok(m.group("wd")) or m.group("wd").lower() not in _WORDLIKE_WEEKDAYS
    last_ok = _weekday_ok(m.group("wd2")) or m.group("wd2").lower() not in _WORDLIKE_WEEKDAYS
    if not (first_ok and last_ok):
        return None
    if _SHIFTED_FROM.search(ctx.text, max(0, m.start() - 40), m.start("p")):
        return None  # "the panel got moved from tue to thu": two days, not a stretch
    left = max((e.end() for e in _SENTENCE_END.finditer(ctx.text, 0, m.start("p"))), default=0)
    right = _SENTENCE_END.search(ctx.text, m.end("p"))
    if _RECURS.search(ctx.text, left, right.start() if right else len(ctx.text)):
        return None
    tense = _tense(ctx, m.start(), m.end())
    if tense is None:
        return None
    weekday = _weekday_index(m)
    start = _weekday_before(ctx.day, weekday) if tense == "past" else _weekday_after(ctx.day, weekday)
    last = _WEEKDAY_INDEX[m.group("wd2").lower()[:3]]
    end = start + timedelta(days=(last - weekday) % 7)
    if tense == "past" and end > ctx.day:
        start, end = start - timedelta(days=7), end - timedelta(days=7)
    return ResolvedDate(m.group("p"), start, end, "day", False, explicit_range=True)


def _the_weekend(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    tense = _tense(ctx, m.start(), m.end())
    if tense is None:
        return None
    # Past: the weekend just gone, or the current one when said on a Saturday or Sunday.
    offset = 0 if tense == "future" or ctx.day.weekday() >= 5 else -1
    return _make(m, *_weekend(ctx.day, offset), "day")


def _full_date(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    month = int(m.group("m")) if m.group("m").isdigit() else _month_number(m.group("m"))
    if not m.group("m").isdigit() and not _dated_month_ok(m):
        return None
    try:
        day = date(int(m.group("y")), month, int(m.group("d")))
    except ValueError:
        return None  # "31 June 2023" is not a date
    return _make(m, day, day, "day")


def _day_month(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    if not _dated_month_ok(m):
        return None
    month, day_number = _month_number(m.group("m")), int(m.group("d"))
    chosen = _choose(_yearly(month, day_number, ctx), ctx, _reading(m, ctx))
    if chosen is None:
        return None  # 31 June is no day in any year
    return _make(m, *chosen, "day")


# Written in numbers: "21/06/2027", "paid on 3/2", "lease is up 9/30", "20.05.2026". Day first where
# both numbers could be the month (most of the English-speaking world writes it so); a number over 12
# decides ("9/30" is 30 September). Not a fraction, a rate or a score ("1/2 price", "24/7", "8/10").
_FRACTIONS = {(1, 2), (1, 3), (2, 3), (1, 4), (3, 4), (24, 7), (50, 50)}
_NUMERIC_CONTEXT = re.compile(r"\b(?:on|by|from|until|till|til|due|before|after|since)\s+$", re.IGNORECASE)
_NOT_A_DATE_BEFORE = re.compile(r"(?:\b(?:out\s+of|rated|rate|score[ds]?|scored|ratio|odds|[0-9]+\s*x)\s*|[$£€¥#]\s*)$",
                                re.IGNORECASE)


def _numeric_date(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    a, b = int(m.group("a")), int(m.group("b"))
    year_text = m.group("y")
    before = ctx.text[max(0, m.start("p") - 16): m.start("p")]
    if _NOT_A_DATE_BEFORE.search(before):
        return None
    if year_text is None and (a, b) in _FRACTIONS and not _NUMERIC_CONTEXT.search(before):
        return None  # "1/2 the price": only after "on", "by", "until" ... a date
    if year_text is None and m.group("sep") == "." and not re.search(r"\bon\s+$", before, re.IGNORECASE):
        return None  # "1.8m", "at 20.05", "version 3.5": a dotted date needs its year or "on"
    if a > 12 and b <= 12:
        day_number, month = a, b
    elif b > 12 and a <= 12:
        day_number, month = b, a
    elif a <= 12 and b <= 12:
        day_number, month = a, b
        if year_text is None and a != b:
            # Either number may be the month: the reading that falls nearer the day it was said
            # ("booked Jiffy Lube for 10/4" on 29 September is 4 October, not next April).
            readings = [c for c in (_choose(_yearly(b, a, ctx), ctx, _reading(m, ctx)),
                                    _choose(_yearly(a, b, ctx), ctx, _reading(m, ctx))) if c is not None]
            if readings:
                return _make(m, *min(readings, key=lambda c: _distance(c, ctx.day)), "day")
    else:
        return None
    if year_text is not None:
        year = int(year_text) + (2000 if len(year_text) == 2 else 0)
        try:
            day = date(year, month, day_number)
        except ValueError:
            return None
        return _make(m, day, day, "day")
    chosen = _choose(_yearly(month, day_number, ctx), ctx, _reading(m, ctx))
    return None if chosen is None else _make(m, *chosen, "day")


# Holidays on a fixed day of the year, placed like a date without a year ("at Christmas" said in
# November is the coming one; "over Christmas" said in January, past tense, the one just gone).
# Movable feasts are placed the same way by :func:`_movable`; those whose day needs a lunar or a
# national calendar (Diwali, Eid, Mother's Day) are left unresolved rather than guessed.
_HOLIDAY = HOLIDAY_PATTERN


_HABITUAL = re.compile(r"\b(?:always|usually|normally|every\s+year|each\s+year|traditions?|favou?rite)\b", re.IGNORECASE)


def _habitual(m: re.Match, ctx: _Context) -> bool:
    """A holiday in a sentence about what is done every year ("Thanksgiving's always special", "any
    favorite Christmas traditions?") names no one day."""
    start = max((e.end() for e in _SENTENCE_END.finditer(ctx.text, 0, m.start("p"))), default=0)
    stop = _SENTENCE_END.search(ctx.text, m.end("p"))
    return _HABITUAL.search(ctx.text, start, stop.start() if stop else len(ctx.text)) is not None


def _holiday_reading(m: re.Match, ctx: _Context) -> Optional[str]:
    """:func:`_reading` for a holiday, except that "for Valentine's" after a past verb that arranges
    nothing ("took Mei to Burleigh for Valentine's", said eight days after it) may be the one just
    gone as well as the next: the nearest occurrence (a gift "bought for Christmas" in November is
    this Christmas, "went home for Christmas" in January the last)."""
    reading = _reading(m, ctx)
    if (reading == "future" and _target(m, ctx) and not _arranged(m, ctx)
            and _tense(ctx, m.start(), m.end()) == "past"):
        return None
    return reading


def _holiday(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    if _preceded_by_the(m, ctx) or _habitual(m, ctx):
        return None  # "the Christmas magic", "the Christmas before last": no day of its own
    month, day_number = holiday_day(m.group("h"))
    chosen = _choose(_yearly(month, day_number, ctx), ctx, _holiday_reading(m, ctx))
    if chosen is None:
        return None
    return _make(m, *chosen, "day")


def _movable(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"Easter Monday", "the weekend after Easter", "over Thanksgiving": the feast's day (or days) in
    the years around the event date, the tense choosing among them as for a fixed holiday."""
    named = re.search(r"(?:bank\s+holiday|day\s+weekend)$", m.group("f"), re.IGNORECASE) is not None
    if (_preceded_by_the(m, ctx) and not named) or _habitual(m, ctx):
        return None  # "the Easter holidays", "Easter is always at Gran's"; not "the spring bank holiday"
    spans = [movable_feast(m.group("f"), year) for year in _years_around(ctx)]
    chosen = _choose(spans, ctx, _holiday_reading(m, ctx))
    if chosen is None:
        return None
    return _make(m, *chosen, "day")


_NTH = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": -1}


def _nth_weekday_of_month(day_in: date, nth: int, weekday: int) -> Optional[date]:
    day = nth_weekday(day_in.year, day_in.month, weekday, nth)
    return day if day.month == day_in.month else None  # no fifth Monday this month


def _nth_weekday_relative(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"the first Monday of next month", "the last Friday of this month": that weekday of the month
    counted from the event's."""
    offset = {"this": 0, "next": 1, "last": -1}[m.group("rel").lower()]
    day = _nth_weekday_of_month(ctx.day + relativedelta(months=offset), _NTH[m.group("nth").lower()], _weekday_index(m))
    return None if day is None else _make(m, day, day, "day")


def _day_of_relative_month(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"the 31st of this month", "the 3rd of next month": that day of the month counted from the
    event's (none when the month has no such day)."""
    offset = {"this": 0, "next": 1, "last": -1}[m.group("rel").lower()]
    month = ctx.day.replace(day=1) + relativedelta(months=offset)
    try:
        day = month.replace(day=int(m.group("d")))
    except ValueError:
        return None
    return _make(m, day, day, "day")


def _month_end(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"the end of the month", "by the end of next month", "the last day of May": the month's last day
    (around it for "the end of": "moving to Cork at the end of July" names no day)."""
    vague = not re.search(r"last\s+day", m.group("p"), re.IGNORECASE)
    if m.group("m"):
        if not _month_ok(m.group("m")):
            return None
        month = _month_number(m.group("m"))
        spans = [(date(y, month, 1) + relativedelta(months=1) - timedelta(days=1),) * 2 for y in _years_around(ctx)]
        chosen = _choose(spans, ctx, _reading(m, ctx))
        return None if chosen is None else _make(m, *chosen, "day", vague)
    offset = {"the": 0, "this": 0, "next": 1, "last": -1}[m.group("rel").lower()]
    last = (ctx.day + relativedelta(months=offset)).replace(day=1) + relativedelta(months=1) - timedelta(days=1)
    return _make(m, last, last, "day", vague)


def _nth_weekday(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"the last saturday of april", "the second Tuesday in March 2026": that weekday of the month,
    the year chosen by the tense as for a date without one (see _choose) unless it is written."""
    if not _dated_month_ok(m):
        return None
    nth, weekday, month = _NTH[m.group("nth").lower()], _weekday_index(m), _month_number(m.group("m"))
    years = [int(m.group("y"))] if m.group("y") else _years_around(ctx)
    spans = []
    for year in years:
        day = _nth_weekday_of_month(date(year, month, 1), nth, weekday)
        if day is not None:
            spans.append((day, day))
    chosen = _choose(spans, ctx, _reading(m, ctx)) if not m.group("y") else (spans[0] if spans else None)
    if chosen is None:
        return None
    return _make(m, *chosen, "day")


def _weekday_date(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"Thursday 11 September", "Wed, Sept 17": the weekday says which year. Of the occurrences
    around the event date whose weekday is the one written, the tense picks as for a plain date
    (see _choose); when the tense allows none of them, the nearest one. A weekday that fits no
    nearby year (a slip) leaves the date to the day-month reading."""
    if not _dated_month_ok(m) or not _numbered_weekday_ok(m, ctx):
        return None
    month, day_number = _month_number(m.group("m")), int(m.group("d"))
    weekday = _weekday_index(m)
    spans = [s for s in _yearly(month, day_number, ctx) if s[0].weekday() == weekday]
    if not spans:
        return _day_month(m, ctx)
    chosen = _choose(spans, ctx, _reading(m, ctx)) or _choose(spans, ctx, None)
    return _make(m, *chosen, "day")


def _weekday_ordinal(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"Tuesday the 17th": the month (of the two before and after the event date's) whose 17th is a
    Tuesday, the tense choosing among them as for a plain date, else the nearest. None when no
    nearby month fits (a slip): the weekday and "the 17th" are then read on their own."""
    if not _numbered_weekday_ok(m, ctx):
        return None
    number, weekday = int(m.group("d")), _weekday_index(m)
    spans = []
    for offset in range(-2, 3):
        month_start = ctx.day.replace(day=1) + relativedelta(months=offset)
        try:
            day = month_start.replace(day=number)
        except ValueError:
            continue
        if day.weekday() == weekday:
            spans.append((day, day))
    if not spans:
        return None
    tense = "future" if _target(m, ctx) else _tense(ctx, m.start(), m.end())  # "due fri 20th"
    chosen = _choose(spans, ctx, tense) or _choose(spans, ctx, None)
    return _make(m, *chosen, "day")


def _ordinal_day(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"on the 14th" (a day of a month left unsaid), "from the 14th to the 18th": the month is the
    one that makes it the occurrence the tense asks for (see _choose)."""
    first = int(m.group("d1"))
    last = int(m.group("d2")) if m.group("d2") else first
    if m.group("sep") and m.group("sep").strip().lower() == "and" and (m.group("prep") or "").lower() != "between":
        return None
    if not (1 <= first <= 31 and 1 <= last <= 31) or (m.group("d2") and last < first):
        return None
    spans = []
    for offset in range(-2, 3):
        month_start = ctx.day.replace(day=1) + relativedelta(months=offset)
        try:
            spans.append((month_start.replace(day=first), month_start.replace(day=last)))
        except ValueError:
            continue  # no 31st in this month
    prep = (m.group("prep") or "").lower()
    tense = ("past" if prep == "since" else "future" if prep in ("to", "for", "until", "till")
             else _tense(ctx, m.start(), m.end()))
    chosen = _choose(spans, ctx, tense)
    if chosen is None:
        return None
    return ResolvedDate(m.group("p"), *chosen, "day", False, explicit_range=chosen[0] != chosen[1])


def _range(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    """"18 to 22 June", "18-22 June 2026", "from 18 June to 22 July", "June 18–22",
    "between 3 and 5 March": one span. Without a year it is placed like a single date (_choose),
    by its first day; an end before the start runs into the next year (30 December–2 January)."""
    g = m.groupdict()
    if (g.get("sep") or "").strip().lower() == "and" and not g.get("between"):
        # "on 18 June and 19 June", "3 and 10 December" are two dates; "9 and 10 October", two days
        # in a row sharing their month, are the one stretch ("the Tokyo trip on 9 and 10 October").
        if (g.get("m1") and g.get("m2")) or int(g["d2"]) != int(g["d1"]) + 1:
            return None
    for group in ("m1", "m2"):
        if g.get(group) and not _dated_month_ok(m, group):
            return None
    m2 = _month_number(g["m2"]) if g.get("m2") else None
    m1 = _month_number(g["m1"]) if g.get("m1") else m2
    m2 = m2 or m1
    if m1 is None or m2 is None:
        return None
    d1, d2 = int(g["d1"]), int(g["d2"])
    y1, y2 = (int(g["y1"]) if g.get("y1") else None), (int(g["y2"]) if g.get("y2") else None)

    wraps = (m2, d2) < (m1, d1)  # "30 December to 2 January"

    def span(start_year: int, end_year: Optional[int] = None) -> Optional[tuple[date, date]]:
        try:
            start = date(start_year, m1, d1)
            end = date(end_year if end_year is not None else start_year + wraps, m2, d2)
        except ValueError:
            return None  # 31 June
        return (start, end) if start <= end else None

    if y1 is not None:
        chosen = span(y1, y2)
    elif y2 is not None:
        chosen = span(y2 - wraps, y2)
    else:
        spans = [s for s in (span(y) for y in range(ctx.day.year - 4, ctx.day.year + 5)) if s]
        chosen = _choose(spans, ctx, _reading(m, ctx))
    if chosen is None:
        return None
    return ResolvedDate(m.group("p"), *chosen, "day", False, explicit_range=chosen[0] != chosen[1])


def _month_year(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    if not _month_ok(m.group("m")):
        return None
    first = date(int(m.group("y")), _month_number(m.group("m")), 1)
    return _make(m, *_month(first, 0), "month")


def _bare_month(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    word = m.group("m")
    framed = m.group("rel") or m.group("gate") or m.group("mod")
    ends = framed and _MONTH_AT_END.match(ctx.text, m.end("m")) is not None
    if not _month_ok(word) and not (framed and (word.lower() not in ("may", "march") or ends)):
        return None  # "in jan", "since sept", "in may?": a word that frames a time makes it a month
    month = _month_number(m.group("m"))
    rel = (m.group("rel") or "").lower()
    if rel in ("last", "next", "this") and _preceded_by_the(m, ctx):
        return None
    if not (rel or m.group("gate") or m.group("mod")):
        return None  # a bare "June" may be a name; "in June", "last June", "mid-June" are dates
    year, current = ctx.day.year, ctx.day.month
    if rel == "last":
        year -= 1 if month >= current else 0
    elif rel == "next":
        year += 1 if month <= current else 0
    elif rel != "this":
        spans = [_month(date(y, month, 1), 0) for y in (year - 1, year, year + 1)]
        tense = "past" if (m.group("gate") or "").lower() == "since" else _reading(m, ctx)
        return _make(m, *_choose(spans, ctx, tense), "month")
    return _make(m, *_month(date(year, month, 1), 0), "month")


def _year_only(m: re.Match, ctx: _Context) -> Optional[ResolvedDate]:
    year = int(m.group("y"))
    approximate = m.group("gate").lower() in ("around", "circa")
    if approximate and re.match(r"\s+[a-z]", ctx.text[m.end() :]):
        return None  # "around 2000 people" is a count
    return _make(m, date(year, 1, 1), date(year, 12, 31), "year", approximate)


def _rule(pattern: str, handler: _Rule) -> tuple[re.Pattern, _Rule]:
    return re.compile(pattern, re.IGNORECASE), handler


_REL = (
    r"(?P<rel>last|this\s+past|the\s+past|this\s+coming|the\s+coming|coming|next|nxt"
    r"|(?:earlier\s+|later\s+)?this)"
)
# Followed by nothing that could be its object: "the week before." but not "the week before my exam".
_STANDALONE = r"(?=\s*(?:[.,;:!?)]|$|\s(?:and|but|so|too|or|when|as)\b))"

# Ranges: two days with a separator, sharing the month (and year) written after the second.
_RANGE_SEP = r"(?P<sep>\s*[-–—]\s*|\s+(?:to|till|until|through|thru|and)\s+)"
_M1, _M2 = _MONTH.replace("?P<m>", "?P<m1>"), _MONTH.replace("?P<m>", "?P<m2>")
_D1, _D2 = _DAY.replace("?P<d>", "?P<d1>"), _DAY.replace("?P<d>", "?P<d2>")
_Y1, _Y2 = _YEAR.replace("?P<y>", "?P<y1>"), _YEAR.replace("?P<y>", "?P<y2>")
_RANGE_LEAD = r"(?:\b(?P<between>between)\s+|\bfrom\s+)?"
# What may follow "on the 14th" for it to be a day: punctuation, the end, or a function word; not a
# noun ("the 14th floor", "the 14th century").
_AFTER_ORDINAL = (
    r"(?=\s*(?:[.,;:!?()\u2600-\u27bf\U0001f300-\U0001faff]|$)|\s+(?:at|and|or|but|so|for|then|when|in|with|to|until|till|before|after|"
    r"around|about|because|cos|if|as|too|also|i|we|you|he|she|they|is|was|will|works?|"
    # "back on the 17th now", "the 12th instead": a word that ends the thought, not a noun the number counts
    r"now|instead|again|though|tho|hopefully|probably|maybe|lol|pls|please|thanks|ok|okay|yeah)\b)"
)

_RULES: list[tuple[re.Pattern, _Rule]] = [
    _rule(rf"\b(?P<p>{_FIXED_PATTERN})\b", _fixed_day),
    _rule(r"\b(?P<p>recently|lately|not\s+(?:so\s+|that\s+)?long\s+ago|the\s+other\s+day)\b", _vague),
    _rule(rf"\b(?P<p>{_REL}\s+(?P<unit>weekend|week|month|year|wknd|wkend|wk|mnth|mth|yr))\b", _relative_unit),
    _rule(
        r"\b(?P<p>the\s+(?P<unit>weekend|week|month|year|wknd|wk)\s+(?P<dir>before\s+last|after\s+next))\b",
        _before_after,
    ),
    _rule(rf"\b(?P<p>the\s+(?P<unit>weekend|week|month|year)\s+before){_STANDALONE}", _unit_before),
    _rule(rf"\b(?P<p>{_APPROX}{_COUNT}\s+{_UNIT}\s+ago)\b", _ago),
    # "Before two days I have paid the bill": the "ago" of many who learned English after another
    # language; not "before 3 days of rain", "the week before two days off".
    _rule(rf"(?<!\bthe\s)(?<!\bjust\s)\b(?P<p>[Bb]efore\s+{_APPROX}{_COUNT}\s+{_UNIT})\b"
          r"(?!\s+(?:of|off|before|after|from|to|in|ago|left|later|earlier|away|more|were|was|are|is|had|have|has|"
          r"passed|pass|went|go|gone|had|run|ran)\b)", _ago),
    _rule(  # "the past two weeks", but not "the last 3 days of June"
        rf"\b(?P<p>(?:the|these)\s+(?P<dir>next|past|last|coming)\s+{_COUNT}\s+"
        r"(?P<unit>day|night|weekend|week|month|year)s?)\b(?!\s+of\b)",
        _rolling,
    ),
    _rule(rf"\b(?P<p>in\s+{_APPROX}{_COUNT}\s+{_UNIT})\b", _ahead),
    _rule(rf"\b(?P<p>{_APPROX}{_COUNT}\s+{_UNIT}\s+from\s+(?P<base>now|today|tonight|{_TOMORROW_WORDS}))\b", _ahead),
    _rule(
        rf"\b(?P<p>(?P<rel>last|this\s+past|this\s+coming|coming|next|nxt|this)\s+{_WEEKDAY})(?!\w)",
        _relative_weekday,
    ),
    _rule(rf"\b(?:(?P<on>on)\s+)?(?P<p>{_WEEKDAY})(?!\w)", _bare_weekday),
    _rule(r"\b(?:over|on|at|during|in)\s+(?P<p>the\s+weekend)\b", _the_weekend),
    _rule(rf"\b(?:from\s+)?(?P<p>{_WEEKDAY}\s*(?:[-–]|\s(?:to|till|until|thru|through)\s)\s*"
          r"(?P<wd2>mon(?:day)?|tue(?:s(?:day)?)?|wed(?:s|nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?))"
          r"(?!\w)(?!,?\s*(?:the\s+)?\d)",
          _weekday_range),
    _rule(rf"\b(?P<p>{_COUNT}\s+(?P<unit>week|wk|fortnight)s?\s+(?:on\s+{_WEEKDAY}|(?P<base>today|{_TOMORROW_WORDS})))(?!\w)",
          _week_on),
    _rule(rf"\b(?P<p>{_WEEKDAY}\s+week)\b(?!\s*(?:end|day|night|s)\b)", _week_on),
    _rule(rf"\b(?P<p>the\s+{_WEEKDAY}\s+after\s+next)\b", _week_on),
    _rule(
        rf"{_RANGE_LEAD}\b(?P<p>(?:the\s+)?{_D1}(?:(?:\s+of)?\s+{_M1}(?:,?\s+{_Y1})?)?{_RANGE_SEP}"
        rf"(?:the\s+)?{_D2}(?:\s+of)?\s+{_M2}(?:,?\s+{_Y2})?)(?!\w)",
        _range,
    ),
    _rule(
        rf"{_RANGE_LEAD}\b(?P<p>{_M1}\s+{_D1}(?:,?\s+{_Y1})?{_RANGE_SEP}(?:{_M2}\s+)?{_D2}"
        rf"(?:,?\s+{_Y2})?)\b(?![:.,]?\d)",
        _range,
    ),
    _rule(
        # "on the 14th", and "the 14th" alone ("did the 29th (33:40) and the 5th"): what follows decides
        r"\b(?:(?P<prep>on|by|to|for|until|till|before|after|from|since|between)\s+)?(?P<p>the\s+"
        r"(?P<d1>\d{1,2})(?:st|nd|rd|th)(?:(?P<sep>\s*[-–]\s*|\s+(?:to|till|until|through|and)\s+)"
        rf"(?:the\s+)?(?P<d2>\d{{1,2}})(?:st|nd|rd|th))?){_AFTER_ORDINAL}",
        _ordinal_day,
    ),
    _rule(  # "24th to the 27th": two ordinals make a range of days without a preposition
        r"\b(?P<prep>)(?P<p>(?:the\s+)?(?P<d1>\d{1,2})(?:st|nd|rd|th)(?P<sep>\s*[-–]\s*|\s+(?:to|till|until|through)\s+)"
        rf"(?:the\s+)?(?P<d2>\d{{1,2}})(?:st|nd|rd|th)){_AFTER_ORDINAL}",
        _ordinal_day,
    ),
    _rule(rf"\b(?:(?:at|over|for|on|by|until|till|before|after|since|from)\s+)?(?P<p>{_HOLIDAY})(?!\w)", _holiday),
    _rule(rf"\b(?:(?:at|over|for|on|by|until|till|before|after|since|from)\s+)?(?P<p>{MOVABLE_PATTERN})(?!\w)", _movable),
    _rule(
        rf"\b(?:(?P<for>for)\s+)?(?P<p>{_COUNT}\s+(?P<unit>day|night|week|month|year)s?\s+from\s+"
        rf"(?:(?P<rel>next|this|last|coming)\s+)?{_WEEKDAY})(?!\w)",
        _from_weekday,
    ),
    _rule(rf"\b(?P<p>(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR})\b", _full_date),
    _rule(rf"\b(?P<p>{_MONTH}\s+{_DAY},?\s+{_YEAR})\b", _full_date),
    _rule(r"\b(?P<p>(?P<y>(?:19|20)\d\d)-(?P<m>\d\d)-(?P<d>\d\d))\b", _full_date),
    _rule(r"(?<![\d/.:,])(?:(?<!-)|(?<=\d/\d-)|(?<=\d/\d\d-))(?P<p>(?P<a>\d{1,2})(?P<sep>[/.])(?P<b>\d{1,2})(?:(?P=sep)(?P<y>(?:19|20)\d\d|\d\d))?)"
          r"(?![\d/:]|[.,]\d|\s*%|\s*(?:of|th|ths|rds|mg|ml|kg|km|pm|am|h|hrs?|mins?)\b)", _numeric_date),
    _rule(rf"\b(?P<p>{_WEEKDAY},?\s+(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH})(?!\w)", _weekday_date),
    _rule(rf"\b(?P<p>{_WEEKDAY},?\s+{_MONTH}\s+{_DAY})\b(?![:.,]?\d)", _weekday_date),
    _rule(rf"\b(?P<p>{_WEEKDAY},?\s+(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th))(?!\w)", _weekday_ordinal),
    _rule(rf"\b(?P<p>(?:the\s+)?(?P<nth>first|1st|second|2nd|third|3rd|fourth|4th|last)\s+{_WEEKDAY}\s+(?:of|in)\s+"
          r"(?P<rel>this|next|last)\s+month)\b", _nth_weekday_relative),
    _rule(r"\b(?P<p>(?:the\s+)?(?P<d>\d{1,2})(?:st|nd|rd|th)\s+of\s+(?P<rel>this|next|last)\s+month)\b",
          _day_of_relative_month),
    _rule(r"\b(?P<p>(?:the\s+)?(?:end|last\s+day)\s+of\s+(?:(?P<rel>the|this|next|last)\s+month|"
          rf"{_MONTH}))(?!\w)", _month_end),
    _rule(rf"\b(?P<p>(?:the\s+)?(?P<nth>first|1st|second|2nd|third|3rd|fourth|4th|last)\s+{_WEEKDAY}\s+(?:of|in)\s+"
          rf"{_MONTH}(?:,?\s+{_YEAR})?)(?!\w)", _nth_weekday),
    _rule(rf"\b(?P<p>(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH})(?!\w)", _day_month),
    _rule(rf"\b(?P<p>{_MONTH}\s+{_DAY})\b(?![:.,]?\d)", _day_month),
    _rule(rf"\b(?P<p>{_MONTH},?\s+{_YEAR})\b", _month_year),
    _rule(
        r"\b(?:(?P<gate>in|during|since|until|till)\s+)?(?P<p>"
        r"(?:(?P<rel>last|next|this)\s+|(?P<mod>(?:early|mid|late)[\s-]+|"
        r"(?:the\s+)?(?:beginning|start|middle|end)\s+of\s+))?"
        rf"{_MONTH})(?!\w)",
        _bare_month,
    ),
    _rule(
        r"\b(?P<gate>in|during|since|until|till|from|back\s+in|around|circa)\s+(?:the\s+year\s+)?"
        rf"(?P<p>{_YEAR})\b(?![-/]\d)",
        _year_only,
    ),
]


def _find(text: str, event_time: datetime) -> list[_Found]:
    """All non-overlapping date expressions in ``text``; the longest match wins an overlap."""
    # A plain date is accepted too: its "N hours ago" counts from midnight.
    when = event_time
    if not isinstance(when, datetime):
        when = datetime.combine(when, datetime.min.time())
    ctx = _Context(text, when, when.date())
    candidates: list[tuple[int, int, int, int, re.Match, _Rule]] = []
    for order, (pattern, handler) in enumerate(_RULES):
        for m in pattern.finditer(text):
            candidates.append((m.start("p"), m.end(), m.end("p"), order, m, handler))
    # Longest first, then leftmost, then rule order: "last Friday" beats "Friday", "7 May 2023"
    # beats "May 2023". A rule that declines a match ("I may go") frees its span for the others.
    candidates.sort(key=lambda c: (c[0] - c[1], c[0], c[3]))
    taken: list[_Found] = []
    ordinals: set[int] = set()  # begins of "on the 27th" phrases: their month may be written before
    months: set[int] = set()  # begins of those that took the month of the date before them
    weekdays: set[int] = set()  # begins of bare weekdays: a span of days just before may hold them
    for begin, stop, end, _, m, handler in candidates:
        if any(begin < t.stop and t.begin < stop for t in taken):
            continue
        resolved = handler(m, ctx)
        if resolved is not None:
            taken.append(_Found(begin, stop, end, resolved))
            if handler is _ordinal_day:
                ordinals.add(begin)
            elif handler is _bare_weekday:
                weekdays.add(begin)
    taken.sort(key=lambda t: t.begin)
    for i, found in enumerate(taken):
        if found.begin in weekdays and i > 0:
            taken[i] = _day_after_dated(taken[i - 1], found, ctx)
    for i, found in enumerate(taken[:-1]):
        after = taken[i + 1]
        if found.begin in weekdays and _NAMED_AS.fullmatch(text, found.end, after.begin) \
                and after.date.start == after.date.end and after.date.start.weekday() == found.date.start.weekday():
            # "monday was easter monday": the weekday is the day the phrase after it names
            taken[i] = replace(found, date=replace(found.date, start=after.date.start, end=after.date.start))
    within: _Found | None = None  # the span the weekdays listed just before this one were placed in
    for i, found in enumerate(taken):
        if found.begin in weekdays and i > 0:
            span = within if within is not None and taken[i - 1].begin in weekdays else taken[i - 1]
            taken[i] = _day_within(span, taken[i - 1].end, found, ctx)
            within = span if taken[i] is not found else None
        if found.begin in ordinals and i > 0:
            taken[i] = _month_from(taken[i - 1], found, ctx, placed=taken[i - 1].begin in months)
            if taken[i] is not found:  # "on the 23rd, back the 27th": the next day alone takes this month
                months.add(found.begin)
    return _joined(_after_told(_weeks_of(_relative_weekdays(_counted_from(taken, ctx), ctx), ctx), ctx), ctx)


# Two days written as the ends of one stretch: "3/22-3/26", "from Christmas Eve until New Year's Day".
# A word between them makes a stretch only after "from" or "between" ("Christmas Eve until New Year's
# Day" alone may be two plans), and only from a named day; a plan moved "from tue to thu" is two days.
_JOINER = re.compile(r"\s*(?:[-–—]|(?P<word>to|until|till|til|through|thru|and))\s*", re.IGNORECASE)
_FROM_BEFORE = re.compile(r"\b(?:from|between)\s+(?:the\s+)?$", re.IGNORECASE)
_LONGEST_JOINED = 62  # days: two days further apart than this are two dates, not one stretch


def _joined(taken: list[_Found], ctx: _Context) -> list[_Found]:
    out: list[_Found] = []
    for found in taken:
        first = out[-1] if out else None
        joiner = _JOINER.fullmatch(ctx.text, first.end, found.begin) if first is not None else None
        if first is None or joiner is None or not _one_day(first.date) or not _one_day(found.date):
            out.append(found)
            continue
        lead = _FROM_BEFORE.search(ctx.text, max(0, first.begin - 16), first.begin)
        word = (joiner.group("word") or "").lower()
        if word and (lead is None or (word == "and") != lead.group().lower().startswith("between")
                     or re.search(r"\d", first.date.phrase)):
            # Only "from … to …", "between … and …", and only from a named day: "from 28 March until
            # the 2nd" stays a first day and the day the stay closes (tools.stretch reads those).
            out.append(found)
            continue
        last = found.date.start
        if last < first.date.start:  # "28 December - 3 January": the last day is in the next year
            try:
                last = last.replace(year=last.year + 1)
            except ValueError:
                out.append(found)
                continue
        if not 0 < (last - first.date.start).days <= _LONGEST_JOINED \
                or _SHIFTED_FROM.search(ctx.text, max(0, first.begin - 40), first.begin):
            out.append(found)
            continue
        stretch = ResolvedDate(ctx.text[first.begin:found.end], first.date.start, last, "day",
                               first.date.approximate or found.date.approximate, explicit_range=True)
        out[-1] = _Found(first.begin, found.stop, found.end, stretch)
    return out


def _one_day(resolved: ResolvedDate) -> bool:
    return resolved.granularity == "day" and resolved.start == resolved.end


# "the week of the 26th", "the week commencing 12 April", "w/c 3 March": the Monday-to-Sunday week
# holding the day.
_WEEK_OF = re.compile(r"(?:\bthe\s+)?(?:\bweek\s+(?:of|commencing|beginning|starting)|\bw/c)\s+$", re.IGNORECASE)


def _weeks_of(taken: list[_Found], ctx: _Context) -> list[_Found]:
    out = []
    for found in taken:
        lead = _WEEK_OF.search(ctx.text, max(0, found.begin - 32), found.begin)
        if lead is not None and found.date.start == found.date.end:
            monday = found.date.start - timedelta(days=found.date.start.weekday())
            phrase = ctx.text[lead.start(): found.end]
            found = replace(found, begin=lead.start(), date=ResolvedDate(
                phrase, monday, monday + timedelta(days=6), "week", found.date.approximate))
        out.append(found)
    return out


# "the sofa came on Thursday 13th, and Dad visited the weekend after", "essay due Friday, reading week is
# the week after": the week (or weekend) after the day told just before, in the same message.
_UNIT_AFTER = re.compile(rf"\b(?P<p>the\s+(?P<unit>weekend|wknd|week|wk)\s+after){_STANDALONE}", re.IGNORECASE)


def _after_told(taken: list[_Found], ctx: _Context) -> list[_Found]:
    added = []
    for m in _UNIT_AFTER.finditer(ctx.text):
        if any(t.begin < m.end() and m.start("p") < t.stop for t in taken):
            continue
        before = [t for t in taken if t.end <= m.start("p")]
        if not before:
            continue
        told = before[-1].date.end
        unit = _UNIT_SPELLINGS.get(m.group("unit").lower(), m.group("unit").lower())
        if unit == "weekend":
            saturday = told + timedelta(days=(5 - told.weekday()) % 7 or 7)
            start, end, granularity = saturday, saturday + timedelta(days=1), "day"
        else:
            start = told - timedelta(days=told.weekday()) + timedelta(days=7)
            end, granularity = start + timedelta(days=6), "week"
        added.append(_Found(m.start("p"), m.end("p"), m.end("p"), ResolvedDate(m.group("p"), start, end, granularity, False)))
    return sorted(taken + added, key=lambda t: t.begin)


# A day counted from the date written right after it: "the friday a week before christmas", "the day
# after Easter Monday", "two days before 14 March", "the Saturday after the 3rd".
_COUNTED_NUMBER = r"(?:a|an|one|two|three|four|five|six|seven|\d{1,2})"
_COUNTED_FROM = re.compile(
    rf"\b(?P<p>(?:the\s+(?:{_WEEKDAY}|(?P<day>day))|(?P<n>{_COUNTED_NUMBER})\s+(?P<u>days?|weeks?))"
    rf"(?:\s+(?P<n2>{_COUNTED_NUMBER})\s+(?P<u2>days?|weeks?))?\s+(?P<dir>before|after))\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


def _counted_from(taken: list[_Found], ctx: _Context) -> list[_Found]:
    """A day counted from the one-day date written right after it ("the friday a week before christmas"
    is Friday 18 December 2026 when Christmas is a Friday): the phrase and its anchor become one date.
    A weekday alone is the nearest one strictly before (after) the anchor; with a distance, the nearest
    on or before (after) the day that far from it."""
    out = []
    for found in taken:
        m = _COUNTED_FROM.search(ctx.text, max(0, found.begin - 60), found.begin)
        if m is None or found.date.start != found.date.end:
            out.append(found)
            continue
        before = m.group("dir").lower() == "before"
        offset = 0
        for n, u in ((m.group("n"), m.group("u")), (m.group("n2"), m.group("u2"))):
            if n:
                offset += (_COUNTS.get(n.lower()) or int(n)) * (7 if u.lower().startswith("week") else 1)
        anchor = found.date.start
        if m.group("day"):
            offset = offset or 1
        day = anchor - timedelta(days=offset) if before else anchor + timedelta(days=offset)
        if m.group("wd"):
            weekday = _WEEKDAY_INDEX[m.group("wd").lower()[:3]]
            step = _weekday_before if before else _weekday_after
            day = step(day, weekday, inclusive=offset > 0)
        phrase = ctx.text[m.start("p"): found.end]
        out.append(_Found(m.start("p"), found.stop, found.end, ResolvedDate(phrase, day, day, "day", False)))
    return out


_RELATIVE_WEEKDAY = re.compile(
    rf"\b(?P<p>the\s+{_WEEKDAY}\s+(?P<dir>before|after))\b(?!\s+(?:last|next|that|this|the|[0-9]))"
    rf"|\b(?P<p2>the\s+(?P<dir2>following|next)\s+{_WEEKDAY.replace('?P<wd>', '?P<wd2>')})\b", re.IGNORECASE)
_RELATIVE_REACH = 200  # characters back to the date a "the thursday before" is counted from


def _relative_weekdays(taken: list[_Found], ctx: _Context) -> list[_Found]:
    """"tundes wedding still 12 dec. bachelors is the thursday before": that weekday before (or
    after) the last day dated before it, within a sentence or two; 10 December 2026. "Flying out
    Thursday 9/18, back the following Wednesday": the Wednesday after the day told in its sentence."""
    added = []
    for m in _RELATIVE_WEEKDAY.finditer(ctx.text):
        group = "p" if m.group("p") else "p2"
        word = m.group("wd") or m.group("wd2")
        inside = [t for t in taken if t.begin < m.end() and m.start() < t.stop]
        # "back the following Wednesday": the weekday alone was read against the message's day
        if not _weekday_ok(word) or any(t.begin < m.start(group) or t.stop > m.end() for t in inside):
            continue
        before = [t for t in taken if t.end <= m.start() and m.start() - t.end <= _RELATIVE_REACH
                  and t.date.start == t.date.end]
        if not before or (group == "p2" and _SENTENCE_END.search(ctx.text, before[-1].end, m.start())):
            continue  # "the following Wednesday" follows a day of its own sentence
        anchor, weekday = before[-1].date.start, _WEEKDAY_INDEX[word.lower()[:3]]
        if (m.group("dir") or "").lower() == "before":
            day = _weekday_before(anchor, weekday)
        else:
            day = _weekday_after(anchor, weekday)
        taken = [t for t in taken if t not in inside]
        added.append(_Found(m.start(group), m.end(), m.end(group), ResolvedDate(m.group(group), day, day, "day", False)))
    return sorted(taken + added, key=lambda t: t.begin)


_MONTH_IN_PHRASE = re.compile(_MONTH, re.IGNORECASE)
_HOLIDAY_IN_PHRASE = re.compile(_HOLIDAY, re.IGNORECASE)


_TARGET_PHRASE = re.compile(r"(?:for|to|until|till|through)\b", re.IGNORECASE)


def _past_day(found: _Found, ctx: _Context) -> bool:
    """A day alone read in the past: not the target of an arranging ("moved our flight to the 12th")."""
    if _TARGET_PHRASE.match(found.date.phrase) or _TARGET.search(ctx.text[max(0, found.begin - 60): found.begin]):
        return False
    return _tense(ctx, found.begin, found.stop) == "past"


def _inside(before: _Found, found: _Found, ctx: _Context) -> _Found:
    """A day alone after the sentence of a range of days within one month that holds it takes that
    month: "Lisbon for her birthday, 6-9 november. she turns 31 on the 7th" is 7 November, not the 7th
    nearest the event date. Unless that puts a past-tense day ahead of the event date."""
    span, day = before.date, found.date
    if not (span.granularity == "day" and span.start < span.end and span.start.month == span.end.month
            and span.start.year == span.end.year and day.start == day.end
            and span.start.day <= day.start.day <= span.end.day):
        return found
    moved = span.start.replace(day=day.start.day)
    if moved > ctx.day and _past_day(found, ctx):
        return found
    return replace(found, date=replace(day, start=moved, end=moved))


_NAMED_AS = re.compile(r"\s+(?:was|is|being|=)\s+(?:the\s+)?", re.IGNORECASE)
_LISTED_AFTER = re.compile(r"[\s,:(–—-]*(?:on\s+|the\s+)?$|[\s,]*(?:and|to|till|until|through)\s+$", re.IGNORECASE)


def _day_after_dated(before: _Found, found: _Found, ctx: _Context) -> _Found:
    """A bare weekday in the sentence of a day a week or more away is that day's, or one of the six
    after it: "the crusaders game on the 21st, staying sat night" is Saturday 21 February, not the
    Saturday after the message; in a later sentence, only the weekday of that day is that day."""
    day, anchor = found.date, before.date
    if day.start != day.end or anchor.start != anchor.end or abs((anchor.start - ctx.day).days) < 7:
        return found
    weekday = day.start.weekday()
    if _SENTENCE_END.search(ctx.text, before.end, found.begin):
        # "moved to thu 9th bc one interviewer was sick. did it thu": the weekday of the day just told
        if anchor.start.weekday() == weekday:
            return replace(found, date=replace(day, start=anchor.start, end=anchor.start))
        return found
    match = anchor.start + timedelta(days=(weekday - anchor.start.weekday()) % 7)
    return replace(found, date=replace(day, start=match, end=match))


def _day_within(before: _Found, after: int, found: _Found, ctx: _Context) -> _Found:
    """A bare weekday listed right after a span of up to a week that holds it (``after``: where the
    span, or the weekday listed before this one, ends) is that span's day: "the weekend after Easter,
    Saturday and Sunday" is 11 and 12 April 2026, not the coming weekend."""
    span, day = before.date, found.date
    if not (day.start == day.end and span.start < span.end and (span.end - span.start).days < 7):
        return found
    between = ctx.text[after:found.begin]
    if not _LISTED_AFTER.fullmatch(between):
        return found
    weekday = day.start.weekday()
    inside = [span.start + timedelta(days=k) for k in range((span.end - span.start).days + 1)]
    match = [d for d in inside if d.weekday() == weekday]
    if not match:
        return found
    return replace(found, date=replace(day, start=match[0], end=match[0]))


# A day alone in the next sentence or two, within a few days of a coming dated day ("mama turns 60 on
# sat 27 june!! party at her church hall. i'm flying down on the 26th", said 16 May) is that day's
# month's. Not a day gone by: "did i tell you about the 5th of april one? anyway the 3rd was the good
# one" (said 8 May, after "3rd may") keeps its own month.
BESIDE_DAYS = 3
BESIDE_CHARS = 120


def _beside(before: _Found, found: _Found, ctx: _Context) -> bool:
    """A plan told around a coming day: the dated day is ahead, and the day alone near it in the month."""
    day = before.date
    return (day.start == day.end and day.start > ctx.day and found.date.start == found.date.end
            and found.begin - before.end <= BESIDE_CHARS and abs(found.date.start.day - day.start.day) <= BESIDE_DAYS)


def _month_from(before: _Found, found: _Found, ctx: _Context, *, placed: bool = False) -> _Found:
    """"flying out 21 December and back on the 27th": a day of the month alone, in the sentence of a
    date that names its month (or of a day alone that took its month so, ``placed``), is in the month
    that puts it nearest that date: "from 28 March to the 2nd" is 2 April, "back Wednesday 17 Sept
    instead of the 16th" is 16 September, "Christmas: on the 23rd" is 23 December; after a month it
    is in that month ("in august, 11th to 15th"). Unless that puts a past-tense day after the event
    date; otherwise it keeps the month its tense gave it (_ordinal_day)."""
    names_month = _MONTH_IN_PHRASE.search(before.date.phrase) or _HOLIDAY_IN_PHRASE.search(before.date.phrase)
    if not (names_month or placed) or before.date.granularity not in ("day", "month"):
        return found
    if _SENTENCE_END.search(ctx.text, before.end, found.begin) is not None:
        inside = _inside(before, found, ctx) if names_month else found
        if inside is not found or not names_month or not _beside(before, found, ctx):
            return inside
    base = before.date.end
    first, last = found.date.start.day, found.date.end.day
    spans = []
    # After a month ("a course in Galway in august, 11th to 15th") the days are in that month.
    for offset in (-1, 0, 1) if before.date.granularity == "day" else (0,):
        month = base.replace(day=1) + relativedelta(months=offset)
        try:
            spans.append((month.replace(day=first), month.replace(day=last)))
        except ValueError:
            continue  # no 31st in this month
    if not spans:
        return found
    start, end = min(spans, key=lambda s: _distance(s, base))
    if start > ctx.day and _past_day(found, ctx):
        return found  # "moved to 4 March, they had a staff thing on the 27th": not ahead
    return replace(found, date=replace(found.date, start=start, end=end))

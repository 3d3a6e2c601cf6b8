"""Constraint-validation verdicts decided in code from the stored rules, limits and plans (DESIGN
Principle 2; MemFlow Appendix A.2's modal / rule filter, taken down to the sentence).

- :func:`rule_verdict`: "No — <rule>" / "Yes — …" for a yes/no proposal ("Can we meet on Friday?") from
  the rule sentences that still hold (:func:`current_rules`), the newest limit on an amount it names,
  or a stored plan that takes its days.
- :func:`replaced_rules`: which rule sentences a later statement replaced.
- :func:`applies`: whether a rule sentence covers a proposal (what it is about, its days, months and
  clock times).

Everything here is a pure function of the question and the evidence; the answer agent
(:mod:`edgemem.recall.answer`) asks the model only what these cannot decide. It was cut out of that
module when the preprocessing's modal filter came to need the same sentence-level reading of rules
(which ones a later line replaced) as the verdicts: both now import it from here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from edgemem.recall.evidence import (
    ANNOTATION, ASSISTANT_SPEAKERS, TIME_FRAME_TERMS, Evidence, parse_iso_day, profile_value, same_teller, terms,
)
from edgemem.recall.limits import CURRENCY_NAMES, Amount, Limit, amounts, asked_amount, limits, unitless_limits
from edgemem.text import day_label

# "Can we meet on Friday?" against a stored "never schedule meetings on Fridays": a 1.5B model quotes
# the rule, hedges, or answers something else, and its wording then has to get past the validator.
# What decides the question is plain overlap: the proposal's content terms against the rule's object,
# with weekdays, months and clock times compared as values (Friday ≠ Thursday; 9am is before 10am),
# and the rule's polarity (never / don't / avoid / allergic … versus only / always / must). The model
# is asked only when no stored rule is about the thing proposed.

_PROHIBIT = re.compile(
    r"\b(?:never|avoid(?:s|ed|ing)?|allergic|allerg(?:y|ies)|intoleran[tc]e?|don['’]?t|do\s+not|does\s+not|doesn['’]?t|won['’]?t|"
    r"will\s+not|can['’]?t|cannot|must\s+not|mustn['’]?t|should\s+not|shouldn['’]?t|not\s+allowed|no\s+longer|"
    r"hate|hates|dislike|dislikes|stay\s+away|not\s+(?:before|after|on|during|until|past|later|earlier|more|any)|"
    r"(?:nothing|none)(?=\s+(?:before|after|on|during|until|past|later|earlier)\b)|"
    r"sacred|off[-\s]limits|keep\s+(?:(?:my|the|all)\s+)?[\w-]+(?:\s+[\w-]+)?\s+free|"
    r"no(?!\s*[,.!?])(?=\s+\w))\b",
    re.IGNORECASE,
)
# "always" after a form of "be" describes the speaker ("I'm always the odd one out"), not a rule.
# Not "only" before a number: "only 2 nights a month after that" says how many, not what is allowed
# (a number that is a limit, "no more than 2 coffees", is read by limits()).
_ONLY = re.compile(r"\b(?:only(?!\s+(?:\d|one\b|two\b|three\b|four\b|five\b|a\s+few\b|a\s+couple\b|"
                   r"(?:now|just|recently|then|yesterday|today|lately|a|an)\b))|exclusively|(?<!['’]m\s)(?<!\bam\s)(?<!\bis\s)(?<!\bare\s)(?<!\bwas\s)(?<!\bwere\s)"
                   r"(?<!['’]s\s)(?<!['’]re\s)always|must|have\s+to|has\s+to|need\s+to)\b", re.IGNORECASE)
# A proposal asks whether to do something: a modal opening ("Can we meet on Friday?") or an
# acceptability phrase ("Is a 9am stand-up OK for me?", "Is it fine to ...", "a good idea?"). A plain
# "is/are/do" question asks for a fact ("Is Sam on day shifts?") and is not one.
# The modal may also open the question's last clause, after what is proposed: "Ingrid wants a 9:30
# call on Monday, can I take it?", "… out of Madrid — should I book it?".
_PROPOSAL = re.compile(
    r"^\s*(?:so\s+|and\s+|hey,?\s+)?(?:can|could|may|might|should|shall|ok|okay)\b|"
    r"(?:[,;:\u2013\u2014]|\s-)\s*(?:so\s+|and\s+|but\s+|then\s+)?(?:can|could|may|might|should|shall)\s+\w+[^,;.!?]*\?\s*$|"
    r"\b(?:allowed|(?:ok(?:ay)?|fine|alright|acceptable|safe)\s+(?:to|if|for|with\s+me|by\s+me)|"
    r"(?:a\s+)?good\s+(?:idea|pick|choice|plan)|yes\s+or\s+no|(?:does|would|will|can)\s+(?:that|it|this)\s+work)\b|"
    r"\b(?:ok(?:ay)?|fine|alright)\s*[?.!]*$|"
    # a last clause that is a bare verb of doing, asked: "… on sale for $320, just buy it?"
    r"(?:^|[,;:\u2013\u2014]\s*|\s-\s*)(?:so\s+|just\s+|and\s+)*(?:buy|book|get|take|order|accept|sign|grab|pay\s+for|"
    r"go\s+for)\s+(?:it|that|this|them|one)\s*\?\s*$",
    re.IGNORECASE,
)
WH_QUESTION = re.compile(r"\s*(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)  # a wh-question
SENTENCES = re.compile(r"(?<=[.!?;])\s+(?=\S)")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
DAY_WORD = re.compile(r"\b(mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?s?\b|"
                      r"\b(weekends?|weekdays?|school\s*nights?|week\s*nights?)\b", re.IGNORECASE)
# The evenings before a school day (Sunday to Thursday); weeknights are Monday to Friday.
_SPANS = {"weekend": {5, 6}, "weekday": {0, 1, 2, 3, 4}, "school": {6, 0, 1, 2, 3}, "week": {0, 1, 2, 3, 4}}
_MONTH_WORD = re.compile(r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE)
MONTHS_IN_FULL = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december"}
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b|\b(noon|midnight)\b", re.IGNORECASE)
_BOUND = re.compile(r"\b(before|earlier\s+than|until|till|after|later\s+than|past)\s+(?:about\s+)?$", re.IGNORECASE)
# Words that carry the rule's polarity or the question's form, not what either is about.
_FORM_TERMS = terms(
    "never dont doesnt wont cant shouldnt mustnt avoid avoids avoided avoiding allergic allergy allergies intolerant "
    "allowed rule rules policy always must only exclusively "
    "need have has hate hates dislike dislikes stay away longer please okay fine idea good possible able "
    "before earlier after later until till past noon midnight weekend weekends weekday weekdays"
)
_DAY_TERMS = terms(" ".join(DAYS)) | terms("mon tue tues wed thu thur thurs fri sat sun")
_MONTH_TERMS = terms("january february march april may june july august september october november december "
                     "jan feb mar apr jun jul aug sep oct nov dec")


@dataclass
class RuleVerdict:
    text: str  # "No — <rule as stored>" / "Yes — ..." (the rule quoted verbatim from the evidence)
    rules: list[Evidence]  # the evidence items holding the rules it rests on
    decision: str  # "no" | "yes"


_PART_AFTER = re.compile(r"\s+(?:nights?|mornings?|evenings?|afternoons?|arvos?)\b", re.IGNORECASE)
_DAY_BEFORE = re.compile(r"\b(?:on|every|from|next|last|this|til|till|until)\s+$", re.IGNORECASE)


def _days(text: str) -> set[int]:
    out: set[int] = set()
    for m in DAY_WORD.finditer(text):
        if m.group(2):
            word = m.group(2).lower()
            out |= next(days for head, days in _SPANS.items() if word.startswith(head))
            continue
        head = m.group(1).lower()[:3]
        if m.group(0).lower() in {"sun", "sat", "wed", "mon"} and not (  # three-letter words alone are too ambiguous
                _PART_AFTER.match(text, m.end()) or _DAY_BEFORE.search(text, 0, m.start())):
            continue  # but "wed nights", "on sat", "every mon" are days
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
        if word in MONTHS_IN_FULL or word in names or word == "sept":
            out.add(names.index(word[:3]))
    return out


def _on_clock(hour: int, minute: int, meridiem: str) -> int:
    """Minutes after midnight of "<hour>:<minute> am|pm" (``meridiem`` "a" or "p")."""
    return (hour % 12 + (12 if meridiem.lower() == "p" else 0)) * 60 + minute


def _minutes(m: re.Match[str]) -> int:
    if m.group(4):
        return 12 * 60 if m.group(4).lower() == "noon" else 0
    return _on_clock(int(m.group(1)), int(m.group(2) or 0), m.group(3))


# A bare hour after a bound ("no meetings before 9", "nothing after 7"): the working-day reading, a
# morning hour for 5-11 before a bound word and an afternoon or evening one otherwise.
_BARE_BOUND = re.compile(
    r"\b(before|earlier\s+than|until|till|after|later\s+than|past)\s+(?:about\s+)?(\d{1,2})(?::(\d{2}))?"
    r"(?!\s*(?:[ap]\.?m\b|[:.]?\d|%|st\b|nd\b|rd\b|th\b|\s*(?:minutes?|mins?|hours?|days?|weeks?|months?|years?|k\b|km|miles?|kg|lbs?)))",
    re.IGNORECASE,
)


# A time asked for with no am or pm ("a stand-up at 8:30", "the sync at 5", "a 9:30 call"): the
# working-day reading, 7 to 11 in the morning, 12 to 6 in the afternoon or evening. An hour needs
# "at"; a time with minutes is one wherever it stands. The first time of a range takes the
# meridiem of its end when that keeps it earlier ("7:15 to 8:30pm" is 7:15pm).
_BARE_AT = re.compile(
    r"(?:\bat\s+(\d{1,2})(?::(\d{2}))?|(?<![\d:./])\b(\d{1,2}):(\d{2}))"
    r"(?!\s*(?:[ap]\.?m\b|[:.]?\d|%|st\b|nd\b|rd\b|th\b))"
    r"(?:\s*(?:to|till|until|-|\u2013)\s*(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b)?",
    re.IGNORECASE,
)


# The part of the day said after a bare time: it says am or pm.
_PART_OF_DAY = re.compile(r"\s+(?:(in\s+the\s+morning|this\s+morning)|in\s+the\s+(?:afternoon|evening)|at\s+night|"
                          r"this\s+(?:afternoon|evening)|tonight)\b", re.IGNORECASE)


def _asked_times(question: str) -> list[int]:
    """The clock times a question asks about: written ones, bare hours after "at", bare times with
    minutes; none after a bound word ("not before 9:30" is a limit, not a proposal's time)."""
    times = _clock(question)[0]
    for m in _BARE_AT.finditer(question):
        if m.group(3) and _BOUND.search(question[: m.start()]):
            continue
        hour, minute = int(m.group(1) or m.group(3)), int(m.group(2) or m.group(4) or 0)
        if m.group(7):  # a range whose end says am or pm (the end itself is one of _clock's times)
            start = _on_clock(hour, minute, m.group(7))
            if start < _on_clock(int(m.group(5)), int(m.group(6) or 0), m.group(7)):
                times.append(start)
                continue
        part = _PART_OF_DAY.match(question, m.end())
        if part and 1 <= hour <= 12:  # "6:30 in the morning", "at 9 at night"
            times.append(_on_clock(hour, minute, "a" if part.group(1) else "p"))
        elif 7 <= hour <= 11:
            times.append(hour * 60 + minute)
        elif 1 <= hour <= 6 or hour == 12:
            times.append((hour % 12 + 12) * 60 + minute)
    return times


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


# A person named: a capitalised word that owns something ("Mila's lunch") or holds a state or does
# something ("Mila has a peanut allergy", "Noor eats everything"). A capitalised word alone may be the
# thing itself ("cheap Ryanair flights"), which a rule about it must still match.
_NAME = re.compile(r"\b([^\W\d_][^\W_]*)(?=['’]s\b|\s+(?:has|had|is|was|eats|ate|can['’]?t|cannot|doesn['’]?t|didn['’]t|"
                   r"won['’]?t|needs|hates|loves|likes|gets|goes|wants|said|says)\b|\s+and\s+(?:i|me)\b)", re.IGNORECASE)


def _names(text: str) -> set[str]:
    return set().union(*(terms(m.group(1)) for m in _NAME.finditer(text) if m.group(1)[0].isupper()))


def _about(text: str) -> set[str]:
    """What a rule or a proposal is about, less the people it names: "Mila has a peanut allergy" is
    not about every plan for Mila ("Is pasta OK for Mila's lunch?" shares only her name)."""
    return _plain_terms(text) - _names(text)


# Who asked or wants it, and "does that work?", frame a proposal; they say nothing of what it is
# about ("a customer just asked for a cake" shares nothing with "she asked to work only mornings").
_FRAME_TERMS = terms("ask asks asked asking want wants wanted say says said tell tells told wonder wondering "
                     "there theres thats whats heres")  # texted "theres a watch on sale" names no subject
_DOES_IT_WORK = re.compile(r"\b(?:does|would|will|could|can)\s+(?:that|it|this)\s+work\b", re.IGNORECASE)


def _plain_terms(text: str) -> set[str]:
    """What a rule or a proposal is about: content terms less polarity words, weekdays, months, times
    and the words that frame a proposal."""
    return {t for t in terms(_DOES_IT_WORK.sub(" ", text))
            if t not in _FORM_TERMS and t not in _DAY_TERMS and t not in _MONTH_TERMS and t not in _FRAME_TERMS}


def quoted(item: Evidence, sentence: str) -> str:
    """The rule as stored: the sentence of a note, or a profile fact's value."""
    if item.kind == "profile":
        return profile_value(item.text)
    return sentence.strip().rstrip(";,")


def may_free(text: str) -> bool:
    """A quick test: a line that may free a rule's days ("… are free")."""
    return _FREE_CLAUSE.search(text) is not None


def frees(item: Evidence, text: str) -> bool:
    """A sentence of ``text`` frees the days of one of ``item``'s rules (:func:`_frees`)."""
    return any(_frees(rule, sentence) for rule in rule_sentences_of(item) for sentence in SENTENCES.split(text.strip()))


def has_rule_words(text: str) -> bool:
    """A quick test before reading a text's sentences: any prohibiting or limiting word at all."""
    return _PROHIBIT.search(text) is not None or _ONLY.search(text) is not None


def _polarity(sentence: str) -> str | None:
    """"prohibit" (never, don't, no …), "only" (only, always, must) or None: no rule language."""
    if _prohibits(sentence):
        return "prohibit"
    return "only" if _ONLY.search(sentence) else None


def current_rules(items: Sequence[Evidence]) -> list[tuple[Evidence, str, str]]:
    """(item, sentence, polarity) for each sentence holding rule language that no later statement
    replaced (:func:`replaced_rules`); notes before profile facts (a note is the rule as the user
    wrote it; the profile fact is the model's copy of it)."""
    out = []
    replaced = replaced_rules(items)
    ordered = sorted(items, key=lambda e: (e.kind == "profile", e.kind == "summary"))
    for item in ordered:
        if item.kind == "summary" or item.stale:
            continue  # computed facts ("No always/never rule ... was found") and superseded rules
        for sentence in _sentences_of(item):
            polarity = _polarity(sentence)
            if item.kind == "profile" and _UNFINISHED.search(sentence):
                continue  # a copy cut mid-clause ("never book me anything on"): the note has the rule
            if polarity is not None and (item.note_id, sentence) not in replaced:
                out.append((item, sentence, polarity))
    return out


# A sentence ending in a word that needs what follows: a profile copy the write path cut at its length.
_UNFINISHED = re.compile(r"\b(?:on|in|at|to|of|for|with|by|from|before|after|until|the|a|an|and|or|but|my|me|your|than)"
                         r"\s*$", re.IGNORECASE)


def _sentences_of(item: Evidence) -> list[str]:
    """The item's sentences; a rule that points back by pronoun to the day the sentence before names
    is read with it: "thursday evenings are Kofi's basketball games. i don't miss them"."""
    text = quoted(item, item.text) if item.kind == "profile" else item.text
    out: list[str] = []
    for sentence in (s for s in SENTENCES.split(text.strip()) if s):
        if (out and _POINTS_BACK.search(sentence) and not DAY_WORD.search(sentence) and _prohibits(sentence)
                and DAY_WORD.search(out[-1]) and _polarity(out[-1]) is None):
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return out


_POINTS_BACK = re.compile(r"\b(?:them|it|those|that|then)\s*[.!?]*$", re.IGNORECASE)


# --- which rules still hold -------------------------------------------------------------------------
# People change their rules by saying the new one, not by revoking the old: "hard rule: no work calls
# after 6pm" in January, "I'll take calls until 7pm now, but nothing after 7" in May; "no meetings after
# 4pm on Wednesdays", then "from November it's no meetings after 4 on Tuesdays"; or by saying that the
# reason for the rule has moved: "Wednesday evenings are pottery, so don't put anything after 6 on a
# Wednesday", then "pottery changes from September: it moves to Tuesday evenings". A rule sentence is
# replaced by a later sentence of the same person that
# - is itself a rule about the same thing, bounding time on the same side (both "after …", both
#   "before …"), or saying that something changed (now, again, instead, updated …) when it does not
#   bound time on the other side only ("no meetings before 9" is not replaced by "Updated: no meetings
#   after 4 on Tuesdays": both hold); or
# - is no rule, shares a word with the rule's reason (the clause before "so"), says that something
#   changed and says to when. "The team meeting moved to the big room" changes one meeting, not
#   "never schedule meetings on Fridays".
# Rules that add up ("never on Fridays", later "no meetings on Mondays either") share no side and say
# no change, so both stay. Amounts are limits (:func:`_limit_verdict`): there the newest always wins.
_CHANGE = re.compile(
    r"\b(?:now|again|instead|any\s?more|no\s+longer|mov(?:e|es|ed|ing)|chang(?:e|es|ed|ing)|"
    r"switch(?:es|ed|ing)?|updated?|relax(?:es|ed|ing)?|lift(?:s|ed|ing)?)\b", re.IGNORECASE,
)
# A rule is also replaced by saying that what it forbade is now allowed, on the days it named: "no
# meetings before 10 on mondays" → "the monday thing is relaxed, meetings from 9 on mondays are fine".
_PERMIT = re.compile(r"\b(?:fine|ok(?:ay)?|allowed|free|open)\b", re.IGNORECASE)


def _reason_moved(reason: set[str], sentence: str) -> bool:
    """``sentence`` (no rule) says that the rule's reason changed, and to when."""
    return (bool(reason & _plain_terms(sentence)) and _CHANGE.search(sentence) is not None
            and bool(_days(sentence) or _clock(sentence)[0] or _months(sentence)))


_FREE_CLAUSE = re.compile(r"([\w\s]{0,40}?)\b(?:(?:are|is|r)\s+(?:free|fine|ok|okay)|free[sd]?\s+up)\b", re.IGNORECASE)


def _frees(rule: str, sentence: str) -> bool:
    """``sentence`` says the days ``rule`` is about are free now: "thursdays are free", "tuesdays are
    free again" (the clause names the days; the rule names days)."""
    rule_days = _days(_ruling_clause(rule))
    if not rule_days:
        return False
    return any(rule_days <= _days(m.group(1)) for m in _FREE_CLAUSE.finditer(sentence) if _days(m.group(1)))


def _allowed_now(rule: str, about: set[str], sentence: str) -> bool:
    """``sentence`` (no rule) says that what ``rule`` forbade is fine now, on the rule's days (or on
    some day or at some time, for a rule that names no day)."""
    if _PERMIT.search(sentence) is None or _CHANGE.search(sentence) is None or not about & _about(sentence):
        return False
    rule_days = _days(rule)
    return bool(_days(sentence) & rule_days if rule_days else _days(sentence) or _asked_times(sentence))
# What a rule forbids may be anything at all ("so nothing before noon on Sundays", "don't put anything
# after 6 on a Wednesday"): such a rule is about its day and time, whatever is proposed. These words
# say what any rule may say, not what it is about.
_ANYTHING = re.compile(r"\b(?:anything|nothing|everything|none)\b", re.IGNORECASE)
_ANYTHING_TERMS = terms("anything nothing everything none")
# "nothing before 3pm", and with a word or two of kind between: "anything work related on a sunday".
_ANYTHING_BOUNDED = re.compile(r"\b(?:anything|nothing|none)(?:\s+[\w-]+){0,2}?\s+(?:before|after|until|till|past|earlier|"
                               r"later|during|on)\b", re.IGNORECASE)
_PLACEHOLDER_VERBS = terms("put schedule book plan arrange have bring go come try get take let")
# Clauses a rule sentence joins: the reason and the rule ("Sunday mornings are my long runs, so nothing
# before noon on Sundays"), a permission and a prohibition ("calls until 7pm now, but nothing after 7",
# "work calls until 7 pm, none after", "fridays are sacred now, thursdays are free").
_CLAUSES = re.compile(
    r"\s*(?:,\s*(?:but|so)\b|;|\bbut\b|\bso\b(?=\s+(?:no|nothing|don['’]?t|never)\b)|"
    r",(?:\s*and)?(?=\s*(?:none|nothing|never|no)\b)|"
    r",(?:\s*and)?(?=[\w\s]{0,30}\b(?:are|is)\s+(?:free|fine|ok|okay)\b))\s*",  # "fridays are sacred now, thursdays are free"
    re.IGNORECASE,
)
# A month the rule starts in is not a month it is about: "from November it's no meetings after 4".
_STARTING = re.compile(r"\b(?:from|since|starting(?:\s+in)?|as\s+of|beginning(?:\s+in)?)\s+(?:next\s+)?"
                       r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE)


_SO = re.compile(r"(?:,\s*|\s)so\b", re.IGNORECASE)


def _reason(rule: str) -> set[str]:
    """What a rule says it is for: the clause before "so" when the rule follows it ("Wednesday evenings
    are pottery, so don't put anything after 6"), less the people named. A clause beside the rule
    that is no reason for it ("Noor eats everything but she's allergic to shellfish") gives none."""
    parts = _SO.split(rule, maxsplit=1)
    if len(parts) < 2 or _polarity(parts[0]) is not None or _polarity(parts[1]) is None:
        return set()
    return _about(re.split(r"\bbut\b|,", parts[0])[-1]) or _about(parts[0])


def _clauses(sentence: str) -> list[tuple[str, bool]]:
    """(clause, holds rule language) for each clause of ``sentence``."""
    return [(c, _polarity(c) is not None) for c in _CLAUSES.split(sentence) if c and c.strip()]


def _ruling_clause(sentence: str) -> str:
    """The clauses of ``sentence`` that hold its rule language: the days and months it is about are
    theirs, less a month it starts in."""
    clauses = _clauses(sentence)
    ruling = [c for c, rule in clauses if rule]
    text = " ".join(ruling) if len(clauses) > 1 and ruling else sentence
    return _STARTING.sub(" ", text)


def _rule_clock(sentence: str) -> tuple[list[int], list[tuple[str, int]]]:
    """The clock times a rule sentence bounds (:func:`_clock`). A bound in a clause that permits, beside
    one that forbids, is the forbidden side turned round: "calls until 7pm now, but nothing after 7" and
    "work calls until 7 pm, none after" both bound after 7pm, not before it."""
    clauses = _clauses(sentence)
    if len(clauses) < 2 or not any(rule for _, rule in clauses):
        return _clock(sentence)
    plain: list[int] = []
    bounds: list[tuple[str, int]] = []
    permitted: list[tuple[str, int]] = []
    for clause, rule in clauses:
        times, bounded = _clock(clause)
        plain += times
        if rule:
            bounds += bounded
        else:
            permitted += [("after" if side == "before" else "before", t) for side, t in bounded]
    # A ruling clause with its own bound needs none from beside it: "he has football till 7, and
    # nothing after 8pm on school nights" bounds after 8pm only.
    return plain, list(dict.fromkeys(bounds or permitted))


# A rule whose subject is a stretch of the week: "fridays are sacred now", "thursday evenings are Kofi's
# games. i don't miss them", "please keep tuesdays free": whatever is proposed then is what it is about.
_TIME_BLOCK = re.compile(
    r"^\W*(?:so\s+|and\s+|but\s+)?(?:(?:the\s+|my\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
    r"(?:\s+(?:mornings?|afternoons?|evenings?|nights?))?\s+(?:are|is)\b|.*\bkeep\s+(?:(?:my|the|all)\s+)?"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?(?:\s+(?:mornings?|afternoons?|evenings?|nights?))?\s+free\b)",
    re.IGNORECASE,
)


def _about_anything(sentence: str) -> bool:
    """A rule whose object is anything at all: its ruling clause names nothing but "anything" /
    "nothing" and placeholder verbs ("don't put anything after 6 on a Wednesday"), or its subject is a
    stretch of the week (:data:`_TIME_BLOCK`)."""
    if _TIME_BLOCK.match(sentence) or _TIME_BLOCK.match(_ruling_clause(sentence)):
        return True
    clause = _ruling_clause(sentence)
    if _ANYTHING.search(clause) is not None and not _plain_terms(clause) - _ANYTHING_TERMS - _PLACEHOLDER_VERBS:
        return True
    # "…, and nothing after 8pm on school nights for him, he's a wreck otherwise": what follows the
    # day and time is said about the rule, not what it forbids.
    m = _ANYTHING_BOUNDED.search(clause)
    return m is not None and not _plain_terms(clause[: m.start()]) - _PLACEHOLDER_VERBS


# Words of a stretch of time that the calendar reading (days, months, clock, parts of the day) places
# by itself, or that only say how long it is: what is left names a stretch it cannot place.
_STRETCH_WORDS = TIME_FRAME_TERMS | terms("first next morning mornings afternoon afternoons evening evenings night "
                                          "nights weekend weekends weekday weekdays")


def _unread_stretch(sentence: str) -> set[str]:
    """For a rule about anything (:func:`_about_anything`) bounded by a stretch of time, the words of
    that stretch the calendar reading does not place: {"ashore"} for "never book me anything on my
    first day ashore"; none for "nothing before 9am" or "anything work related on a sunday"."""
    if not _about_anything(sentence):
        return set()
    clause = _ruling_clause(sentence)
    m = _ANYTHING_BOUNDED.search(clause)
    if m is None or m.group().split()[-1].lower() not in ("on", "during"):
        return set()  # bounded by the clock ("before 9am"): what follows is said about the rule
    rest = re.split(r"[,(]|\s[-–—]\s", _CLAUSE_END.split(clause[m.end():], maxsplit=1)[0], maxsplit=1)[0]
    return _plain_terms(_CLOCK.sub(" ", rest)) - _STRETCH_WORDS - _ANYTHING_TERMS - _PLACEHOLDER_VERBS


def rule_sentence(sentence: str) -> bool:
    """Rule language or a limit in one sentence: what a rule check must see whole."""
    return _polarity(sentence) is not None or bool(limits(sentence))


def rule_sentences_of(item: Evidence) -> list[str]:
    """The sentences of ``item`` that hold rule language (not limits: the newest limit always wins)."""
    return [s for s in _sentences_of(item) if _polarity(s) is not None and not limits(s)]


def _bound_sides(sentence: str) -> set[str]:
    return {side for side, _ in _rule_clock(sentence)[1]}


def _assistant(item: Evidence) -> bool:
    return (item.speaker or "").strip().lower() in ASSISTANT_SPEAKERS


def replaced_rules(items: Sequence[Evidence]) -> dict[tuple[int, str], tuple[Evidence, str]]:
    """(note id, rule sentence) → (the later item, its sentence) that replaced that rule (see above)."""
    said = [(item, s) for item in items if item.kind != "summary" for s in _sentences_of(item)]
    out: dict[tuple[int, str], tuple[Evidence, str]] = {}
    for item in items:
        if item.kind == "summary":
            continue
        for rule in rule_sentences_of(item):
            about = _plain_terms(rule) - _ANYTHING_TERMS
            reason = _reason(rule)
            sides = _bound_sides(rule)
            for later, sentence in said:
                if _said_order(later) <= _said_order(item):
                    continue
                if not same_teller(item, later):
                    continue
                if _assistant(later) and not _assistant(item) and later.day == item.day:
                    continue  # "Understood: no calls after 6 pm": the user's rule restated, not changed
                if _frees(rule, sentence):
                    replaces = True  # "so fridays are sacred now, thursdays are free" frees the thursday rule
                elif _polarity(sentence) is not None:
                    later_sides = _bound_sides(sentence)
                    # Said as a change, a rule about Sundays is replaced by one that speaks of Sundays,
                    # not by "now I have to weigh him every morning" (a rule bounding the same side of
                    # the clock replaces it on any day: "no meetings after 4 on Tuesdays" now).
                    same_days = not _days(rule) or bool(_days(rule) & _days(sentence))
                    replaces = bool(about & _plain_terms(sentence)) and bool(
                        sides & later_sides or (_CHANGE.search(sentence) and not (sides and later_sides) and same_days))
                else:
                    replaces = _reason_moved(reason, sentence) or _allowed_now(rule, about, sentence)
                if replaces:
                    out[(item.note_id, rule)] = (later, sentence)
                    break
    return out


# How often a limit applies is no part of what it limits: "£250 a month" and "£20 a month" for the gym.
_PERIOD_TERMS = terms("day days daily week weeks weekly month months monthly year years yearly annual night nights")


def _limited_thing(sentence: str) -> set[str]:
    """What a sentence stating an amount is about, with its compounds' parts ("eating-out budget")."""
    return _plain_terms(re.sub(r"(?<=\w)-(?=\w)", " ", sentence)) - _LIMIT_TERMS - _PERIOD_TERMS


def replaced_limits(items: Sequence[Evidence]) -> dict[int, Evidence]:
    """Note id → the later item that set a new limit on what every sentence of the note stating an
    amount is about (``items``: the rules and limits :func:`edgemem.recall.preprocess.rules` kept):
    a limit in the same unit, of another value, sharing a word for the thing limited ("eating out max
    £250 a month" → "Updated: eating-out budget is now £300 a month"; "a rule I set myself: 300 złoty
    a month for small pleasures" → "my small-pleasures allowance is 400 złoty"). The proposal check
    (:func:`_limit_verdict`) already takes the newest limit; a question asking for the limit itself
    ("how much am I allowed to spend on eating out?") is answered by the model, which needs the old
    one marked outdated. Rules without amounts are replaced by :func:`replaced_rules`."""
    said = [(item, limits(s), _limited_thing(s)) for item in items if item.kind == "raw" for s in _sentences_of(item)]
    out: dict[int, Evidence] = {}
    for item in items:
        if item.kind != "raw":
            continue
        stated = [s for s in _sentences_of(item) if amounts(s)]
        newer = [_newer_limit(item, s, said) for s in stated]
        if stated and all(newer):
            out[item.note_id] = max((n for n in newer if n is not None), key=_said_order)
    return out


def _said_order(item: Evidence) -> tuple[str, int]:
    return item.event_time or "", item.note_id


def _newer_limit(item: Evidence, sentence: str,
                 said: Sequence[tuple[Evidence, list[Limit], set[str]]]) -> Evidence | None:
    """The newest item said after ``item``, by the same person (or the assistant), with a limit in the
    unit of an amount ``sentence`` states, of another value, on a thing they share a word for."""
    about = _limited_thing(sentence)
    values = {a.unit: a.value for a in amounts(sentence)}
    found = [later for later, stated, thing in said
             if _said_order(later) > _said_order(item) and same_teller(item, later)
             and any(lim.amount.unit in values and lim.amount.value != values[lim.amount.unit]
                     and about & (thing - terms(lim.amount.unit)) for lim in stated)]
    return max(found, key=_said_order, default=None)


# "no" before a word that makes an idiom, not a prohibition: "no time with the move", "no idea".
# "no" before a thing that is not there yet reports a state: "no braces yet", "no reply yet".
_NO_IDIOM = re.compile(r"\bno\s+(?:time|idea|way|one|clue|doubt|problem|problems|worries|rush|matter|wonder|joke)\b|"
                       r"\bno\s+(?:[^\W\d_]+\s+){1,2}yet\b", re.IGNORECASE)
_EMOTIVE = re.compile(r"\b(?:hate|hates|dislike|dislikes)\b", re.IGNORECASE)
_THIRD_PERSON = re.compile(r"\b(?:he|she|they|he['’]ll|she['’]ll|they['’]ll|he['’]s|she['’]s|they['’]re)\b", re.IGNORECASE)


# "don't worry", "can't wait": a negated verb of feeling or knowing says nothing anyone must keep to.
_NOT_IDIOM = re.compile(r"\b(?:don['’]?t|do\s+not|can['’]?t|cannot)\s+(?:worry|know|think|wait|believe|remember|"
                        r"imagine|tell|decide)\b", re.IGNORECASE)
# "Rosa can't come that day", "I'm not allowed to drive that day anyway": a limit on one day is an
# arrangement, not a standing rule.
# ("from today, no more sugar" starts a rule: a start is no one-day limit.)
_ONE_DAY = re.compile(r"\b(?:that|this)\s+day\b|(?<!\bfrom\s)(?<!\bsince\s)(?<!\bstarting\s)(?<!\bof\s)"
                      r"\b(?:today|tonight|tomorrow)\b|\bthis\s+(?:time|once)\b", re.IGNORECASE)


def _prohibitions(sentence: str) -> list[re.Match[str]]:
    """The prohibiting words of ``sentence`` that are no idiom ("no time", "don't worry")."""
    return [m for m in _PROHIBIT.finditer(sentence)
            if not (m.group().lower() == "no" and _NO_IDIOM.match(sentence, m.start()))
            and not _NOT_IDIOM.match(sentence, m.start())]


def _prohibits(sentence: str) -> bool:
    """Prohibiting language in ``sentence``: not an idiom ("no time", "don't worry"), not a limit on
    one day ("can't come that day"), and a dislike that is not someone else's feeling reported
    ("he'll pretend to hate it")."""
    if _ONE_DAY.search(sentence):
        return False
    found = _prohibitions(sentence)
    if not found:
        return False
    if all(_EMOTIVE.fullmatch(m.group()) for m in found):
        before = sentence[: found[0].start()]
        return _THIRD_PERSON.search(before) is None
    return True


# "Noted — Camila (19, studying nutrition) works mornings only", "Noor eats everything": what one
# person keeps to, said of them by name at the start of the sentence. It rules a proposal that is
# about them, not every plan that shares a word with it ("Lucía wants a call at 6:30 in the morning").
_THEIRS = re.compile(r"^\W*(?:(?:noted|got\s+it|updated|ok(?:ay)?|right)\s*[:—–-]+\s*)?([^\W\d_][^\W_]*)"
                     r"(?:\s*\([^)]*\))?\s+[a-z]+s\b", re.IGNORECASE)


# "She asked to work only mornings because of exams": a rule told of someone by pronoun, with no
# first person in it ("They say I can't bend over for a week" is mine).
_THEIR_PRONOUN = re.compile(r"^\W*(?:he|she|they)\s+[a-z]+\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i['’]m|i['’]ll|i['’]ve|i['’]d|me|my|we|we['’]re|us|our)\b", re.IGNORECASE)


def _someone_elses(sentence: str, question: str) -> bool:
    clause = _ruling_clause(sentence)  # "Maplewave has people in Vancouver, so I'll take …" is mine
    if _THEIR_PRONOUN.match(clause) and not _FIRST_PERSON.search(clause):
        return not _THEIR_PRONOUN.match(question)
    m = _THEIRS.match(clause)
    if m is None or not m.group(1)[0].isupper():
        return False
    name = terms(m.group(1))
    return bool(name) and not name & (_DAY_TERMS | _MONTH_TERMS) and not name & terms(question)


# "the day after a night shift, nothing before 3pm", "if it's raining, no cycling": a rule that holds
# only under a condition. A proposal that says nothing of the condition is not ruled by it (an 8:30
# catch-up next Monday is not the day after a night shift, as far as anyone said).
_CONDITION = re.compile(r"\b(?:the\s+(?:day|morning|night|week)\s+(?:after|before)|when(?:ever)?|if)\b(?P<cond>[^,;:—–.]*)",
                        re.IGNORECASE)
_CONDITION_NOISE = terms("ever try i'm im it's its")


def _unmet_condition(sentence: str, question: str) -> bool:
    m = _CONDITION.search(sentence)
    if m is None:
        return False
    condition = _plain_terms(m.group("cond")) - _CONDITION_NOISE
    return bool(condition) and not condition & _plain_terms(question)


# What a prohibition is about is what its words govern, not every word of the sentence beside it:
# "ill do the M6 to the lakes no bother" forbids nothing about the M6; "sam, a friend of théo, works at
# a bike shop, non-smoker, no cat" rules nothing about Sam's rent. A negation ("never", "don't", "no",
# "can't", "hate", "avoid") governs what follows it to the end of its clause; a word that says what
# someone is ("allergic", "intolerant", "an allergy", "sacred", "off limits") governs its whole clause
# ("she has pistache (her cat) and i'm allergic to cats"); a sentence that says it states a rule ("my
# rule for custom cakes: ...") is about all it names, and a rule that holds under a condition is also
# about its condition.
# A relative clause after a comma comments on what came before, it forbids nothing: "allergic to
# penicillin, which comes up more than you'd think in my line of work" is about penicillin, not work.
_CLAUSE_END = re.compile(r"[.;:!?\u2013\u2014]|\s-\s|\bbut\b|,\s*(?:which|who|whom|whose)\b", re.IGNORECASE)
_STATES_RULE = re.compile(r"\b(?:rules?|policy)\b", re.IGNORECASE)
_WHOLE_CLAUSE = re.compile(r"allerg|intoleran|sacred|off[-\s]limits|stay\s+away", re.IGNORECASE)


def _ruled(sentence: str) -> set[str]:
    """The content terms ``sentence``'s prohibitions govern (see above)."""
    if _STATES_RULE.search(sentence):
        return _about(sentence)
    out: set[str] = set()
    for m in _prohibitions(sentence):
        end = _CLAUSE_END.search(sentence, m.end())
        start = m.start()
        if _WHOLE_CLAUSE.match(m.group()):
            start = max((c.end() for c in _CLAUSE_END.finditer(sentence, 0, m.start())), default=0)
        out |= _about(sentence[start: end.start() if end else len(sentence)])
    for m in _CONDITION.finditer(sentence):  # "the day after a night shift, nothing before 3pm": when it holds
        out |= _plain_terms(m.group("cond")) - _CONDITION_NOISE
    return out


# A part of the day after a weekday ("Sunday mornings", "thursday evenings"), in minutes after midnight.
_PART_OF_WEEKDAY = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\s+(mornings?|afternoons?|evenings?|nights?)\b",
                              re.IGNORECASE)
_PARTS = {"morning": (0, 12 * 60), "afternoon": (12 * 60, 18 * 60), "evening": (17 * 60, 24 * 60),
          "night": (19 * 60, 24 * 60)}


def applies(question: str, sentence: str, *, any_subject: bool = False) -> str | None:
    """Does the rule sentence speak to the proposal? "match" (it covers the proposal), "other" (it is
    about the same thing but a different day / month / time), or None (it is about something else,
    or someone else the proposal does not name).
    ``any_subject``: judge the day, month and time alone, as if the rule were about what is proposed."""
    if _someone_elses(sentence, question) or _unmet_condition(sentence, question):
        return None
    shared = _about(question) & (_ruled(sentence) if _prohibits(sentence) else _about(sentence))
    if not shared and not _about_anything(sentence) and not any_subject:
        return None
    stretch = _unread_stretch(sentence)
    if stretch and not stretch & _about(question) and not any_subject:
        # "never book me anything on my first day ashore": a stretch the code cannot place on a
        # calendar covers a proposal that names it ("the day I come ashore"), not every proposal.
        return None
    rule_plain, rule_bounds = _rule_clock(sentence)
    sentence = _ruling_clause(sentence)
    rule_days, asked_days = _days(sentence), _days(question)
    rule_months, asked_months = _months(sentence), _months(question)
    if rule_days and asked_days and not asked_days <= rule_days:
        return "other"
    if rule_days and not asked_days:
        return None  # "never on Fridays", asked with no day: it depends; the model says so
    if rule_months and asked_months and not asked_months <= rule_months:
        return "other"
    asked_times = _asked_times(question)
    part = _PART_OF_WEEKDAY.search(sentence)
    if part and asked_times and rule_days and not (rule_bounds or rule_plain):
        # "Sunday mornings are sacred" rules out a 9am, not a 4pm on a Sunday.
        start, end = _PARTS[part.group(1).lower().rstrip("s")]
        if not any(start <= t < end for t in asked_times):
            return "other"
    if (rule_bounds or rule_plain) and not asked_times:
        return None
    # A proposal touching a forbidden stretch is covered: "7:15 to 8:30pm" against "nothing after
    # 8pm"; "before 10 or after 4" forbids both stretches.
    if rule_bounds and not any(t < limit if kind == "before" else t > limit
                               for kind, limit in rule_bounds for t in asked_times):
        return "other"
    if rule_plain and asked_times and not set(asked_times) <= set(rule_plain):
        return "other"
    return "match"


# "Can you recommend my next book?": a request to the assistant, not a proposal of the user's.
_ASKS_YOU = re.compile(r"^\s*(?:so\s+|and\s+|hey,?\s+)?(?:can|could|would|will)\s+you\b", re.IGNORECASE)


def is_proposal(question: str) -> bool:
    """A yes/no question about doing something: "Can we meet on Friday?", "Is it ok to order pizza?".
    What is proposed may be told first and asked last: "The US team wants a call at 9am on Tuesday.
    Can I take it?" — each sentence of the question is read on its own. A request to the assistant
    ("can you recommend my next book?") is one only when it names what rules govern, a day, a month
    or a time ("could you book me a table on Friday?"): answered "No — book club hated it" before."""
    return any(_PROPOSAL.search(part) and not WH_QUESTION.match(part)
               and (not _ASKS_YOU.match(part) or bool(DAY_WORD.search(part) or _MONTH_WORD.search(part) or _CLOCK.search(part)))
               for part in SENTENCES.split(question.strip()))


CONSTRAINT = "constraint-validation"


def proposes(question: str, tag: str | None = None) -> bool:
    """Is there a proposal to judge against the rules? :func:`is_proposal`'s forms, or any question
    the router sent to constraint-validation (``tag``) whose last sentence is no wh-question: "The GP
    wants to put me on amoxicillin, anything I should flag?", "Is a 2023 Toyota Sienna at $38,500
    within what I set for the van?", "The lab wants a dinner on a Wednesday evening. Am I free?". The
    router, trained on many phrasings, has said the question asks whether something fits the rules;
    a list of those phrasings missed 17 of the tune personas' 86 (11 of them answered wrongly). A
    wh-question on that route asks for a rule itself ("What's my rule about Fridays?")."""
    if is_proposal(question):
        return True
    parts = SENTENCES.split(question.strip())
    return tag == CONSTRAINT and bool(parts) and WH_QUESTION.match(parts[-1]) is None


def rule_verdict(question: str, evidence: Sequence[Evidence], context: str | None = None, *,
                 asked_days: Sequence[tuple[date, date]] = (), proposal: bool | None = None) -> RuleVerdict | None:
    """A yes/no verdict on a proposal from the stored rules, or None when no rule is about it.

    A prohibiting rule (never, don't, avoid, allergic, no …) whose object overlaps the proposal and
    whose day / month / time covers it → "No — <rule>". A limiting rule (only, always, must) that
    the proposal meets → "Yes — <rule>"; one it does not meet (other terms, another day) → "No — <rule>".
    A prohibiting rule on the same thing but another day or time → "Yes — nothing in your rules rules it
    out", quoting the closest rule. The rule is quoted as stored; with ``context`` (the packed text),
    only rules shown there verbatim are used, so the validator can check the quote.

    An amount in the question is judged by the newest limit on it (:func:`_limit_verdict`). Days in
    ``asked_days`` (the caller resolves the question's dates with the write path's resolver) that a
    stored plan already takes make the proposal "No — it clashes with ..." (:func:`_clash`). ``proposal``:
    whether the question proposes something (:func:`proposes`; None: :func:`is_proposal`)."""
    phrased = is_proposal(question)
    proposal = phrased if proposal is None else proposal
    flat = norm(context) if context is not None else None
    limit = _limit_verdict(question, evidence, flat, proposal)
    if not proposal:
        return limit
    if limit is not None and (limit.decision == "no" or not phrased):
        # An amount asked about in no proposal's words ("Is that inside my engine budget?") is the
        # limit's to decide, yes or no: a prohibition's shared word ("no lifting over 10 kilo") is not.
        return limit
    no, yes, near = [], [], []
    for item, sentence, polarity in current_rules(evidence):
        rule = quoted(item, sentence)
        if flat is not None and norm(rule) not in flat:
            continue
        if limits(sentence):
            continue  # a limit: decided above by its newest value, or it depends on an amount not asked
        fit = applies(question, sentence)
        if fit is None:
            continue
        if polarity == "prohibit":
            if fit == "match":
                no.append((item, rule))
            elif _about(question) & _about(sentence):
                near.append((item, rule))  # not one about anything: that it is on another day rules nothing in
            continue
        extra_asked = _plain_terms(question) - _plain_terms(sentence) - _GENERIC_ASK
        extra_rule = _plain_terms(sentence) - _plain_terms(question)
        if fit == "other" or (extra_asked and extra_rule):
            no.append((item, rule))
        elif fit == "match" and not extra_rule:
            yes.append((item, rule))
    if no:
        # A rule that names the weekday or month the proposal asks about is the one that decides it
        # ("no client calls on fridays" for a call this Friday, not "no Tokyo trip in March, a video
        # call instead"); then one that names days, months or times at all: "weekends still nothing
        # before 9" for "leave at 8am this saturday", not the line that only shares a name ("liam …
        # never lets me forget it").
        # Then the one sharing most of what the proposal is about, the user's own words before an
        # assistant's restatement: "I never take flights that leave before nine in the morning", not
        # "Understood — amlodipine 5 mg each morning", for a 6:15 flight.
        asked = _about(question)
        no.sort(key=lambda found: (not names_when(question, found[1]), not _timed(found[1]),
                                   -len(asked & _about(found[1])), _assistant(found[0])))
        return RuleVerdict(f"No — {_with_reason(no[0][0], no[0][1], flat)}", _holding_rule(no), "no")
    clash = _clash(question, evidence, flat, asked_days) or _weekly_clash(question, evidence, flat)
    if clash is not None:
        return clash
    if limit is not None:
        return limit
    if yes:
        return RuleVerdict(f"Yes — {yes[0][1]}", _holding_rule(yes), "yes")
    if near:
        return RuleVerdict(f'Yes — nothing in your rules rules it out (closest: "{near[0][1]}")', _holding_rule(near), "yes")
    return _lifted(question, evidence, flat)


# A rule this short that names no object ("Thursdays are sacred.") gives its reason in the sentence
# beside it; quoted alone, the verdict says no without saying why.
REASON_WORDS = 8


def _with_reason(item: Evidence, rule: str, flat: str | None) -> str:
    """``rule`` quoted with the sentence of its note that follows it (else the one before it), when
    the rule is short and about anything at all in a stretch of time (:func:`_about_anything`):
    "Thursdays are sacred. Swimming with Lily, 6 to 7." The pair is quoted only as the context shows it."""
    if item.kind not in ("raw", "pinned") or len(rule.split()) > REASON_WORDS or not _about_anything(rule):
        return rule
    parts = [s.strip() for s in SENTENCES.split(item.text.strip()) if s.strip()]
    at = next((i for i, s in enumerate(parts) if norm(s) == norm(rule)), None)
    if at is None or len(parts) < 2:
        return rule
    pair = f"{rule} {parts[at + 1]}" if at + 1 < len(parts) else f"{parts[at - 1]} {rule}"
    pair = pair.strip().rstrip(";,")
    return pair if flat is None or norm(pair) in flat else rule


def _lifted(question: str, evidence: Sequence[Evidence], flat: str | None) -> RuleVerdict | None:
    """"Yes — …" for a proposal that only a replaced rule forbade: "Wednesday evenings are pottery, so don't
    put anything after 6 on a Wednesday", asked about a Wednesday 7pm book club, after "pottery changes
    from September: it moves to Tuesday evenings". The line that replaced the rule is quoted."""
    asked = _about(question)
    replaced = sorted(replaced_rules(evidence).items(), key=lambda kv: -len(asked & _about(kv[0][1])))
    for (note_id, sentence), (later, replacing) in replaced:  # the rule about the thing asked first
        item = next((e for e in evidence if e.note_id == note_id and e.kind != "summary"), None)
        if item is None or _polarity(sentence) != "prohibit" or applies(question, sentence) != "match":
            continue
        shown = replacing.strip().rstrip(";,")
        if flat is not None and norm(shown) not in flat:
            continue
        when = f" on {day_label(later.day)}" if later.day else ""
        return RuleVerdict(f'Yes — the rule against it changed{when}: "{shown}"', [later], "yes")
    return None


_GENERIC_ASK = terms("bring go come try get take let")


# "Does a £45 dinner still fit my budget?": a yes/no question about an amount and a limit, not
# worded as a proposal.
_ASKS_LIMIT = re.compile(
    r"^\s*(?:do|does|did|is|are|would|will|can|could|should|am)\b.*\b(?:fit|fits|within|afford|over|under|budget|"
    r"limit|allowed|ok(?:ay)?|fine|too\s+(?:much|far|long|many))\b", re.IGNORECASE | re.DOTALL,
)


# ... or asked in a word or two after the thing is told: "Theo's registry has a $320 stand mixer. Within my budget?"
_ASKS_LIMIT_SHORT = re.compile(r"^\s*(?:still\s+)?(?:within|over|under|inside|fits?|affordable)\b[^.!]*\?\s*$", re.IGNORECASE)
# A question clause may follow a dash or a semicolon: "I'd like to spend 350 zł — does that fit my budget?"
_DASH = re.compile(r"\s[—–-]\s|;\s")


# A weekly commitment the user keeps ("Wednesday evenings 19:00-21:30 are choir rehearsals now", "MBA
# classes are mon and wed evenings 6 to 9") takes those hours of that weekday: a proposal in them
# clashes, as one on a day a trip takes does (:func:`_clash`). What recurs is a weekday said in the
# plural or with "every" ("on wednesdays", "every Sunday", "Tuesday evenings"); the commitment as it
# stands is its newest telling, one a later line moved to another day (:func:`_reason_moved`) none.
_WEEKLY = re.compile(r"\b(?:every\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day|(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)"
                     r"(?:day)?s\b|(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?\s+(?:mornings|afternoons|evenings|nights)\b)",
                     re.IGNORECASE)
_SPAN = re.compile(r"(?<![\d:])(\d{1,2})(?:[:.](\d{2}))?\s*([ap])?\.?m?\.?\s*(?:-|–|to|till|until)\s*(\d{1,2})(?:[:.](\d{2}))?"
                   r"\s*([ap])?\.?m?\b", re.IGNORECASE)
_EVENING = re.compile(r"\b(?:evenings?|nights?|eve|tonight|after\s+work)\b", re.IGNORECASE)
_MORNING = re.compile(r"\b(?:mornings?|am)\b", re.IGNORECASE)


def _hours(sentence: str) -> tuple[int, int] | None:
    """The stretch of the day a sentence gives, in minutes after midnight: "19:00-21:30", "5:30 to
    8:30pm", "evenings 6 to 9" (an evening's bare hours are pm); None without one."""
    m = _SPAN.search(sentence)
    if m is None:
        return None
    h1, m1, h2, m2 = int(m.group(1)), int(m.group(2) or 0), int(m.group(4)), int(m.group(5) or 0)
    if h1 > 23 or h2 > 24 or m1 > 59 or m2 > 59:
        return None
    late = bool(m.group(6) and m.group(6).lower() == "p") or (h2 <= 12 and _EVENING.search(sentence) is not None)
    early = bool(m.group(6) and m.group(6).lower() == "a") or _MORNING.search(sentence) is not None
    def clock(h: int, minute: int, pm: bool) -> int:
        return (h % 12 + 12) * 60 + minute if pm and h < 12 else h * 60 + minute
    end = clock(h2, m2, late and not early and h2 < 12)
    start = clock(h1, m1, late and not early and h1 < 12 and clock(h1, m1, True) < end)
    return (start, end) if start < end else None


_EVENING_FROM = 17 * 60  # minutes: an evening or night with no hours written starts at 5 pm


def _weekly_clash(question: str, evidence: Sequence[Evidence], flat: str | None) -> RuleVerdict | None:
    """"No — it clashes with ..." for a proposal on a weekday, at a time or in the evening, that a weekly
    commitment of the user's takes (see above): one the user (or the one the question names) keeps,
    not someone else's."""
    days = _days(question)
    evening = _EVENING.search(question) is not None
    # "a pub trivia night thursday at 7": an hour of an evening proposal is in the evening.
    times = [t + 12 * 60 if evening and 60 <= t < 12 * 60 else t for t in _asked_times(question)]
    if not days or not (times or evening):
        return None
    asked_names = _names(question) | terms(" ".join(re.findall(r"(?<=\s)[A-Z][\w'’-]+", question)))
    said = [e for e in evidence if e.kind == "raw" and not _assistant(e)]
    found: list[tuple[tuple[str, int], Evidence, str]] = []
    for item in said:
        for sentence in SENTENCES.split(item.text.strip()):
            if not _WEEKLY.search(sentence) or not days & _days(sentence) or _polarity(sentence) is not None:
                continue
            span = _hours(sentence)
            if times:
                # A commitment on "thurs nights" with no hours takes the evening: from 5 pm.
                late = span is None and _EVENING.search(sentence) is not None and any(t >= _EVENING_FROM for t in times)
                if not late and (span is None or not any(span[0] <= t < span[1] for t in times)):
                    continue
            elif span is None and not _EVENING.search(sentence):
                continue
            if _names(sentence) - asked_names:
                continue  # someone else's week ("Dara has pottery on Wednesdays")
            # Moved to another day since: told by the user, or in the assistant's echo of it when that
            # is the line retrieval found ("Noted: from January futsal moves to Wednesday nights"); not
            # the assistant's echo of this very line ("Monday and Wednesday are no longer MBA nights").
            later = [x for x in evidence if x.kind == "raw" and _said_order(x) > _said_order(item)
                     and not (_assistant(x) and x.day == item.day)]
            if any(_moved_off(sentence, part, days) for x in later for part in SENTENCES.split(x.text.strip())):
                continue
            shown = sentence.strip().rstrip(";,")
            if flat is not None and norm(shown) not in flat:
                continue
            found.append((_said_order(item), item, shown))
    if not found:
        return None
    _, item, shown = max(found, key=lambda f: f[0])
    return RuleVerdict(f'No — it clashes with "{shown}"', [item], "no")


_TIMING_TERMS = terms("evening evenings morning mornings night nights afternoon afternoons every week weekly now")
_MOVED = re.compile(r"\b(?:mov(?:e|es|ed|ing)|now|chang(?:e|es|ed|ing)|switch(?:ed|es)?|instead|any\s?more|no\s+longer|"
                    r"from\s+(?:the\s+)?\d|from\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))", re.IGNORECASE)


def _moved_off(commitment: str, later: str, asked: set[int]) -> bool:
    """``later`` moves the weekly ``commitment`` off the days asked: it names what the commitment is
    (a word beyond the weekday, the time of day and the change), says it changed, and names weekdays
    that are not the ones asked ("from the 8th of April we rehearse ... on Wednesdays" for a Tuesday
    choir), or frees the days asked ("tuesdays are free again"). A line naming the asked day again keeps
    it ("between mba and choir tue/wed/thu evenings")."""
    freed = set().union(*(_days(m.group(1)) for m in _FREE_CLAUSE.finditer(later)))
    if freed and asked <= freed:
        return True  # "tuesdays are free again"
    what = _about(commitment) - _TIMING_TERMS - _CHANGE_TERMS
    days = _days(later)
    return bool(what & _about(later)) and _MOVED.search(later) is not None and bool(days) and not days & asked


_CHANGE_TERMS = terms("move moved moves change changed changes switch switched instead anymore longer big new update "
                      "updated year timetable schedule")


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
            sentence = next((x for x in SENTENCES.split(item.text.strip()) if label and f"[{label}]" in x),
                            item.text.strip())
            if _plain_terms(sentence) & about or (flat is not None and norm(sentence) not in flat):
                continue
            found.append((item.event_time or "", item.note_id, item, sentence, label))
    if not found:
        return None
    _, _, item, sentence, label = max(found, key=lambda f: (f[0], f[1]))
    return RuleVerdict(f'No — it clashes with your plans for {label}: "{sentence.strip()}"', [item], "no")


# A currency's names: a limit and a question that share only "kroner" share no thing limited ("the
# naust goes up to 1 500 kroner a month" is not the engine budget an 83 400 kroner invoice is asked of).
_MONEY_WORDS = terms(" ".join(CURRENCY_NAMES) + " rands złotych cents pence")


# Words every limit and every question about one may use: they say nothing about what is limited.
_LIMIT_TERMS = terms("budget budgets limit limits max maximum cap capped spend spent fit fits within allowed afford "
                     "allowance minimum least most total")


# A limit that no longer holds: "Lars discharged me, no more limits, I can lift what I like again",
# "the 10 kg lifting limit no longer applies", "they lifted the spending cap".
_LIMIT_LIFTED = re.compile(
    r"\bno\s+more\s+(?:limits?|restrictions?)\b|\bno\s+longer\s+appl(?:y|ies)\b|"
    r"\b(?:limits?|restrictions?|caps?)\s+(?:(?:is|are|was|were|has\s+been|have\s+been|got)\s+)(?:lifted|removed|gone|dropped|over)\b|"
    r"\b(?:lifted|removed|dropped|scrapped)\s+(?:the|my|that|this)\s+(?:[\w-]+\s+){0,2}(?:limit|restriction|cap)s?\b|"
    r"\b(?:can|could)\s+\w+\s+(?:whatever|what|anything)\s+I\s+(?:like|want)\b",
    re.IGNORECASE,
)


def asks_amount(question: str) -> bool:
    """The question names an amount ("25 kilo cement bags", "a £45 dinner"): a limit may decide it."""
    return bool(amounts(question))


def lifts_limit(text: str) -> bool:
    """A line saying that a limit no longer holds (see :data:`_LIMIT_LIFTED`)."""
    return _LIMIT_LIFTED.search(text) is not None


def _one_thing(found: Sequence[tuple[Evidence, str, str, Limit]]) -> bool:
    """Every limit found is in one unit and on one thing: their sentences share a word beyond the limit
    words ("no lifting over 10 kilo ..." and "Lifting is still max 10 kilo ...")."""
    if len({f[3].amount.unit for f in found}) != 1:
        return False
    shared = set.intersection(*(_plain_terms(f[2]) - _LIMIT_TERMS - _MONEY_WORDS - terms(f[3].amount.unit) - _LIFT_NOISE
                                for f in found))
    return bool(shared)


def _limit_lifted(found: tuple[Evidence, str, str, Limit], evidence: Sequence[Evidence],
                  flat: str | None) -> tuple[Evidence, str] | None:
    """A sentence said after the limit ``found`` that says a limit on the same thing no longer holds
    (its note shares a word with the limit's sentence beyond the limit's own words: "Physio finished.
    ... no more limits" for "no lifting over 10 kilo until the physio clears me"), shown in the context."""
    item, _, sentence, lim = found
    thing = _plain_terms(sentence) - _LIMIT_TERMS - _MONEY_WORDS - terms(lim.amount.unit) - _LIFT_NOISE
    for later in sorted(evidence, key=_said_order, reverse=True):
        if later.kind == "summary" or _said_order(later) <= _said_order(item):
            continue
        for part in SENTENCES.split(later.text.strip()):
            if lifts_limit(part) and (thing & _plain_terms(later.text) or lim.amount.written in part) and (
                    flat is None or norm(part) in flat):
                return later, part.strip()
    return None


_LIFT_NOISE = terms("again still now until more longer no")


def covering_limit(question: str, text: str) -> bool:
    """A limit in ``text`` on what the question proposes: in a unit the question writes an amount in,
    sharing a word with it beyond the unit ("buy anything over $200 make me wait 48 hrs" for "a
    garmin watch for $320, just buy it?")."""
    units = {a.unit for a in amounts(question)}
    if not units or not any(ch.isdigit() for ch in text):
        return False
    asked = _plain_terms(question) - _LIMIT_TERMS
    return any(lim.amount.unit in units and (_plain_terms(sentence) - terms(lim.amount.unit)) & asked
               for sentence in SENTENCES.split(text.strip()) for lim in limits(sentence))


def _limit_verdict(question: str, evidence: Sequence[Evidence],
                   flat: str | None, proposal: bool) -> RuleVerdict | None:
    """A verdict on an amount the question names ("a job about 40 miles away", "a £45 dinner") from the
    newest stored limit in its unit on the same thing (:mod:`edgemem.recall.limits`). The limit is about the question when they share a content word; a
    lone limit in the unit counts without one. Limits change: the newest note wins, a profile fact
    (the model's copy) only when no note states one."""
    asked_units = {a.unit for a in amounts(question)}
    parts = [p for sentence in SENTENCES.split(question.strip()) for p in _DASH.split(sentence)]
    asks = proposal or any(_ASKS_LIMIT.search(part) or _ASKS_LIMIT_SHORT.search(part) for part in parts)
    if not asked_units or not asks:
        return None
    found: list[tuple[Evidence, str, str, Limit]] = []
    bare: list[tuple[Evidence, str, str, str]] = []
    for item in evidence:
        if item.kind == "summary":
            continue
        text = quoted(item, item.text) if item.kind == "profile" else item.text
        for sentence in SENTENCES.split(text.strip()):
            rule = quoted(item, sentence)
            if flat is not None and norm(rule) not in flat:
                continue
            found.extend((item, rule, sentence, lim) for lim in limits(sentence) if lim.amount.unit in asked_units)
            bare.extend((item, rule, sentence, unit) for unit in asked_units)
    if not found:
        return None
    # "New limit for the engine is 85 000, and that is final.": a limit written without its unit is in
    # the unit of a limit on the same thing ("My limit for the engine is 60 000 kroner").
    things = {f[3].amount.unit: _plain_terms(f[2]) - _LIMIT_TERMS - _MONEY_WORDS for f in found}
    for item, rule, sentence, unit in bare:
        if _plain_terms(sentence) & things.get(unit, set()) - _MONEY_WORDS:
            found.extend((item, rule, sentence, lim) for lim in unitless_limits(sentence, unit))
    asked_terms = _plain_terms(question) - _LIMIT_TERMS - _MONEY_WORDS
    about = [f for f in found if (_plain_terms(f[2]) - terms(f[3].amount.unit) - _MONEY_WORDS) & asked_terms]
    if not about and (len(found) == 1 or _one_thing(found)):
        about = found  # a lone limit in the unit, or every one on the same thing: its history
    notes_only = [f for f in about if f[0].kind != "profile"]
    about = notes_only or about
    if not about:
        return None
    def when(f: tuple[Evidence, str, str, Limit]) -> tuple[str, int]:
        return _said_order(f[0])

    best = max(about, key=when)
    # A newer limit in the unit that names the value it replaces ("up to 40 miles now, not 30") or
    # shares what it limits with the one found is its update, even when it does not name the thing.
    for f in sorted(found, key=when):
        if when(f) <= when(best) or (f[0].kind == "profile" and best[0].kind != "profile"):
            continue
        old_value = re.search(r"\d[\d,.]*", best[3].amount.show()).group(0)
        names_old = re.search(rf"(?<![\d.,]){re.escape(old_value)}(?![\d.,]*\d)", f[2].replace(best[3].amount.written, "")) is not None
        shared = (_plain_terms(f[2]) & _plain_terms(best[2])) - _LIMIT_TERMS - terms(best[3].amount.unit)
        if names_old or shared:
            best = f
    # The limit as it was set, not a later line applying it ("Under the $200 line, so no wait needed"
    # quoted for a $320 watch): the first statement of the current value, after any other value.
    def same(f: tuple[Evidence, str, str, Limit]) -> bool:
        return (f[3].amount.unit, f[3].amount.value, f[3].upper) == (best[3].amount.unit, best[3].amount.value, best[3].upper)

    since = max((when(f) for f in found if not same(f) and when(f) <= when(best)), default=("", -1))
    setting = [f for f in about if same(f) and since < when(f) <= when(best) and f[0].kind != "profile"]
    if setting:
        best = min(setting, key=lambda f: (when(f), _assistant(f[0])))
    item, rule, _, lim = best
    asked = asked_amount(question, lim.amount.unit)
    if asked is None:
        return None
    lifted = _limit_lifted(best, evidence, flat)
    if lifted is not None:  # "no more limits, I can lift what I like again", said after "max 10 kilo"
        return RuleVerdict(f'Yes — the limit no longer holds: "{lifted[1]}"', [lifted[0]], "yes")
    bounded = [a for a in limits(question, budget=False) if a.amount.unit == lim.amount.unit]
    if bounded:  # "Do I still only take jobs within 30 miles?" asks what the limit is, not about 30 miles
        if bounded[0].amount.value == lim.amount.value and bounded[0].upper == lim.upper:
            return RuleVerdict(f'Yes — "{rule}"', [item], "yes")
        return RuleVerdict(f'No — the newest limit is {lim.amount.show()}: "{rule}"', [item], "no")
    value, parts = asked
    bought = _already_bought(question, evidence, best, flat) if lim.upper else []
    parts = [a for _, a in bought] + parts
    value += sum(a.value for _, a in bought)
    shown = " + ".join(a.show() for a in parts) + (f" = {lim.amount.show(value)}" if len(parts) > 1 else "")
    cited = [item]
    for e, _ in bought:
        if all(e is not c for c in cited):
            cited.append(e)
    if lim.allows(value):
        return RuleVerdict(f'Yes — {shown} is within the limit: "{rule}"', cited, "yes")
    side = "over the limit" if lim.upper else "under the minimum"
    return RuleVerdict(f'No — {shown} is {side}: "{rule}"', cited, "no")


# "a €180 LEGO set on top of what I already bought": what was bought is in the notes, not the question.
_ON_TOP = re.compile(r"\b(?:on\s+top\s+of|plus|as\s+well\s+as|in\s+addition\s+to|with)\s+(?:what|everything|all)\b"
                     r"[^.?!]*\b(?:already|so\s+far|bought|spent|paid|got)\b", re.IGNORECASE)
_BOUGHT = re.compile(r"\b(?:bought|spent|paid|ordered|got|picked\s+up)\b", re.IGNORECASE)
_SPENDING_TERMS = terms("top already far bought buy spent spend paid pay got get ordered picked want wants euro euros "
                        "dollar dollars pound pounds quid bucks")
# A bare number closing a list after an amount takes its unit: "the harness, 75 euro, and LEGO, 60".
_LISTED = re.compile(r",\s*(?:and\s+)?(?:[^\W\d_]+\s*,\s*)?(\d+(?:\.\d+)?)\s*(?=[,.;!]|$)")


def _already_bought(question: str, evidence: Sequence[Evidence], found: tuple[Evidence, str, str, Limit],
                    flat: str | None) -> list[tuple[Evidence, Amount]]:
    """What the notes say was already bought against a limit the question adds to ("on top of what I
    already bought"): amounts in the limit's unit in lines of the same person, said when the limit was
    or later, with a verb of buying, naming something the question or the limit names."""
    if not _ON_TOP.search(question):
        return []
    item, _, limit_sentence, lim = found
    about = (_about(question) | _about(limit_sentence)) - _LIMIT_TERMS - _SPENDING_TERMS
    out: list[tuple[Evidence, Amount]] = []
    for e in evidence:
        if e.kind != "raw" or e.note_id <= 0 or not same_teller(item, e):
            continue
        if _said_order(e) < _said_order(item):
            continue
        for sentence in SENTENCES.split(e.text.strip()):
            if (not _BOUGHT.search(sentence) or limits(sentence) or not _plain_terms(sentence) & about
                    or (flat is not None and norm(sentence) not in flat)):
                continue
            named = [a for a in amounts(sentence) if a.unit == lim.amount.unit]
            if named:
                after = sentence[named[0].start:]
                named += [Amount(float(m.group(1)), lim.amount.unit, named[0].start + m.start(1), m.group(1))
                          for m in _LISTED.finditer(after) if not any(a.start == named[0].start + m.start(1) for a in named)]
            out.extend((e, a) for a in named)
    return out


def names_when(question: str, rule: str) -> bool:
    """The rule names a weekday or month the proposal asks about ("no client calls on fridays" for a
    call this Friday): of two rules that cover a proposal, the one about its day decides it."""
    rule = ANNOTATION.sub(" ", rule)
    return bool(_days(rule) & _days(question) or _months(rule) & _months(question))


def _timed(rule: str) -> bool:
    """The rule names days, months or clock times, in its own words: a date the write path resolved
    ("three weeks ago [week of 20 October 2025]") says when something happened, not when a rule holds."""
    rule = ANNOTATION.sub(" ", rule)
    plain, bounds = _rule_clock(rule)
    return bool(_days(rule) or _months(rule) or plain or bounds)


def _holding_rule(found: list[tuple[Evidence, str]]) -> list[Evidence]:
    """The items stating the rule quoted (the first found): its note, and the profile fact copied
    from it ("never schedule meetings on Fridays" inside "Rule: never schedule meetings on Fridays.")."""
    quoted = norm(found[0][1])
    out: list[Evidence] = []
    for item, rule in found:
        same = norm(rule)
        if (same in quoted or quoted in same) and all(item is not o for o in out):
            out.append(item)
    return out


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("’", "'")).strip().lower().rstrip(".!;")

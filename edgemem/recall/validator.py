"""Validator (MemFlow Appendix B.3): is the answer grounded in the packed context?

Cheapest first: hard-failure detection (empty, ESCALATE_REQUIRED, "not found" patterns: no model
call) → a yes/no verdict quoting a rule verbatim from the context (accepted) → the ownership check
(the answer's line must be about the owner the question names) → the kind check (a "how often"
answer names a frequency; a bare name of someone in the conversation answers only a question
asking for a person or a name) → short-answer passthrough (≤ 6
words, numbers, yes/no) → extractive passthrough (the answer is a span of one context line, or all
its content words are) → the model as a yes/no grounding judge (schema-constrained to "yes"/"no",
≤ 8 tokens) with a token-overlap fallback (τ = 0.07) when the model is unavailable or its reply does
not validate. The judge continues the answer prompt (same system and context messages, then the
answer and the judge's question), so the context is not prefilled a second time: llama.cpp's KV
cache holds it. :attr:`Verdict.judge` records whether the judge ran, or why it was skipped.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from edgemem import prompts
from edgemem.errors import ContextTooLong, SchemaError
from edgemem.recall.evidence import ASSISTANT_SPEAKERS, TIME_FRAME_TERMS, terms
from edgemem.recall.limits import CURRENCIES, amounts
from edgemem.text import MONTH_NAMES, STOPWORDS, tokens

OVERLAP_TAU = 0.07
SHORT_WORDS = 6
CONTEXT_CHARS = 6000  # B.3 truncates the context snippet to 6,000 characters

_HARD_FAILURE = re.compile(
    r"escalate[_ ]?required|could not find|couldn'?t find|not (?:mentioned|found|available|specified|stated)|"
    r"no (?:information|mention|record|relevant)|(?:does|do) not (?:mention|say|contain|specify|provide|include|state|give)|"
    r"i (?:do not|don'?t) know|unknown|cannot be determined|there is no",
    re.IGNORECASE,
)
# An answer that is only a null word, maybe after the prompt's label ("ANSWER: None"): nothing found.
# Not to "how many": there "None" is zero.
_NULL_ANSWER = re.compile(r"^\W*(?:answer\s*:\s*)?(?:none|n/?a|null|nothing|nobody|no\s+one|not\s+applicable)\W*$",
                          re.IGNORECASE)
_ASKS_AMOUNT = re.compile(r"\bhow\s+(?:many|much|often)\b", re.IGNORECASE)
_NUMERIC = re.compile(r"^\s*[-+]?\d[\d,.]*\s*(?:\w+)?\s*\.?\s*$")
_JUDGE_SCHEMA = {"type": "string", "enum": ["yes", "no"]}  # the reply is the JSON string "yes" or "no"


# A question that asks for something (what/which/who/where/when/how much …): an answer made only of
# its own words ("which hotel did amaka book for us in osu?" → "OSU", "What was the name of the garage
# on Wielicka Street?" → "Wielicka Street") names nothing the notes said.
_ASKS_FOR = re.compile(r"^\s*(?:what|which|who|whose|where|when|how\s+(?:much|many|long|old|far))\b", re.IGNORECASE)


def echoes_question(question: str, answer: str) -> bool:
    """The answer to a wh-question holds no word or number the question does not."""
    if not _ASKS_FOR.search(question):
        return False
    said = terms(answer) | set(re.findall(r"\d+", answer))
    return bool(said) and said <= terms(question) | set(re.findall(r"\d+", question))


@dataclass
class Verdict:
    grounded: bool
    stage: str  # hard_failure | rule_verdict | wrong_owner | wrong_kind | invented_name | short_answer | extractive | judge | overlap
    score: float | None = None
    tokens: int = 0
    judge: str = "skipped"  # "ran" | "ran (shared prefix)" | "skipped: <why>"
    reason: str | None = None  # wrong_owner's reason: answer_is_owner, other_owner, off_topic, unheld …
    cached_tokens: int = 0  # judge prompt tokens the KV cache already held


def is_hard_failure(answer: str) -> bool:
    """No answer: empty, a "not found" phrase, or a question ("How did they handle the accident?" is a
    line of the context asking it, copied back)."""
    return not answer.strip() or bool(_HARD_FAILURE.search(answer)) or answer.strip().endswith("?")


def is_short(answer: str) -> bool:
    text = answer.strip().rstrip(".")
    return len(text.split()) <= SHORT_WORDS or bool(_NUMERIC.match(text)) or text.lower() in {"yes", "no"}


def overlap(answer: str, context: str) -> float:
    """Share of the answer's content words that appear in the context."""
    words = {t for t in tokens(answer) if t not in STOPWORDS and len(t) > 2}
    if not words:
        return 0.0
    ctx = set(tokens(context))
    return len(words & ctx) / len(words)


_YOU = re.compile(r"\b(?:you|you're|you've|your|yours)\b", re.IGNORECASE)
_HEADER = re.compile(r"^\(([^()]*)\)\s")
_DATE_LIKE = re.compile(r"\d|^(?:computed|profile|pinned|summary|raw)$", re.IGNORECASE)
# "X's thing": X is an owner unless the "'s" is a contraction ("what's", "it's", "there's").
_POSSESSIVE = re.compile(r"\b([A-Za-z][\w\-]*)['’]s\s+(?=((?:[a-z][\w\-]*\s+){0,2}?[a-z][\w\-]{2,}))")
_CONTRACTED = frozenset("what that it he she there here who where when how let why which this today tomorrow".split())
_SELF = re.compile(r"\b(?:my|mine|me|I|myself|I'm|I've)\b")
_WHOSE = re.compile(r"\bwhose\b", re.IGNORECASE)
# A computed fact quoting a line with its header: "Latest on what is asked: (8 May 2023, Melanie) …".
_QUOTED_HEADER = re.compile(r"\(\d{1,2} [A-Z][a-z]+ \d{4}, [^)]+\)")
_WHO = re.compile(r"\b(?:who|whom|whose)\b", re.IGNORECASE)
_USER_SPEAKERS = frozenset({"user", "me", "i", "myself"})
_BARE_YES_NO = re.compile(r"^\W*(?:yes|no)\W*$", re.IGNORECASE)
_OWN_NAME = re.compile(r"\bmy\s+(?:\w+\s+)?(?:name|nickname|surname|username)\b", re.IGNORECASE)  # the asker's own
_ASKER_NAME = re.compile(r"^user\b[^:]*\bname\b[^:]*:\s*(.+?)\s*\(\w+\)\s*$", re.IGNORECASE)


def _bare(token: str) -> str:
    """A token without its possessive ending: "karen's" → "karen"."""
    return token.removesuffix("'s").removesuffix("’s")


def _answer_words(answer: str) -> set[str]:
    """Content words, and with them the numbers: "2 June 2026" is held by the line that says that
    day, not by every line about June. A bare number ("5", a count or a duration worked out) is
    no quote of any line: it says nothing of whose it is."""
    words = {_bare(t) for t in tokens(answer)}
    words = {t for t in words if t not in STOPWORDS and len(t) > 2}
    return words | set(re.findall(r"\d+", answer)) if words else words


@dataclass
class _Line:
    text: str
    header: str | None  # "8 May 2023, Caroline"; None for a line without one
    speaker: str | None  # the header's last part when it is not a date or a kind
    body: str

    def by_user(self, users: frozenset[str] = _USER_SPEAKERS) -> bool:
        """Said or written by the user: a header with no speaker (a remembered note), one of the
        ``users`` speaker labels (lower case), or a profile line about the user."""
        if self.header is None:
            return False
        if self.body.lower().startswith("user —"):
            return True
        return self.speaker is None or self.speaker.lower() in users


def _user_labels(lines: list[_Line]) -> frozenset[str]:
    """The speaker labels that are the user: "user", "me" …, and, where an assistant speaks in the
    context, the one other speaker ("Maya" talking to "Assistant")."""
    spoken = {line.speaker.lower() for line in lines if line.speaker}
    others = spoken - ASSISTANT_SPEAKERS
    if spoken & ASSISTANT_SPEAKERS and len(others) == 1:
        return _USER_SPEAKERS | frozenset(others)
    return _USER_SPEAKERS


def _parse(line: str) -> _Line:
    m = _HEADER.match(line)
    if not m:
        return _Line(line, None, None, line)
    last = m.group(1).rsplit(",", 1)[-1].strip()
    speaker = None if _DATE_LIKE.search(last) else last
    return _Line(line, m.group(1), speaker, line[m.end():])


@dataclass
class Owner:
    """Whom a question asks about: a named owner ("Biscuit's vet": Biscuit), or the user ("my project")."""

    name: str | None  # None: the user
    thing: str | None  # "vet", "project": what of theirs is asked for, when the question says
    possessive: bool  # "X's <thing>" or "my <thing>", not just a name somewhere in the question
    whose: bool = False  # a "whose X" question: the answer is an owner, and must not be the asker


# The subject of a question is the word after its auxiliary ("which gym does Noor go to?", "how
# many parkruns has Sinéad done?"): a capitalised one there names whom the question is about.
_SUBJECT = re.compile(r"\b(?:does|did|do|is|was|are|were|has|have|had|will|would|can|could)\s+"
                      r"((?-i:[A-Z])[^\W\d_][\w'’\-]*)(?![\w'’]*\s+(?-i:[A-Z]))", re.IGNORECASE)
_CALENDAR_WORDS = frozenset(
    [m.lower() for m in MONTH_NAMES] + "monday tuesday wednesday thursday friday saturday sunday".split()
)
_NOT_A_SUBJECT = frozenset({"i", "it", "he", "she", "they", "we", "you", "there", "this", "that", "the", "a", "an"}
                           | _CALENDAR_WORDS)


def owner_of(question: str, speakers: set[str] = frozenset()) -> Owner | None:
    """The owner a question names, or None when it names none or several.

    "X's <thing>" (a possessive, not a contraction) names X; "my / I / me" names the user; otherwise
    one capitalised name that is a speaker of the context names that speaker (LoCoMo's third-person
    questions: "Why did Caroline get into running?"), and failing that, a capitalised subject after
    the question's auxiliary names that person ("which gym does Noor go to?": in a chat with an
    assistant, the people the user talks about are no speakers). A subject of two capitalised words
    ("does Dr Amin", "is Casa Azahar") is not taken: a title or a place, not one person's name."""
    whose = bool(_WHOSE.search(question))
    owners = [(m.group(1), m.group(2).split()[-1]) for m in _POSSESSIVE.finditer(question)
              if m.group(1).lower() not in _CONTRACTED and not _a_place(question, m)]
    names = {o for o, _ in owners}
    if len(names) == 1:
        name, thing = owners[0]
        if name.lower() in {"my", "mine"}:
            return Owner(None, thing, True, whose)
        return Owner(name, thing, True, whose)
    if len(names) > 1:
        return None
    if _SELF.search(question):
        m = re.search(r"\bmy\s+((?:[a-z][\w\-]*\s+){0,2}?[a-z][\w\-]{2,})", question)
        return Owner(None, m.group(1).split()[-1] if m else None, bool(m), whose)
    asked = {n for n in speakers if re.search(rf"\b{re.escape(n)}\b", question)}
    if len(asked) == 1:
        return Owner(asked.pop(), None, False, whose)
    if asked or whose:  # "Whose dog is Biscuit?": the subject is the thing, its owner is the answer
        return None
    subjects = {m.group(1) for m in _SUBJECT.finditer(question) if m.group(1).lower() not in _NOT_A_SUBJECT}
    if len(subjects) == 1:
        name = subjects.pop()
        # "Mel" for Melanie: a speaker whose name the subject begins is that speaker
        known = [n for n in speakers if n.lower().startswith(name.lower())]
        return Owner(known[0] if len(known) == 1 else name, None, False, whose)
    return None


_TO_A_PLACE = frozenset("at to from round near by".split())


def _a_place(question: str, m: re.Match) -> bool:
    """"staying at mum's over christmas", "back to Dave's for the match": a possessive after a
    preposition of place with no noun after it is someone's home, where the asker was; it names no
    owner of what is asked."""
    before = question[: m.start()].split()
    after = m.group(2).split()[0].lower()
    return bool(before) and before[-1].lower() in _TO_A_PLACE and (after in STOPWORDS or after in _CALENDAR_WORDS)


def _proper(name: str | None) -> bool:
    """A person's name ("Theo", "Mum"), not a relation written as a common noun ("my sister's")."""
    return bool(name) and name[0].isupper()


def _thing_words(question: str, name: str) -> set[str]:
    """The words naming what of ``name``'s is asked ("Sue's last HbA1c" → last, hba1c): up to three
    after the possessive, to the first function word."""
    m = re.search(rf"\b{re.escape(name)}['’]s\s+((?:[\w\-]+\s*){{1,3}})", question)
    if not m:
        return set()
    words = []
    for word in m.group(1).split():
        if word.lower() in STOPWORDS:
            break
        words.append(word)
    return terms(" ".join(words))


def _mentions(text: str, wanted: set[str]) -> bool:
    """Some word of ``text`` is one of ``wanted`` or shares its first four letters ("opens", "opening")."""
    have = terms(text)
    return bool(have & wanted) or any(len(w) >= 4 and h[:4] == w[:4] for w in wanted for h in have)


def _names(line: _Line, name: str) -> bool:
    """The line is about ``name``: said by them, or naming them other than as the one spoken to
    ("Wow, Caroline!" and "Thanks, Melanie!" address the listener; they do not give them anything).
    A possessive typed without its apostrophe names them too: "anas bday sunday was mint"."""
    if line.speaker is not None and line.speaker.lower() == name.lower():
        return True
    for m in re.finditer(rf"\b{re.escape(name)}(?:s(?=\s+[a-z]))?\b", line.body, re.IGNORECASE):
        after = line.body[m.end():m.end() + 2]
        if re.match(r"\s*[,.!]", after) and m.start() < 24:
            continue  # a vocative at the start of the line
        return True
    return False


_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|we've|us|our|ours)\b", re.IGNORECASE)


def _told(body: str) -> str:
    """A line without the questions it asks: "What got you into running?" tells nothing of whose the
    running is ("What are the new shoes that Caroline got used for?" is answered by the other
    speaker's "These are for running.")."""
    sentences = [x for x in re.split(r"(?<=[.!?])\s+", body) if x.strip()]
    return " ".join(x for x in sentences if not x.rstrip().endswith("?"))


def _yours(body: str, thing: str) -> bool:
    """The line calls the thing the listener's: "your son", "your new store"."""
    return re.search(rf"\byour\s+(?:[\w\-]+\s+)?{re.escape(thing)}", body, re.IGNORECASE) is not None


def _holding_sentence(body: str, words: set[str]) -> str:
    """The sentence of a line sharing most of the answer's words (the first of a tie)."""
    sentences = [x for x in re.split(r"(?<=[.!?])\s+", body) if x.strip()] or [body]
    return max(sentences, key=lambda x: len(words & (set(tokens(x)) | set(re.findall(r"\d+", x)))))


def _of_speaker(sentence: str) -> bool:
    """The sentence speaks of the speaker only ("I'm starting to realize that self-care is important.")."""
    return _FIRST_PERSON.search(sentence) is not None and _YOU.search(sentence) is None


# "thabo hurt his knee, dr pillay sent him to a physio in parkhurst, kim something": the user's own
# line, but what it tells of a physio is someone else's. A sentence that says no "I", "my" or "we" and
# gives the thing to another person ("sent him", "his", "Thabo's physio") answers no "my physio?".
_THEIRS = re.compile(r"\b(?:him|his|their|them)\b", re.IGNORECASE)


def _of_someone_else(sentence: str, thing: str) -> bool:
    """The sentence tells of another person's ``thing``, not the speaker's (see above)."""
    if _FIRST_PERSON.search(sentence) is not None:
        return False
    possessor = re.search(rf"\b([\w-]+)['’]s\s+(?:[\w-]+\s+)?{re.escape(thing)}", sentence, re.IGNORECASE)
    return _THEIRS.search(sentence) is not None or possessor is not None


def _to_listener(sentence: str) -> bool:
    """The sentence speaks of the listener only ("Great that you're prioritizing self-care.")."""
    return _YOU.search(sentence) is not None and _FIRST_PERSON.search(sentence) is None


def _holding(answer: str, lines: list[_Line], ignore: frozenset[str] = frozenset()) -> list[_Line]:
    """The lines holding most of the answer's words (all of them tied for the most); [] when none does.
    ``ignore``: words that say nothing of where the answer came from (the owner's name, restated)."""
    words = _answer_words(answer) - ignore
    if not words:
        return []
    shared = [len(words & (set(tokens(told)) | set(re.findall(r"\d+", told))))
              for told in (_told(line.body) for line in lines)]
    best = max(shared, default=0)
    if best == 0 or 2 * best < len(words):
        return []
    held = [line for line, n in zip(lines, shared, strict=True) if n == best]
    # A computed fact may quote a line ("Latest on what is asked: (8 May 2023, Caroline) …"); when the
    # line itself is in the context, it is the line that says whose the answer is. Date maths quotes
    # none and stays: "13 September 2025 is a Saturday" holds "Saturday" for "What day of the week is
    # Nina's wedding on?" beside the user's "parkrun Saturday, 27:20!!".
    said = [line for line in held if (line.header or "").strip().lower() != "computed"
            or not _QUOTED_HEADER.search(line.body)]
    return said if any((line.header or "").strip().lower() != "computed" for line in said) else held


def _own_numbers(answer: str, question: str) -> list[str]:
    """The answer's numbers that the question does not write: "… at the shelter in August 2023" for
    "What did John receive … in August 2023?" restates the question's year; it is no numeric answer."""
    asked = set(re.findall(r"\d+", question))
    return [n for n in re.findall(r"\d+", answer) if n not in asked]


def ownership(question: str, answer: str, context: str, *, strict: bool = False, digest: bool = False) -> str | None:
    """Why the answer belongs to someone other than the owner the question names, or None.

    * the answer is the owner itself ("Biscuit" for "Biscuit's vet"), or the asker's own name for a
      "whose X" or "my X" question (not "my name");
    * a bare yes or no about a capitalised name no line ties to the rest of the question ("unheld");
    * a bare number that only lines about someone other than the named owner write ("other_owner");
    * a date or number for a named owner's thing whose lines never name the thing ("off_thing");
    * a named person's relation answered with the user's own name in a chat ("answer_is_asker");
    * the one who says "I" of the answer is another speaker, and the owner's lines holding it do not
      ("other_owner"); a question a line asks ("What got you into running?") holds nothing;
    * every context line holding the answer is about someone else: for a named owner, no such line is
      said by them or names them; for the user ("my project", "am I"), none is the user's own line
      (a remembered note, the user's speaker label, a profile fact about the user);
    * the answer takes a question word from its own line ("The Phoenix Project" for "What project am
      I leading at work?"): the line holding it shares nothing else with the question while another
      line does.

    A line that speaks to the listener ("love your bowls!") gives the thing to the listener; a numeric
    answer ("7 years") is not checked against a name that is only mentioned: "years" alone says
    nothing of whose. With no header on any line nothing can be said of who said what.

    ``strict`` (a retry after an answer was given to someone else): the answer must be held by a line
    about the owner; an answer no context line holds ("unheld") is not taken on trust a second time.

    ``digest`` (a summary over many lines, or a suggestion made from them): the checks that look for
    the one line holding the answer do not apply. "Give me a rundown of everything around Nina's
    wedding" is answered from the user's own lines about flights and a guesthouse, which never name
    Nina; in the saved runs on the tune side (LoCoMo and personal) all four summaries and the one
    suggestion the check refused were answerable.

    Measured (previous, narrower rules) on LoCoMo conv-26 with the turns behind the packed notes and
    the gold or adversarial answer: 22 of 47 adversarial questions flagged, 1 of 152 answerable ones."""
    lines = [_parse(line) for line in context.splitlines() if line.strip()]
    speakers = {line.speaker for line in lines if line.speaker}
    owner = owner_of(question, speakers)
    answer_words = _answer_words(answer)
    if _BARE_YES_NO.match(answer) and any(line.header for line in lines):
        # "Did Ines change her phone number too?" → "Yes": a bare yes or no about someone named
        # needs a line that names them and shares something else with the question.
        named = [w for w in re.findall(r"(?<=\s)[A-Z][a-z][\w\-]*", question) if w.lower() not in _USER_SPEAKERS]
        for name in named:
            rest = terms(question) - terms(name)
            if not any(_names(line, name) and terms(line.body) & rest for line in lines):
                return "unheld"
    if owner is not None and answer_words:
        if owner.name and answer_words <= {t for t in tokens(owner.name)}:
            return "answer_is_owner"
        if owner.whose or (owner.name is None and owner.possessive and not _OWN_NAME.search(question)):
            # "Whose is it?" or "Who's my manager?" is not answered by the asker's own name.
            asker = set()
            for line in lines:
                m = _ASKER_NAME.match(line.body)
                if m:
                    asker |= set(tokens(m.group(1)))
            if not owner.whose:  # in a chat, the user's speaker label is their name
                asker |= {t for label in _user_labels(lines) - _USER_SPEAKERS for t in tokens(label)}
            if asker and answer_words <= asker:
                return "answer_is_asker"
        elif _proper(owner.name) and owner.possessive and _ASKS_NAME.search(question):
            # "What's Karen's husband called?" → "Karen's husband is Tom." where Tom is the user, who
            # speaks of himself as "I": the name of the one writing the notes is nobody's relation.
            asker = {t for label in _user_labels(lines) - _USER_SPEAKERS for t in tokens(label)}
            capitalised = " ".join(re.findall(r"\b[A-Z][\w\-’']*", answer))
            named = {_bare(t) for t in tokens(capitalised)} - {_bare(t) for t in tokens(question)}
            if asker and named and named <= asker:
                return "answer_is_asker"
    if owner is not None and owner.name and not _WHO.search(question):
        # "Melanie had a setback recently." for "What setback did Caroline face?": the answer says
        # whose it is, and it is someone else's (a "who" question's answer is a person: not checked).
        subject = re.match(r"\s*([A-Z][\w\-]*)(?:['’]s\b|\s+(?:is|was|has|had|did|does|\w+ed|[a-z]\w+s)\b)", answer)
        other = subject.group(1) if subject else None
        if (other and other.lower() != owner.name.lower() and other in speakers
                and not re.search(rf"\b{re.escape(owner.name)}\b", answer, re.IGNORECASE)):
            return "other_owner"
    bare = re.findall(r"\d+(?:[.:]\d+)?", answer) if not answer_words else []
    if owner is not None and _proper(owner.name) and owner.possessive and len(bare) == 1:
        # "What was Sue's last HbA1c?" → "47": a bare number is nobody's in particular, but one that
        # only lines about someone else write ("HbA1c 47", Tom's) is theirs, not Sue's.
        quoting = [line for line in lines if re.search(rf"(?<![\d.:]){re.escape(bare[0])}(?!\d|[.:]\d)", line.body)
                   and line.header and (line.header.strip().lower() != "computed" or _QUOTED_HEADER.search(line.body))]
        if quoting and not any(_names(line, owner.name) for line in quoting):
            return "other_owner"
    if digest:
        return None
    # "Karen's husband is Janet.": the line about Janet holds the answer, not every line naming Karen.
    restated = frozenset(tokens(owner.name)) if owner is not None and owner.name else frozenset()
    holding = _holding(answer, lines, restated)
    if all(line.header is None for line in lines):
        return None
    if not holding:
        named = owner is not None and not owner.whose and (owner.name is not None or owner.possessive)
        return "unheld" if strict and named and answer_words else None
    if strict and owner is not None and owner.name and answer_words:
        # "What setback did Caroline face recently?" when only Melanie spoke of one, answered from a
        # line of Caroline's about something else ("Realizing I can be me … was the best part"); "the
        # name of John's puppy" answered "Coco" from John's "Coco looks so adorable!" beside Maria's "I
        # got a puppy … Her name's Coco": the owner's line holding a strict answer must be on what is
        # asked, not only be theirs.
        asked = terms(question) - terms(owner.name) - _QUESTION_WORDS - TIME_FRAME_TERMS
        theirs = [line for line in holding if (line.speaker or "").lower() == owner.name.lower()]
        if asked and theirs and not any(terms(_told(line.body) or line.body) & asked for line in theirs):
            return "off_premise"
    if owner is not None and not owner.whose:
        users = _user_labels(lines)
        chat = users != _USER_SPEAKERS  # a user talking to an assistant: "you" is the user
        if owner.name is None:
            def users_own(line: _Line) -> bool:
                # In a chat, the assistant speaking to the user ("Your mum is at Rosewood; you visit on
                # Thursdays") says what is the user's.
                return line.by_user(users) or (chat and (line.speaker or "").lower() in ASSISTANT_SPEAKERS
                                               and _YOU.search(line.body) is not None)
            if any(line.by_user(users) for line in lines) and not any(users_own(line) for line in holding):
                return "other_owner"
            if owner.possessive and owner.thing:
                # "What did Dr Haddad say about my blood pressure?" → "... Sigrid's blood pressure is a
                # little high": the answer itself gives the thing to someone else.
                theirs = re.search(rf"\b([A-Z][\w-]*)['’]s\s+(?:[\w-]+\s+)?{re.escape(owner.thing)}\b", answer)
                if theirs and theirs.group(1).lower() not in {label.lower() for label in users}:
                    return "other_owner"
                own = [line for line in holding if users_own(line)]
                if own and all(_of_someone_else(_holding_sentence(_told(line.body) or line.body, answer_words), owner.thing)
                               for line in own):
                    return "other_owner"
        elif not (_own_numbers(answer, question) and not owner.possessive):
            said_by = {id(line): _holding_sentence(_told(line.body) or line.body, answer_words - restated)
                       for line in holding}
            own = [line for line in holding if (line.speaker or "").lower() == owner.name.lower()]
            claimed = [line for line in holding if line.speaker and line not in own and not line.by_user(users)
                       and _of_speaker(said_by[id(line)])]
            if own and claimed and not any(_FIRST_PERSON.search(said_by[id(line)]) for line in own):
                # "Congrats, Gina! That's awesome news about the fashion internship." (Jon) beside Gina's
                # "I just got accepted for a fashion internship!": the one who says "I" of it has it.
                return "other_owner"
            for line in holding:
                if line.header is None:
                    break
                said = _holding_sentence(line.body, answer_words - restated)
                if (line.speaker or "").lower() == owner.name.lower() and (
                        _to_listener(said) or (owner.thing and _yours(line.body, owner.thing))):
                    continue  # the owner telling the listener about the listener: "Great that you're ...",
                    # "Thank goodness your son's okay." (said by Caroline: the son is the listener's)
                if _names(line, owner.name):
                    break
                if line.header.strip().lower() == "computed" and not _QUOTED_HEADER.search(line.body):
                    break  # date maths ("13 September 2025 is a Saturday") belongs to no one
                if line.speaker and not line.by_user(users) and _YOU.search(line.body) and not _of_speaker(said) and (
                        not chat or owner.name.lower() in users):
                    break  # "love your bowls!" gives them to the listener (the user, in a chat)
                if not owner.possessive and line.speaker is None:
                    break  # a name only mentioned in the question: a note without a speaker may be theirs
            else:
                return "other_owner"
    if holding and owner is not None and _proper(owner.name) and _own_numbers(answer, question):
        # "When is Theo's birthday?" answered "8 August" from "Theo's wedding is on 8 August": a date
        # or number is the asked thing's only when its line names that thing.
        thing = _thing_words(question, owner.name)
        if thing and not any(_mentions(line.text, thing) for line in holding):
            return "off_thing"
    asked = terms(question)
    words = terms(answer)
    if words & asked:  # the answer carries a question word: is its line about anything else asked?
        rest = asked - words
        if len(rest) >= 2 and not any((terms(line.text) - words) & rest for line in holding):
            if any(len(terms(line.text) & rest) >= 2 for line in lines if line not in holding):
                return "off_topic"
    return None


# A "how often" question is answered with a frequency; a reply without one answers something else
# ("How often does Maria work out with her family?" answered by copying a line that says nothing of
# how often). A count or a number counts ("three times a week", "twice", "2x").
_HOW_OFTEN = re.compile(r"\bhow\s+(?:often|frequently|regularly)\b", re.IGNORECASE)
_COUNT_WORDS = (r"\d|\b(?:no|none|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
                r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|hundred|dozens?|"
                r"several|few|couple|many|once|twice|thrice|each|every|any)\b")
_FREQUENCY = re.compile(
    _COUNT_WORDS + r"|\b(?:per|daily|weekly|fortnightly|monthly|yearly|annually|nightly|hourly|always|usually|"
    r"often|regularly|sometimes|never|rarely|seldom|occasionally|frequently|mostly|weekdays?|weekends?|"
    r"mornings|evenings|afternoons|nights|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b",
    re.IGNORECASE)
# A question that can be answered with a bare name: it asks for a person, or for a name.
_ASKS_NAME = re.compile(r"\b(?:who|whom|whose|which|(?:sur|nick|user|first\s|last\s)?name[sd]?|called)\b", re.IGNORECASE)


# "What date is the half marathon?" asks for a day: "2026" names none. An answer with a day of the
# month, a month, a weekday or a day said relatively ("tomorrow") is of the kind asked.
_ASKS_DATE = re.compile(r"\b(?:what|which)\s+(?:date|day)\b(?!\s+of\s+the\s+week)", re.IGNORECASE)
_A_DAY = re.compile(
    r"(?<![\d,.])(?:[12]\d|3[01]|0?[1-9])(?![\d,.:]\d)(?:st|nd|rd|th)?"
    r"(?!\s*(?:%|years?|days?|weeks?|months?|hours?))\b|"
    r"\b(?:" + "|".join(m.lower() for m in MONTH_NAMES) + r"|(?:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|today|tomorrow|yesterday|tonight)\b",
    re.IGNORECASE)


# "What night is futsal on now?", "Which days do I go in?": a standing arrangement's weekday, which
# "11 June" (the day it started) does not give.
_ASKS_WEEKLY_DAY = re.compile(r"\b(?:what|which)\s+(?:nights?|evenings?|mornings?|afternoons?|days)\s+"
                              r"(?:is|are|do|does|am|will)\b", re.IGNORECASE)
_A_WEEKLY_DAY = re.compile(r"\b(?:(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:days?|s)?|weekdays?|weekends?|"
                           r"every\s+day|daily|nightly)\b", re.IGNORECASE)


# "What's Marta's new phone number in Cork?", "emeka's number?", "whats bisi's new address?": a
# contact detail is asked. A phone number is digits (six or more, however grouped); a postal address
# has a house, flat or postcode number; an email address has its "@". "Ibadan", "Noted" or a restated
# move ("Noriko got a new phone number when she moved") names none: the detail was never told.
# A bare "number" is a phone number only when it ends the question ("emeka's number?", "whats her
# new number now"): "What's my number for the race?" asks for a bib.
_ASKS_PHONE = re.compile(r"\b(?:phone|mobile|cell|landline|contact)\s+(?:number|no\b\.?)|"
                         r"(?:['’]s|\bmy|\bher|\bhis|\btheir|\byour)\s+(?:new\s+|current\s+|latest\s+|old\s+)?number"
                         r"(?:\s+(?:again|now|atm|rn|pls|please|is))?\W*$", re.IGNORECASE)
_ASKS_FOR_DETAIL = re.compile(r"^\W*(?:wh?at(?:['’]?s|\s+is|\s+was|\s+are)?|can\s+(?:you|u)\s+(?:remind|tell|give)|"
                              r"remind|tell|give)\b|^\W*[\w'’]+['’]s\s+(?:new\s+)?(?:phone\s+)?number\W*$|"
                              r"\bwhat\s+(?:it|is\s+it)\W*$", re.IGNORECASE)
_ASKS_ADDRESS = re.compile(r"\b(?:postal\s+|home\s+|street\s+)?address\b(?!\s+(?:book|the|it|them|him|her|this|that))", re.IGNORECASE)
_ASKS_WHETHER = re.compile(r"\b(?:whether|if)\b", re.IGNORECASE)  # "can you tell me if my number changed?"
_ASKS_EMAIL = re.compile(r"\be-?mail(?:\s+address)?\b", re.IGNORECASE)


def _no_contact_detail(question: str, answer: str) -> str | None:
    """The contact detail asked for, when the answer does not give one ("no_phone_number",
    "no_address", "no_email"), else None. Only a question that asks what the detail is: "Did Ines
    change her phone number?" and "can you tell me if my number changed?" are answered yes or no, "how
    many times" counts."""
    if not _ASKS_FOR_DETAIL.search(question) or _ASKS_AMOUNT.search(question) or _ASKS_WHETHER.search(question):
        return None
    if _ASKS_EMAIL.search(question):
        return None if "@" in answer else "no_email"
    if _ASKS_PHONE.search(question):
        return None if len(re.findall(r"\d", answer)) >= 6 else "no_phone_number"
    if _ASKS_ADDRESS.search(question):
        return None if re.search(r"\d", answer) else "no_address"
    return None


def _speakers(context: str) -> set[str]:
    """The speakers the context's line headers name."""
    return {line.speaker for line in (_parse(x) for x in context.splitlines() if x.strip()) if line.speaker}


# "Assistant" for "Who looks after Papá now?", "The assistant suggests driving a 2004 Mazda": the
# assistant's lines restate the user's; the assistant is no one in the user's life and no answer.
_OF_THE_ASSISTANT = re.compile(r"^\W*(?:the\s+)?(?:assistant|edgemem)\b", re.IGNORECASE)
_ASKS_OF_THE_ASSISTANT = re.compile(r"\b(?:you|your|assistant)\b", re.IGNORECASE)


# "What does Gunnar charge for a lift now?", "how much am I paying for the naust?": a sum of money is
# asked. An answer whose amounts are all in another unit ("10 kg") is not one; a bare number may be.
_ASKS_MONEY = re.compile(r"\b(?:charge[sd]?|charging|costs?|costing|salary|salaries|price[sd]?|fees?|rent|wages?|"
                         r"pay|pays|paying|paid|earn|earns|earning|spend|spent|spending)\b", re.IGNORECASE)
_ASKS_HOW_MUCH = re.compile(r"\b(?:how\s+much|what)\b", re.IGNORECASE)


def _not_money(question: str, answer: str) -> bool:
    if not (_ASKS_MONEY.search(question) and _ASKS_HOW_MUCH.search(question)):
        return False
    found = amounts(answer)
    return bool(found) and not any(a.unit in CURRENCIES for a in found)


def wrong_kind(question: str, answer: str, context: str, speakers: Collection[str] = ()) -> str | None:
    """Why the answer is not the kind of thing the question asks for, or None: the assistant itself
    ("the_assistant": "Assistant" for "who looks after Papá now?"), a "how often" reply
    with no frequency in it ("no_frequency"), a "what date" reply that names no day or month
    ("no_date": "2026" for "what date is the Dublin half marathon?"), a "what night is it on" reply
    with no weekday ("no_weekday": "11 June" for "what night is futsal on now?"), a sum of money asked and
    answered in another unit ("no_money": "10 kg" for "what does Gunnar charge for a lift now?"), a
    phone number, postal or email address asked and none given (:func:`_no_contact_detail`), or a reply that is only the
    name of someone in the conversation when the question asks for no person or name ("How has
    John's artistic skill improved?" answered "Maria!": the vocative a line opens with;
    "only_a_name"). The people in the conversation are the context's speakers and ``speakers`` (the
    store's): a pack of John's lines alone still greets Maria."""
    if _OF_THE_ASSISTANT.match(answer) and not _ASKS_OF_THE_ASSISTANT.search(question):
        return "the_assistant"
    if _HOW_OFTEN.search(question) and not _FREQUENCY.search(answer):
        return "no_frequency"
    if _ASKS_DATE.search(question) and not _A_DAY.search(answer):
        return "no_date"
    if _ASKS_WEEKLY_DAY.search(question) and not _A_WEEKLY_DAY.search(answer):
        return "no_weekday"
    if _not_money(question, answer):
        return "no_money"
    detail = _no_contact_detail(question, answer)
    if detail is not None:
        return detail
    words = tokens(answer)
    if words and not _ASKS_NAME.search(question):
        people = _speakers(context) | set(speakers)
        names = {t for speaker in people if speaker.lower() not in _USER_SPEAKERS for t in tokens(speaker)}
        if set(words) <= names:
            return "only_a_name"
    return None


# unheld_premise: how many of the question's content words the lines it is matched against must
# share. LoCoMo tune (conv-26/30/41), model-free, with the packed check context: refusing in the strict
# form (the answer must be held by a line about the person asked about) when the question's best
# lines are someone else's flagged 54 -> 71 of the 112 adversarial answers and 7 -> 9 of the 385
# gold answers at 2 words, 54 -> 64 and 7 -> 7 at 3. In the 150-question answered run it changed no
# score: the model and the other checks already abstained where it fired (docs/measurements.md).
PREMISE_WORDS = 2
_QUESTION_WORDS = terms("what when where why how who whom which did does do is was were has have had kind type name")


def unheld_premise(question: str, context: str) -> bool:
    """The question names a speaker of the conversation, and the lines sharing most of its other
    words (at least PREMISE_WORDS) are all about someone else: "What did Caroline realize after her
    charity race?" when only Melanie ran one. The answer must then come from a line about the one
    asked about (``ownership(strict=True)``)."""
    lines = [_parse(x) for x in context.splitlines() if x.strip()]
    speakers = {line.speaker for line in lines if line.speaker}
    owner = owner_of(question, speakers)
    if owner is None or owner.name not in speakers:
        return False
    wanted = terms(question) - terms(owner.name) - _QUESTION_WORDS
    shared = [len(terms(_told(line.body)) & wanted) for line in lines]
    best = max(shared, default=0)
    if best < PREMISE_WORDS:
        return False
    return not any(_names(line, owner.name) for line, n in zip(lines, shared, strict=True) if n == best)


def names_someone(question: str, context: str) -> bool:
    """The question asks about a named person (not the user): "What setback did Caroline face?"."""
    speakers = _speakers(context)
    owner = owner_of(question, speakers)
    return owner is not None and _proper(owner.name)


def wrong_owner(question: str, answer: str, context: str) -> bool:
    """True when the context gives the answer to someone other than the one asked about
    (:func:`ownership` says why)."""
    return ownership(question, answer, context) is not None


# A name of two or more capitalised words ("Casa Azahar", "Whitworth Animal Clinic", "Bank of England").
_NAME_RUN = re.compile(r"(?<![\w'’])[A-Z][\w'’&.-]*(?:\s+(?:(?:of|the|de|&)\s+)?[A-Z][\w'’&.-]*)+")


# A sentence ends after a word of two or more lowercase letters and its stop: "… Wanaka, New
# Zealand. The notes …" holds no name "Zealand. The"; "St.", "Dr." and "D.C." end none.
_NAME_SENTENCE_END = re.compile(r"(?<=[a-z]{2}[.!?])\s+")


def invented_name(answer: str, context: str, question: str = "") -> str | None:
    """A name of two or more capitalised words in the answer with a word neither the context nor the
    question's names write ("The hotel is the Seville Hotel." from notes naming no hotel), or None. Small
    models make up plausible names, and a name is the one thing an answer cannot paraphrase. Months,
    weekdays and a leading article are not part of a name, and a name ends with its sentence."""
    # The question's own names (its capitalised words after the first) are the user's, not made up.
    named = re.findall(r"(?<=\s)[A-Z][\w'’.-]*", question)
    held = set(tokens(context)) | set(tokens(" ".join(named)))
    for sentence in _NAME_SENTENCE_END.split(answer):
        for m in _NAME_RUN.finditer(sentence):
            words = [w for w in tokens(m.group(0)) if w not in _CALENDAR_WORDS and w not in {"the", "a", "an"}]
            if len(words) >= 2 and any(w not in held for w in words):
                return m.group(0)
    return None




def extractive(answer: str, context: str) -> str | None:
    """The context line the answer was lifted from, or None: the normalised answer, or every one of
    its content words, appears in one line. Such an answer needs no judge (B.3's judge asks whether
    the context supports it; a span of it does)."""
    norm = _norm(answer)
    words = {t for t in tokens(answer) if t not in STOPWORDS}
    numbers = set(re.findall(r"\d+", answer))
    if not norm:
        return None
    for line in context.splitlines():
        flat = _norm(line)
        if norm in flat:
            return line
        held = set(tokens(line))
        if words and words <= held and numbers <= set(re.findall(r"\d+", line)):
            return line
    return None


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s']", " ", text.replace("’", "'").lower())).strip()


_VERDICT = re.compile(r"^\s*(?:no|yes)\s*[—–-]+\s*(.+?)\s*$", re.IGNORECASE | re.DOTALL)
_QUOTE = re.compile(r"[\"“]([^\"”]{3,})[\"”]")


def rule_quoted(answer: str, context: str) -> bool:
    """A yes/no verdict ("No — <rule>", "Yes — … (closest: "<rule>")") quoting a rule verbatim from
    the context: it is grounded by construction."""
    m = _VERDICT.match(answer)
    if not m:
        return False
    quoted = _QUOTE.findall(m.group(1)) or [m.group(1)]
    flat = _norm(context)
    return all(_norm(q) and _norm(q) in flat for q in quoted)


_OUTDATED = re.compile(r"\(outdated(?: as of [^)]*)?\)\s*$")


def rule_outdated(answer: str, context: str) -> bool:
    """The rule a verdict quotes stands only on lines the context marks outdated: a later line replaced
    it ("Wednesday evenings are pottery …" after "pottery … moves to Tuesday evenings")."""
    m = _VERDICT.match(answer)
    if not m:
        return False
    quoted = [_norm(q) for q in _QUOTE.findall(m.group(1)) or [m.group(1)]]
    for q in filter(None, quoted):
        holding = [line for line in context.splitlines() if q in _norm(line)]
        if holding and all(_OUTDATED.search(line) for line in holding):
            return True
    return False


def rule_governs(question: str, answer: str) -> bool:
    """The rule a verdict quotes names something the question asks about: a content word in common
    ("Sundays are off limits for work" for a kitchen job on Sunday). "No — Wednesday evenings are
    pottery" for a design review on Friday quotes a real rule that governs another day."""
    m = _VERDICT.match(answer)
    if not m:
        return False
    quoted = " ".join(_QUOTE.findall(m.group(1))) or m.group(1)
    return bool(terms(quoted) & terms(question))


def judge_messages(prefix: list[dict[str, str]], answer: str) -> list[dict[str, str]]:
    """The judge continues the answer's conversation: its system and context messages come first,
    byte for byte, so llama.cpp's KV cache (the live one, or a prefix state the cache restores)
    already holds them and only the answer and the judge's question are prefilled."""
    return [*prefix, {"role": "assistant", "content": answer},
            {"role": "user", "content": prompts.render("validator_followup")}]


def validate(question: str, answer: str, context: str, llm: Any | None,
             prefix: list[dict[str, str]] | None = None, *, owner_strict: bool = False,
             digest: bool = False, owner_context: str | None = None, ruled: bool = False,
             suggestion: bool = False, speakers: Collection[str] = ()) -> Verdict:
    """B.3's cascade, cheapest first. ``prefix`` is the answer prompt's messages: the judge then
    continues that conversation (shared KV prefix) instead of prefilling the context a second time.
    ``owner_strict``: the ownership check in its strict form; ``digest``: the answer sums up or
    suggests from many lines (both :func:`ownership`). ``owner_context``: what the ownership check
    reads instead of ``context`` (a wider pack than the model's: the check costs no prefill).
    ``ruled``: the answer is a verdict made in code from the stored rules (no model call).
    ``suggestion``: the answer proposes something (profile-injection): a name the notes do not hold
    is what it suggests ("a weekend in Akaroa"), not a made-up fact; the judge still reads it.
    ``speakers``: everyone who speaks in the store (:func:`wrong_kind`)."""
    if is_hard_failure(answer) or (_NULL_ANSWER.match(answer) and not _ASKS_AMOUNT.search(question)):
        return Verdict(False, "hard_failure", judge="skipped: hard failure")
    if echoes_question(question, answer):
        return Verdict(False, "hard_failure", judge="skipped: the answer only repeats the question", reason="echo")
    if rule_quoted(answer, context):
        if not ruled and rule_outdated(answer, context):
            return Verdict(False, "rule_verdict", judge="skipped: the rule quoted was replaced later",
                           reason="outdated_rule")
        if ruled or rule_governs(question, answer):
            return Verdict(True, "rule_verdict", judge="skipped: verdict quotes a rule from the context")
        # The model's verdict quotes a rule that names nothing asked: it is grounded in the context,
        # and wrong. (A verdict made in code from the stored rules and plans, ``ruled``, compares the
        # question's amounts and days with the rule's, which need share no word: "£240" and "£200".)
        return Verdict(False, "rule_verdict", judge="skipped: the rule quoted is about something else",
                       reason="off_question")
    why = ownership(question, answer, context if owner_context is None else owner_context,
                    strict=owner_strict, digest=digest)
    if why is not None:
        return Verdict(False, "wrong_owner", judge=f"skipped: {why}", reason=why)
    kind = wrong_kind(question, answer, context if owner_context is None else owner_context, speakers)
    if kind is not None:
        return Verdict(False, "wrong_kind", judge=f"skipped: {kind}", reason=kind)
    invented = None if suggestion else invented_name(answer, context, question)
    if invented is not None:
        return Verdict(False, "invented_name", judge="skipped: a name the context does not hold", reason=invented)
    if is_short(answer):
        return Verdict(True, "short_answer", judge="skipped: short answer")
    if extractive(answer, context) is not None:
        return Verdict(True, "extractive", judge="skipped: extractive span of a context line")
    if llm is not None:
        if prefix:
            messages = judge_messages(prefix, answer)
        else:
            messages = [
                {"role": "system", "content": prompts.render("validator_system")},
                {"role": "user", "content": prompts.render(
                    "validator_user", question=question, context=context[:CONTEXT_CHARS], answer=answer)},
            ]
        try:
            result = llm.complete_json(messages, _JUDGE_SCHEMA, max_tokens=8)
            return Verdict(result.value == "yes", "judge", tokens=result.prompt_tokens + result.completion_tokens,
                           judge="ran (shared prefix)" if prefix else "ran",
                           cached_tokens=getattr(result, "cached_tokens", 0))
        except (SchemaError, ContextTooLong):
            pass  # fall through to the deterministic check below (counted by the caller via the stage)
    score = overlap(answer, context)
    return Verdict(score >= OVERLAP_TAU, "overlap", score,
                   judge="skipped: no model" if llm is None else "failed: overlap fallback")

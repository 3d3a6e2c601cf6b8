"""MemFlow Tier-1 profile compilation (MemFlow §3.1 "Tier 1 (Profile Lookup)", Appendix B.1 tags).

MemFlow pre-compiles stable preferences and identity facts into a structured profile during
ingestion, so that profile-injection queries need no retrieval; DESIGN adds behavioural rules
("never book meetings before 10am"). Cascade (DESIGN Principle 2), per note:

1. **Filter**: a first-person preference / identity / rule pattern (:data:`CUES`) matches, or the
   learned filter (:mod:`edgemem.ingest.profile_filter`, a classifier over the note's and its
   sentences' vectors) finds a lasting fact; otherwise the note is skipped with no model call. The
   assistant's lines are skipped. On chats with an assistant about a fifth of the user's lines
   reach the model.
2. **Model**: one schema-constrained call extracts at most 3 facts (kind, attribute key, value). The
   subject's existing keys are in the prompt so an update reuses its key and supersedes.
3. **Validation** in code: a slug key, a short value that is not itself a key, and a value grounded
   in the note (half its words, or a longer word's first four letters, occur in the note); an
   ungrounded fact is dropped and counted. A fact the note says of someone else ("Dara's coeliac")
   is filed under them.
4. **Fallback**: no model, an invalid reply (SchemaError) or a prompt too long changes nothing in the
   profile (counted as ``profile_fallback``); the note itself is always stored by the other steps.

Subjects and keys follow :mod:`edgemem.store.profile` (``caroline/identity/relationship_status``;
a note without a speaker is about ``user``). ``valid_from`` is the note's event time, so a newer
statement supersedes an older one by when it was said, not by when it was processed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgemem import prompts
from edgemem.errors import ConfigError, ContextTooLong, SchemaError
from edgemem.ingest.notes import NoteDraft
from edgemem.ingest.profile_filter import THRESHOLD, ProfileFilter
from edgemem.ingest.worker import WriteContext
from edgemem.store import ops
from edgemem.store import profile as store
from edgemem.text import ASSISTANT_SPEAKERS, STOPWORDS, iso_day_label, tokens

log = logging.getLogger(__name__)

MAX_FACTS = 3
MAX_VALUE_CHARS = 120
MAX_PROMPT_KEYS = 30
TEXT_CHARS = 800

def _any(*words: str) -> str:
    return "(?:" + "|".join(words) + ")"


# "I love it / that / how you ..." is small talk about the other person, not a preference.
_NOT_AN_OBJECT = r"(?!" + _any("it", "that", "this", "these", "those", "how", "what", "when", "where", "the way", "you",
                                "your", "yours", "to hear", "hearing", "seeing", "'em") + r"\b)"
_I_AM = r"\bI(?:'m| am)"
_LIKE = _any("love", "like", "prefer", "enjoy", "adore", "hate", "dislike", "detest", "can't stand", "cannot stand")
_STATUS = _any("single", "married", "engaged", "divorced", "widowed", "pregnant", "retired", "vegan", "vegetarian",
               "transgender", "trans", "gay", "lesbian", "bisexual", "queer", "christian", "muslim", "jewish", "hindu",
               "buddhist", "atheist", "a student", "a teacher", r"an? (?:artist|engineer|nurse|doctor|developer|designer|writer)",
               r"an? (?:counsel+or|parent|mom|dad|mother|father|single parent)")
_RELATIVE = _any("wife", "husband", "partner", "boyfriend", "girlfriend", "fianc[ée]e?", "son", "daughter", "kids",
                 "children", "mom", "mother", "dad", "father", "parents", "brother", "sister", "dog", "cat", "pets?")
_SPOUSE = _any("husband", "wife", "partner", "boyfriend", "girlfriend", "fianc[ée]e?")
_HAVE = _any("kids", "children", "sons?", "daughters?", "dogs?", "cats?", "pets?", "brothers?", "sisters?", "siblings",
             "husband", "wife", "partner", "boyfriend", "girlfriend")
_ERRAND = _any("book", "schedule", "call", "email", "text", "message", "send", "remind", "wake", "plan", "set up", "put",
               "add", "order", "suggest", "recommend")
_HABIT = _any("eat", "drink", "work", "fly", "drive", "take", "book", "schedule", "go", "sleep", "wake", "travel", "pay", "buy")


def _cue(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


CUES: dict[str, list[re.Pattern[str]]] = {
    "preference": [
        _cue(rf"\bI (?:really |absolutely |just |also |totally |truly |still )?{_LIKE} {_NOT_AN_OBJECT}"),
        _cue(r"\bmy (?:all-time |absolute |personal )?fav(?:ou?rite)?s?\b"),
        _cue(rf"{_I_AM}? (?:a (?:big |huge )?fan of|really into|into|obsessed with|passionate about|allergic to)\b"),
        _cue(r"\bI(?:'d| would) rather\b|\b(?:my|a) love (?:of|for)\b|\bI(?:'ve| have)? always (?:loved|liked|enjoyed|hated)\b"),
        _cue(r"\bI (?:started|took up|picked up|got into) \w+ing\b"),
    ],
    "identity": [
        _cue(r"\bmy name is\b|\bcall me\b"),
        _cue(rf"\bI (?:work|worked) (?:as|at|for|in)\b|{_I_AM} (?:working|employed) (?:as|at)\b"),
        _cue(rf"\bI (?:live|lived|grew up|was born|was raised) (?:in|on)\b|{_I_AM} from\b|\bI (?:just |recently )?moved (?:to|from|here)\b"),
        _cue(rf"{_I_AM} (?:now |still |currently )?{_STATUS}\b"),
        _cue(rf"\bmy {_RELATIVE}(?:'s name)? (?:is|are|was|were|named|called)\b|\bmy (?:home country|hometown)\b|\bmy {_SPOUSE}\b"),
        _cue(rf"\bI have (?:a |an |\d+ |two |three |four |five )?{_HAVE}\b"),
        _cue(rf"{_I_AM} \d{{1,3}}(?: years old)?\b|\bI (?:got|just got) (?:married|divorced|engaged)\b|\bI broke up\b"),
        _cue(r"\bas an? (?:single|trans(?:gender)?|gay|queer|new|first-time) \w+"),
    ],
    "rule": [
        _cue(rf"\b(?:always|never|don't ever|do not ever|don't|do not)\s+{_ERRAND}\b"),
        _cue(rf"\bI (?:always|never|usually|only) {_HABIT}\b"),
        _cue(r"\b(?:please )?(?:remind me (?:to|about)|keep in mind that)\b"),
    ],
}


def cues(text: str) -> list[str]:
    """Kinds whose first-person cue patterns match ``text`` (empty: no model call needed)."""
    return [kind for kind, patterns in CUES.items() if any(p.search(text) for p in patterns)]


@dataclass(frozen=True)
class Fact:
    key: str
    value: str
    kind: str


def schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "maxItems": MAX_FACTS,
                "items": {
                    "type": "object",
                    # "key" before "kind": the grammar makes the model write them in this order (until
                    # the eighteenth session a sorted schema did so by accident). Written kind first, as
                    # the prompt's example is, the 1.5B model named real attributes and they superseded
                    # each other wrongly ("food: pescatarian" by "food: Pepper's food"): personal tune
                    # personas 65/95 against 68/95 this way, where it mostly names the kind as the key
                    # and the value becomes the key (GENERIC_ATTRIBUTES below).
                    "properties": {
                        # The patterns bound the lengths inside the grammar too (it ignores maxLength).
                        "key": {"type": "string", "minLength": 1, "maxLength": 48, "pattern": "^[a-z][a-z0-9_]{0,47}$"},
                        "kind": {"type": "string", "enum": list(store.KINDS)},
                        "value": {"type": "string", "minLength": 1, "maxLength": MAX_VALUE_CHARS,
                                  "pattern": f"^[^\"\\\\]{{1,{MAX_VALUE_CHARS}}}$"},
                    },
                    "required": ["kind", "key", "value"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["facts"],
        "additionalProperties": False,
    }


def messages(subject: str, speaker: str | None, draft: NoteDraft, keys: list[str]) -> list[dict[str, str]]:
    name = speaker or "the user"
    text = draft.content if len(draft.content) <= TEXT_CHARS else draft.content[:TEXT_CHARS].rstrip() + " …"
    day = iso_day_label(draft.event_time)
    return [
        {"role": "system", "content": prompts.render("profile")},
        {"role": "user", "content": prompts.render("profile_user", subject=name, keys=", ".join(keys) or "(none)", day=day, text=text)},
    ]


def _content_words(text: str) -> set[str]:
    return {t for t in tokens(text.replace("_", " ")) if len(t) >= 3 and t not in STOPWORDS}


GENERIC_ATTRIBUTES = frozenset({
    "identity", "preference", "preferences", "rule", "rules", "fact", "facts", "info", "information",
    "value", "attribute", "detail", "details", "trait", "like", "likes", "hobby", "interest", "interests",
    "other", "personal", "about", "note", "user",
})


def _content_words_ordered(text: str) -> list[str]:
    words = _content_words(text)
    return [w for w in dict.fromkeys(re.findall(r"[a-z0-9']+", text.lower())) if w in words]


def _value_words(text: str) -> set[str]:
    return {w.strip("'") for w in re.findall(r"[a-z0-9][a-z0-9']*", text.lower())} - STOPWORDS - {""}


def _finished(value: str) -> str:
    """``value`` up to its last finished sentence ("" when none ends)."""
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", value)]
    return value[: ends[-1]].strip() if ends else ""


def grounded(fact_value: str, text: str) -> bool:
    """At least half the words of the value occur in the note: a number or a short word as written, a
    longer word allowing inflections by its first four letters ("loves" for "love"). The key does not
    ground a value: with real attribute names the model filled a third fact with "necklace: none"
    beside a note about a necklace. One word in common was once enough, and the prompt's own example
    came back as a fact ("never book meetings before 10am" from "no meetings before 10 on mondays")."""
    have = _value_words(text)
    stems = {w[:4] for w in have if len(w) >= 4}
    words = _value_words(fact_value)
    found = sum(w in have or (len(w) >= 4 and w[:4] in stems) for w in words)
    return found > 0 and 2 * found >= len(words)


# A value written as a key ("home_city", "dr_nolan_at_glasnevin_dental"): the 1.5B model echoing
# the attribute, not stating it.
_SLUG_VALUE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")
# "Dara's coeliac", "Mum is a big gin fan": a name right before the value's words, with "'s", "is"
# or "has", says whose fact it is.
_WHOSE_BEFORE = re.compile(r"\b([A-Z][\w-]+)(?:['’]s|\s+(?:is|has|was|loves|hates|likes))\s+(?:\w+\s+){0,2}$")
_NOT_NAMES = frozenset({"i", "it", "that", "this", "there", "he", "she", "they", "we", "what", "who", "mine"})


def said_of(fact_value: str, text: str, speaker: str | None) -> str | None:
    """The person other than the speaker that the note says the fact of ("Dara's coeliac, so gluten
    free everything" → Dara), or None when it is the speaker's own or says no one's."""
    words = [w for w in _value_words(fact_value) if len(w) >= 3]
    lowered = text.lower()
    found = [m.start() for m in (re.search(rf"\b{re.escape(w)}", lowered) for w in words) if m]
    if not found:
        return None
    at = min(found)
    start = max((m.end() for m in re.finditer(r"[.!?;:,]\s", text[:at])), default=0)
    m = _WHOSE_BEFORE.search(text[start:at])
    if not m or m.group(1).lower() in _NOT_NAMES or (speaker and m.group(1).lower() == speaker.lower()):
        return None
    return m.group(1)


def facts_from_reply(value: dict, subject: str, text: str, on_drop: Callable[[str], None] = lambda reason: None,
                     speaker: str | None = None) -> list[Fact]:
    """Validated facts of a schema-valid reply; a fact failing the checks is dropped (``on_drop(reason)``).
    A fact the note states of someone else (:func:`said_of`) is filed under them."""
    out: dict[str, Fact] = {}
    for item in value["facts"]:
        attribute = store.slug(item["key"].rsplit("/", 1)[-1])
        fact_value = " ".join(item["value"].split())
        if _SLUG_VALUE.fullmatch(fact_value):
            on_drop("malformed")
            continue
        if len(fact_value) >= MAX_VALUE_CHARS - 2:
            # Stopped by the schema's length, mid-clause: "sundays are not for work. church …, then
            # family dinner. never book me anything on" lost the day the rule is about. Its finished
            # sentences are kept; a value with none is dropped.
            fact_value = _finished(fact_value)
            if not fact_value:
                on_drop("cut")
                continue
        if attribute in GENERIC_ATTRIBUTES:
            # Measured on LoCoMo conv-26 with the 1.5B model: it often names the attribute after the
            # kind ("identity", "preference"), which made every new fact supersede the last one
            # ("from Sweden" replaced by "loves reading"). A generic name says nothing about which
            # fact is being updated, so the value itself becomes the key: the fact is kept, beside
            # the others, and only a reply naming a real attribute can supersede.
            attribute = store.slug(" ".join(_content_words_ordered(fact_value)[:4]))
        if not attribute or not fact_value:
            on_drop("malformed")
            continue
        if not grounded(fact_value, text):
            on_drop("ungrounded")
            continue
        if store.fragment(attribute, fact_value):
            on_drop("fragment")  # "Kuba" filed as kuba: a bare word, no fact (store.profile.fragment)
            continue
        other = said_of(fact_value, text, speaker)
        key = store.make_key(store.subject_of(other) if other else subject, item["kind"], attribute)
        out.setdefault(key, Fact(key, fact_value, item["kind"]))
    return list(out.values())


@dataclass
class ProfilePlan:
    facts: list[Fact] = field(default_factory=list)
    layer: str = "cue"  # "cue" (no cue: skipped) | "model" | "fallback"
    valid_from: str = ""
    ctx: WriteContext | None = None

    def apply(self, conn: Any, draft: NoteDraft, note_id: int) -> int:
        if not self.facts:
            return note_id
        for fact in self.facts:
            done = store.upsert(conn, fact.key, fact.value, valid_from=self.valid_from, note_id=note_id)
            if self.ctx is not None:
                self.ctx.count(f"profile_{done.action}")
            if done.action != "same":
                prev = done.previous
                ops.record(conn, "profile", note_id,
                           {"key": prev.key, "value": prev.value, "valid_from": prev.valid_from} if prev else None,
                           {"key": fact.key, "value": fact.value, "valid_from": self.valid_from, "action": done.action})
        return note_id


class ProfileStep:
    """Compile profile facts from a note; runs after the gate so the facts cite the note that survives a merge."""

    name = "profile"

    def __init__(self, threshold: float = THRESHOLD) -> None:
        """``threshold``: the learned filter's probability a note needs to reach the model; 1 leaves
        only the cues (the ``profile_filter`` setting)."""
        if not 0.0 < threshold <= 1.0:
            raise ConfigError(f"profile_filter must be a probability above 0 and at most 1, not {threshold!r}")
        self.threshold = threshold
        self._filter: ProfileFilter | None = None

    def worth_asking(self, ctx: WriteContext, draft: NoteDraft) -> bool:
        """Stage 1: a cue matches, or the learned filter (:mod:`edgemem.ingest.profile_filter`) finds a
        lasting fact in the note or one of its sentences. An assistant's line is never asked about:
        it restates what the user said ("Noted — Dara's coeliac"), under another subject."""
        if (draft.speaker or "").casefold() in ASSISTANT_SPEAKERS:
            return False
        if cues(draft.content):
            return True
        if self.threshold >= 1.0:
            return False
        if self._filter is None:
            self._filter = ProfileFilter(ctx.embed)
        rows = [draft.embedding if draft.embedding is not None else ctx.embed([draft.embed_text])[0]]
        if draft.sentence_vectors is not None:
            rows.extend(draft.sentence_vectors)
        return self._filter.probability(np.asarray(rows)) >= self.threshold

    def plan(self, ctx: WriteContext, draft: NoteDraft) -> ProfilePlan:
        if not self.worth_asking(ctx, draft):
            ctx.count("profile_skipped")
            return ProfilePlan(ctx=ctx)
        if ctx.llm is None:
            ctx.count("profile_fallback")
            return ProfilePlan(layer="fallback", ctx=ctx)
        subject = store.subject_of(draft.speaker)
        current = sorted(store.current(ctx.store.conn, subject), key=lambda f: f.valid_from, reverse=True)
        keys = ["/".join(store.split_key(f.key)[1:]) for f in current[:MAX_PROMPT_KEYS]]
        ctx.count("model_calls_profile")
        try:
            reply = ctx.llm.complete_json(messages(subject, draft.speaker, draft, keys), schema(), max_tokens=40 + 40 * MAX_FACTS)
        except (SchemaError, ContextTooLong) as exc:
            log.info("profile reply unusable (%s); profile unchanged", type(exc).__name__)
            ctx.count("profile_fallback")
            return ProfilePlan(layer="fallback", ctx=ctx)
        facts = facts_from_reply(reply.value, subject, draft.content, on_drop=lambda why: ctx.count(f"profile_dropped_{why}"),
                                 speaker=draft.speaker)
        return ProfilePlan(facts, "model", draft.event_time, ctx)

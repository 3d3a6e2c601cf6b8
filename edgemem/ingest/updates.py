"""Deterministic detection of a newer note that updates an older one (the SUPERSEDES part of the gate).

MemFly's gated update (§3.3) asks the model whether a new unit conflicts with an old one. With the
small default model that question is not usable, neither as the gate's relation label nor asked
directly ("is the OLD note outdated after the NEW one?", schema-constrained yes/no). So this step is
rules, and cheap enough to run on every note:

* **Stages of a plan on the same object.** A statement is placed on a ladder: exploring (1:
  "researching adoption agencies", "looking into ...", "planning to ..."), committing (2: "applied
  to ...", "signed up for ...", "enrolled in ..."), an outcome (3: "passed ...", "got accepted ...",
  "finished ...") or an end (4: "quit ...", "cancelled ...", "gave up ..."). A newer note at a later
  stage supersedes an older one at an earlier stage when both stages name the same object: of the
  few content words after each verb, compared by their first five letters ("agencies" / "agency"),
  two are shared or the first one is the same. One shared word was not enough: "signed up for a
  pottery class" is not ended by "finished another pottery project".
* **Life facts that change.** Where someone lives, works or who they are with changes by specific
  words ("moved to", "quit my job", "broke up"); a newer change in a domain supersedes an older
  statement of the same domain, whatever its object (Paris -> Berlin share no word). The old note
  must state the domain without changing it itself: "since I lost my job" repeats "I lost my job".

Both rules apply only between notes of the same speaker said on an earlier day; see
``tests/ingest/test_updates.py`` for the decisions pinned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from edgemem.text import STOPWORDS, tokens

OBJECT_WORDS = 8  # words after the verb that name what the stage is about
STEM = 5

_STAGES: list[tuple[int, re.Pattern[str]]] = [
    (1, re.compile(r"\b(?:researching|looking (?:into|for|at)|look(?:ed)? into|search(?:ing)? for|"
                   r"considering|thinking (?:about|of)|plann?(?:ing|ed)? (?:to|on|for)|hoping to|keen on|"
                   r"interested in|saving (?:up )?for)\b", re.I)),
    (2, re.compile(r"\b(?:appl(?:y|ied|ying) (?:to|for)|sign(?:ed|ing)? up (?:for|to|with)|"
                   r"regist(?:er|ered|ering) (?:for|with|at)|enroll?(?:ed|ing)? (?:in|at|for)|booked|submitted|"
                   r"put (?:in|down) (?:an? )?(?:offer|deposit|application))\b", re.I)),
    (3, re.compile(r"\b(?:passed|got (?:accepted|approved|hired|the (?:job|offer|place|keys))|"
                   r"(?:was|been|got) (?:accepted|approved|hired) (?:by|at|to|for|into)|finished|completed|"
                   r"graduated (?:from)?|adopted|signed the|closed on)\b", re.I)),
    (4, re.compile(r"\b(?:quit|stopped|cancel+ed|gave up|dropped out of|no longer|withdrew from|turned down|"
                   r"pulled out of)\b", re.I)),
]

# A domain: what states it (an old note) and what changes it (a new note). First person only.
_DOMAINS: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "home": (
        re.compile(r"\bI(?:'m| am)? (?:live|living|lived) in\b|\bmy (?:home|house|flat|apartment) in\b|\bI (?:just )?moved (?:to|into)\b", re.I),
        re.compile(r"\b(?:I|we)(?:'ve| have| just| recently| finally)* (?:moved|relocated) (?:to|into|out|back)\b|"
                   r"\b(?:I'm|I am|we're|we are) moving (?:to|into|out)\b", re.I),
    ),
    "job": (
        re.compile(r"\bI(?:'m| am)? (?:work|working|worked) (?:as|at|for)\b|\bmy (?:job|work|position|boss) (?:at|as|is)\b|\bI(?:'m| am) employed\b", re.I),
        re.compile(r"\b(?:quit|left|lost) my (?:job|work|position)\b|\b(?:got|was|been) (?:fired|laid off|promoted)\b|"
                   r"\b(?:got|started|landed|accepted) (?:a|my) new (?:job|position)\b|\bI(?:'ve| have| just)* retired\b", re.I),
    ),
    "partner": (
        re.compile(r"\bmy (?:boyfriend|girlfriend|partner|husband|wife|fianc[ée]e?)\b|\bI(?:'m| am) (?:single|dating|married|engaged|seeing someone)\b", re.I),
        re.compile(r"\bI(?:'ve| have| just)* (?:got|gotten) (?:married|engaged|divorced)\b|\b(?:we|I) (?:just )?(?:broke up|split up|separated|divorced)\b|"
                   r"\bI(?:'m| am) (?:single|divorced) (?:now|again)\b", re.I),
    ),
}


DOMAIN_WORDS = {
    "home": ("live", "living", "home", "house", "flat", "apartment", "moved"),
    "job": ("work", "working", "job", "boss", "employed", "position"),
    "partner": ("boyfriend", "girlfriend", "partner", "husband", "wife", "fiance", "fiancee", "dating", "married", "engaged", "single"),
}


@dataclass(frozen=True)
class Stage:
    rank: int
    stems: frozenset[str]
    head: str  # the first object stem: what the verb is about
    words: tuple[str, ...]  # the object words themselves (to search for earlier notes by)


def same_object(a: Stage, b: Stage) -> bool:
    """Two stages name one object: two shared stems, or the same first object word."""
    return len(a.stems & b.stems) >= 2 or a.head == b.head


def stages(text: str, names: frozenset[str] = frozenset()) -> list[Stage]:
    """Every plan stage the text states, with the content words after its verb and their stems."""
    out = []
    for rank, pattern in _STAGES:
        for match in pattern.finditer(text):
            after = tokens(text[match.end():])[:OBJECT_WORDS]
            words = tuple(w for w in after if len(w) >= 4 and w not in STOPWORDS and w not in names)
            if words:
                stems = [w[:STEM] for w in words]
                out.append(Stage(rank, frozenset(stems), stems[0], words))
    return out


def domains(text: str, *, change: bool) -> set[str]:
    """Domains the text states (``change=False``) or changes (``change=True``)."""
    return {name for name, (state, moved) in _DOMAINS.items() if (moved if change else state).search(text)}


def update_reason(old: str, new: str, names: frozenset[str] = frozenset()) -> str | None:
    """Why ``new`` (said later by the same person) supersedes ``old``: "stage", "home", ...; None if it does not.

    ``names`` are lower-cased words never taken as a shared object (the speakers' names).
    """
    # The old note must state the domain, not report a change of it too: "since I lost my job" after
    # "I lost my job" repeats the change (and "my job at" inside a change sentence is not a state).
    hit = domains(new, change=True) & (domains(old, change=False) - domains(old, change=True))
    if hit:
        return sorted(hit)[0]
    later = [s for s in stages(new, names) if s.rank >= 2]
    if not later:
        return None
    for before in stages(old, names):
        for after in later:
            if before.rank < after.rank and same_object(before, after):
                return "stage"
    return None


def search_terms(new: str, names: frozenset[str] = frozenset()) -> str | None:
    """Words to look up earlier notes by when ``new`` states a change; None when it states none
    (most notes: then no search is made). A domain change searches the domain's own words."""
    changed = domains(new, change=True)
    later = [s for s in stages(new, names) if s.rank >= 2]
    if not changed and not later:
        return None
    words = [w for s in later for w in s.words] + [w for d in sorted(changed) for w in DOMAIN_WORDS[d]]
    return " ".join(dict.fromkeys(words))

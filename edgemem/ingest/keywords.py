"""Deterministic keywords and entities (no model): MemFly's keyword layer needs them for every note.

Keywords: content words (not stopwords, not numbers-only), lower-cased, ranked by a simple salience
(capitalised words and longer words first, then first occurrence). Entities: runs of capitalised
words, skipping sentence-initial stopwords ("The", "I"), plus quoted titles.
"""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during
    each few for from further get got had hadn't has hasn't have haven't having he he'd he'll he's her here here's
    hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's
    like me more most mustn't my myself no nor not now of off on once only or other ought our ours ourselves out
    over own really same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through to too
    under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    which while who who's whom why why's will with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves yeah yes oh hey hi hello wow thanks thank okay ok well much many lot lots thing things
    something anything everything going gonna want wanted know think thought make made really pretty sure great
    good nice awesome amazing cool totally definitely always never even still though one two day days time times
    """.split()
)

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]")
_CAP_RUN = re.compile(r"\b(?:[A-Z][a-zA-Z'\-]+)(?:\s+(?:of|the|de|van|von)?\s*[A-Z][a-zA-Z'\-]+)*")
_QUOTED = re.compile(r"[\"“]([^\"”]{2,60})[\"”]")


def tokens(text: str) -> list[str]:
    return [t.lower().strip("'-") for t in _TOKEN.findall(text)]


def extract_keywords(text: str, limit: int = 10) -> list[str]:
    seen: dict[str, float] = {}
    for pos, raw in enumerate(_TOKEN.findall(text)):
        word = raw.lower().strip("'-")
        if len(word) < 3 or word in STOPWORDS:
            continue
        score = len(word) / 10 + (1.0 if raw[0].isupper() and pos > 0 else 0.0) - pos / 1000
        seen[word] = max(seen.get(word, -1e9), score)
    return [w for w, _ in sorted(seen.items(), key=lambda kv: -kv[1])[:limit]]


def extract_entities(text: str, limit: int = 10) -> list[str]:
    found: dict[str, None] = {}
    for match in _CAP_RUN.finditer(text):
        words = match.group(0).split()
        while words and words[0].lower() in STOPWORDS:
            words = words[1:]
        if words:
            found[" ".join(words)] = None
    for match in _QUOTED.finditer(text):
        found[match.group(1).strip()] = None
    return list(found)[:limit]

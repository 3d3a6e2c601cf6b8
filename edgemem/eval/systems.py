"""What the harness asks of a system under evaluation, and what a system hands back.

A system (:class:`edgemem.eval.harness.EdgememSystem`, the baselines of
:mod:`edgemem.eval.baselines`) is built once per conversation and answers each question with
``answer(question, now)``, or with ``retrieve(question, now)`` in retrieval-only runs; ``now`` is
when the benchmark asks the question. Both return a :class:`SystemOutput`. This module is the seam
between the harness and the systems: both import it, neither imports the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


@dataclass
class SystemOutput:
    """What a system produced for one question (``text`` is None in retrieval-only runs)."""

    text: str | None
    items: list[Any] = field(default_factory=list)  # notes / evidence in the order the system ranked them
    trace: dict = field(default_factory=dict)
    packed_tokens: int | None = None
    query_id: str | None = None
    context_raw_ids: list[int] | None = None  # full-context: every turn in the window


class System(Protocol):
    name: str

    def answer(self, question: str, now: datetime | None) -> SystemOutput: ...

    def retrieve(self, question: str, now: datetime | None) -> SystemOutput: ...

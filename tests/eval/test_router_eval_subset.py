"""router_eval --locomo keeps the questions of one split or of the listed samples."""

from __future__ import annotations

import pytest

from edgemem.errors import BadInput
from edgemem.eval.router_eval import locomo_subset

QUESTIONS = [{"q": f"q{i}", "category": 1, "sample_id": sid} for i, sid in enumerate(["conv-26", "conv-42", "conv-43"])]


def test_split_and_samples_filter_locomo_questions() -> None:
    assert [q["sample_id"] for q in locomo_subset(QUESTIONS, "check", None)] == ["conv-42", "conv-43"]
    assert [q["sample_id"] for q in locomo_subset(QUESTIONS, "tune", None)] == ["conv-26"]
    assert [q["sample_id"] for q in locomo_subset(QUESTIONS, "check", ["conv-43"])] == ["conv-43"]
    assert locomo_subset(QUESTIONS, None, None) == QUESTIONS
    with pytest.raises(BadInput, match="no LoCoMo question"):
        locomo_subset(QUESTIONS, "tune", ["conv-42"])

"""``edgemem bench --soak``: quarters of ingestion and questions in one process, memory reported."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from edgemem.errors import BadInput
from edgemem.eval import soak


TOPICS = [  # distinct turns, so the gate merges none of them
    "I went hiking near Lake Bled with my dog Pepper.", "My sister started a pottery class on Tuesdays.",
    "We repainted the kitchen a pale green colour.", "The dentist said my wisdom tooth has to come out.",
    "I finished reading a novel about Antarctic explorers.", "Our team shipped the billing dashboard at work.",
    "I planted tomatoes and basil on the balcony.", "My flight to Lisbon was delayed by three hours.",
    "Ben adopted a grey kitten called Smoke.", "I signed up for a beginners' salsa course.",
    "The landlord finally fixed the leaking shower.", "I ran my first 10K race in under an hour.",
]


def locomo_file(tmp_path: Path, sessions: int = 4, turns: int = 3) -> Path:
    conv: dict = {"speaker_a": "Ana", "speaker_b": "Ben"}
    qa = []
    for s in range(1, sessions + 1):
        conv[f"session_{s}_date_time"] = f"1:00 pm on {s} May, 2023"
        conv[f"session_{s}"] = [
            {"speaker": "Ana" if t % 2 == 0 else "Ben", "dia_id": f"D{s}:{t + 1}", "text": TOPICS[(s * turns + t) % len(TOPICS)]}
            for t in range(turns)
        ]
        qa.append({"question": f"Where did Ana hike in week {s}?", "answer": f"lake {s * 10}", "evidence": [f"D{s}:1"], "category": 4})
    qa.append({"question": "What is Ana's favourite opera?", "answer": "none", "evidence": [], "category": 5})
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps([{"sample_id": "tiny-1", "conversation": conv, "qa": qa}]))
    return path


def test_workload_takes_whole_sessions_and_only_questions_they_answer(tmp_path: Path, settings) -> None:
    work = soak.load_workload(locomo_file(tmp_path), 5, settings)
    assert [len(s.turns) for s in work.sessions] == [3, 3]
    assert [(q, need) for _, q, need in work.questions] == [("Where did Ana hike in week 1?", 1), ("Where did Ana hike in week 2?", 2)]
    with pytest.raises(BadInput, match="holds 12 turns; the soak needs 50"):  # 4 sessions of 3
        soak.load_workload(locomo_file(tmp_path), 50, settings)


def test_quarters_split_by_turns() -> None:
    sessions = [type("S", (), {"turns": [0] * n})() for n in (5, 5, 5, 5, 5, 5, 5, 5)]
    parts = soak._split(sessions, 4)
    assert [len(p) for p in parts] == [2, 2, 2, 2]


@pytest.mark.model
@pytest.mark.slow
def test_soak_reports_memory_per_quarter_and_the_cache_accounting(tmp_path: Path, settings) -> None:
    small = dataclasses.replace(settings, model="smollm2-135m", n_ctx=2048, prompt_cache_mb=32)
    result = soak.run_soak(small, locomo_file(tmp_path, turns=2), turns=8, questions=4, quarters=4)
    assert result["turns"] == 8 and result["questions"] == 4 and result["notes"] == 8
    assert [r["quarter"] for r in result["quarters"]] == [1, 2, 3, 4]
    assert all(r["rss_mib"] > 0 and r["peak_mib"] >= r["rss_mib"] for r in result["quarters"])
    cache = result["prompt_cache"]
    assert cache["final"]["bytes"] <= cache["final"]["capacity_bytes"] == 32 << 20
    assert cache["ask"]["calls"] >= 4 and cache["ingest"]["calls"] + cache["ask"]["calls"] == result["model_calls"]
    assert result["settings"]["cpu_repack"]["setting"] == "auto"
    text = soak.format_result(result)
    assert "last quarter's growth" in text and "hit rate" in text and "saved" in text

"""``edgemem bench --paths``: both paths on real data, with the real store and embedder and the
smallest GGUF (a real model: the figures are real, only small)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgemem.eval import bench_paths


def tiny_locomo(path: Path) -> Path:
    turns = [("Ana", "I adopted a cat called Miso last week."), ("Ben", "Lovely! I started learning the cello."),
             ("Ana", "Miso hates the vacuum cleaner."), ("Ben", "My cello teacher is called Ruth.")]
    sample = {"sample_id": "tiny", "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": s, "dia_id": f"D1:{i}", "text": t} for i, (s, t) in enumerate(turns, start=1)]},
        "qa": [{"question": "What is the name of Ana's cat?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
               {"question": "Who teaches Ben the cello?", "answer": "Ruth", "evidence": ["D1:4"], "category": 4},
               {"question": "What did Ana's brother bake?", "adversarial_answer": "bread", "evidence": [],
                "category": 5}]}
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_markdown_folder_is_about_the_size_asked(tmp_path):
    size = bench_paths.markdown_folder(tmp_path / "docs", 0.25, seed=3)
    files = sorted((tmp_path / "docs").glob("*.md"))
    assert 0.25 * 1024 * 1024 <= size < 0.25 * 1024 * 1024 + 110_000
    assert sum(f.stat().st_size for f in files) == size
    text = files[0].read_text()
    assert text.startswith("# ") and "\n## " in text
    # Seeded: the same folder twice.
    assert bench_paths.markdown_folder(tmp_path / "again", 0.25, seed=3) == size
    assert (tmp_path / "again" / files[0].name).read_text() == text


def test_paths_bench_measures_both_paths(tmp_path, settings, embedder, small_llm):
    cfg = bench_paths.PathsConfig(tiny_locomo(tmp_path / "tiny.json"), questions=3, markdown_mb=0.05,
                                  markdown_timeout=600, backlog_asks=2)
    result = bench_paths.run_paths(settings, cfg, llm=small_llm, embedder=embedder)
    ing = result["ingest_conversation"]
    assert ing["turns"] == 4 and ing["s_per_turn"] > 0 and ing["model_calls_per_turn"] >= 0
    ask = result["ask"]
    assert ask["questions"] == 3 and ask["total_ms"]["median"] > 0
    assert ask["pipeline_tokens"]["median"] > 0
    assert ask["category5_abstention"] is not None and ask["mem0_f1"] is not None
    rows = result["ask_rows"]  # one row per question asked, in order, with what the summary aggregates
    assert len(rows) == 3 and len({r["key"] for r in rows}) == 3 and all(r["route_tag"] for r in rows)
    assert sorted(r["total_ms"] for r in rows)[1] == pytest.approx(ask["total_ms"]["median"], abs=1e-3)
    assert "question" not in rows[0] and "prediction" not in rows[0]  # timings and scores, never the text
    md = result["ingest_markdown"]
    assert md["finished"] and md["left"] == 0 and md["chunks"] >= 1 and md["files"] == 1
    text = bench_paths.format_paths(result)
    for label in ("s/turn", "time to first token", "pipeline tokens per question", "ingest to organised"):
        assert label in text

"""``edgemem bench`` at tiny sizes: every section runs and reports medians, ratios and RSS."""

import json

import pytest
from typer.testing import CliRunner

from edgemem.eval.bench import BenchConfig, SyntheticStore, Vocabulary, format_result, run_bench
from edgemem.store import notes


def tiny(**kwargs) -> BenchConfig:
    base = {"sizes": [40, 120], "store_sizes": [40, 120], "queries": 3, "commits": 3, "ingest_turns": 12,
            "steps_turns": 3, "ask_questions": 2, "progress": False}
    return BenchConfig(**{**base, **kwargs})


def test_vocabulary_is_seeded():
    a, b = Vocabulary(5), Vocabulary(5)
    assert [a.sentence() for _ in range(3)] == [b.sentence() for _ in range(3)]
    assert Vocabulary(6).sentence() != Vocabulary(5).sentence()


def test_synthetic_store_grows_to_each_size(tmp_path):
    syn = SyntheticStore(tmp_path / "s.db", Vocabulary(0), 384, seed=0)
    try:
        assert syn.grow(50, batch=20) > 0
        assert notes.count_active(syn.store.conn) == 50
        syn.grow(70)
        assert notes.count_active(syn.store.conn) == 70
        assert len(syn.commit_latency(2)) == 2 and notes.count_active(syn.store.conn) == 72
    finally:
        syn.close()


def test_bench_without_model(settings, embedder):
    result = run_bench(settings, tiny(no_model=True), embedder=embedder)
    assert set(result["store"]) == {"40", "120"} and set(result["retrieval"]) == {"40", "120"}
    store = result["store"]["120"]
    assert store["bulk_insert_notes_per_s"] > 0 and store["knn_ms"]["n"] == 3 and store["commit_ms"]["n"] == 3
    assert store["knn_ms"]["median"] <= store["knn_ms"]["p90"]
    retrieval = result["retrieval"]["40"]
    assert retrieval["total_ms"]["median"] >= retrieval["hybrid_ms"]["median"]
    ingest = result["ingest"]["no_steps"]
    assert ingest["turns"] == 12 and ingest["notes"] == 12 and ingest["notes_per_s"] > 0
    assert "default_steps" not in result["ingest"] and "ask" not in result
    assert set(result["ratios"]) == {"knn_120_vs_40", "fts_120_vs_40", "retrieval_120_vs_40"}
    assert result["rss_mib"]["peak"] > 0
    text = format_result(result)
    assert "store 120: KNN k=10 ms" in text and "random unit vectors" in text and "--no-model" in text


def test_store_only(settings):
    result = run_bench(settings, tiny(store_only=True, store_sizes=[30]))  # needs no embedder
    assert set(result["store"]) == {"30"} and "retrieval" not in result and "ingest" not in result
    assert "--no-model" not in format_result(result)


@pytest.mark.model
@pytest.mark.slow
def test_bench_ask_latency_split_with_a_real_model(settings, embedder, small_llm):
    config = tiny(sizes=[30], store_sizes=[30], ingest_turns=4, steps_turns=2, ask_questions=1)
    result = run_bench(settings, config, embedder=embedder, llm=small_llm)
    ask = result["ask"]
    assert ask["questions"] == 1 and ask["model"] == small_llm.name
    assert ask["prefill_ms"]["median"] > 0 and ask["generate_ms"]["median"] > 0
    assert ask["total_ms"]["median"] >= ask["prefill_ms"]["median"]
    assert sum(ask["share"].values()) == pytest.approx(1.0, abs=0.01)
    assert result["ingest"]["default_steps"]["turns"] == 2
    assert "ingest_no_steps_vs_default_steps" in result["ratios"]


def test_bench_command(tmp_path):
    import typer

    from edgemem.eval.cli import bench

    app = typer.Typer()
    app.command()(bench)
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, ["--store-only", "--store-sizes", "20,40", "--queries", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "store 40: FTS top-10 ms" in result.output
    assert set(json.loads(out.read_text())["store"]) == {"20", "40"}

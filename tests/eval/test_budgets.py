"""The budget fit: the smallest budget on the grid that keeps the share of the best coverage asked for."""

from __future__ import annotations

from edgemem.eval.budgets import Point, fit
from edgemem.recall.packer import TIER2_BUDGET


def test_fit_picks_the_smallest_budget_keeping_the_coverage() -> None:
    points = []
    for coverage_at in ({100: 0.5, 200: 0.79, 400: 0.8, 800: 0.8}, {100: 0.5, 200: 0.81, 400: 1.0, 800: 1.0}):
        for budget, coverage in coverage_at.items():
            points.append(Point("targeted-extraction", budget, budget // 2, coverage))
    points += [Point("temporal-reasoning", b, b, c) for b, c in ((100, 0.2), (200, 0.2), (400, 0.9))]
    table = fit(points, 0.98)
    targeted = table["targeted-extraction"]
    assert targeted["rows"][400] == {"coverage": 0.9, "tokens": 200, "n": 2}
    assert targeted["fitted"] == 400  # 200 keeps 0.8 of 0.9: under 98%
    assert fit(points, 0.85)["targeted-extraction"]["fitted"] == 200
    assert table["temporal-reasoning"]["fitted"] == 400
    assert targeted["current"] == TIER2_BUDGET["targeted-extraction"]  # the budget in use, beside the fit


def test_a_missing_file_or_store_is_a_one_line_error(tmp_path, capsys) -> None:
    from edgemem.eval.budgets import main

    assert main([str(tmp_path / "absent.json"), "--stores", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err


def test_usage_counts_prefilled_tokens_without_kv_cache_hits() -> None:
    from edgemem.eval.harness import Usage
    from edgemem.runtime.llm import Completion

    usage = Usage()
    usage.add(Completion("a", 900, 10, 1.0, 1.0, cached_tokens=850))
    usage.add(Completion("b", 300, 5, 1.0, 1.0))
    before = Usage(calls=1, prompt_tokens=900, completion_tokens=10, cached_tokens=850)
    assert (usage.prompt_tokens, usage.cached_tokens) == (1200, 850)
    assert usage.since(before).cached_tokens == 0 and usage.since(before).prompt_tokens == 300

"""The budget fit: the smallest budget on the grid that keeps the share of the best coverage asked for."""

from __future__ import annotations

from edgemem.eval.budgets import Point, fit


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
    assert targeted["current"] == 600

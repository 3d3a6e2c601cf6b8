"""Fit the packer's Tier-2 budgets on the *tune* split: how much of the gold evidence each budget packs.

    python -m edgemem.eval.budgets FILE --stores DIR [--split tune] [--keep 0.98]

Every packed token is prefilled before the first answer token, so a tag's raw budget should be the
smallest that still packs the evidence its questions need. For each question of the split's
conversations (stores ingested by ``edgemem eval locomo --stores DIR``), this routes the question
as the read path does without a model, retrieves once, then packs the same evidence under every
budget of a grid and records the packed tokens and the share of the gold evidence turns whose
notes made it into the pack. The fitted budget of a tag is the smallest on the grid whose mean
coverage keeps ``--keep`` of the coverage at the largest budget. No answer is generated: the
budgets are then judged by answer F1 with ``edgemem bench`` (see docs/measurements.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

from edgemem import config
from edgemem.errors import EdgememError
from edgemem.eval import locomo, splits
from edgemem.eval.harness import gold_note_ids, safe_name
from edgemem.recall import packer, tiers

GRID = (100, 200, 300, 400, 600, 800, 1000, 1200, 1600, 2400)


@dataclasses.dataclass
class Point:
    tag: str
    budget: int
    tokens: int
    coverage: float  # share of the question's gold turns whose notes were packed


def measure(conn, question: str, tag: str, gold: list[int], embed, count, *, reference=None,
            grid=GRID, flow_down: bool = False) -> list[Point]:
    """Retrieve once for ``question`` along ``tag``, then pack under every budget of ``grid``."""
    gathered = tiers.gather(conn, tag, question, embed, reference=reference)
    if gathered.tier == 1 or not gold:
        return []
    ceiling = packer.ceiling_for(8192)
    out = []
    for budget in grid:
        packed = packer.pack(question, tag, gathered.items, count, ceiling=ceiling, tier2_budget=budget,
                             flow_down=flow_down)
        used = set(packed.items_used)
        out.append(Point(tag, budget, packed.total_tokens, sum(1 for g in gold if g in used) / len(gold)))
    return out


def fit(points: list[Point], keep: float) -> dict[str, dict]:
    """Per tag: mean coverage and tokens per budget, and the smallest budget keeping ``keep`` of the best."""
    by: dict[str, dict[int, list[Point]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        by[p.tag][p.budget].append(p)
    out = {}
    for tag, budgets in sorted(by.items()):
        rows = {b: {"coverage": round(mean(p.coverage for p in ps), 3), "tokens": round(mean(p.tokens for p in ps)),
                    "n": len(ps)} for b, ps in sorted(budgets.items())}
        top = rows[max(rows)]["coverage"]
        chosen = min(b for b, r in rows.items() if r["coverage"] >= keep * top)
        out[tag] = {"rows": rows, "fitted": chosen, "current": packer.TIER2_BUDGET.get(tag)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edgemem.eval.budgets", description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a LoCoMo-format file")
    parser.add_argument("--stores", type=Path, required=True, help="the stores of `edgemem eval locomo --stores`")
    parser.add_argument("--split", default=splits.TUNE, choices=(splits.TUNE, splits.CHECK))
    parser.add_argument("--keep", type=float, default=0.98, help="share of the best coverage a fitted budget keeps")
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args(argv)

    from edgemem.engine import Engine
    from edgemem.recall.router import Router

    try:
        settings = config.load()
        conversations = locomo.load(args.path, max_file_bytes=settings.max_file_bytes,
                                    max_text_bytes=settings.max_text_bytes)
        wanted = set(splits.samples_in(args.split, [c.id for c in conversations]))
    except EdgememError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    points: list[Point] = []
    for conv in conversations:
        if conv.id not in wanted:
            continue
        store = args.stores / f"{safe_name(conv.id)}.db"
        if not store.exists():
            print(f"error: {store} does not exist; ingest with `edgemem eval locomo --stores {args.stores}`",
                  file=sys.stderr)
            return 2
        engine = Engine.open(dataclasses.replace(settings, db_path=store))
        try:
            router = Router(engine.runtime.embed, None)  # the engine's embedder closes with it
            conn, embed, count = engine.store.conn, engine.runtime.embed, engine.runtime.tokenizer.count_tokens
            reference = conv.now.date() if conv.now else None
            for q in conv.questions:
                if str(q.category) == "5":
                    continue  # nothing to cover: the answer is an abstention
                tag = router.route(q.question).tag
                points += measure(conn, q.question, tag, gold_note_ids(conn, q.evidence), embed, count,
                                  reference=reference)
        finally:
            engine.close()
    table = fit(points, args.keep)
    for tag, row in table.items():
        cells = "  ".join(f"{b}:{r['coverage']:.2f}/{r['tokens']}" for b, r in row["rows"].items())
        n = next(iter(row["rows"].values()))["n"]
        print(f"{tag:22} n={n:<4} fitted {row['fitted']:>5} (now {row['current']})  budget:coverage/tokens {cells}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

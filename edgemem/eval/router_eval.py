"""Router accuracy: on a labelled question set, and per category on LoCoMo (MemFlow Appendix E.1).

MemFlow reports the routing accuracy of its cascade (87.7% overall, 88.6% on LoCoMo, Table 8).
This module measures edgemem's router the same two ways:

* a labelled set (JSONL of ``{"q": question, "tag": tag}``): accuracy, the per-tag confusion
  matrix, and how many questions each layer of the cascade decided (and got right);
* a LoCoMo file: every question routed, scored with ``metrics.router_correct`` (our reading of
  which tags suit each LoCoMo category, ``metrics.LOCOMO_CATEGORY_TAGS``), per category.

    python -m edgemem.eval.router_eval tests/data/router_labelled.jsonl [--model]
    python -m edgemem.eval.router_eval --locomo PATH [--model]

Without ``--model`` the router has no language model (rules → kNN → heuristic); with it, the
default model is loaded through the runtime's interactive lane, as the daemon would route.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from edgemem.errors import BadInput, EdgememError
from edgemem.eval.metrics import LOCOMO_CATEGORY_NAMES, LOCOMO_CATEGORY_TAGS, router_correct
from edgemem.recall.router import LAYERS, TAGS, Router, parse_examples

# Column headers of the confusion matrix (the tags are too long for a table).
SHORT: dict[str, str] = {
    "profile-injection": "profile",
    "targeted-extraction": "targeted",
    "temporal-reasoning": "temporal",
    "conflict-resolution": "conflict",
    "broad-summarization": "broad",
    "constraint-validation": "constraint",
    "state-tracking": "state",
}


def load_labelled(path: str | Path) -> list[dict[str, str]]:
    """A labelled set as ``[{"q": question, "tag": tag}, ...]``; BadInput on a bad file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read labelled set {path}: {exc.strerror}") from None
    return [{"q": q, "tag": tag} for q, tag in parse_examples(text.splitlines(), source=str(path))]


def load_locomo(path: str | Path) -> list[dict[str, Any]]:
    """LoCoMo's questions as ``[{"q", "category", "sample_id"}, ...]``; BadInput on a bad file."""
    try:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot read LoCoMo file {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"LoCoMo file {path} is not JSON ({exc.msg})") from None
    if not isinstance(samples, list):
        raise BadInput(f"LoCoMo file {path}: expected a list of samples")
    out: list[dict[str, Any]] = []
    for sample in samples:
        if not isinstance(sample, dict) or not isinstance(sample.get("qa"), list):
            raise BadInput(f"LoCoMo file {path}: a sample has no 'qa' list")
        for qa in sample["qa"]:
            category = qa.get("category") if isinstance(qa, dict) else None
            if category not in LOCOMO_CATEGORY_TAGS or not isinstance(qa.get("question"), str):
                raise BadInput(f"LoCoMo file {path}: a question without text or a known category (1-5)")
            out.append({"q": qa["question"], "category": category, "sample_id": sample.get("sample_id")})
    return out


def evaluate(router: Router, items: Iterable[Mapping[str, str]]) -> dict[str, Any]:
    """Route every ``{"q", "tag"}`` item; accuracy, confusion matrix, per-tag and per-layer counts.

    ``confusion[gold][predicted]`` counts questions; ``layers[layer]`` how many each layer decided
    and ``layer_correct[layer]`` how many of those were right; ``model_errors`` how many model
    replies failed validation (those are decided by the heuristic); ``errors`` lists the misses.
    """
    confusion = {gold: dict.fromkeys(TAGS, 0) for gold in TAGS}
    layers: Counter[str] = Counter()
    layer_correct: Counter[str] = Counter()
    errors: list[dict[str, str]] = []
    model_errors = 0
    started = time.perf_counter()
    for item in items:
        question, gold = item["q"], item["tag"]
        if gold not in TAGS:
            raise BadInput(f"unknown tag {gold!r} for question {question!r}")
        route = router.route(question)
        confusion[gold][route.tag] += 1
        layers[route.layer] += 1
        model_errors += "model_error" in route.detail
        if route.tag == gold:
            layer_correct[route.layer] += 1
        else:
            errors.append({"q": question, "gold": gold, "predicted": route.tag, "layer": route.layer})
    n = sum(layers.values())
    correct = sum(layer_correct.values())
    per_tag = {}
    for tag in TAGS:
        total = sum(confusion[tag].values())
        per_tag[tag] = {"n": total, "correct": confusion[tag][tag], "accuracy": confusion[tag][tag] / total if total else None}
    return {
        "kind": "labelled",
        "n": n,
        "correct": correct,
        "accuracy": correct / n if n else None,
        "confusion": confusion,
        "per_tag": per_tag,
        "layers": {layer: layers[layer] for layer in LAYERS},
        "layer_correct": {layer: layer_correct[layer] for layer in LAYERS},
        "model_errors": model_errors,
        "errors": errors,
        "seconds": time.perf_counter() - started,
    }


def evaluate_locomo(router: Router, questions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Route LoCoMo questions; per category: accuracy under ``router_correct``, tags, layers."""
    categories: dict[int, dict[str, Any]] = {}
    overall_layers: Counter[str] = Counter()
    model_errors = 0
    started = time.perf_counter()
    for item in questions:
        category = int(item["category"])
        route = router.route(item["q"])
        group = categories.setdefault(category, {"n": 0, "correct": 0, "tags": Counter(), "layers": Counter()})
        group["n"] += 1
        group["correct"] += router_correct(category, route.tag)
        group["tags"][route.tag] += 1
        group["layers"][route.layer] += 1
        overall_layers[route.layer] += 1
        model_errors += "model_error" in route.detail
    for group in categories.values():
        group["accuracy"] = group["correct"] / group["n"]
        group["tags"] = {tag: group["tags"][tag] for tag in TAGS if group["tags"][tag]}
        group["layers"] = {layer: group["layers"][layer] for layer in LAYERS if group["layers"][layer]}
    n = sum(g["n"] for g in categories.values())
    correct = sum(g["correct"] for g in categories.values())
    return {
        "kind": "locomo",
        "n": n,
        "correct": correct,
        "accuracy": correct / n if n else None,
        "categories": dict(sorted(categories.items())),
        "layers": {layer: overall_layers[layer] for layer in LAYERS},
        "model_errors": model_errors,
        "seconds": time.perf_counter() - started,
    }


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join([cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]).rstrip()

    return [line(header), "-" * len(line(header)), *(line(row) for row in rows)]


def _layer_lines(result: Mapping[str, Any]) -> list[str]:
    parts = []
    for layer in LAYERS:
        count = result["layers"][layer]
        right = result.get("layer_correct", {}).get(layer)
        parts.append(f"{layer} {count}" + (f" ({right} right)" if right is not None and count else ""))
    lines = ["decided by: " + ", ".join(parts)]
    if result["model_errors"]:
        lines.append(f"model replies rejected (heuristic used): {result['model_errors']}")
    return lines


def format_report(result: Mapping[str, Any]) -> str:
    """A plain-text report of ``evaluate`` or ``evaluate_locomo``'s result."""
    lines = [f"router accuracy: {result['correct']}/{result['n']} = {_percent(result['accuracy'])}"]
    lines += _layer_lines(result)
    lines.append(f"time: {result['seconds']:.1f} s")
    lines.append("")
    if result["kind"] == "labelled":
        header = ["gold \\ routed"] + [SHORT[t] for t in TAGS] + ["accuracy"]
        rows = [
            [tag] + [str(result["confusion"][tag][p]) for p in TAGS] + [_percent(result["per_tag"][tag]["accuracy"])]
            for tag in TAGS
        ]
        lines += _table(header, rows)
        if result["errors"]:
            lines += ["", "misrouted:"]
            lines += [f"  [{e['layer']}] {e['gold']} -> {e['predicted']}: {e['q']}" for e in result["errors"]]
    else:
        header = ["category", "n", "accuracy", "accepted tags", "routed to", "decided by"]
        rows = []
        for category, group in result["categories"].items():
            rows.append([
                f"{category} {LOCOMO_CATEGORY_NAMES.get(category, '?')}",
                str(group["n"]),
                _percent(group["accuracy"]),
                ", ".join(SHORT[t] for t in TAGS if t in LOCOMO_CATEGORY_TAGS[category]),
                ", ".join(f"{SHORT[t]} {c}" for t, c in group["tags"].items()),
                ", ".join(f"{layer} {c}" for layer, c in group["layers"].items()),
            ])
        lines += _table(header, rows)
        lines += ["", "accepted tags per category: edgemem.eval.metrics.LOCOMO_CATEGORY_TAGS"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edgemem.eval.router_eval", description=__doc__.split("\n")[0])
    parser.add_argument("labelled", nargs="?", help="JSONL of {\"q\": question, \"tag\": tag}")
    parser.add_argument("--locomo", metavar="PATH", help="route a LoCoMo file's questions, scored per category")
    parser.add_argument("--model", action="store_true", help="load the default model for the model layer")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a report")
    args = parser.parse_args(argv)
    if bool(args.labelled) == bool(args.locomo):
        parser.error("give either a labelled set or --locomo PATH")

    from edgemem import config
    from edgemem.runtime.runtime import Runtime

    runtime = Runtime(config.load())
    try:
        questions = load_locomo(args.locomo) if args.locomo else load_labelled(args.labelled)
        router = Router(runtime.embedder, llm=runtime.interactive if args.model else None)
        result = evaluate_locomo(router, questions) if args.locomo else evaluate(router, questions)
    except EdgememError as exc:
        print(f"edgemem: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        runtime.close()
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

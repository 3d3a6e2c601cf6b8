"""Router accuracy: on a labelled question set, and per category on LoCoMo (MemFlow Appendix E.1).

MemFlow reports the routing accuracy of its cascade (87.7% overall, 88.6% on LoCoMo, Table 8).
This module measures edgemem's router the same two ways:

* cross-validation (``--cv``): stratified k-fold over the package's labelled examples
  (``recall/data/router_examples.jsonl``), the classifier retrained on each fold's complement, the
  cascade replayed without a model (rules → classifier → fallback): accuracy, confusion matrix,
  the deciding layer, and for each margin threshold how many questions would go to the model;
* a labelled set: JSONL of ``{"q": question, "tag": tag}``, or a LoCoMo-format JSON file whose qa
  items carry an ``intent`` (one of the seven tags), optionally limited to one evaluation split
  (``--split tune|check``, ``edgemem.eval.splits``) or to ``--samples id,id``: accuracy, the
  per-tag confusion matrix (rows gold, columns routed), and how many questions each layer of the
  cascade decided (and got right);
* a LoCoMo file: every question routed, scored with ``metrics.router_correct`` (our reading of
  which tags suit each LoCoMo category, ``metrics.LOCOMO_CATEGORY_TAGS``), per category.

    python -m edgemem.eval.router_eval --cv
    python -m edgemem.eval.router_eval tests/data/router_labelled.jsonl [--model]
    python -m edgemem.eval.router_eval --labelled edgemem/eval/data/personal.json --split check
    python -m edgemem.eval.router_eval --locomo PATH [--split tune|check] [--model]

Without ``--model`` the router has no language model (rules → classifier → fallback: the
classifier's best tag when it is not confident); with it, the default model is loaded through the
runtime's interactive lane, as the daemon would route. "model" in the layer counts of a run
without ``--model`` is always 0; the "fallback" count is how many questions the model would see.
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

import numpy as np

from edgemem.errors import BadInput, EdgememError
from edgemem.eval.metrics import LOCOMO_CATEGORY_NAMES, LOCOMO_CATEGORY_TAGS, router_correct
from edgemem.recall import router as router_module
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


def load_labelled(path: str | Path, *, split: str | None = None, samples: Sequence[str] | None = None) -> list[dict[str, str]]:
    """A labelled set as ``[{"q": question, "tag": tag}, ...]``; BadInput on a bad file.

    ``path`` is JSONL of ``{"q", "tag"}``, or a LoCoMo-format JSON list of samples whose qa items
    carry an ``intent`` tag (items without one are skipped). For the latter, ``split`` keeps the
    samples of one evaluation split and ``samples`` the listed sample ids.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read labelled set {path}: {exc.strerror}") from None
    if text.lstrip().startswith("["):
        return _labelled_samples(text, str(path), split, samples)
    if split or samples:
        raise BadInput(f"{path}: --split and --samples need a LoCoMo-format file with sample ids")
    return [{"q": q, "tag": tag} for q, tag in parse_examples(text.splitlines(), source=str(path))]


def _labelled_samples(text: str, source: str, split: str | None, samples: Sequence[str] | None) -> list[dict[str, str]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{source} is not JSON ({exc.msg})") from None
    if not isinstance(data, list):
        raise BadInput(f"{source}: expected a list of samples")
    wanted = set(samples) if samples else None
    if split is not None:
        from edgemem.eval.splits import CHECK, TUNE, split_of

        if split not in (TUNE, CHECK):
            raise BadInput(f"unknown split {split!r}; expected {TUNE!r} or {CHECK!r}")
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for sample in data:
        if not isinstance(sample, dict) or not isinstance(sample.get("qa"), list):
            raise BadInput(f"{source}: a sample has no 'qa' list")
        sample_id = sample.get("sample_id")
        seen.add(sample_id)
        if wanted is not None and sample_id not in wanted:
            continue
        if split is not None and split_of(sample_id) != split:
            continue
        for qa in sample["qa"]:
            if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
                raise BadInput(f"{source}: a qa item of {sample_id!r} has no question")
            intent = qa.get("intent")
            if intent is None:
                continue
            if intent not in TAGS:
                raise BadInput(f"{source}: unknown intent {intent!r} in {sample_id!r}")
            out.append({"q": qa["question"], "tag": intent, "sample_id": sample_id})
    if wanted is not None and wanted - seen:
        raise BadInput(f"{source}: no sample {', '.join(sorted(map(str, wanted - seen)))}")
    return out


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


def locomo_subset(questions: list[dict[str, Any]], split: str | None, samples: Sequence[str] | None) -> list[dict[str, Any]]:
    """The questions of one evaluation split and/or of the listed sample ids."""
    if split is not None:
        from edgemem.eval.splits import samples_in

        keep = set(samples_in(split, dict.fromkeys(q["sample_id"] for q in questions)))
        questions = [q for q in questions if q["sample_id"] in keep]
    if samples:
        questions = [q for q in questions if q["sample_id"] in set(samples)]
    if not questions:
        raise BadInput("no LoCoMo question is left after --split / --samples")
    return questions


def locomo_training_examples(embed: Any, paths: Sequence[str | Path], split: str = "tune") -> tuple[tuple[tuple[str, str], ...], str]:
    """The questions of LoCoMo files' ``split`` as router training examples, and where they came from.

    A LoCoMo category accepts one or two tags (``LOCOMO_CATEGORY_TAGS``); each question is labelled
    with the accepted tag that a classifier trained on the package examples alone ranks first, so a
    multi-hop question keeps whichever of targeted-extraction and broad-summarization its wording
    reads as. Only *tune* conversations may train the shipped classifier: *check* ones report on it."""
    if split != "tune":
        raise BadInput("the router is trained on a tune split only; check splits report on it")
    questions = locomo_subset([q for path in paths for q in load_locomo(path)], split, None)
    fn = embed.embed if hasattr(embed, "embed") else embed
    package = router_module.load_examples()  # trained here: the shipped file may already hold these questions
    base = router_module.train(router_module.features(fn, [q for q, _ in package]),
                               np.array([TAGS.index(tag) for _, tag in package]))
    probabilities = base.probabilities(router_module.features(fn, [item["q"] for item in questions]))
    examples = []
    for item, p in zip(questions, probabilities, strict=True):
        accepted = LOCOMO_CATEGORY_TAGS[int(item["category"])]
        examples.append((item["q"], max(accepted, key=lambda tag: (p[TAGS.index(tag)], tag))))
    samples = sorted(dict.fromkeys(str(q["sample_id"]) for q in questions))
    return tuple(examples), f"LoCoMo {split} split ({', '.join(samples)}), {len(examples)} questions"


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
    per_tag = _per_tag(confusion)
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


def cross_validation(embed: Any, examples: Sequence[tuple[str, str]] | None = None, *, folds: int = router_module.CV_FOLDS) -> dict[str, Any]:
    """Stratified ``folds``-fold cross-validation of the cascade without a model.

    The classifier is retrained on each fold's complement (``router.cross_validate``); every
    held-out example is then routed as ``Router.route`` would: a single matching rule decides,
    else the out-of-fold classifier, confident at ``CONFIDENT_MARGIN``, else its best tag as the
    fallback (where a model would be asked). The result has ``evaluate``'s fields plus
    ``classifier_accuracy`` (the classifier alone, no rules) and ``thresholds``: per margin
    threshold, the share of rule-less questions below it and the accuracy above and below.
    """
    examples = tuple(examples) if examples is not None else router_module.load_examples()
    fn = embed.embed if hasattr(embed, "embed") else embed
    started = time.perf_counter()
    labels = np.array([TAGS.index(tag) for _, tag in examples])
    x = router_module.features(fn, [q for q, _ in examples])
    probabilities = router_module.cross_validate(x, labels, folds=folds)
    predicted = probabilities.argmax(axis=1)
    margin = router_module.margins(probabilities)
    confusion = {gold: dict.fromkeys(TAGS, 0) for gold in TAGS}
    layers: Counter[str] = Counter()
    layer_correct: Counter[str] = Counter()
    errors: list[dict[str, str]] = []
    ruleless: list[int] = []
    for i, (question, gold) in enumerate(examples):
        matched = router_module.rules(question)
        if len(matched) == 1:
            tag, layer = next(iter(matched)), "rules"
        else:
            ruleless.append(i)
            tag = TAGS[predicted[i]]
            layer = "classifier" if margin[i] >= router_module.CONFIDENT_MARGIN else "fallback"
        confusion[gold][tag] += 1
        layers[layer] += 1
        if tag == gold:
            layer_correct[layer] += 1
        else:
            errors.append({"q": question, "gold": gold, "predicted": tag, "layer": layer})
    thresholds = []
    rows = np.array(ruleless, dtype=int)
    right = predicted[rows] == labels[rows]
    top2 = np.array([labels[i] in np.argsort(-probabilities[i], kind="stable")[:2] for i in rows])
    for t in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5):
        low = margin[rows] < t
        thresholds.append({
            "margin": t,
            "share_below": float(low.mean()) if len(rows) else 0.0,
            "accuracy_above": float(right[~low].mean()) if (~low).any() else None,
            "accuracy_below": float(right[low].mean()) if low.any() else None,
            "top2_below": float(top2[low].mean()) if low.any() else None,
        })
    n = len(examples)
    correct = sum(layer_correct.values())
    per_tag = _per_tag(confusion)
    return {
        "kind": "labelled",
        "cv_folds": folds,
        "n": n,
        "correct": correct,
        "accuracy": correct / n if n else None,
        "classifier_accuracy": float((predicted == labels).mean()) if n else None,
        "confusion": confusion,
        "per_tag": per_tag,
        "layers": {layer: layers[layer] for layer in LAYERS},
        "layer_correct": {layer: layer_correct[layer] for layer in LAYERS},
        "model_errors": 0,
        "errors": errors,
        "thresholds": thresholds,
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
        lines.append(f"model replies rejected (fallback used): {result['model_errors']}")
    return lines


def _per_tag(confusion: dict) -> dict:
    """Per gold tag: questions, right ones, accuracy (None for a tag with none)."""
    out = {}
    for tag in TAGS:
        total = sum(confusion[tag].values())
        out[tag] = {"n": total, "correct": confusion[tag][tag], "accuracy": confusion[tag][tag] / total if total else None}
    return out


def format_report(result: Mapping[str, Any]) -> str:
    """A plain-text report of ``evaluate`` or ``evaluate_locomo``'s result."""
    title = f"{result['cv_folds']}-fold cross-validation, " if "cv_folds" in result else ""
    lines = [f"{title}router accuracy: {result['correct']}/{result['n']} = {_percent(result['accuracy'])}"]
    if "classifier_accuracy" in result:
        lines.append(f"classifier alone (no rules): {_percent(result['classifier_accuracy'])}")
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
        if result.get("thresholds"):
            lines += ["", f"margin threshold (now {router_module.CONFIDENT_MARGIN}) over questions no single rule decides:"]
            lines += _table(
                ["margin <", "to model", "acc above", "acc below", "top-2 below"],
                [[str(t["margin"]), _percent(t["share_below"]), _percent(t["accuracy_above"]),
                  _percent(t["accuracy_below"]), _percent(t["top2_below"])] for t in result["thresholds"]],
            )
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
    parser.add_argument("labelled", nargs="?", help="JSONL of {\"q\": question, \"tag\": tag}, or LoCoMo-format JSON with qa intents")
    parser.add_argument("--labelled", dest="labelled_option", metavar="PATH", help="the same as the positional argument")
    parser.add_argument("--split", choices=("tune", "check"), help="only the samples of this evaluation split (LoCoMo-format file)")
    parser.add_argument("--samples", metavar="ID,ID", help="only these sample ids (LoCoMo-format file)")
    parser.add_argument("--locomo", metavar="PATH", help="route a LoCoMo file's questions, scored per category")
    parser.add_argument("--cv", action="store_true", help="stratified k-fold cross-validation on the package examples")
    parser.add_argument("--folds", type=int, default=router_module.CV_FOLDS, help="folds for --cv (default %(default)s)")
    parser.add_argument("--model", action="store_true", help="load the default model for the model layer")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a report")
    args = parser.parse_args(argv)
    if args.labelled and args.labelled_option:
        parser.error("give the labelled set once")
    labelled = args.labelled or args.labelled_option
    if sum(map(bool, (labelled, args.locomo, args.cv))) == 0:
        parser.error("give a labelled set, --locomo PATH or --cv")
    if (args.split or args.samples) and not (labelled or args.locomo):
        parser.error("--split and --samples apply to a labelled set or --locomo")
    if args.folds < 2:
        parser.error("--folds must be at least 2")
    samples = [s.strip() for s in args.samples.split(",") if s.strip()] if args.samples else None

    from edgemem import config
    from edgemem.runtime.runtime import Runtime

    runtime = Runtime(config.load())
    results: list[dict[str, Any]] = []
    try:
        if args.cv:
            results.append(cross_validation(runtime.embedder, folds=args.folds))
        if labelled or args.locomo:
            router = Router(runtime.embedder, llm=runtime.interactive if args.model else None)
            if labelled:
                results.append(evaluate(router, load_labelled(labelled, split=args.split, samples=samples)))
            if args.locomo:
                results.append(evaluate_locomo(router, locomo_subset(load_locomo(args.locomo), args.split, samples)))
    except EdgememError as exc:
        print(f"edgemem: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        runtime.close()
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=2))
    else:
        print("\n\n".join(format_report(result) for result in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

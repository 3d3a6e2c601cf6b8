"""``edgemem eval locomo``: LoCoMo (Maharana et al., ACL 2024) through the evaluation harness.

Any file in LoCoMo's format is accepted (``shared/data/locomo/README.md``); nothing here knows the
development conversations. Each sample becomes one :class:`~edgemem.eval.harness.Conversation`:
its sessions come from :func:`edgemem.ingest.importers.locomo_sessions` (the importer users run),
its questions from ``qa`` with keys ``<sample_id>#<index in qa>``. Category 5 items carry no
``answer`` (the trap is ``adversarial_answer``); they are scored as abstention, as the official
scorer does. Scoring is :mod:`edgemem.eval.metrics` (both conventions, see its docstring).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from edgemem.errors import BadInput
from edgemem.eval import key as answer_key
from edgemem.eval import metrics
from edgemem.eval.harness import Benchmark, Conversation, Question
from edgemem.ingest.importers import load_json, locomo_samples, locomo_sessions

ANSWER_METRICS = ("locomo_f1", "mem0_f1", "bleu1", "abstention_acc", "abstention_rate")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")


def split_evidence(evidence: Any) -> list[str]:
    """Gold dia_ids as a flat list ("D8:6; D9:17" packs two ids in one string in the data)."""
    if not isinstance(evidence, list):
        return []
    return [part for item in evidence for part in _EVIDENCE_SPLIT.split(str(item)) if part]


def questions_of(sample: dict, where: str) -> list[Question]:
    qa = sample.get("qa")
    if not isinstance(qa, list):
        raise BadInput(f"{where} {sample['sample_id']}: missing the 'qa' list")
    out = []
    for index, item in enumerate(qa):
        qwhere = f"{where} {sample['sample_id']} qa {index + 1}"
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or not item["question"].strip():
            raise BadInput(f"{qwhere}: missing 'question'")
        category = item.get("category")
        if isinstance(category, bool) or not isinstance(category, int) or category not in metrics.LOCOMO_CATEGORY_NAMES:
            raise BadInput(f"{qwhere}: 'category' must be 1-5, got {category!r}")
        if category != 5 and "answer" not in item:
            raise BadInput(f"{qwhere}: missing 'answer'")
        extra: dict[str, Any] = {"sample_id": sample["sample_id"]}
        if "adversarial_answer" in item:
            extra["adversarial_answer"] = item["adversarial_answer"]
        if isinstance(item.get("intent"), str):  # a labelled set's routing label (edgemem's own sets)
            extra["intent"] = item["intent"]
        if isinstance(item.get("key"), dict):  # a fixed answer key written before the run (eval.key)
            extra["answer_key"] = item["key"]
        out.append(Question(f"{sample['sample_id']}#{index}", item["question"].strip(), item.get("answer", ""),
                            category, split_evidence(item.get("evidence")), extra))
    return out


def load(path: Path, *, max_file_bytes: int, max_text_bytes: int, sample_ids: Iterable[str] | None = None) -> list[Conversation]:
    """The conversations of a LoCoMo file (all, or the samples named), checked before anything runs."""
    path = Path(path).expanduser()
    samples = locomo_samples(load_json(path, max_file_bytes), path.name)
    if sample_ids:
        wanted = list(dict.fromkeys(sample_ids))
        known = [s["sample_id"] for s in samples]
        missing = [w for w in wanted if w not in known]
        if missing:
            raise BadInput(f"{path.name}: no sample {', '.join(missing)}; the file has {', '.join(known)}")
        samples = [s for s in samples if s["sample_id"] in wanted]
    out = []
    for s in samples:
        sessions = locomo_sessions(s, max_text_bytes=max_text_bytes, where=path.name)
        out.append(Conversation(s["sample_id"], sessions, questions_of(s, path.name), now=_asked_at(sessions)))
    return out


def _asked_at(sessions: list) -> datetime | None:
    """When the questions are asked: just after the last turn. LoCoMo's questions were written once
    the conversation was over, and "this year" or "next month" in a question means the conversation's
    time, not the day the evaluation runs."""
    times = [t.when for s in sessions for t in s.turns]
    return max(times) + timedelta(minutes=1) if times else None


def summarize(records: list[dict], retrieval_only: bool) -> dict:
    """``metrics.summarize`` per category and overall; retrieval-only runs have no answer metrics."""
    rows = [dict(r, prediction=r.get("prediction") or "") for r in records]
    summary = metrics.summarize(rows)
    groups = [*summary["categories"].values(), summary["overall"]]
    by_group = [[r for r in records if r["category"] == c] for c in summary["categories"]] + [records]
    for group, members in zip(groups, by_group, strict=True):
        if retrieval_only:
            for key in ANSWER_METRICS:
                group[key] = None
        in_context = [r["evidence_in_context"] for r in members if r.get("evidence_in_context") is not None]
        if in_context:
            group["evidence_in_context"] = sum(in_context) / len(in_context)
    summary["categories"] = {str(k): v for k, v in summary["categories"].items()}
    summary["retrieval_only"] = retrieval_only
    keyed = [r for r in records if isinstance(r.get("answer_key"), dict)]
    if keyed and not retrieval_only:  # a set with a fixed answer key (edgemem's personal set)
        summary["keyed"] = answer_key.score([dict(r, key=r["answer_key"]) for r in keyed])
    labelled = [r for r in records if r.get("intent") and r.get("route_tag")]
    if labelled:  # exact routing against the set's own intent labels
        summary["routing"] = {
            "n": len(labelled), "accuracy": sum(r["intent"] == r["route_tag"] for r in labelled) / len(labelled),
            "confusion": _confusion(labelled)}
    return summary


def _confusion(records: list[dict]) -> dict[str, dict[str, int]]:
    """Gold intent -> routed tag -> count."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        row = out.setdefault(r["intent"], {})
        row[r["route_tag"]] = row.get(r["route_tag"], 0) + 1
    return out


def table(summary: dict) -> str:
    view = dict(summary, categories={int(k): v for k, v in summary["categories"].items()})
    lines = [metrics.format_table(view)]
    overall = summary["overall"]
    if summary.get("retrieval_only"):
        lines.append("Retrieval only: no answers generated; latency is retrieval (and routing/packing) time.")
    if overall.get("evidence_in_context") is not None:
        lines.append(f"Context: {100 * overall['evidence_in_context']:.1f}% of gold evidence turns were shown to the"
                     " answer model (packed notes, or the full-context window).")
    keyed = summary.get("keyed")
    if keyed:
        overall_k = keyed["overall"]
        lines.append(f"Fixed key: {overall_k['correct']}/{overall_k['n']} correct ({overall_k['percent']:.1f}%); by intent: "
                     + ", ".join(f"{k} {v['correct']}/{v['n']}" for k, v in keyed["intents"].items()))
    routing = summary.get("routing")
    if routing:
        lines.append(f"Routing against the set's intent labels: {100 * routing['accuracy']:.1f}% of {routing['n']}")
    errors = summary.get("run", {}).get("errors")
    if errors:
        lines.append(f"{errors} question(s) failed with an error (scored 0; see 'error' in predictions.jsonl).")
    return "\n".join(lines)


BENCHMARK = Benchmark("locomo", summarize, table)

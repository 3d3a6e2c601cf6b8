"""``edgemem eval longmemeval``: LongMemEval (Wu et al., ICLR 2025) through the evaluation harness.

The official JSON format: a list of items with ``question_id``, ``question_type``, ``question``,
``answer``, ``question_date``, and a haystack — ``haystack_session_ids``, ``haystack_dates`` and
``haystack_sessions`` (each a list of ``{"role", "content", "has_answer"?}`` turns) — plus
``answer_session_ids``. A ``question_id`` ending in ``_abs`` is an abstention item: the question
asks about something the history never says.

Every item has its own haystack, so every item is one conversation with one question: a fresh
store per item, sessions ingested in date order (turn ``n`` of session ``s`` has the external id
``<s>:<n>``, n from 1, and the event time session date + n - 1 seconds), and the question asked
at ``question_date``. Whitespace-only turns carry nothing and are skipped.

Scoring. The official metric is a GPT-4o judge, which an offline tool cannot run; this reports
token-level proxies and says so:

- **F1**: the official LoCoMo token F1 (``metrics.token_f1``: stemmed, multiset) against
  ``answer``; for an abstention item, 1 if the answer abstains (``metrics.is_abstention``) else 0.
  The overall F1 averages every item, abstention items included.
- **contains**: 1 when the normalised gold answer appears inside the normalised prediction (short
  gold answers, such as names or counts, are judged correct this way by most judges).
- **Mem0 F1** and **BLEU-1** (token sets, no stemming), over non-abstention items only.
- **Evidence recall@k** over turns (those with ``has_answer``) and **session recall@k** (share of
  ``answer_session_ids`` that any of the first k retrieved turns comes from).
- **Router accuracy**: MemFlow derives LongMemEval's router_correct labels from the question types
  (Appendix E.1, Table 8: 72.4%) without publishing the table; ``TYPE_TAGS`` is ours, from the tag
  definitions of Appendix B.1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from edgemem.errors import BadInput
from edgemem.eval import metrics
from edgemem.eval.harness import Benchmark, Conversation, Question
from edgemem.ingest.importers import ChatSession, ChatTurn, load_json, to_local

# Question types in the paper's order (Table 9 of MemFlow lists the same six).
TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
         "multi-session", "temporal-reasoning", "knowledge-update")

# Acceptable MemFlow tags per LongMemEval question type (Appendix B.1 definitions):
# - single-session-user / -assistant: one fact said in one past session -> targeted-extraction.
# - single-session-preference: answers must honour the user's stated preferences; Tier 1 serves
#   them -> profile-injection (targeted-extraction also reaches the session that states them).
# - multi-session: aggregation across sessions ("how many ...") -> broad-summarization.
# - temporal-reasoning: ordering and date arithmetic -> temporal-reasoning.
# - knowledge-update: the latest value of a fact that changed -> conflict-resolution or
#   state-tracking (B.1 defines both for "current" values that were updated).
TYPE_TAGS: dict[str, frozenset[str]] = {
    "single-session-user": frozenset({"targeted-extraction"}),
    "single-session-assistant": frozenset({"targeted-extraction"}),
    "single-session-preference": frozenset({"profile-injection", "targeted-extraction"}),
    "multi-session": frozenset({"broad-summarization"}),
    "temporal-reasoning": frozenset({"temporal-reasoning"}),
    "knowledge-update": frozenset({"conflict-resolution", "state-tracking"}),
}

_LME_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?\s+(\d{1,2}):(\d{2})")
_REQUIRED = ("question_id", "question_type", "question", "question_date", "haystack_session_ids",
             "haystack_dates", "haystack_sessions")


def parse_date(value: Any, where: str) -> datetime:
    """LongMemEval's '2023/05/20 (Sat) 02:21', or anything ``importers.to_local`` reads."""
    if isinstance(value, str) and (m := _LME_DATE.fullmatch(value.strip())):
        try:
            return datetime(*(int(g) for g in m.groups()))  # type: ignore[misc]
        except ValueError as exc:
            raise BadInput(f"{where}: impossible date {value!r}: {exc}") from None
    return to_local(value, where)


def _item(item: Any, index: int, where: str, max_text_bytes: int) -> Conversation:
    if not isinstance(item, dict):
        raise BadInput(f"{where}: item {index} is not an object")
    missing = [k for k in _REQUIRED if k not in item]
    if missing:
        raise BadInput(f"{where}: item {index} lacks {', '.join(missing)}")
    qid = str(item["question_id"])
    where = f"{where} {qid}"
    if item.get("answer") is None:
        raise BadInput(f"{where}: missing 'answer'")
    ids, dates, sessions = item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"]
    if not (isinstance(ids, list) and isinstance(dates, list) and isinstance(sessions, list)) or not (len(ids) == len(dates) == len(sessions)):
        raise BadInput(f"{where}: haystack_session_ids, haystack_dates and haystack_sessions must be lists of one length")
    built: list[ChatSession] = []
    evidence: list[str] = []
    for sid, date, turns in zip(ids, dates, sessions, strict=True):
        swhere = f"{where} session {sid}"
        start = parse_date(date, swhere)
        if not isinstance(turns, list):
            raise BadInput(f"{swhere}: expected a list of turns")
        parsed: list[ChatTurn] = []
        for n, turn in enumerate(turns, start=1):
            if not isinstance(turn, dict) or not isinstance(turn.get("role"), str) or not isinstance(turn.get("content"), str):
                raise BadInput(f"{swhere}, turn {n}: expected {{'role', 'content'}} strings")
            if not turn["content"].strip():
                continue
            content = turn["content"]
            if len(content.encode("utf-8", errors="surrogatepass")) > max_text_bytes:
                raise BadInput(f"{swhere}, turn {n}: longer than {max_text_bytes} bytes (setting max_text_bytes)")
            ext_id = f"{sid}:{n}"
            if turn.get("has_answer"):
                evidence.append(ext_id)
            parsed.append(ChatTurn(turn["role"], content, start + timedelta(seconds=n - 1), ext_id))
        if parsed:
            built.append(ChatSession(f"{qid}/{sid}", start, parsed, f"session {sid}"))
    built.sort(key=lambda s: s.started_at)  # stable: same-time sessions keep their file order
    qtype = str(item["question_type"])
    abstention = qid.endswith("_abs")
    extra = {"question_id": qid, "question_type": qtype, "abstention": abstention,
             "question_date": str(item["question_date"]),
             "answer_session_ids": [str(s) for s in item.get("answer_session_ids") or []]}
    question = Question(qid, str(item["question"]).strip(), item["answer"], qtype, evidence, extra)
    return Conversation(qid, built, [question], now=parse_date(item["question_date"], f"{where} question_date"))


def load(path: Path, *, max_file_bytes: int, max_text_bytes: int, question_ids: Iterable[str] | None = None) -> list[Conversation]:
    """One conversation per item (all, or the question ids named), checked before anything runs."""
    path = Path(path).expanduser()
    data = load_json(path, max_file_bytes)
    if not isinstance(data, list) or not data:
        raise BadInput(f"{path.name}: expected a non-empty list of LongMemEval items")
    wanted = list(dict.fromkeys(question_ids)) if question_ids else None
    if wanted:
        known = {str(x.get("question_id")) for x in data if isinstance(x, dict)}
        missing = [w for w in wanted if w not in known]
        if missing:
            raise BadInput(f"{path.name}: no question {', '.join(missing)}")
    out = [_item(item, i, path.name, max_text_bytes) for i, item in enumerate(data, start=1)
           if wanted is None or (isinstance(item, dict) and str(item.get("question_id")) in wanted)]
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise BadInput(f"{path.name}: question_id values are not unique")
    return out


# -- scoring -----------------------------------------------------------------------------------------
def session_recall_at_k(retrieved: Sequence[str], answer_sessions: Sequence[str], k: int) -> float | None:
    """Share of answer sessions that at least one of the first k retrieved turns comes from."""
    gold = set(answer_sessions)
    if not gold:
        return None
    seen = {ext.rsplit(":", 1)[0] for ext in retrieved[:k]}
    return len(gold & seen) / len(gold)


def contains(prediction: str, gold: Any) -> bool:
    expected = metrics.normalize_answer(str(gold))
    return bool(expected) and f" {expected} " in f" {metrics.normalize_answer(prediction)} "


def router_correct(question_type: str, tag: str) -> bool | None:
    """Whether ``tag`` suits the question type; None for a type outside ``TYPE_TAGS``."""
    if tag not in metrics.ROUTE_TAGS:
        raise ValueError(f"unknown route tag {tag!r}; expected one of {sorted(metrics.ROUTE_TAGS)}")
    accepted = TYPE_TAGS.get(question_type)
    return None if accepted is None else tag in accepted


def score_record(record: dict) -> dict:
    prediction = str(record.get("prediction") or "")
    gold = record.get("gold", "")
    abstention = bool(record.get("abstention"))
    abstained = metrics.is_abstention(prediction)
    scores: dict[str, Any] = {
        "f1": float(abstained) if abstention else metrics.token_f1(prediction, str(gold)),
        "contains": float(abstained) if abstention else float(contains(prediction, gold)),
        "mem0_f1": None if abstention else metrics.mem0_f1(prediction, gold),
        "bleu1": None if abstention else metrics.bleu1(prediction, gold),
        "abstention": abstention,
        "abstained": abstained,
        "recall_at_5": None, "recall_at_10": None, "session_recall_at_5": None, "session_recall_at_10": None,
        "router_correct": None,
    }
    retrieved = record.get("retrieved_dia_ids")
    if retrieved is not None:
        evidence = record.get("evidence") or []
        sessions = record.get("answer_session_ids") or []
        for k in (5, 10):
            scores[f"recall_at_{k}"] = metrics.recall_at_k(retrieved, evidence, k)
            scores[f"session_recall_at_{k}"] = session_recall_at_k(retrieved, sessions, k)
    if record.get("route_tag") is not None:
        scores["router_correct"] = router_correct(str(record.get("category")), record["route_tag"])
    return scores


def _mean(values: Iterable[Any]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _group(records: list[dict], scores: list[dict], retrieval_only: bool) -> dict:
    answerable = [s for s in scores if not s["abstention"]]
    abstain_items = [s for s in scores if s["abstention"]]
    packed = [r["packed_tokens"] for r in records if r.get("packed_tokens") is not None]
    latency = [r["latency_ms"] for r in records if r.get("latency_ms") is not None]
    lat = metrics.percentiles(latency, (50, 90)) if latency else {}
    out = {
        "n": len(scores),
        "f1": _mean(s["f1"] for s in scores),
        "contains": _mean(s["contains"] for s in scores),
        "mem0_f1": _mean(s["mem0_f1"] for s in answerable),
        "bleu1": _mean(s["bleu1"] for s in answerable),
        "abstention_acc": _mean(s["abstained"] for s in abstain_items),
        "abstention_rate": _mean(s["abstained"] for s in scores),
        "recall_at_5": _mean(s["recall_at_5"] for s in scores),
        "recall_at_10": _mean(s["recall_at_10"] for s in scores),
        "session_recall_at_5": _mean(s["session_recall_at_5"] for s in scores),
        "session_recall_at_10": _mean(s["session_recall_at_10"] for s in scores),
        "evidence_in_context": _mean(r.get("evidence_in_context") for r in records),
        "router_acc": _mean(s["router_correct"] for s in scores),
        "router_n": sum(1 for s in scores if s["router_correct"] is not None),
        "packed_tokens_median": metrics.percentiles(packed, (50,))["p50"] if packed else None,
        "packed_tokens_mean": _mean(packed),
        "pipeline_tokens_mean": _mean(r.get("pipeline_tokens") for r in records),
        "latency_p50_ms": lat.get("p50"),
        "latency_p90_ms": lat.get("p90"),
    }
    if retrieval_only:
        for key in ("f1", "contains", "mem0_f1", "bleu1", "abstention_acc", "abstention_rate"):
            out[key] = None
    return out


def summarize(records: list[dict], retrieval_only: bool) -> dict:
    scores = [score_record(r) for r in records]
    order = list(TYPES) + sorted({str(r["category"]) for r in records} - set(TYPES))
    categories = {}
    for qtype in order:
        idx = [i for i, r in enumerate(records) if str(r["category"]) == qtype]
        if idx:
            categories[qtype] = _group([records[i] for i in idx], [scores[i] for i in idx], retrieval_only)
    return {"categories": categories, "overall": _group(records, scores, retrieval_only), "retrieval_only": retrieval_only}


_COLUMNS = (
    ("n", "n", "d"), ("F1", "f1", "%"), ("contains", "contains", "%"), ("Mem0 F1", "mem0_f1", "%"),
    ("BLEU-1", "bleu1", "%"), ("abst acc", "abstention_acc", "%"), ("abst rate", "abstention_rate", "%"),
    ("R@5", "recall_at_5", "%"), ("R@10", "recall_at_10", "%"), ("S@5", "session_recall_at_5", "%"),
    ("S@10", "session_recall_at_10", "%"), ("in ctx", "evidence_in_context", "%"), ("router", "router_acc", "%"), ("pack med", "packed_tokens_median", "f"),
    ("pipe mean", "pipeline_tokens_mean", "f"), ("p50 ms", "latency_p50_ms", "f"), ("p90 ms", "latency_p90_ms", "f"),
)


def _cell(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "d":
        return str(int(value))
    return f"{100 * value:.1f}" if kind == "%" else f"{value:.1f}"


def table(summary: dict) -> str:
    rows = [(t, m) for t, m in summary["categories"].items()] + [("overall", summary["overall"])]
    header = ["question type"] + [c[0] for c in _COLUMNS]
    body = [[label] + [_cell(m.get(key), kind) for _, key, kind in _COLUMNS] for label, m in rows]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join([cells[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(cells[1:], widths[1:]))]).rstrip()

    rule = "-" * len(line(header))
    notes = ("Scores in %. Token proxies, not the official GPT-4o judge. F1: stemmed token F1 (abstention items:"
             " 1 if the answer abstains); contains: gold inside the answer.\nMem0 F1 / BLEU-1 over answerable items;"
             " R@k: evidence turns in the first k retrieved; S@k: answer sessions reached;\n"
             "in ctx: evidence turns shown to the answer model.")
    lines = [line(header), rule, *(line(r) for r in body[:-1]), rule, line(body[-1]), notes]
    if summary.get("retrieval_only"):
        lines.append("Retrieval only: no answers generated; latency is retrieval (and routing/packing) time.")
    errors = summary.get("run", {}).get("errors")
    if errors:
        lines.append(f"{errors} question(s) failed with an error (scored 0; see 'error' in predictions.jsonl).")
    return "\n".join(lines)


BENCHMARK = Benchmark("longmemeval", summarize, table)

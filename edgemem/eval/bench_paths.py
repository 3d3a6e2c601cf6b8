"""``edgemem bench --paths FILE``: what both paths cost on real data, in one run on this machine.

The synthetic ``edgemem bench`` times the parts; this times what a user waits for:

- **write path on a conversation**: one LoCoMo conversation (or its first ``--paths-turns`` turns,
  whole sessions) imported session by session and organised by the worker with the default steps:
  seconds and model calls per turn, and the write-path counters the worker keeps per step.
- **ask on that conversation's questions** (a seeded sample proportional per category): p50 / p90
  of the whole answer, of the time to the first streamed token, pipeline tokens per question, and
  the model's own cost of the same answers (prefill + decode of the answer call that produced the
  text). ``ratio_p50`` = p50 total / p50 of that own cost: 1.0 would be a pipeline that costs
  nothing but its answer. Answer quality on the same questions (Mem0 F1 over categories 1-4,
  abstention on category 5) is printed beside, so speed is never bought with quality unseen.
- **a Markdown folder** of ``--markdown-mb`` MB (generated: headings, sections and paragraphs of
  seeded pseudo-words), from ``ingest`` to a fully organised store, with the worker running in its
  own thread as in the daemon; ``--markdown-timeout`` caps the wait and reports the rate reached.
- **ask under backlog**: while that folder is being organised, the first ``--backlog-asks``
  questions are asked again; their p50 against the same questions asked idle.

All of it shares one model, loaded once, and one store per run (a temporary folder).
"""

from __future__ import annotations

import dataclasses
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgemem.config import Settings
from edgemem.errors import BadInput
from edgemem.eval import locomo, metrics
from edgemem.eval.bench import Vocabulary, _stats, peak_rss_mib, warm_up
from edgemem.eval.harness import MeteredLLM, load_default_embedder, load_default_llm, select_questions
from edgemem.ingest.importers import import_sessions
from edgemem.store import stats as stats_store

SECTION_WORDS = (60, 400)  # words per generated section: short notes to long chapters


@dataclass
class PathsConfig:
    locomo: Path
    sample: str | None = None  # default: the file's first conversation
    turns: int | None = None  # whole sessions until at least this many turns; None: all of them
    questions: int = 20
    markdown_mb: float = 2.0
    markdown_timeout: float = 3600.0
    backlog_asks: int = 5
    seed: int = 0


def markdown_folder(folder: Path, megabytes: float, seed: int) -> int:
    """Write about ``megabytes`` of Markdown in files of ~100 KB (headings, sections, paragraphs)."""
    vocab = Vocabulary(seed)
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    target = int(megabytes * 1024 * 1024)
    written, index = 0, 0
    while written < target:
        index += 1
        parts = [f"# {vocab.sentence(2, 5).rstrip('.').title()}\n"]
        size = 0
        while size < 100_000 and written + size < target:
            level = rng.choice(("##", "##", "###"))
            parts.append(f"\n{level} {vocab.sentence(2, 6).rstrip('.').title()}\n")
            words = rng.randint(*SECTION_WORDS)
            paragraphs = []
            while words > 0:
                n = min(words, rng.randint(30, 120))
                paragraphs.append(" ".join(vocab.sentence(8, 20) for _ in range(max(1, n // 14))))
                words -= n
            body = "\n\n".join(paragraphs) + "\n"
            parts.append("\n" + body)
            size += len(parts[-1]) + len(parts[-2])
        text = "".join(parts)
        (folder / f"doc-{index:03d}.md").write_text(text, encoding="utf-8")
        written += len(text.encode("utf-8"))
    return written


def _pending(engine: Any) -> int:
    queue = engine.status()["queue"]
    return int(queue.get("pending", 0)) + int(queue.get("running", 0))


def _ask(engine: Any, llm: MeteredLLM, question: Any) -> dict:
    first: list[float] = []
    t0 = time.perf_counter()

    def on_token(_piece: str) -> None:
        if not first:
            first.append(time.perf_counter())

    before = dataclasses.replace(llm.usage)
    answer = engine.ask(question.question, on_token=on_token)
    total = (time.perf_counter() - t0) * 1000
    used = llm.usage.since(before)
    stages = answer.trace.get("stages", {})
    rounds = sorted(k for k in stages if k.startswith("answer"))
    own = stages[rounds[-1]] if rounds else {}
    scored = metrics.score_record({"category": question.category, "prediction": answer.text, "gold": question.gold})
    return {
        "key": question.key, "route_tag": answer.trace.get("route_tag"), "escalated": bool(answer.trace.get("escalated")),
        "total_ms": total,
        "first_token_ms": (first[0] - t0) * 1000 if first else None,
        "pipeline_tokens": used.prompt_tokens + used.completion_tokens,
        "prefilled_tokens": used.prompt_tokens - used.cached_tokens + used.completion_tokens,
        "model_calls": used.calls,
        "own_ms": float(own.get("prefill_ms", 0.0)) + float(own.get("generate_ms", 0.0)) if own else None,
        "category": question.category, "mem0_f1": scored["mem0_f1"], "abstained": scored["abstained"],
    }


def _summary(rows: list[dict]) -> dict:
    def values(key: str) -> list[float]:
        return [float(r[key]) for r in rows if r.get(key) is not None]

    out: dict[str, Any] = {"questions": len(rows)}
    for key in ("total_ms", "first_token_ms", "pipeline_tokens", "prefilled_tokens", "model_calls", "own_ms"):
        out[key] = _stats(values(key)) if values(key) else None
    if out["total_ms"] and out["own_ms"] and out["own_ms"]["median"]:
        out["ratio_p50"] = round(out["total_ms"]["median"] / out["own_ms"]["median"], 2)
    f1 = [r["mem0_f1"] for r in rows if r["mem0_f1"] is not None]
    trap = [r["abstained"] for r in rows if int(r["category"]) == 5]
    out["mem0_f1"] = round(sum(f1) / len(f1), 4) if f1 else None
    out["category5_abstention"] = round(sum(trap) / len(trap), 4) if trap else None
    return out


def run_paths(settings: Settings, config: PathsConfig, *, llm: Any = None, embedder: Any = None,
              echo: Callable[[str], None] | None = None) -> dict:
    from edgemem.engine import Engine

    say = echo or (lambda _m: None)
    conversations = locomo.load(config.locomo, max_file_bytes=settings.max_file_bytes,
                                max_text_bytes=settings.max_text_bytes,
                                sample_ids=[config.sample] if config.sample else None)
    if not conversations:
        raise BadInput(f"{config.locomo}: no conversation")
    conv = conversations[0]
    sessions, turns = [], 0
    for session in conv.sessions:
        if config.turns is not None and turns >= config.turns:
            break
        sessions.append(session)
        turns += len(session.turns)
    kept_ids = {t.ext_id for s in sessions for t in s.turns if getattr(t, "ext_id", None)}
    pool = [q for q in conv.questions if all(e in kept_ids for e in q.evidence)]
    asked = select_questions(pool, config.questions, config.seed)
    if not asked:
        raise BadInput(f"{conv.id}: no question whose evidence is in the first {turns} turns")

    embedder = embedder or load_default_embedder(settings)
    shared = MeteredLLM((lambda: llm) if llm is not None else (lambda: load_default_llm(settings)),
                        getattr(llm, "name", None) or settings.model)
    folder = Path(tempfile.mkdtemp(prefix="edgemem-bench-paths-"))
    result: dict[str, Any] = {"conversation": conv.id, "model": shared.name, "rss_mib": {}}
    engine = Engine.open(dataclasses.replace(settings, db_path=folder / "paths.db"), llm=shared, embedder=embedder)
    try:
        # 1. the write path on the conversation, session by session as a user's history arrives
        say(f"ingesting {turns} turns of {conv.id} with the default steps")
        before = dataclasses.replace(shared.usage)
        t0 = time.perf_counter()
        for session in sessions:
            import_sessions(engine.store, [session])
            engine.process()
        seconds = time.perf_counter() - t0
        used = shared.usage.since(before)
        result["ingest_conversation"] = {
            "turns": turns, "seconds": round(seconds, 1), "s_per_turn": round(seconds / turns, 3),
            "turns_per_s": round(turns / seconds, 2), "model_calls": used.calls,
            "model_calls_per_turn": round(used.calls / turns, 3),
            "model_s": round((used.prefill_ms + used.generate_ms) / 1000, 1),
            "steps": stats_store.all_stats(engine.store.conn),
        }
        result["rss_mib"]["ingest"] = peak_rss_mib()

        # 2. ask, idle
        say(f"asking {len(asked)} questions")
        result["warm"] = warm_up(engine)
        idle = [_ask(engine, shared, q) for q in asked]
        result["ask"] = _summary(idle)
        result["ask_rows"] = idle  # per question (key, route, timings, score; no text): what the medians hide
        result["rss_mib"]["ask"] = peak_rss_mib()

        # 3. a Markdown folder, organised by the worker thread; 4. asks during that backlog
        docs = folder / "docs"
        size = markdown_folder(docs, config.markdown_mb, config.seed)
        say(f"ingesting {size / 1e6:.1f} MB of Markdown")
        t0 = time.perf_counter()
        accepted = engine.ingest(docs)
        accept_s = time.perf_counter() - t0
        backlog = _pending(engine)
        stop, wake = threading.Event(), threading.Event()
        worker = threading.Thread(target=engine.worker.run_forever, args=(stop, wake), name="bench-worker", daemon=True)
        worker.start()
        wake.set()
        busy = []
        for q in asked[: config.backlog_asks]:
            if _pending(engine) == 0:
                break
            busy.append(_ask(engine, shared, q))
        while _pending(engine) and time.perf_counter() - t0 < config.markdown_timeout:
            time.sleep(0.5)
        organised_s = time.perf_counter() - t0
        left = _pending(engine)
        stop.set()
        wake.set()
        worker.join(timeout=60)
        result["ingest_markdown"] = {
            "bytes": size, "files": len(list(docs.glob("*.md"))), "chunks": backlog,
            "files_added": len(accepted["added"]), "files_skipped": len(accepted["skipped"]),
            "accept_s": round(accept_s, 2), "organised_s": round(organised_s, 1), "left": left,
            "finished": left == 0, "chunks_per_s": round((backlog - left) / organised_s, 2) if organised_s else None,
        }
        if busy:
            same = idle[: len(busy)]
            result["ask_under_backlog"] = {
                "questions": len(busy), "p50_ms": _stats([r["total_ms"] for r in busy])["median"],
                "idle_p50_ms": _stats([r["total_ms"] for r in same])["median"],
            }
            result["ask_under_backlog"]["rows"] = busy
            result["ask_under_backlog"]["ratio"] = round(
                result["ask_under_backlog"]["p50_ms"] / result["ask_under_backlog"]["idle_p50_ms"], 2)
        result["rss_mib"]["peak"] = peak_rss_mib()
    finally:
        engine.close()
        if llm is None:
            shared.release()
        shutil.rmtree(folder, ignore_errors=True)
    return result


def _ms(stats: dict | None, scale: float = 1000.0, unit: str = "s") -> str:
    if not stats:
        return "-"
    return f"{stats['median'] / scale:.2f} {unit} (p90 {stats['p90'] / scale:.2f})"


def _warmed(warm: dict | None) -> str:
    if not warm:
        return "-"
    return f"{warm['prompts']} prompts, {warm['tokens']} tokens kept, {warm['seconds']} s"


def format_paths(result: dict) -> str:
    rows: list[tuple[str, str]] = []
    ing = result.get("ingest_conversation")
    if ing:
        rows += [
            (f"ingest {result['conversation']} ({ing['turns']} turns)", f"{ing['s_per_turn']:.2f} s/turn, "
             f"{ing['turns_per_s']:.2f} turns/s"),
            ("ingest: model calls per turn", f"{ing['model_calls_per_turn']:.3f} ({ing['model_calls']} calls, "
             f"{ing['model_s']} s of model time)"),
            ("ingest: write-path counters", ", ".join(f"{k}={v}" for k, v in sorted(ing["steps"].items())) or "-"),
        ]
    ask = result.get("ask")
    if ask:
        f1 = "-" if ask["mem0_f1"] is None else f"{100 * ask['mem0_f1']:.1f}"
        trap = "-" if ask["category5_abstention"] is None else f"{100 * ask['category5_abstention']:.0f}%"
        rows += [
            (f"ask ({result['model']}, {ask['questions']} questions): total", _ms(ask["total_ms"])),
            ("ask: time to first token", _ms(ask["first_token_ms"])),
            ("ask: answer prompts warmed before (as a daemon does)", _warmed(result.get("warm"))),
            ("ask: pipeline tokens per question", _ms(ask["pipeline_tokens"], 1.0, "tokens")),
            ("ask: of those, prefilled or generated (not KV-cached)",
             _ms(ask["prefilled_tokens"], 1.0, "tokens") if ask.get("prefilled_tokens") else "-"),
            ("ask: model calls per question", _ms(ask["model_calls"], 1.0, "")),
            ("ask: the answer's own prefill + decode", _ms(ask["own_ms"])),
            ("ask: p50 total / p50 own", f"{ask.get('ratio_p50', '-')}x"),
            ("ask: Mem0 F1 (cat 1-4), cat-5 abstention", f"{f1}, {trap}"),
        ]
    md = result.get("ingest_markdown")
    if md:
        done = "organised" if md["finished"] else f"NOT finished ({md['left']} chunks left)"
        rows += [
            (f"markdown {md['bytes'] / 1e6:.1f} MB, {md['files']} files", f"{md['chunks']} chunks, accepted in {md['accept_s']} s"),
            ("markdown: ingest to organised", f"{md['organised_s']} s, {done}, {md['chunks_per_s']} chunks/s"),
        ]
    busy = result.get("ask_under_backlog")
    if busy:
        rows.append((f"ask during backlog ({busy['questions']}) vs idle, p50",
                     f"{busy['p50_ms'] / 1000:.2f} s vs {busy['idle_p50_ms'] / 1000:.2f} s = {busy['ratio']}x"))
    for phase, mib in result.get("rss_mib", {}).items():
        rows.append((f"peak RSS after {phase}", f"{mib:.0f} MiB"))
    width = max(len(r[0]) for r in rows) if rows else 0
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)

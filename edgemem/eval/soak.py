"""``edgemem bench --soak FILE``: memory over a long run, the way a daemon lives for weeks.

One process, default settings (model, prompt cache, CPU weight layout): the conversations of a
LoCoMo file are ingested with every write-path step, a quarter at a time, and after each quarter a
share of their questions is answered through ``Engine.ask``. Printed per quarter: the resident set at
its end, the peak so far, and the prompt cache's own accounting (bytes held, hit rate, prompt tokens
restored and the prefill time that saved, for write-path and ask calls separately). The last
quarter's growth shows whether memory is flat or climbing.
"""

from __future__ import annotations

import dataclasses
import json
import random
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgemem.config import Settings
from edgemem.errors import BadInput
from edgemem.ingest.importers import ChatSession, import_sessions, load_json, locomo_samples, locomo_sessions


def rss_bytes(field: str = "VmRSS") -> int:
    """The resident set (``VmRSS``) or its peak (``VmHWM``) of this process, from /proc."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class Sampler:
    """Samples the resident set every ``interval`` seconds on a thread; keeps the peak."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.peak = rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, rss_bytes())

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@dataclasses.dataclass
class Workload:
    sessions: list[ChatSession]
    questions: list[tuple[str, str, int]]  # (conversation id, question, the session count it needs)


def load_workload(path: Path, turns: int, settings: Settings) -> Workload:
    """The first ``turns`` turns (whole sessions) of the file's conversations, and their questions."""
    data = load_json(path, settings.max_file_bytes)
    sessions: list[ChatSession] = []
    questions: list[tuple[str, str, int]] = []
    total = 0
    for sample in locomo_samples(data, str(path)):
        conv = locomo_sessions(sample, max_text_bytes=settings.max_text_bytes, where=str(path))
        offset, taken = len(sessions), 0
        for session in conv:
            if total >= turns:
                break
            sessions.append(session)
            total += len(session.turns)
            taken += 1
        for qa in sample.get("qa", []):
            # Answerable questions whose evidence turns ("D<session>:<turn>") are all in what is taken.
            numbers = [_session_of(e) for e in qa.get("evidence") or []]
            if qa.get("category") in (1, 2, 3, 4) and numbers and all(0 < n <= taken for n in numbers):
                questions.append((sample["sample_id"], str(qa["question"]), offset + max(numbers)))
        if total >= turns:
            break
    if total < turns:
        raise BadInput(f"{path} holds {total} turns; the soak needs {turns} (pass a smaller --soak-turns)")
    return Workload(sessions, questions)


def _session_of(dia_id: object) -> int:
    head = str(dia_id).split(":", 1)[0]
    return int(head[1:]) if head[:1] == "D" and head[1:].isdigit() else 0


def _cache(engine: Any) -> dict:
    return dict(engine.runtime.model_info().get("prompt_cache") or {})


def _delta(after: dict, before: dict) -> dict:
    keys = ("lookups", "hits", "tokens_restored", "calls", "prompt_tokens", "evaluated_tokens", "prefill_s")
    out = {k: round(after.get(k, 0) - before.get(k, 0), 2) for k in keys}
    rate = after.get("prefill_tok_s") or 0
    out["hit_rate"] = round(out["hits"] / out["lookups"], 3) if out["lookups"] else 0.0
    out["prefill_saved_s"] = round(out["tokens_restored"] / rate, 1) if rate else 0.0
    return out


def _add(total: dict, part: dict) -> None:
    for k, v in part.items():
        if k not in ("hit_rate",):
            total[k] = round(total.get(k, 0) + v, 2)
    total["hit_rate"] = round(total["hits"] / total["lookups"], 3) if total.get("lookups") else 0.0


def run_soak(settings: Settings, path: Path, *, turns: int = 500, questions: int = 100, quarters: int = 4,
             seed: int = 0, echo: Callable[[str], None] | None = None) -> dict:
    """Ingest ``turns`` turns and answer ``questions`` questions in ``quarters`` rounds; report memory."""
    from edgemem.engine import Engine

    say = echo or (lambda _m: None)
    work = load_workload(path, turns, settings)
    if len(work.questions) < questions:
        raise BadInput(f"{path}: only {len(work.questions)} answerable questions in the first {turns} turns")
    rng = random.Random(seed)
    chunks = _split(work.sessions, quarters)
    rows: list[dict] = []
    ingest_cache: dict = {}
    ask_cache: dict = {}
    asked = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="edgemem-soak-") as tmp, Sampler() as sampler:
        soak_settings = dataclasses.replace(settings, db_path=Path(tmp) / "soak.db")
        engine = Engine.open(soak_settings)
        try:
            rss_start = rss_bytes()
            done_sessions = 0
            for q, chunk in enumerate(chunks, start=1):
                t0 = time.perf_counter()
                before = _cache(engine)
                for session in chunk:
                    import_sessions(engine.store, [session])
                    engine.process()
                done_sessions += len(chunk)
                mid = _cache(engine)
                t1 = time.perf_counter()
                want = questions * q // quarters - asked
                pool = [x for x in work.questions if x[2] <= done_sessions]
                picked = rng.sample(pool, min(want, len(pool)))
                latencies = []
                for _conv, question, _need in picked:
                    a0 = time.perf_counter()
                    engine.ask(question)
                    latencies.append(time.perf_counter() - a0)
                asked += len(picked)
                after = _cache(engine)
                part_ingest, part_ask = _delta(mid, before), _delta(after, mid)
                _add(ingest_cache, part_ingest)
                _add(ask_cache, part_ask)
                row = {
                    "quarter": q, "turns": sum(len(s.turns) for s in chunk), "questions": len(picked),
                    "ingest_s": round(t1 - t0, 1), "ask_s": round(time.perf_counter() - t1, 1),
                    "ask_p50_s": round(sorted(latencies)[len(latencies) // 2], 1) if latencies else None,
                    "rss_mib": round(rss_bytes() / 2**20, 1), "peak_mib": round(max(sampler.peak, rss_bytes("VmHWM")) / 2**20, 1),
                    "cache_mib": round(after.get("bytes", 0) / 2**20, 1), "cache_entries": after.get("entries", 0),
                    "hit_rate_ingest": part_ingest["hit_rate"], "hit_rate_ask": part_ask["hit_rate"],
                }
                rows.append(row)
                say(format_row(row))
            final_cache = _cache(engine)
            status = engine.status()
        finally:
            engine.close()
    growth = (rows[-1]["rss_mib"] - rows[-2]["rss_mib"]) / rows[-2]["rss_mib"] if len(rows) > 1 else 0.0
    return {
        "settings": {"model": settings.model, "prompt_cache_mb": settings.prompt_cache_mb, "cpu_repack": status.get("cpu_repack"),
                     "n_ctx": settings.n_ctx, "threads": settings.threads},
        "turns": sum(r["turns"] for r in rows), "questions": asked, "notes": status["notes"],
        "model_calls": final_cache.get("calls"), "seconds": round(time.perf_counter() - started, 1),
        "rss_start_mib": round(rss_start / 2**20, 1), "peak_rss_mib": max(r["peak_mib"] for r in rows),
        "last_quarter_growth": round(growth, 4), "quarters": rows,
        "prompt_cache": {"final": final_cache, "ingest": ingest_cache, "ask": ask_cache},
    }


def _split(sessions: list[ChatSession], parts: int) -> list[list[ChatSession]]:
    total = sum(len(s.turns) for s in sessions)
    out: list[list[ChatSession]] = [[] for _ in range(parts)]
    seen = 0
    for s in sessions:
        out[min(parts - 1, seen * parts // total)].append(s)
        seen += len(s.turns)
    return [c for c in out if c]


def format_row(row: dict) -> str:
    return (f"quarter {row['quarter']}: {row['turns']} turns in {row['ingest_s']} s, {row['questions']} questions in "
            f"{row['ask_s']} s (p50 {row['ask_p50_s']} s); RSS {row['rss_mib']} MiB, peak {row['peak_mib']} MiB; "
            f"prompt cache {row['cache_mib']} MiB in {row['cache_entries']} states, hit rate write path "
            f"{row['hit_rate_ingest']:.0%}, ask {row['hit_rate_ask']:.0%}")


def format_result(result: dict) -> str:
    cache = result["prompt_cache"]
    lines = [
        f"soak: {result['turns']} turns, {result['questions']} questions, {result['notes']} notes, "
        f"{result['model_calls']} model calls, {result['seconds']} s",
        f"settings: {json.dumps(result['settings'], default=str)}",
        *(format_row(r) for r in result["quarters"]),
        f"RSS at start {result['rss_start_mib']} MiB; peak {result['peak_rss_mib']} MiB; "
        f"last quarter's growth {result['last_quarter_growth']:+.2%}",
        f"prompt cache: {cache['final'].get('bytes', 0) / 2**20:.1f} MiB held of "
        f"{cache['final'].get('capacity_bytes', 0) / 2**20:.0f} MiB, {cache['final'].get('evictions', 0)} evictions",
    ]
    for name in ("ingest", "ask"):
        part = cache[name]
        lines.append(
            f"  {name:>6}: {part.get('calls', 0):.0f} calls, hit rate {part.get('hit_rate', 0):.0%}, "
            f"{part.get('tokens_restored', 0):.0f} of {part.get('prompt_tokens', 0):.0f} prompt tokens restored, "
            f"prefill {part.get('prefill_s', 0):.1f} s spent, ~{part.get('prefill_saved_s', 0):.1f} s saved")
    return "\n".join(lines)

"""``edgemem bench``: latency and throughput of the store, retrieval, ingestion and ``ask``.

Everything is measured in one run on this machine, so the ratios between sizes are meaningful;
medians (and p90) are reported, never single timings.

- **store** (``--store-only`` runs just this): bulk insert throughput, the
  latency of one committed note (one transaction, ``synchronous=FULL``: an fsync), and KNN
  (sqlite-vec, k = 10) and FTS5 query latency at 1k and 10k notes.
- **retrieval + packing** at 1k / 10k / 100k notes without a model: query embedding, hybrid BM25 +
  dense RRF top-8 (``recall.retrieve.hybrid``), and packing the hits into the flat-RAG context
  block. Embedding 100k texts with the real embedder would take longer than the benchmark itself,
  so the stored notes get random unit vectors; only the queries use the real embedder. KNN cost
  depends on the number and dimension of vectors, not their values, but the hits are meaningless.
- **ingest**: turns accepted per second (raw rows + jobs) and notes per second through the worker
  with no organising steps (note drafts + embeddings only) and, with a model, with the default
  steps on a small sample.
- **ask**: end-to-end latency of ``Engine.ask`` with the configured model, split into model
  prefill, model generation and everything else (summed over every model call of a question).
  ``--no-model`` skips it and the default-steps ingest.
- **peak RSS** (``resource.getrusage``) after each section.

Synthetic text comes from a seeded vocabulary (pseudo-words with a Zipf-like frequency), so two
runs with the same seed store the same notes.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from edgemem.config import Settings
from edgemem.errors import BadInput
from edgemem.eval.baselines import note_line
from edgemem.eval.harness import MeteredLLM, load_default_embedder, load_default_llm, progress_bar
from edgemem.eval.metrics import percentiles
from edgemem.recall.retrieve import hybrid
from edgemem.runtime.embed import DIMS
from edgemem.store import notes
from edgemem.store.db import Store

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "shi", "ven", "dor", "al", "is", "on", "pre", "gu", "zan",
              "el", "mar", "to", "qui", "ba", "sol", "fen", "ri", "cu", "ha", "wen", "ox", "py", "lu", "der")
_NAMES = ("Ana", "Ben", "Caroline", "Dev", "Elif", "Farid", "Grace", "Hiro", "Ines", "Jon")
_COMMON = ("the", "a", "and", "to", "of", "I", "we", "my", "was", "is", "with", "for", "on", "at", "yesterday",
           "last", "week", "really", "about", "new")


@dataclass
class BenchConfig:
    sizes: list[int] = field(default_factory=lambda: [1_000, 10_000, 100_000])  # retrieval + packing
    store_sizes: list[int] = field(default_factory=lambda: [1_000, 10_000])  # issue 2's store benchmark
    queries: int = 50
    commits: int = 50  # single-note transactions timed for the commit latency
    ingest_turns: int = 200  # worker throughput without model steps
    steps_turns: int = 20  # worker throughput with the default steps (model)
    ask_questions: int = 5
    seed: int = 0
    store_only: bool = False
    no_model: bool = False
    progress: bool = True


class Vocabulary:
    """Seeded pseudo-words with Zipf-like frequencies, and sentences made of them."""

    def __init__(self, seed: int, size: int = 3000) -> None:
        self.rng = random.Random(seed)
        words: dict[str, None] = {}
        while len(words) < size:
            words["".join(self.rng.choice(_SYLLABLES) for _ in range(self.rng.randint(2, 3)))] = None
        self.words = list(_COMMON) + list(words)
        self.weights = [1.0 / (rank + 1) for rank in range(len(self.words))]

    def sentence(self, low: int = 8, high: int = 24) -> str:
        n = self.rng.randint(low, high)
        return " ".join(self.rng.choices(self.words, self.weights, k=n)) + "."

    def query(self) -> str:
        # Rare-ish words, as a question names the thing it asks about.
        picked = self.rng.sample(self.words[len(_COMMON):len(_COMMON) + 1500], 3)
        return f"What did {self.rng.choice(_NAMES)} say about {' '.join(picked)}?"


def _stats(values: list[float]) -> dict[str, float]:
    ps = percentiles(values, (50, 90))
    return {"median": round(ps["p50"], 3), "p90": round(ps["p90"], 3), "n": len(values)}


def peak_rss_mib() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(usage / (1024 * 1024) if sys.platform == "darwin" else usage / 1024, 1)  # bytes on macOS, KiB on Linux


def _unit_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


class SyntheticStore:
    """A store grown to given sizes with synthetic notes (random unit vectors)."""

    def __init__(self, path: Path, vocab: Vocabulary, dim: int, seed: int) -> None:
        self.store = Store(path, embed_model="bench-random", dim=dim)
        self.vocab = vocab
        self.dim = dim
        self.rng = np.random.default_rng(seed)
        self.count = 0
        self.start = datetime(2023, 1, 1, 9, 0)

    def _note(self, i: int, vector: np.ndarray) -> dict:
        return {"raw_ids": [], "content": self.vocab.sentence(), "embedding": vector,
                "event_time": (self.start + timedelta(minutes=i)).isoformat(),
                "speaker": _NAMES[i % len(_NAMES)], "keywords": []}

    def grow(self, target: int, batch: int = 1000, tick: Callable[[int], None] | None = None) -> float:
        """Insert notes until ``target``; returns notes per second over the bulk transactions."""
        t0 = time.perf_counter()
        added = 0
        while self.count < target:
            n = min(batch, target - self.count)
            vectors = _unit_vectors(self.rng, n, self.dim)
            with self.store.transaction() as conn:
                for j in range(n):
                    notes.insert(conn, **self._note(self.count + j, vectors[j]))
            self.count += n
            added += n
            if tick:
                tick(n)
        seconds = time.perf_counter() - t0
        return added / seconds if seconds > 0 else float("inf")

    def commit_latency(self, commits: int) -> list[float]:
        """Milliseconds of single-note transactions (each commit is an fsync)."""
        out = []
        vectors = _unit_vectors(self.rng, commits, self.dim)
        for j in range(commits):
            t0 = time.perf_counter()
            with self.store.transaction() as conn:
                notes.insert(conn, **self._note(self.count, vectors[j]))
            out.append((time.perf_counter() - t0) * 1000)
            self.count += 1
        return out

    def close(self) -> None:
        self.store.close()


def _time(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    result = fn()
    return result, (time.perf_counter() - t0) * 1000


def bench_store_queries(syn: SyntheticStore, queries: int) -> dict:
    conn = syn.store.conn
    qrng = np.random.default_rng(12345)
    knn = [_time(lambda v=v: notes.knn(conn, v, 10))[1] for v in _unit_vectors(qrng, queries, syn.dim)]
    texts = [syn.vocab.query() for _ in range(queries)]
    fts = [_time(lambda t=t: notes.fts(conn, t, 10))[1] for t in texts]
    return {"knn_ms": _stats(knn), "fts_ms": _stats(fts)}


def bench_retrieval(syn: SyntheticStore, embed: Callable[[list[str]], np.ndarray], queries: int) -> dict:
    conn = syn.store.conn
    texts = [syn.vocab.query() for _ in range(queries)]
    embed(texts[:1])  # warm the embedder once
    embed_ms, retrieve_ms, pack_ms, total_ms = [], [], [], []
    for text in texts:
        vector, e = _time(lambda text=text: embed([text])[0])
        hits, r = _time(lambda vector=vector, text=text: hybrid(conn, text, vector, 8))

        def pack(hits: list = hits) -> str:
            found = notes.get_many(conn, [h.note_id for h in hits])
            return "\n".join(note_line(i, n) for i, n in enumerate(found, start=1))

        _, p = _time(pack)
        embed_ms.append(e)
        retrieve_ms.append(r)
        pack_ms.append(p)
        total_ms.append(e + r + p)
    return {"embed_ms": _stats(embed_ms), "hybrid_ms": _stats(retrieve_ms), "pack_ms": _stats(pack_ms),
            "total_ms": _stats(total_ms)}


def _synthetic_turns(vocab: Vocabulary, n: int, start: datetime) -> list[tuple[str, str, str, str]]:
    return [(_NAMES[i % len(_NAMES)], vocab.sentence(), (start + timedelta(seconds=30 * i)).isoformat(), f"B:{i + 1}")
            for i in range(n)]


def bench_ingest(settings: Settings, folder: Path, vocab: Vocabulary, n: int, *, llm: Any, embedder: Any,
                 steps: list | None, label: str) -> tuple[dict, Any]:
    """Accept ``n`` turns and drain the worker; returns the numbers and the (open) engine."""
    from edgemem.engine import Engine
    from edgemem.ingest.raw import accept_turns

    engine = Engine.open(dataclasses.replace(settings, db_path=folder / f"{label}.db"), llm=llm, embedder=embedder, steps=steps)
    turns = _synthetic_turns(vocab, n, datetime(2023, 5, 8, 13, 56))
    _, accept_ms = _time(lambda: accept_turns(engine.store, turns, kind="conversation", uri=f"bench/{label}"))
    done, process_ms = _time(engine.process)
    status = engine.status()
    return {
        "turns": n, "jobs": done, "notes": status["notes"], "queue": status["queue"],
        "accept_turns_per_s": round(n / (accept_ms / 1000), 1),
        "notes_per_s": round(status["notes"] / (process_ms / 1000), 2) if process_ms else None,
        "turns_per_s": round(n / (process_ms / 1000), 2) if process_ms else None,
        "process_s": round(process_ms / 1000, 2),
    }, engine


def warm_up(engine: Any) -> dict:
    """Load the model and warm the answer prompts' static parts, as a started daemon has (its
    ``Engine.warm`` jobs run once the model is loaded); not timed as an ask."""
    engine.ask("warm-up: what is remembered?")
    t0 = time.perf_counter()
    kept = [int(job.result()) for job in engine.warm()]
    return {"prompts": len(kept), "tokens": sum(kept), "seconds": round(time.perf_counter() - t0, 1)}


def bench_ask(engine: Any, llm: MeteredLLM, vocab: Vocabulary, n: int) -> dict:
    """``Engine.ask`` latency split into model prefill, generation and everything else."""
    from edgemem.store import raw as raw_store

    turns = list(itertools.islice(raw_store.iter_turns(engine.store.conn), n))
    rng = random.Random(7)
    questions = [f"What did {t.speaker} say about {' '.join(rng.sample(t.text.rstrip('.').split(), 3))}?" for t in turns]
    warm_up(engine)
    wall, prefill, generate, other, calls = [], [], [], [], []
    for q in questions:
        before = dataclasses.replace(llm.usage)
        _, ms = _time(lambda q=q: engine.ask(q))
        used = llm.usage.since(before)
        wall.append(ms)
        prefill.append(used.prefill_ms)
        generate.append(used.generate_ms)
        other.append(max(ms - used.prefill_ms - used.generate_ms, 0.0))
        calls.append(used.calls)
    total = sum(wall)
    return {
        "questions": len(questions), "model": llm.name, "model_calls_per_question": _stats([float(c) for c in calls]),
        "total_ms": _stats(wall), "prefill_ms": _stats(prefill), "generate_ms": _stats(generate),
        "other_ms": _stats(other),
        "share": {"prefill": round(sum(prefill) / total, 3), "generate": round(sum(generate) / total, 3),
                  "other": round(sum(other) / total, 3)} if total else None,
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def run_bench(settings: Settings, config: BenchConfig, *, embedder: Any = None, llm: Any = None,
              echo: Callable[[str], None] | None = None) -> dict:
    """Run the benchmark; returns the result (``format_result`` prints it)."""
    say = echo or (lambda _m: None)
    sizes = sorted(set(config.store_sizes if config.store_only else config.sizes + config.store_sizes))
    if not sizes or min(sizes) < 1 or config.queries < 1:
        raise BadInput("benchmark sizes and --queries must be positive")
    if embedder is None and not config.store_only:  # the store benchmark needs no embedder
        embedder = load_default_embedder(settings)
    dim = embedder.dim if embedder is not None else DIMS.get(settings.embed_model, 384)
    shared = MeteredLLM((lambda: llm) if llm is not None else (lambda: load_default_llm(settings)),
                        getattr(llm, "name", None) or settings.model)
    vocab = Vocabulary(config.seed)
    folder = Path(tempfile.mkdtemp(prefix="edgemem-bench-"))
    result: dict[str, Any] = {
        "started_at": datetime.now().replace(microsecond=0).isoformat(), "seed": config.seed,
        "embedder": getattr(embedder, "name", None), "rss_mib": {},
        "notes": ["stored notes use random unit vectors (embedding 100k texts would dominate the run)"
                  + ("" if config.store_only else "; query embeddings use the real embedder, so hits are"
                     " meaningless but costs are real")],
    }
    try:
        with progress_bar(config.progress) as bar:
            syn = SyntheticStore(folder / "synthetic.db", vocab, dim, config.seed)
            store_rows, retrieval_rows = {}, {}
            task = bar.add_task("synthetic notes", total=max(sizes))
            try:
                for size in sizes:
                    rate = syn.grow(size, tick=lambda n: bar.advance(task, n))
                    row: dict[str, Any] = {"bulk_insert_notes_per_s": round(rate, 1)}
                    if size in config.store_sizes:
                        row.update(bench_store_queries(syn, config.queries))
                        row["commit_ms"] = _stats(syn.commit_latency(config.commits))
                        store_rows[str(size)] = row
                    if not config.store_only and size in config.sizes:
                        retrieval_rows[str(size)] = bench_retrieval(syn, lambda texts: embedder.embed(texts), config.queries)
                    say(f"measured {size} notes")
            finally:
                syn.close()
            result["store"] = store_rows
            result["rss_mib"]["store"] = peak_rss_mib()
            if config.store_only:
                return _finish(result, config)
            result["retrieval"] = retrieval_rows
            result["rss_mib"]["retrieval"] = peak_rss_mib()

            ingest, engine = bench_ingest(settings, folder, vocab, config.ingest_turns, llm=shared,
                                          embedder=embedder, steps=[], label="ingest-no-steps")
            result["ingest"] = {"no_steps": ingest}
            try:
                if not config.no_model:
                    result["ask"] = bench_ask(engine, shared, vocab, config.ask_questions)
                    result["rss_mib"]["ask"] = peak_rss_mib()
            finally:
                engine.close()
            if not config.no_model:
                with_steps, engine = bench_ingest(settings, folder, vocab, config.steps_turns, llm=shared,
                                                  embedder=embedder, steps=None, label="ingest-default-steps")
                engine.close()
                result["ingest"]["default_steps"] = with_steps
            result["rss_mib"]["ingest"] = peak_rss_mib()
    finally:
        if llm is None:
            shared.release()
        shutil.rmtree(folder, ignore_errors=True)
    return _finish(result, config)


def _finish(result: dict, config: BenchConfig) -> dict:
    ratios: dict[str, Any] = {}
    store = result.get("store", {})
    sizes = sorted(int(s) for s in store)
    if len(sizes) > 1:
        lo, hi = str(sizes[0]), str(sizes[-1])
        ratios[f"knn_{hi}_vs_{lo}"] = _ratio(store[hi]["knn_ms"]["median"], store[lo]["knn_ms"]["median"])
        ratios[f"fts_{hi}_vs_{lo}"] = _ratio(store[hi]["fts_ms"]["median"], store[lo]["fts_ms"]["median"])
    retrieval = result.get("retrieval", {})
    rsizes = sorted(int(s) for s in retrieval)
    for size in rsizes[1:]:
        ratios[f"retrieval_{size}_vs_{rsizes[0]}"] = _ratio(retrieval[str(size)]["total_ms"]["median"],
                                                            retrieval[str(rsizes[0])]["total_ms"]["median"])
    ingest = result.get("ingest", {})
    if "default_steps" in ingest:
        ratios["ingest_no_steps_vs_default_steps"] = _ratio(ingest["no_steps"]["notes_per_s"], ingest["default_steps"]["notes_per_s"])
    result["ratios"] = ratios
    result["rss_mib"]["peak"] = peak_rss_mib()
    result["config"] = dataclasses.asdict(config)
    result["finished_at"] = datetime.now().replace(microsecond=0).isoformat()
    return result


def _ms(stats: dict | None) -> str:
    return "-" if not stats else f"{stats['median']:.2f} (p90 {stats['p90']:.2f})"


def format_result(result: dict) -> str:
    """The benchmark as a fixed-width table: one row per measurement, medians with p90."""
    rows: list[tuple[str, str]] = []
    for size, row in result.get("store", {}).items():
        rows += [
            (f"store {size}: bulk insert", f"{row['bulk_insert_notes_per_s']:.0f} notes/s"),
            (f"store {size}: one-note commit ms", _ms(row["commit_ms"])),
            (f"store {size}: KNN k=10 ms", _ms(row["knn_ms"])),
            (f"store {size}: FTS top-10 ms", _ms(row["fts_ms"])),
        ]
    for size, row in result.get("retrieval", {}).items():
        rows += [
            (f"retrieval {size}: query embed ms", _ms(row["embed_ms"])),
            (f"retrieval {size}: hybrid top-8 ms", _ms(row["hybrid_ms"])),
            (f"retrieval {size}: pack ms", _ms(row["pack_ms"])),
            (f"retrieval {size}: total ms", _ms(row["total_ms"])),
        ]
    for label, row in result.get("ingest", {}).items():
        rows += [
            (f"ingest ({label.replace('_', ' ')}): accept", f"{row['accept_turns_per_s']:.0f} turns/s"),
            (f"ingest ({label.replace('_', ' ')}): worker", f"{row['notes_per_s']} notes/s ({row['turns']} turns)"),
        ]
    ask = result.get("ask")
    if ask:
        rows += [
            (f"ask ({ask['model']}): total ms", _ms(ask["total_ms"])),
            ("ask: model prefill ms", _ms(ask["prefill_ms"])),
            ("ask: model generation ms", _ms(ask["generate_ms"])),
            ("ask: everything else ms", _ms(ask["other_ms"])),
        ]
        if ask.get("share"):
            share = ask["share"]
            rows.append(("ask: share prefill/gen/other",
                         f"{100 * share['prefill']:.0f}% / {100 * share['generate']:.0f}% / {100 * share['other']:.0f}%"))
    for name, value in result.get("ratios", {}).items():
        rows.append((f"ratio {name}", "-" if value is None else f"{value:.2f}x"))
    for phase, mib in result.get("rss_mib", {}).items():
        rows.append(("peak RSS, whole run" if phase == "peak" else f"peak RSS after {phase}", f"{mib:.0f} MiB"))
    width = max(len(r[0]) for r in rows) if rows else 0
    lines = [f"{name.ljust(width)}  {value}" for name, value in rows]
    lines += [f"note: {n}" for n in result.get("notes", [])]
    if "ask" not in result and not result.get("config", {}).get("store_only"):
        lines.append("note: ask latency and default-steps ingest skipped (--no-model)")
    return "\n".join(lines)

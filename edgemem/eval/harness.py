"""The evaluation harness shared by ``edgemem eval locomo`` and ``edgemem eval longmemeval``.

DESIGN "Evaluation": every conversation goes into a fresh store through the write path the daemon
runs (``import_sessions`` → note jobs → ``Engine.process``), and every question is answered through
a system's read path: ``edgemem`` (``Engine.ask``, the MemFlow pipeline) or a baseline of
:mod:`edgemem.eval.baselines` (flat RAG, full context), all on the same model, loaded once per run.

A run writes into one folder:

- ``run.json`` — what was run (benchmark, file and its sha256, system, seed, sample, steps, model);
- ``predictions.jsonl`` — one line per question, appended and fsynced as each is answered, so a
  killed run continues with ``--resume`` (question keys already present are skipped);
- ``summary.json`` — the metrics, recomputed from all predictions at the end;
- ``stores/<conversation>.db`` — the store each conversation was ingested into (``edgemem --db …
  why <query id>`` explains an answer), with ``<conversation>.json`` recording that ingestion
  finished.

Model usage is measured by wrapping the model (:class:`MeteredLLM`): every completion's prompt and
completion tokens, prefill and generation milliseconds are summed per question, whatever the
pipeline's trace says. Sampling is deterministic: ``--limit-questions N`` takes a share of every
category proportional to its size (largest remainders), each drawn by ``random.Random`` seeded
with the seed and the category, from the questions in file order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import random
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgemem.config import Settings
from edgemem.errors import BadInput, EdgememError
from edgemem.eval import baselines
from edgemem.eval.systems import System, SystemOutput
from edgemem.ingest.importers import ChatSession, import_sessions
from edgemem.recall import packer
from edgemem.store import notes as notes_store
from edgemem.store import raw as raw_store

if TYPE_CHECKING:
    from edgemem.engine import Engine

log = logging.getLogger(__name__)

SYSTEMS = ("edgemem", "rag", "full-context")
STEPS = ("default", "none")
EVIDENCE = ("retrieved", "oracle", "both")


# -- the data a benchmark hands the harness --------------------------------------------------------
@dataclass
class Question:
    key: str  # unique in the file and stable across runs: the resume key
    question: str
    gold: str | int
    category: int | str
    evidence: list[str] = field(default_factory=list)  # ext ids (LoCoMo dia_ids) of the gold turns
    extra: dict = field(default_factory=dict)  # copied into the prediction record


@dataclass
class Conversation:
    id: str
    sessions: list[ChatSession]
    questions: list[Question]
    now: datetime | None = None  # when the questions are asked, where the benchmark says


@dataclass
class RunConfig:
    benchmark: str
    path: Path
    out: Path
    system: str = "edgemem"
    retrieval_only: bool = False
    steps: str = "default"
    seed: int = 0
    limit: int | None = None
    only: list[str] | None = None  # sample ids (LoCoMo) or question ids (LongMemEval)
    resume: bool = False
    keep_stores: bool = True
    progress: bool = True
    stores: Path | None = None  # where conversations' stores live (default: <out>/stores); shareable across runs
    evidence: str = "retrieved"  # retrieved | oracle (the gold evidence turns are packed) | both
    budgets: dict[str, int] | None = None  # Tier-2 raw budgets replaced for this run (``--budget TAG=N``)

    @property
    def variants(self) -> list[str]:
        """The systems each question is answered by, in order: ``edgemem``, ``rag``, ``edgemem@oracle`` ..."""
        names = [n.strip() for n in self.system.split(",") if n.strip()]
        plain = [n for n in names if not n.endswith("@oracle")]
        out = list(plain) if self.evidence in ("retrieved", "both") else []
        if self.evidence in ("oracle", "both"):
            out += [f"{n}@oracle" for n in plain if n != "full-context"]
        # a system named "x@oracle" reads the gold evidence whatever --evidence says: one run can
        # then report edgemem, flat RAG and the ceiling without also answering rag@oracle
        out += [n for n in names if n.endswith("@oracle") and n not in out]
        return out

    @property
    def stores_dir(self) -> Path:
        return self.stores if self.stores is not None else self.out / "stores"

    def identity(self, file_sha256: str) -> dict:
        """The fields a resumed run must share with the run it continues."""
        return {"benchmark": self.benchmark, "file_sha256": file_sha256, "system": self.system,
                "evidence": self.evidence, "retrieval_only": self.retrieval_only, "steps": self.steps, "seed": self.seed,
                "limit": self.limit, "only": sorted(self.only) if self.only else None,
                **({"budgets": dict(sorted(self.budgets.items()))} if self.budgets else {})}


@dataclass
class Benchmark:
    """How a benchmark scores and prints: ``summarize(records, retrieval_only) -> dict``."""

    name: str
    summarize: Callable[[list[dict], bool], dict]
    table: Callable[[dict], str]


# -- question selection ----------------------------------------------------------------------------
def select_questions(questions: Sequence[Question], limit: int | None, seed: int) -> list[Question]:
    """A stable sample of ``limit`` questions, each category represented in proportion to its size.

    Quotas are floor(limit * share) plus one for the largest remainders (ties: category order).
    Each category draws with ``random.Random(f"{seed}/{category}")`` from its questions in file
    order, so a category's draw depends only on the seed and that category's questions.
    """
    if limit is None or limit >= len(questions):
        return list(questions)
    if limit < 1:
        raise BadInput(f"--limit-questions must be at least 1, got {limit}")
    groups: dict[str, list[int]] = {}
    for index, q in enumerate(questions):
        groups.setdefault(str(q.category), []).append(index)
    total = len(questions)
    exact = {c: limit * len(ix) / total for c, ix in groups.items()}
    quota = {c: int(v) for c, v in exact.items()}
    left = limit - sum(quota.values())
    for c in sorted(groups, key=lambda c: (-(exact[c] - quota[c]), c))[:left]:
        quota[c] += 1
    chosen: list[int] = []
    for c, indexes in groups.items():
        chosen += random.Random(f"{seed}/{c}").sample(indexes, quota[c])
    return [questions[i] for i in sorted(chosen)]


# -- the shared model, measured ----------------------------------------------------------------------
@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prefill_ms: float = 0.0
    generate_ms: float = 0.0
    cached_tokens: int = 0  # prompt tokens the KV cache already held: counted, but not prefilled

    def add(self, completion: Any) -> None:
        self.calls += 1
        self.prompt_tokens += completion.prompt_tokens
        self.cached_tokens += int(getattr(completion, "cached_tokens", 0) or 0)
        self.completion_tokens += completion.completion_tokens
        self.prefill_ms += completion.prefill_ms
        self.generate_ms += completion.generate_ms

    def since(self, before: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) - getattr(before, f.name) for f in dataclasses.fields(self)))


class MeteredLLM:
    """The run's model, loaded on first use, counting what every completion costs.

    Engines are opened and closed once per conversation; ``close`` here does nothing so the model
    outlives them, and the run closes it with :meth:`release`.
    """

    def __init__(self, load: Callable[[], Any], name: str) -> None:
        self._load = load
        self._llm: Any = None
        self.name = name
        self.usage = Usage()

    @property
    def llm(self) -> Any:
        if self._llm is None:
            self._llm = self._load()
            self.name = getattr(self._llm, "name", self.name)
        return self._llm

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    @property
    def n_ctx(self) -> int:
        return self.llm.n_ctx

    def count_tokens(self, text: str) -> int:
        return self.llm.count_tokens(text)

    def count_messages(self, messages: Any) -> int:
        return self.llm.count_messages(messages)

    def complete(self, messages: Any, **kwargs: Any) -> Any:
        result = self.llm.complete(messages, **kwargs)
        self.usage.add(result)
        return result

    def complete_json(self, messages: Any, schema: dict, **kwargs: Any) -> Any:
        result = self.llm.complete_json(messages, schema, **kwargs)
        self.usage.add(result)
        return result

    def __getattr__(self, name: str) -> Any:  # anything else of the protocol, unmeasured
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.llm, name)

    def close(self) -> None:
        return None  # shared by every engine of the run; see release()

    def release(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None


def load_default_llm(settings: Settings) -> Any:
    """The configured model, built exactly as the daemon builds it (prompt cache included)."""
    from edgemem.runtime.runtime import build_llm

    return build_llm(settings)


def load_default_embedder(settings: Settings) -> Any:
    from edgemem.runtime import models
    from edgemem.runtime.embed import FastEmbedder

    return FastEmbedder(settings.embed_model, models.embedding_dir(settings), threads=settings.embed_threads)


# -- files -------------------------------------------------------------------------------------------
def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_json(path: Path, data: Any) -> None:
    """Write atomically (temporary file, fsync, rename), owner-only."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_predictions(path: Path) -> list[dict]:
    """The records of a predictions file; a torn last line (a run killed mid-write) is dropped."""
    if not path.exists():
        return []
    records: list[dict] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                log.warning("%s: dropping a torn last line", path)
                break
            raise BadInput(f"{path}: line {number} is not JSON; the predictions file is damaged") from None
    return records


class Predictions:
    """``predictions.jsonl``: appended one fsynced line at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        records = read_predictions(path)
        self.done = {(r.get("system", "edgemem"), r["key"]) for r in records}
        # Rewrite without a torn tail so the next append starts on a fresh line.
        if path.exists() and len(records) != sum(1 for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()):
            with open(path, "w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._fh = os.fdopen(fd, "a", encoding="utf-8")

    def append(self, record: dict) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.done.add((record.get("system", "edgemem"), record["key"]))

    def close(self) -> None:
        self._fh.close()


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "conversation"


def default_out(benchmark: str, system: str, retrieval_only: bool) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    suffix = "-retrieval" if retrieval_only else ""
    return Path("edgemem-eval") / f"{benchmark}-{system}{suffix}-{stamp}"


# -- progress ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def progress_bar(enabled: bool) -> Iterator[Any]:
    """A rich progress display on stderr, or a silent stand-in when it is not a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = Console(stderr=True)
    show = enabled and console.is_terminal
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=console, disable=not show, transient=False) as bar:
        yield bar


# -- reading what a system returned ---------------------------------------------------------------------
def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def raw_ids_of(conn: Any, items: Sequence[Any]) -> list[int]:
    """Raw turn ids behind retrieved items, in rank order, each once.

    Items may be notes (``source_turns``), read-path evidence (``note_id``) or bare note ids; an id
    of 0 or below (a computed fact) has no turn behind it.
    """
    out: dict[int, None] = {}
    for item in items:
        turns = _get(item, "source_turns")
        if turns is None:
            note_id = item if isinstance(item, int) else _get(item, "note_id", _get(item, "id"))
            note = notes_store.get(conn, note_id) if isinstance(note_id, int) and note_id > 0 else None
            turns = note.source_turns if note is not None else []
        out.update(dict.fromkeys(int(t) for t in turns))
    return list(out)


def ext_ids_of(conn: Any, raw_ids: Sequence[int]) -> list[str]:
    """External ids (LoCoMo dia_ids) of raw turns, in order; turns without one are skipped."""
    out = []
    for raw_id in raw_ids:
        turn = raw_store.get_turn(conn, raw_id)
        if turn is not None and turn.ext_id:
            out.append(turn.ext_id)
    return out


def route_of(trace: dict) -> tuple[str | None, str | None]:
    tag, layer = trace.get("route_tag"), trace.get("route_layer")
    route = trace.get("route")
    if isinstance(route, dict):
        tag = tag or route.get("tag")
        layer = layer or route.get("layer")
    return tag, layer


def stages_of(trace: dict) -> dict:
    """Per-stage tokens and ms: the trace's ``stages`` if it has them, else its *_ms / *_tokens keys."""
    stages = trace.get("stages")
    if isinstance(stages, (dict, list)):
        return stages
    return {k: v for k, v in trace.items()
            if (k.endswith("_ms") or k.endswith("_tokens")) and isinstance(v, (int, float)) and not isinstance(v, bool)}


# -- the edgemem system ---------------------------------------------------------------------------------
class EdgememSystem:
    """The pipeline the daemon runs: ``Engine.ask``, or ``Engine.retrieve`` (route, retrieve, pack,
    no model call) for retrieval-only runs; both get the time the benchmark asks the question at."""

    name = "edgemem"

    def __init__(self, engine: Engine, llm: Any) -> None:
        self.engine = engine

    def answer(self, question: str, now: datetime | None) -> SystemOutput:
        answer = self.engine.ask(question, now=now)
        return SystemOutput(answer.text, list(answer.notes), dict(answer.trace),
                            _int(answer.trace.get("packed_tokens")), answer.query_id)

    def retrieve(self, question: str, now: datetime | None) -> SystemOutput:
        found = self.engine.retrieve(question, now=now)
        return SystemOutput(None, list(found.notes), dict(found.trace), _int(found.trace.get("packed_tokens")))

    def answer_from(self, question: str, now: datetime | None, note_ids: list[int]) -> SystemOutput:
        answer = self.engine.ask(question, now=now, evidence=note_ids)
        return SystemOutput(answer.text, list(answer.notes), dict(answer.trace),
                            _int(answer.trace.get("packed_tokens")), answer.query_id)


def gold_note_ids(conn: Any, dia_ids: Sequence[str]) -> list[int]:
    """The active notes that stand on the gold evidence turns, in the order of the gold ids."""
    out: dict[int, None] = {}
    for dia_id in dia_ids:
        rows = conn.execute(
            """SELECT ns.note_id FROM note_sources ns JOIN raw_turns r ON r.id = ns.raw_id
               JOIN notes n ON n.id = ns.note_id WHERE r.ext_id = ? AND n.status = 'active'
               ORDER BY ns.note_id""", (dia_id,)).fetchall()
        out.update(dict.fromkeys(int(r[0]) for r in rows))
    return list(out)


class OracleEvidence:
    """The reading ceiling (``--evidence oracle``): a system's reader given the notes that stand on the
    question's gold evidence turns instead of what its retrieval found. The gap between a system and
    its oracle variant is retrieval loss; the gap between the oracle and 100% is reading loss."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = f"{inner.name}@oracle"
        self.gold: list[str] = []  # set by the harness before each question

    def answer(self, question: str, now: datetime | None) -> SystemOutput:
        ids = gold_note_ids(self.inner.engine.store.conn, self.gold)
        out = self.inner.answer_from(question, now, ids)
        out.trace["evidence"] = "oracle"
        return out

    def retrieve(self, question: str, now: datetime | None) -> SystemOutput:  # noqa: ARG002
        conn = self.inner.engine.store.conn
        ids = gold_note_ids(conn, self.gold)
        return SystemOutput(None, notes_store.get_many(conn, ids), {"evidence": "oracle", "retrieved": ids})


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def make_system(name: str, engine: Any, llm: Any) -> System:
    if name.endswith("@oracle"):
        return OracleEvidence(make_system(name[: -len("@oracle")], engine, llm))
    if name == "edgemem":
        return EdgememSystem(engine, llm)
    if name == "rag":
        return baselines.FlatRAG(engine, llm)
    if name == "full-context":
        return baselines.FullContext(engine, llm)
    raise BadInput(f"unknown system {name!r}; expected one of {', '.join(SYSTEMS)}")


# -- the run ---------------------------------------------------------------------------------------------
def _prepare_out(config: RunConfig, identity: dict) -> None:
    out = config.out
    predictions = out / "predictions.jsonl"
    run_file = out / "run.json"
    if config.resume:
        if not run_file.exists():
            raise BadInput(f"{out} holds no run to resume (no run.json)")
        before = json.loads(run_file.read_text(encoding="utf-8"))
        different = {k: (before.get("identity", {}).get(k), v) for k, v in identity.items()
                     if before.get("identity", {}).get(k) != v}
        if different:
            what = ", ".join(f"{k} was {a!r}, now {b!r}" for k, (a, b) in sorted(different.items()))
            raise BadInput(f"{out} holds a different run ({what}); use another --out or the same options")
    elif predictions.exists() or run_file.exists():
        raise BadInput(f"{out} already holds a run; pass --resume to continue it or choose another --out")
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    config.stores_dir.mkdir(parents=True, exist_ok=True, mode=0o700)


def _remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()


def _sessions_digest(sessions: Sequence[ChatSession], steps: str = "default") -> str:
    """What a kept store was built from: the sessions and the write-path steps (a store ingested
    with ``--steps none`` is not reused by a run that wants the default steps)."""
    digest = hashlib.sha256(steps.encode() if steps != "default" else b"")
    for s in sessions:
        digest.update(s.uri.encode())
        digest.update(s.digest().encode())
    return digest.hexdigest()


def run(
    config: RunConfig,
    conversations: Sequence[Conversation],
    benchmark: Benchmark,
    settings: Settings,
    *,
    llm: Any = None,
    embedder: Any = None,
    steps: list | None = None,
    echo: Callable[[str], None] | None = None,
) -> dict:
    """Run (or resume) an evaluation; returns the summary also written to ``summary.json``.

    ``llm`` / ``embedder`` default to the configured model and embedder, loaded once. ``steps``
    overrides the write-path steps (tests); otherwise ``config.steps`` picks them.
    """
    for name in config.system.split(","):
        base = name.strip().removesuffix("@oracle")
        if base not in SYSTEMS or name.strip() == "full-context@oracle":
            raise BadInput(f"unknown system {name.strip()!r}; expected one or more of {', '.join(SYSTEMS)}"
                           " (edgemem and rag may carry @oracle)")
    if config.evidence not in EVIDENCE:
        raise BadInput(f"unknown --evidence {config.evidence!r}; expected one of {', '.join(EVIDENCE)}")
    variants = config.variants
    if not variants:
        raise BadInput("--evidence oracle has no reader for full-context; choose edgemem or rag")
    if config.steps not in STEPS:
        raise BadInput(f"unknown --steps {config.steps!r}; expected one of {', '.join(STEPS)}")
    sha = file_sha256(config.path)
    identity = config.identity(sha)
    _prepare_out(config, identity)

    questions = [q for c in conversations for q in c.questions]
    keys = [q.key for q in questions]
    if len(set(keys)) != len(keys):
        raise BadInput(f"{config.path}: question keys are not unique")
    selected = select_questions(questions, config.limit, config.seed)
    wanted = {q.key for q in selected}

    if llm is not None:
        shared = MeteredLLM(lambda: llm, getattr(llm, "name", "model"))
    else:
        shared = MeteredLLM(lambda: load_default_llm(settings), settings.model)
    embedder = embedder or load_default_embedder(settings)
    write_steps = steps if steps is not None else ([] if config.steps == "none" else None)

    run_file = config.out / "run.json"
    first = json.loads(run_file.read_text(encoding="utf-8")) if config.resume else {}
    write_json(run_file, {
        "identity": identity, "path": str(config.path), "questions_in_file": len(questions),
        "selected": len(selected), "model": shared.name, "embedder": getattr(embedder, "name", None),
        "started_at": first.get("started_at") or datetime.now().replace(microsecond=0).isoformat(),
        "resumed_at": datetime.now().replace(microsecond=0).isoformat() if config.resume else None,
        "argv": sys.argv[1:],
    })
    predictions = Predictions(config.out / "predictions.jsonl")
    say = echo or (lambda _m: None)
    jobs = {(v, k) for v in variants for k in wanted}
    if predictions.done:
        say(f"resuming: {len(predictions.done & jobs)} of {len(jobs)} answers already recorded")
    ingest_info: dict[str, dict] = {}
    errors = 0
    started = time.perf_counter()
    try:
        with progress_bar(config.progress) as bar, packer.budgets_overridden(config.budgets or {}):
            qtask = bar.add_task("questions", total=len(jobs), completed=len(predictions.done & jobs))
            for conv in conversations:
                todo = [q for q in conv.questions if q.key in wanted
                        and any((v, q.key) not in predictions.done for v in variants)]
                sidecar = config.stores_dir / f"{safe_name(conv.id)}.json"
                if todo:
                    info, failed = _run_conversation(conv, todo, config, settings, shared, embedder, write_steps,
                                                     predictions, bar, qtask)
                    errors += failed
                    if info["queue"].get("parked"):
                        say(f"warning: {conv.id}: {info['queue']['parked']} write-path job(s) failed and were parked")
                    ingest_info[conv.id] = info
                elif sidecar.exists():
                    ingest_info[conv.id] = json.loads(sidecar.read_text(encoding="utf-8"))
    finally:
        predictions.close()
        model_loaded = shared.loaded
        if llm is None:
            shared.release()
    records = [r for r in read_predictions(config.out / "predictions.jsonl")
               if (r.get("system", "edgemem"), r["key"]) in jobs]
    summary = build_summary(records, benchmark, config, identity, variants=variants,
                            extra={"model": shared.name, "model_loaded": model_loaded,
                                   "embedder": getattr(embedder, "name", None),
                                   "ingest": ingest_info, "errors_this_run": errors,
                                   "seconds_this_run": round(time.perf_counter() - started, 1)})
    write_json(config.out / "summary.json", summary)
    return summary


def _run_conversation(conv: Conversation, todo: list[Question], config: RunConfig, settings: Settings,
                      shared: MeteredLLM, embedder: Any, write_steps: list | None, predictions: Predictions,
                      bar: Any, qtask: Any) -> tuple[dict, int]:
    """Ingest one conversation into its store (or reuse the store a killed run finished) and answer
    its pending questions; returns the ingestion record and how many questions failed."""
    from edgemem.engine import Engine

    stores = config.stores_dir
    sidecar = stores / f"{safe_name(conv.id)}.json"
    store_path = stores / f"{safe_name(conv.id)}.db"
    digest = _sessions_digest(conv.sessions, config.steps)
    info = json.loads(sidecar.read_text(encoding="utf-8")) if sidecar.exists() else None
    if info is None or info.get("digest") != digest or not store_path.exists():
        _remove_store(store_path)  # a half-ingested store from a killed run: start it again
        info = None
    failed = 0
    engine = Engine.open(dataclasses.replace(settings, db_path=store_path), llm=shared, embedder=embedder,
                         steps=write_steps)
    try:
        if info is None:
            info = _ingest(engine, conv, bar, shared)
            info["digest"] = digest
            write_json(sidecar, info)
        systems = {v: make_system(v, engine, shared) for v in config.variants}
        for q in todo:
            bar.update(qtask, description=f"questions ({conv.id})")
            for variant, system in systems.items():  # every system answers a question before the next one
                if (variant, q.key) in predictions.done:
                    continue
                if isinstance(system, OracleEvidence):
                    system.gold = list(q.evidence)
                record = _ask(system, engine, shared, conv, q, config, variant)
                failed += 1 if record.get("error") else 0
                predictions.append(record)
                bar.advance(qtask)
    finally:
        engine.close()
    if not config.keep_stores and config.stores is None:  # a shared stores folder is never emptied
        _remove_store(store_path)
    return info, failed


def build_summary(records: list[dict], benchmark: Benchmark, config: RunConfig, identity: dict,
                  extra: dict | None = None, variants: Sequence[str] | None = None) -> dict:
    """The benchmark's summary of the first system; with several systems (``--system a,b``,
    ``--evidence both``) also ``systems``: each one's summary, and a comparison table."""
    variants = list(variants or config.variants)
    own = {v: [r for r in records if r.get("system", "edgemem") == v] for v in variants}
    summary = benchmark.summarize(own[variants[0]], config.retrieval_only)
    summary["run"] = {**identity, "path": str(config.path), "n": len(own[variants[0]]),
                      "errors": sum(1 for r in records if r.get("error")), **(extra or {})}
    summary["table"] = benchmark.table(summary)
    if len(variants) > 1:
        summary["systems"] = {}
        for v in variants:
            one = benchmark.summarize(own[v], config.retrieval_only)
            one["answerable_abstention_rate"] = _answerable_abstention(own[v])
            summary["systems"][v] = one
        tables = [f"== {v} ==\n{benchmark.table(dict(summary['systems'][v], run=summary['run']))}" for v in variants]
        summary["table"] = "\n\n".join([*tables, compare_table(summary["systems"])])
    return summary


def _answerable_abstention(records: list[dict]) -> float | None:
    """How often a system abstains on questions that have an answer (LoCoMo categories 1-4)."""
    from edgemem.eval.metrics import is_abstention

    answerable = [r for r in records if str(r.get("category")) != "5"]
    if not answerable:
        return None
    return sum(1 for r in answerable if is_abstention(r.get("prediction") or "")) / len(answerable)


def compare_table(systems: dict) -> str:
    """One row per system: the headline numbers side by side (percent)."""
    columns = [("Mem0 F1 1-4", "mem0_f1"), ("LoCoMo F1", "locomo_f1"), ("cat-5 abstain", "abstention_acc"),
               ("abstain on 1-4", "answerable_abstention_rate"), ("recall@10", "recall_at_10"),
               ("evidence shown", "evidence_in_context")]
    rows = []
    for name, one in systems.items():
        overall = dict(one.get("overall", {}))
        overall["answerable_abstention_rate"] = one.get("answerable_abstention_rate")
        cells = []
        for _, key in columns:
            value = overall.get(key)
            cells.append("-" if not isinstance(value, (int, float)) else f"{100 * value:.1f}")
        rows.append([name, *cells])
    header = ["system", *(title for title, _ in columns)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda r: "  ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:]))])  # noqa: E731
    return "\n".join(["systems compared on the same questions and stores:", fmt(header),
                      "-" * len(fmt(header)), *(fmt(r) for r in rows)])


def _ingest(engine: Any, conv: Conversation, bar: Any, llm: MeteredLLM) -> dict:
    """Import every session (one transaction each) and run its note jobs, in session order."""
    total = sum(len(s.turns) for s in conv.sessions)
    task = bar.add_task(f"ingest {conv.id}", total=total)
    before = llm.usage.calls
    t0 = time.perf_counter()
    jobs = 0
    for session in conv.sessions:
        report = import_sessions(engine.store, [session])
        jobs += engine.process()
        bar.advance(task, len(session.turns))
        if report.unchanged:
            log.debug("session %s already stored", session.uri)
    bar.remove_task(task)
    status = engine.status()
    return {"turns": total, "jobs": jobs, "notes": status["notes"], "queue": status["queue"],
            "model_calls": llm.usage.calls - before, "seconds": round(time.perf_counter() - t0, 2)}


def _ask(system: Any, engine: Any, llm: MeteredLLM, conv: Conversation, q: Question, config: RunConfig,
         variant: str | None = None) -> dict:
    record: dict[str, Any] = {
        "key": q.key, "conversation": conv.id, "question": q.question, "gold": q.gold,
        "category": q.category, "evidence": q.evidence, **q.extra, "system": variant or config.system,
    }
    before = dataclasses.replace(llm.usage)
    t0 = time.perf_counter()
    try:
        outcome = (system.retrieve if config.retrieval_only else system.answer)(q.question, conv.now)
    except EdgememError as exc:  # counted and kept: a failed question scores 0, visibly
        record.update({"prediction": "", "error": f"{exc.code}: {exc.message}",
                       "latency_ms": (time.perf_counter() - t0) * 1000})
        return record
    latency = (time.perf_counter() - t0) * 1000
    used = llm.usage.since(before)
    conn = engine.store.conn
    tag, layer = route_of(outcome.trace)
    if outcome.context_raw_ids is not None:  # full context: the window, not a ranking
        retrieved, shown, cited = None, ext_ids_of(conn, outcome.context_raw_ids), None
    else:
        # What the answer model was shown: the packed notes (the trace's "used"); an answer's own
        # items are only the notes it cites.
        packed = outcome.trace.get("used")
        packed_ok = isinstance(packed, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in packed)
        shown = ext_ids_of(conn, raw_ids_of(conn, packed if packed_ok else outcome.items))
        cited = ext_ids_of(conn, raw_ids_of(conn, outcome.items))
        ranked = outcome.trace.get("retrieved")
        ranked_ok = isinstance(ranked, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in ranked)
        retrieved = ext_ids_of(conn, raw_ids_of(conn, ranked)) if ranked_ok else shown
    gold = set(q.evidence)
    record.update({
        "prediction": outcome.text,
        "route_tag": tag,
        "route_layer": layer,
        # Ranked retrieval candidates (recall@k), and the turns the answer model was shown.
        "retrieved_dia_ids": retrieved,
        "packed_dia_ids": shown if outcome.context_raw_ids is None else None,
        "cited_dia_ids": cited if outcome.context_raw_ids is None else None,
        "context_turns": len(shown),
        "evidence_in_context": len(gold & set(shown)) / len(gold) if gold else None,
        "packed_tokens": outcome.packed_tokens,
        "pipeline_tokens": used.prompt_tokens + used.completion_tokens,
        "prefilled_tokens": used.prompt_tokens - used.cached_tokens + used.completion_tokens,
        "model_calls": used.calls,
        "model_prefill_ms": round(used.prefill_ms, 1),
        "model_generate_ms": round(used.generate_ms, 1),
        "latency_ms": round(latency, 1),
        "stages": stages_of(outcome.trace),
        "query_id": outcome.query_id,
    })
    return record

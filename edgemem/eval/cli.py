"""``edgemem eval locomo|longmemeval|report`` and ``edgemem bench``.

``eval_app`` is mounted on the main app as ``edgemem eval``; :func:`bench` is registered as the
``edgemem bench`` command. The global options (``--model``, ``--n-ctx``, ``--gpu-layers``,
``--json`` ...) come from the root command's context; the evaluation never touches the user's own
store: every conversation gets a store under ``--out``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import typer

from edgemem import config
from edgemem.errors import BadInput

eval_app = typer.Typer(help="Evaluate edgemem on long-term memory benchmarks (LoCoMo, LongMemEval).",
                       no_args_is_help=True)


def _root(ctx: typer.Context) -> tuple[config.Settings, bool]:
    """Settings and --json from the main app's context; plain defaults when run on its own."""
    obj = ctx.find_root().obj
    if obj is not None and hasattr(obj, "settings"):
        return obj.settings(), bool(getattr(obj, "as_json", False))
    return config.load(), False


def _report(summary: dict, out: Path, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(summary, indent=2, default=str))
        return
    typer.echo(summary["table"])
    typer.echo(f"predictions: {out / 'predictions.jsonl'}\nsummary: {out / 'summary.json'}")


SYSTEM_HELP = ("edgemem (the full pipeline), rag (flat hybrid top-8) or full-context (newest turns that fit);"
               " several, comma-separated, answer the same questions on the same stores; edgemem@oracle or rag@oracle"
               " reads the gold evidence turns whatever --evidence says.")
EVIDENCE_HELP = ("retrieved (what each system finds), oracle (the notes of the gold evidence turns: the reading"
                 " ceiling) or both.")
STEPS_HELP = "Write-path steps at ingestion: default (gate, clusters, ... with the model) or none (notes only: fast)."


BUDGET_HELP = ("Replace a tag's Tier-2 raw budget for this run, TAG=TOKENS (repeatable): to judge budgets by"
               " answer quality, e.g. --budget targeted-extraction=400.")


def parse_budgets(values: list[str] | None) -> dict[str, int] | None:
    """``["targeted-extraction=400", ...]`` → ``{"targeted-extraction": 400}``; BadInput on a bad item."""
    from edgemem.recall import packer

    if not values:
        return None
    out: dict[str, int] = {}
    for value in values:
        tag, sep, tokens = value.partition("=")
        tag = tag.strip()
        if not sep or tag not in packer.TIER2_BUDGET or not tokens.strip().isdigit() or int(tokens) < 1:
            raise BadInput(f"--budget takes TAG=TOKENS with TAG one of {', '.join(packer.TIER2_BUDGET)}"
                           f" and a positive number, got {value!r}")
        out[tag] = int(tokens)
    return out


def _run(ctx: typer.Context, benchmark: str, path: Path, only: list[str] | None, limit_questions: int | None,
         seed: int, system: str, retrieval_only: bool, steps: str, out: Path | None, resume: bool,
         keep_stores: bool, stores: Path | None = None, split: str | None = None,
         evidence: str = "retrieved", budgets: list[str] | None = None) -> None:
    from edgemem.eval import harness, locomo, longmemeval

    settings, as_json = _root(ctx)
    if resume and out is None:
        raise BadInput("--resume needs the --out folder of the run to continue")
    module = locomo if benchmark == "locomo" else longmemeval
    if benchmark == "locomo":
        conversations = locomo.load(path, max_file_bytes=settings.max_file_bytes,
                                    max_text_bytes=settings.max_text_bytes, sample_ids=only)
        if split is not None:
            from edgemem.eval import splits

            keep = set(splits.samples_in(split, [c.id for c in conversations]))
            conversations = [c for c in conversations if c.id in keep]
            if not conversations:
                raise BadInput(f"{path}: no conversation of the {split} split")
            only = [c.id for c in conversations]
    else:
        conversations = longmemeval.load(path, max_file_bytes=settings.max_file_bytes,
                                         max_text_bytes=settings.max_text_bytes, question_ids=only)
    out = out or harness.default_out(benchmark, system, retrieval_only)
    run_config = harness.RunConfig(
        benchmark=benchmark, path=Path(path).expanduser(), out=out, system=system, retrieval_only=retrieval_only,
        steps=steps, seed=seed, limit=limit_questions, only=list(only) if only else None, resume=resume,
        keep_stores=keep_stores, progress=not as_json, stores=Path(stores).expanduser() if stores else None,
        evidence=evidence, budgets=parse_budgets(budgets),
    )
    echo = (lambda m: typer.echo(m, err=True)) if not as_json else None
    summary = harness.run(run_config, conversations, module.BENCHMARK, settings, echo=echo)
    _report(summary, out, as_json)


@eval_app.command("locomo")
def locomo_command(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="A LoCoMo-format JSON file (a list of samples with conversation and qa)."),
    sample: Optional[list[str]] = typer.Option(None, "--sample", help="Only this sample_id (repeatable)."),
    limit_questions: Optional[int] = typer.Option(None, "--limit-questions", help="A seeded sample of N questions, proportional per category."),
    seed: int = typer.Option(0, "--seed", help="Seed of the question sample."),
    system: str = typer.Option("edgemem", "--system", help=SYSTEM_HELP),
    retrieval_only: bool = typer.Option(False, "--retrieval-only", help="Recall@k, routing and packing without generating answers."),
    steps: str = typer.Option("default", "--steps", help=STEPS_HELP),
    out: Optional[Path] = typer.Option(None, "--out", help="Run folder (default: ./edgemem-eval/locomo-<system>-<time>)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out, skipping questions already answered."),
    keep_stores: bool = typer.Option(True, "--keep-stores/--no-keep-stores", help="Keep each conversation's store under --out."),
    stores: Optional[Path] = typer.Option(None, "--stores", help="Keep and reuse the conversations' stores in this folder (shared by runs: ingest once)."),
    split: Optional[str] = typer.Option(None, "--split", help="Only the conversations of this split: tune or check (edgemem.eval.splits)."),
    evidence: str = typer.Option("retrieved", "--evidence", help=EVIDENCE_HELP),
    budget: Optional[list[str]] = typer.Option(None, "--budget", help=BUDGET_HELP),
) -> None:
    """Evaluate on a LoCoMo-format file: per-category F1, BLEU-1, abstention, recall@k, routing, cost."""
    _run(ctx, "locomo", path, sample, limit_questions, seed, system, retrieval_only, steps, out, resume, keep_stores,
         stores, split, evidence, budget)


@eval_app.command("longmemeval")
def longmemeval_command(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="A LongMemEval JSON file (official format: one haystack per question)."),
    question: Optional[list[str]] = typer.Option(None, "--question", help="Only this question_id (repeatable)."),
    limit_questions: Optional[int] = typer.Option(None, "--limit-questions", help="A seeded sample of N questions, proportional per question type."),
    seed: int = typer.Option(0, "--seed", help="Seed of the question sample."),
    system: str = typer.Option("edgemem", "--system", help=SYSTEM_HELP),
    retrieval_only: bool = typer.Option(False, "--retrieval-only", help="Recall@k, routing and packing without generating answers."),
    steps: str = typer.Option("default", "--steps", help=STEPS_HELP),
    out: Optional[Path] = typer.Option(None, "--out", help="Run folder (default: ./edgemem-eval/longmemeval-<system>-<time>)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out, skipping questions already answered."),
    keep_stores: bool = typer.Option(False, "--keep-stores/--no-keep-stores", help="Keep each question's store under --out (one per question: large)."),
) -> None:
    """Evaluate on a LongMemEval file: per-type F1 proxies, abstention, turn and session recall, routing."""
    _run(ctx, "longmemeval", path, question, limit_questions, seed, system, retrieval_only, steps, out, resume, keep_stores)


@eval_app.command("report")
def report_command(ctx: typer.Context, out: Path = typer.Argument(..., help="The folder of a run (holds run.json).")) -> None:
    """Recompute and print a run's summary from its predictions (for example of an interrupted run)."""
    from edgemem.eval import harness, locomo, longmemeval

    _settings, as_json = _root(ctx)
    run_file = out / "run.json"
    if not run_file.exists():
        raise BadInput(f"{out} holds no run (no run.json)")
    run = json.loads(run_file.read_text(encoding="utf-8"))
    identity = run["identity"]
    module = {"locomo": locomo, "longmemeval": longmemeval}.get(identity.get("benchmark"))
    if module is None:
        raise BadInput(f"{run_file}: unknown benchmark {identity.get('benchmark')!r}")
    records = harness.read_predictions(out / "predictions.jsonl")
    run_config = harness.RunConfig(benchmark=identity["benchmark"], path=Path(run["path"]), out=out,
                                   system=identity["system"], retrieval_only=identity["retrieval_only"])
    summary = harness.build_summary(records, module.BENCHMARK, run_config, identity,
                                    extra={"model": run.get("model"), "selected": run.get("selected")})
    harness.write_json(out / "summary.json", summary)
    _report(summary, out, as_json)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(float(p[:-1]) * 1000) if p.endswith("k") else int(p)
                 for p in (part.strip().lower() for part in text.split(",")) if p]
    except ValueError:
        raise BadInput(f"--sizes takes numbers separated by commas (1000,10000 or 1k,10k), got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise BadInput("--sizes must be positive")
    return sizes


def bench(
    ctx: typer.Context,
    out: Optional[Path] = typer.Option(None, "--out", help="Save the result as JSON here (default: ./edgemem-bench-<time>.json)."),
    sizes: str = typer.Option("1k,10k,100k", "--sizes", help="Note counts for retrieval + packing latency."),
    store_sizes: str = typer.Option("1k,10k", "--store-sizes", help="Note counts for the store benchmark (insert, KNN, FTS)."),
    store_only: bool = typer.Option(False, "--store-only", help="Only the store benchmark: insert and query latency."),
    no_model: bool = typer.Option(False, "--no-model", help="Skip everything that needs the language model."),
    queries: int = typer.Option(50, "--queries", help="Queries timed per size."),
    ingest_turns: int = typer.Option(200, "--ingest-turns", help="Turns ingested without model steps."),
    steps_turns: int = typer.Option(20, "--steps-turns", help="Turns ingested with the default steps (model)."),
    ask_questions: int = typer.Option(5, "--ask-questions", help="Questions timed through ask (model)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the synthetic text and vectors."),
    soak: Optional[Path] = typer.Option(None, "--soak", help="Instead: a soak on this LoCoMo file (memory over a long run)."),
    soak_turns: int = typer.Option(500, "--soak-turns", help="Turns the soak ingests with the write-path steps."),
    soak_questions: int = typer.Option(100, "--soak-questions", help="Questions the soak answers."),
    paths: Optional[Path] = typer.Option(None, "--paths", help="Instead: both paths on real data: a conversation of this LoCoMo file, its questions, a Markdown folder, asks under backlog."),
    paths_sample: Optional[str] = typer.Option(None, "--paths-sample", help="The conversation of --paths (default: the first)."),
    paths_turns: Optional[int] = typer.Option(None, "--paths-turns", help="Only its first sessions, up to about this many turns."),
    paths_questions: int = typer.Option(20, "--paths-questions", help="Its questions asked (seeded, proportional per category)."),
    markdown_mb: float = typer.Option(2.0, "--markdown-mb", help="Size of the generated Markdown folder."),
    markdown_timeout: float = typer.Option(3600.0, "--markdown-timeout", help="Seconds to wait for the folder to be organised."),
    backlog_asks: int = typer.Option(5, "--backlog-asks", help="Questions asked again while the folder is being organised."),
) -> None:
    """Time the store, retrieval and packing, ingestion and ask (medians, one run, this machine).

    With --soak FILE: ingest and answer in one process with default settings and print the resident
    set per quarter, its peak, and the prompt cache's bytes, hit rate and saved prefill time.
    With --paths FILE: what a user waits for on real data: a conversation ingested with the default
    steps, its questions asked (p50/p90, first token, pipeline tokens, F1 beside), a Markdown folder
    from ingest to organised, and asks while it is organised against the same asks idle."""
    from edgemem.eval import harness
    from edgemem.eval.bench import BenchConfig, format_result, run_bench

    settings, as_json = _root(ctx)
    if paths is not None:
        from edgemem.eval import bench_paths

        cfg = bench_paths.PathsConfig(paths, sample=paths_sample, turns=paths_turns, questions=paths_questions,
                                      markdown_mb=markdown_mb, markdown_timeout=markdown_timeout,
                                      backlog_asks=backlog_asks, seed=seed)
        result = bench_paths.run_paths(settings, cfg, echo=None if as_json else (lambda m: typer.echo(m, err=True)))
        out = out or Path(f"edgemem-bench-paths-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json")
        harness.write_json(out, result)
        typer.echo(json.dumps(result, indent=2, default=str) if as_json else bench_paths.format_paths(result) + f"\nsaved: {out}")
        return
    if soak is not None:
        from edgemem.eval import soak as soak_mod

        result = soak_mod.run_soak(settings, soak, turns=soak_turns, questions=soak_questions, seed=seed,
                                   echo=None if as_json else typer.echo)
        out = out or Path(f"edgemem-soak-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json")
        harness.write_json(out, result)
        typer.echo(json.dumps(result, indent=2, default=str) if as_json else soak_mod.format_result(result) + f"\nsaved: {out}")
        return
    bench_config = BenchConfig(sizes=_sizes(sizes), store_sizes=_sizes(store_sizes), queries=queries,
                               ingest_turns=ingest_turns, steps_turns=steps_turns, ask_questions=ask_questions,
                               seed=seed, store_only=store_only, no_model=no_model, progress=not as_json)
    result: dict[str, Any] = run_bench(settings, bench_config)
    out = out or Path(f"edgemem-bench-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    harness.write_json(out, result)
    if as_json:
        typer.echo(json.dumps(result, indent=2, default=str))
    else:
        typer.echo(format_result(result))
        typer.echo(f"saved: {out}")

"""The ``edgemem`` command. Thin: parse, call the engine (or the daemon), print.

Errors are converted here, once: an :class:`EdgememError` prints ``edgemem: <message>`` on stderr and
exits with its documented code; ``--json`` prints results as JSON for scripts.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer

from edgemem import __version__, config
from edgemem.errors import EdgememError

app = typer.Typer(
    name="edgemem",
    help="A private, on-device assistant with a long memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
models_app = typer.Typer(help="List, locate, download and add GGUF models.", no_args_is_help=True)
app.add_typer(models_app, name="models")


class Ctx:
    def __init__(self, overrides: dict[str, Any], as_json: bool) -> None:
        self.overrides = overrides
        self.as_json = as_json

    def settings(self) -> config.Settings:
        return config.load(self.overrides)


def _ctx(ctx: typer.Context) -> Ctx:
    return ctx.ensure_object(Ctx) if isinstance(ctx.obj, Ctx) else ctx.find_root().obj


@app.callback()
def root(
    ctx: typer.Context,
    home: Optional[Path] = typer.Option(None, "--home", help="Keep everything under this folder (EDGEMEM_HOME)."),
    db: Optional[Path] = typer.Option(None, "--db", help="Database file (default: <data dir>/edgemem.db)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name from `edgemem models list`."),
    model_path: Optional[Path] = typer.Option(None, "--model-path", help="Use this GGUF file instead of a named model."),
    n_ctx: Optional[int] = typer.Option(None, "--n-ctx", help="Model context window in tokens."),
    threads: Optional[int] = typer.Option(None, "--threads", help="CPU threads for the model (0 = all cores)."),
    gpu_layers: Optional[int] = typer.Option(None, "--gpu-layers", help="Layers offloaded to CUDA/Metal (-1 = all)."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress to stderr."),
) -> None:
    """edgemem: remember everything you tell it, answer from it, on your own machine."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    overrides = {"home": home, "db_path": db, "model": model, "model_path": model_path, "n_ctx": n_ctx,
                 "n_threads": threads, "n_gpu_layers": gpu_layers}
    ctx.obj = Ctx(overrides, as_json)


def _print(c: Ctx, result: Any, human: Callable[[Any], str] | str | None = None) -> None:
    if c.as_json:
        typer.echo(json.dumps(result, indent=2, default=str))
    elif callable(human):
        typer.echo(human(result))
    elif human is not None:
        typer.echo(human)


def _engine(c: Ctx, **kwargs: Any):
    from edgemem.engine import Engine

    return Engine.open(c.settings(), **kwargs)


# -- setup ------------------------------------------------------------------------------------------
def _progress(label: str) -> Callable[[int, int], None]:
    state = {"last": -1}

    def report(done: int, total: int) -> None:
        pct = int(done * 100 / total) if total else 0
        if pct != state["last"] and sys.stderr.isatty():
            sys.stderr.write(f"\r{label}: {pct:3d}%")
            sys.stderr.flush()
            state["last"] = pct
        if total and done >= total and sys.stderr.isatty():
            sys.stderr.write("\n")

    return report


def _setup(c: Ctx) -> dict:
    from edgemem.runtime import models

    s = c.settings()
    for folder in (s.config_dir, s.data_dir, s.cache_dir):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path, manifest = models.model_file(s, progress=_progress("assembling the model"))
    emb = models.embedding_dir(s)
    with _engine(c) as engine:
        status = engine.status()
    return {"model": manifest.name if manifest else str(path), "model_file": str(path), "embeddings": str(emb),
            "store": status["store"], "config": str(s.config_file)}


@app.command()
def setup(ctx: typer.Context) -> None:
    """Prepare the default model, the embedding model and the store (offline; run once)."""
    c = _ctx(ctx)
    result = _setup(c)
    _print(c, result, lambda r: "\n".join(f"{k:>11}: {v}" for k, v in r.items()))


QUICKSTART_FACT = "My sister Ana's birthday is on 14 March; she loves orchids and hates chocolate cake."
QUICKSTART_QUESTION = "What flowers should I bring to Ana's birthday?"


@app.command()
def quickstart(ctx: typer.Context) -> None:
    """Set up, remember one fact, and ask the default model a question about it."""
    c = _ctx(ctx)
    _setup(c)
    with _engine(c) as engine:
        typer.echo(f"remember: {QUICKSTART_FACT}")
        engine.remember(QUICKSTART_FACT, process=True)
        typer.echo(f"ask: {QUICKSTART_QUESTION}")
        answer = engine.ask(QUICKSTART_QUESTION)
        typer.echo(_answer_text(answer))


# -- memory -----------------------------------------------------------------------------------------
@app.command()
def remember(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="What to remember ('-' reads standard input)."),
    speaker: Optional[str] = typer.Option(None, help="Who said it."),
    when: Optional[str] = typer.Option(None, help="When it was said (ISO 8601); default now."),
) -> None:
    """Remember a piece of text, verbatim, with its time."""
    c = _ctx(ctx)
    if text == "-":
        text = sys.stdin.read()
    with _engine(c) as engine:
        result = engine.remember(text, speaker=speaker, when=when, process=True)
    _print(c, result, lambda r: f"remembered (note {', '.join(map(str, r['notes'])) or 'queued'})")


@app.command()
def ingest(ctx: typer.Context, path: Path = typer.Argument(..., help="A .txt/.md file or a folder of them.")) -> None:
    """Ingest text and Markdown files (re-ingesting unchanged files does nothing)."""
    c = _ctx(ctx)
    with _engine(c) as engine:
        result = engine.ingest(path, process=True)

    def human(r: dict) -> str:
        lines = [f"added {a['path']} ({a['chunks']} chunks)" for a in r["added"]]
        lines += [f"unchanged {u['path']}" for u in r["unchanged"]]
        lines += [f"skipped {s['path']}: {s['reason']}" for s in r["skipped"]]
        return "\n".join(lines)

    _print(c, result, human)


def _answer_text(answer: Any) -> str:
    lines = [answer.text, ""]
    if answer.notes:
        lines.append("notes used:")
        for n in answer.notes:
            who = f"{n.speaker}: " if n.speaker else ""
            lines.append(f"  [{n.id}] {n.event_time[:10]} {who}{n.content[:160]}")
    lines.append(f"(query {answer.query_id}; `edgemem why {answer.query_id}` shows how it was answered)")
    return "\n".join(lines)


def _answer_json(answer: Any) -> dict:
    return {
        "query_id": answer.query_id,
        "answer": answer.text,
        "notes": [{"id": n.id, "date": n.event_time, "speaker": n.speaker, "content": n.content} for n in answer.notes],
    }


@app.command()
def ask(ctx: typer.Context, question: str = typer.Argument(..., help="Your question.")) -> None:
    """Answer a question from memory, citing the notes used."""
    c = _ctx(ctx)
    with _engine(c) as engine:
        answer = engine.ask(question)
    _print(c, _answer_json(answer), lambda _r: _answer_text(answer))


@app.command()
def why(ctx: typer.Context, query_id: str = typer.Argument(..., help="The id printed after an answer.")) -> None:
    """Show how an answer was produced: route, retrieval, packing, tokens, validation."""
    c = _ctx(ctx)
    with _engine(c) as engine:
        trace = engine.why(query_id)
    _print(c, trace, lambda t: json.dumps(t, indent=2, default=str))


@app.command()
def status(ctx: typer.Context) -> None:
    """Show the store, the model, the queue and counters."""
    c = _ctx(ctx)
    with _engine(c) as engine:
        result = engine.status()
    _print(c, result, lambda r: "\n".join(f"{k:>12}: {v}" for k, v in r.items()))


# -- models -----------------------------------------------------------------------------------------
@models_app.command("list")
def models_list(ctx: typer.Context) -> None:
    """List known models and whether each is installed."""
    from edgemem.runtime import models

    c = _ctx(ctx)
    s = c.settings()
    rows = [
        {"name": m.name, "default": m.name == s.model, "installed": models.installed(s, m), "source": m.kind,
         "size": m.size, "context": m.context_length, "description": m.description}
        for m in models.load_manifests(s).values()
    ]
    _print(c, rows, lambda r: "\n".join(
        f"{'*' if x['default'] else ' '} {x['name']:<22} {'installed' if x['installed'] else '-':<10} {x['source']:<12} {x['description']}" for x in r))


@models_app.command("path")
def models_path(ctx: typer.Context, name: Optional[str] = typer.Argument(None, help="Model name (default: the configured one).")) -> None:
    """Print the verified GGUF path of a model (assembling the default if needed)."""
    from edgemem.runtime import models

    c = _ctx(ctx)
    path, _ = models.model_file(c.settings(), name, progress=_progress("verifying"))
    _print(c, {"path": str(path)}, str(path))


@models_app.command("pull")
def models_pull(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Model name from `edgemem models list`."),
    sha256: Optional[str] = typer.Option(None, help="Expected sha256 (for manifests without one)."),
    accept_unverified: bool = typer.Option(False, help="Download without a known sha256 and print the one seen."),
) -> None:
    """Download a model (the only command that uses the network), resuming and verifying it."""
    from edgemem.runtime import models

    c = _ctx(ctx)
    path, seen = models.pull(c.settings(), name, sha256=sha256, accept_unverified=accept_unverified, progress=_progress(f"pulling {name}"))
    _print(c, {"path": str(path), "sha256": seen}, f"{path}\nsha256 {seen}")


@models_app.command("add")
def models_add(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="A local .gguf file."),
    name: Optional[str] = typer.Option(None, help="Name to register it under."),
    chat_format: str = typer.Option("chatml", help="Fallback chat format if the file has no template."),
    context_length: int = typer.Option(4096, help="Context length to use."),
) -> None:
    """Register a local GGUF file as a model."""
    from edgemem.runtime import models

    c = _ctx(ctx)
    m = models.add(c.settings(), file, name, chat_format, context_length)
    _print(c, {"name": m.name, "sha256": m.sha256}, f"added {m.name} (sha256 {m.sha256[:12]}…); use it with --model {m.name}")


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def main() -> None:
    try:
        app()
    except EdgememError as exc:
        typer.echo(f"edgemem: {exc.message}", err=True)
        raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None

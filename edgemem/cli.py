"""The ``edgemem`` command. Thin: parse, call the daemon (or the engine with ``--local``), print.

Memory commands talk to the daemon over its socket (``edgemem serve`` runs it); ``--local`` runs the
same operation in this process instead, for scripts and tests. ``setup``, ``quickstart``, ``models``
and ``version`` always run locally. Both paths return the same plain data, so ``--json`` output does
not depend on the mode. ``--json`` and ``--local`` work before or after the command. Errors are
converted here, once: an :class:`EdgememError` prints ``edgemem: <message>`` on stderr and exits with
its documented code; under ``--json`` it prints ``{"error": {"code", "message", "exit_code"}}`` on
stdout instead (so a script reads one JSON document from stdout either way), with the same exit code.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from edgemem import __version__, config, display
from edgemem.errors import ConfigError, DaemonUnavailable, EdgememError

ANYWHERE_FLAGS = ("--json", "--local")  # root flags also accepted after the command


def lift_flags(args: list[str]) -> list[str]:
    """``edgemem status --json`` as ``edgemem --json status``: the flags in ANYWHERE_FLAGS move in
    front of the command; nothing after a ``--`` moves (``edgemem remember -- --json`` keeps the text)."""
    end = args.index("--") if "--" in args else len(args)
    head = args[:end]
    return [a for a in head if a in ANYWHERE_FLAGS] + [a for a in head if a not in ANYWHERE_FLAGS] + args[end:]


class _Root(TyperGroup):
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, lift_flags(args))


app = typer.Typer(
    name="edgemem",
    cls=_Root,
    help="A private, on-device assistant with a long memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: typer's rich panels label every flag `<bool>` (typer 0.29), as if it took a value.
    rich_markup_mode=None,
)
models_app = typer.Typer(help="List, locate, download and add GGUF models.", no_args_is_help=True)
app.add_typer(models_app, name="models")


class Ctx:
    def __init__(self, overrides: dict[str, Any], as_json: bool, local: bool = False) -> None:
        self.overrides = overrides
        self.as_json = as_json
        self.local = local

    def settings(self) -> config.Settings:
        return config.load(self.overrides)


def _ctx(ctx: typer.Context) -> Ctx:
    return ctx.ensure_object(Ctx) if isinstance(ctx.obj, Ctx) else ctx.find_root().obj


def _show_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


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
    as_json: bool = typer.Option(False, "--json", help="Print results (and errors) as JSON; also after the command."),
    local: bool = typer.Option(False, "--local",
                               help="Run in this process instead of asking the daemon (scripts, tests); also after the command."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress to stderr."),
    show_version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                      expose_value=False, help="Print the version and exit."),
) -> None:
    """edgemem: remember everything you tell it, answer from it, on your own machine."""
    if not logging.getLogger().handlers:  # configured once: basicConfig would ignore a second stream anyway
        logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s", stream=_log_stream())
    overrides = {"home": home, "db_path": db, "model": model, "model_path": model_path, "n_ctx": n_ctx,
                 "n_threads": threads, "n_gpu_layers": gpu_layers}
    ctx.obj = Ctx(overrides, as_json, local)


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


def _call(c: Ctx, method: str, params: dict[str, Any], local: Callable[[Any], Any],
          on_event: Callable[[str, Any], None] | None = None) -> Any:
    """Run ``method`` on the daemon, or ``local(engine)`` in this process with ``--local``."""
    if c.local:
        with _engine(c) as engine:
            return local(engine)
    from edgemem.daemon.client import call

    return call(c.settings().socket, method, params, on_event=on_event)


class _Printer:
    """What a streamed answer shows (not with --json: scripts get one object).

    stderr: one dim status line, updated in place on a terminal (one plain line per update when
    stderr is not a terminal): the route and the layer that decided it, the notes found and packed,
    "checking…" while the validator runs, "retrying as TAG" when it rejects a draft. stdout: the
    answer's tokens as they arrive; a "(checking…)" marker follows a streamed answer until the
    validator is done (a rejected draft is followed by the daemon's notice and the retry).
    """

    def __init__(self, c: Ctx) -> None:
        self.enabled = not c.as_json
        self.printed = False
        self.tty = sys.stderr.isatty()
        self.dim = ("\033[2m", "\033[0m") if self.tty and not os.environ.get("NO_COLOR") else ("", "")
        self.parts: list[str] = []
        self.open = False  # a status line without its newline is on the terminal
        self.marker = False  # the "(checking…)" marker follows the streamed answer

    # -- stderr -------------------------------------------------------------------------------------
    def _status(self, part: str, *, replace: bool = False) -> None:
        if replace or not self.parts:
            self.parts = [part]
        else:
            self.parts.append(part)
        text = " · ".join(self.parts)
        if self.tty:
            sys.stderr.write(f"\r\033[K{self.dim[0]}{text}{self.dim[1]}")
            self.open = True
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def _end_status(self) -> None:
        if self.open:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.open = False

    def _clear_marker(self) -> None:
        if self.marker:
            sys.stderr.write("\0338\033[J")  # back to where the marker began; erase it
            sys.stderr.flush()
            self.marker = False

    def stage(self, name: str, data: Any) -> None:
        if not self.enabled or not isinstance(data, dict):
            return
        if name == "route":
            layer = data.get("layer")
            self._status("from recent turns (active context)" if layer == "active-context"
                         else f"{data.get('tag')} (decided by {layer})", replace=True)
        elif name == "notes" and not self.printed:
            packed, found = data.get("packed", 0), data.get("found", 0)
            # Tier 1 packs profile facts that retrieval did not "find": no "1 of 0".
            noun = "note" if (found if found >= packed else packed) == 1 else "notes"
            self._status(f"{packed} of {found} {noun} packed" if found >= packed else f"{packed} {noun} packed")
        elif name == "checking":
            if not self.printed:
                self._status("checking…")
            elif self.tty:
                sys.stdout.flush()
                sys.stderr.write(f"\0337{self.dim[0]} (checking…){self.dim[1]}")
                sys.stderr.flush()
                self.marker = True
        elif name == "retry":
            self._clear_marker()
            if not self.printed:  # a printed draft is followed by the daemon's notice instead
                self._status(f"not supported; retrying as {data.get('tag')}")

    # -- stdout -------------------------------------------------------------------------------------
    def token(self, piece: str) -> None:
        if not self.enabled:
            return
        if not self.printed:
            piece = piece.lstrip()
            if not piece:
                return
            self._end_status()
        self._clear_marker()
        self.printed = True
        sys.stdout.write(piece)
        sys.stdout.flush()

    def event(self, name: str, data: Any) -> None:
        if name == "token" and isinstance(data, str):
            self.token(data)
        else:
            self.stage(name, data)

    def finish(self) -> None:
        """The reply arrived: drop the marker, end an open status line."""
        self._clear_marker()
        self._end_status()

    def cancelled(self, c: Ctx) -> None:
        """Ctrl+C: say so, on stderr (stdout keeps what was streamed, with its newline)."""
        self._clear_marker()
        self._end_status()
        if self.printed:
            sys.stdout.write("\n")
            sys.stdout.flush()
        if c.as_json:
            typer.echo(json.dumps(error_json("cancelled", "cancelled", 130), indent=2))
        else:
            sys.stderr.write("cancelled\n")
            sys.stderr.flush()


def _cancellable(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` (an answer with ``--local``) so that Ctrl+C also stops the model's generation."""
    import threading

    from edgemem.runtime.scheduler import cancel_scope

    event = threading.Event()
    try:
        with cancel_scope(event):
            return fn()
    except KeyboardInterrupt:
        event.set()  # the model job, on its worker thread, stops at its next token
        raise


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
    from edgemem.runtime.runtime import repack_decision

    path, manifest = models.model_file(s, progress=_progress("assembling the model"))
    emb = models.embedding_dir(s)
    decision = repack_decision(s, path)  # `auto`: a one-time probe in a child process
    with _engine(c) as engine:
        status = engine.status()
    return {"model": manifest.name if manifest else str(path), "model_file": str(path), "embeddings": str(emb),
            "cpu_repack": f"{decision.active} ({decision.reason})", "store": status["store"], "config": str(s.config_file)}


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
    from edgemem.daemon.protocol import answer_result

    import dataclasses

    from edgemem.engine import Engine

    c = _ctx(ctx)
    _setup(c)
    # The demonstration runs on a scratch store beside the real one, so your memory stays yours.
    s = c.settings()
    demo = dataclasses.replace(s, db_path=s.data_dir / "quickstart.db")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{demo.database}{suffix}").unlink(missing_ok=True)
    with Engine.open(demo) as engine:
        typer.echo(f"remember: {QUICKSTART_FACT}")
        engine.remember(QUICKSTART_FACT, process=True)
        typer.echo(f"ask: {QUICKSTART_QUESTION}")
        answer = engine.ask(QUICKSTART_QUESTION)
        # The scratch store stays until the next quickstart, so the `why` printed here finds the trace.
        why = _why_command(c, answer.query_id, db=demo.database)
        typer.echo(_answer_text(answer_result(answer), why=why))
    if not answer.notes:  # the main path is broken if the model cannot answer from what it was just told
        raise EdgememError("quickstart: the answer did not come from the remembered note; see `edgemem why` above")


# -- memory -----------------------------------------------------------------------------------------
@app.command()
def remember(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="What to remember ('-' reads standard input)."),
    speaker: Optional[str] = typer.Option(None, help="Who said it."),
    when: Optional[str] = typer.Option(None, help="When it was said (ISO 8601); default now."),
) -> None:
    """Remember a piece of text, verbatim, with its time."""
    from edgemem.ingest.raw import TOO_LONG_HINT
    from edgemem.text import check_text

    c = _ctx(ctx)
    if text == "-":
        text = sys.stdin.read()
    # Refused here, before sending: an over-size text would otherwise reach the daemon as an
    # over-size frame, and the user would read about frames instead of what to do.
    check_text(text, c.settings().max_text_bytes, hint=TOO_LONG_HINT)
    result = _call(c, "remember", {"text": text, "speaker": speaker, "when": when},
                   lambda e: e.remember(text, speaker=speaker, when=when, process=True))
    _print(c, result, lambda r: f"remembered (note {', '.join(map(str, r.get('notes') or [])) or 'queued'})")


NO_WAIT_HELP = "Return once stored; the daemon organises it in the background (no progress bar)."


@app.command()
def ingest(ctx: typer.Context, path: Path = typer.Argument(..., help="A .txt/.md file or a folder of them."),
           no_wait: bool = typer.Option(False, "--no-wait", help=NO_WAIT_HELP)) -> None:
    """Ingest text and Markdown files (re-ingesting unchanged files does nothing).

    Then shows a progress bar until the new chunks are organised into notes (Ctrl-C stops waiting,
    not the work)."""
    c = _ctx(ctx)
    path = path.expanduser().absolute()  # the daemon does not share our working folder
    if c.local:
        with _engine(c) as engine:
            result = engine.ingest(path)
            _stored_then_wait(c, result, _ingest_text, _added_chunks(result), no_wait, engine)
        return
    result = _call(c, "ingest", {"path": str(path)}, lambda e: None)
    _stored_then_wait(c, result, _ingest_text, _added_chunks(result), no_wait)


def _added_chunks(result: dict) -> int:
    return sum(a["chunks"] for a in result["added"])


# -- waiting for the write path (ingest, import-chat) ----------------------------------------------------
WAIT_POLL_S = 0.5  # how often the backlog is read


def _stored_then_wait(c: Ctx, result: dict, human: Callable[[Any], str], added: int, no_wait: bool,
                      engine: Any = None) -> None:
    """Print what was stored, then wait for the worker to organise it (not with ``--no-wait``, nor when
    nothing was added). ``engine``: no daemon, the work runs here (``--local``, import-chat)."""
    if not c.as_json:
        _print(c, result, human)
    if added and not no_wait:
        result = {**result, "organised": _Backlog(c, local=engine is not None).wait(_backlog_poll(c, engine))}
        if engine is not None and not result["organised"].get("interrupted"):
            engine.process()  # the follow-up jobs (clusters, topics), as a local command always did
    if c.as_json:
        _print(c, result)


def _backlog_poll(c: Ctx, engine: Any = None) -> Callable[[bool], dict]:
    """``poll(first)`` -> {"records", "jobs", "alive"}: the daemon's backlog every WAIT_POLL_S, or
    with ``engine`` the backlog after running jobs here for WAIT_POLL_S."""
    import time

    if engine is not None:
        def local(first: bool) -> dict:
            end = time.monotonic() + (0 if first else WAIT_POLL_S)
            while time.monotonic() < end and engine.worker.backlog()["records"] and engine.worker.drain(limit=1):
                pass
            return {**engine.worker.backlog(), "alive": True}

        return local
    from edgemem.daemon.client import Client

    client = Client(c.settings().socket, timeout=60)

    def remote(first: bool) -> dict:
        if not first:
            time.sleep(WAIT_POLL_S)
        status = client.call("status")
        queue = status.get("queue", {})
        backlog = status.get("backlog") or {"records": queue.get("pending", 0) + queue.get("running", 0)}
        return {**backlog, "alive": status.get("daemon", {}).get("worker_alive", True)}

    remote.close = client.close  # type: ignore[attr-defined]
    return remote


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s}s" if s < 60 else f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s // 3600}h{s // 60 % 60:02d}m"


class _Backlog:
    """Waits until the backlog is organised: a bar with an ETA on a terminal's stderr, else only a
    final line on stderr, and under ``--json`` nothing (the outcome goes into the JSON object)."""

    WIDTH = 28

    def __init__(self, c: Ctx, *, local: bool = False) -> None:
        self.quiet = c.as_json
        self.bar = not c.as_json and sys.stderr.isatty()
        self.local = local
        self.drawn = False

    def _say(self, line: str) -> None:
        if self.quiet:
            return
        if self.drawn:
            sys.stderr.write("\r\033[K")
            self.drawn = False
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def _draw(self, total: int, left: int, eta: float | None) -> None:
        if not self.bar:
            return
        done = total - left
        filled = int(self.WIDTH * done / total) if total else self.WIDTH
        tail = f", ETA {_duration(eta)}" if eta is not None else ""
        sys.stderr.write(f"\rorganising [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total} records{tail}\033[K")
        sys.stderr.flush()
        self.drawn = True

    def wait(self, poll: Callable[[bool], dict]) -> dict:
        import time

        from edgemem.errors import EdgememError

        started = time.monotonic()
        out: dict[str, Any] = {}
        total = left = 0
        try:
            first = poll(True)
            total = left = start_left = first["records"]
            while left > 0:
                elapsed = time.monotonic() - started
                rate = (start_left - left) / elapsed if elapsed > 0 else 0.0
                self._draw(total, left, left / rate if rate > 0 else None)
                now = poll(False)
                left = now["records"]
                total = max(total, left)
                if not now.get("alive", True):
                    out["stopped"] = "the daemon's worker is not running"
                    self._say(f"stopped waiting: the daemon's worker is not running ({left} records left; see its log)")
                    break
        except KeyboardInterrupt:
            out["interrupted"] = True
            if self.local:
                self._say(f"stopped with {left} of {total} records left; they stay queued and are organised by "
                          "the daemon (`edgemem serve`) or the next --local ingest")
            else:
                self._say(f"stopped waiting with {left} of {total} records left; the daemon goes on organising "
                          "them in the background (`edgemem status` shows the backlog)")
        except EdgememError as exc:
            out["stopped"] = exc.message
            self._say(f"stopped waiting: {exc.message}")
        took = time.monotonic() - started
        out.update(records=total, left=left, seconds=round(took, 1))
        if left == 0:
            self._say(f"organised {total} records in {_duration(took)}")
        close = getattr(poll, "close", None)
        if close is not None:
            close()
        return out


def _ingest_text(r: dict) -> str:
    """One line per file, the skipped ones with why, then the totals."""
    lines = [f"added {a['path']} ({a['chunks']} chunks)" for a in r["added"]]
    lines += [f"unchanged {u['path']}" for u in r["unchanged"]]
    lines += [f"skipped {s['path']}: {s['reason']}" for s in r["skipped"]]
    total = [f"{len(r['added'])} added ({sum(a['chunks'] for a in r['added'])} chunks)",
             f"{len(r['unchanged'])} unchanged", f"{len(r['skipped'])} skipped"]
    if r.get("hidden"):
        total.append(f"{r['hidden']} hidden files and folders left out")
    return "\n".join([*lines, ", ".join(total)])


def _sources_text(result: dict) -> str:
    lines = []
    if result["notes"]:
        lines.append("notes used:")
        for n in result["notes"]:
            who = f"{n['speaker']}: " if n["speaker"] else ""
            lines.append(f"  [{n['id']}] {n['date'][:10]} {who}{n['content'][:160]}")
    return "\n".join(lines)


def _why_command(c: Ctx, query_id: str, db: Path | None = None) -> str:
    """The `edgemem why` command that finds this answer's trace: the same store flags, and
    ``--local`` when the answer was made in this process or on a store no daemon serves (``db``)."""
    words = ["edgemem"]
    for flag, value in (("--home", c.overrides.get("home")), ("--db", db or c.overrides.get("db_path"))):
        if value is not None:
            words += [flag, str(Path(value).expanduser().absolute())]
    if c.local or db is not None:
        words.append("--local")
    return " ".join(shlex.quote(w) for w in [*words, "why", query_id])


def _answer_text(result: dict, streamed: bool = False, why: str | None = None) -> str:
    lines = [] if streamed else [result["answer"]]
    lines.append("")
    sources = _sources_text(result)
    if sources:
        lines.append(sources)
    why = why or f"edgemem why {result['query_id']}"
    lines.append(f"(query {result['query_id']}; `{why}` shows how it was answered)")
    return "\n".join(lines)


@app.command()
def ask(ctx: typer.Context, question: str = typer.Argument(..., help="Your question.")) -> None:
    """Answer a question from memory, citing the notes used."""
    from edgemem.daemon.protocol import answer_result

    c = _ctx(ctx)
    out = _Printer(c)
    try:
        result = _call(c, "ask", {"question": question, "stream": False if c.as_json else "progress"},
                       lambda e: answer_result(_cancellable(lambda: e.ask(question, on_token=out.token, on_stage=out.stage))),
                       on_event=out.event)
    except KeyboardInterrupt:  # the client sent cancel and hung up: the daemon stops the answer
        out.cancelled(c)
        raise SystemExit(130) from None
    out.finish()
    if out.printed:
        typer.echo()
    _print(c, result, lambda r: _answer_text(r, streamed=out.printed, why=_why_command(c, r["query_id"])))


@app.command()
def why(ctx: typer.Context, query_id: str = typer.Argument(..., help="The id printed after an answer.")) -> None:
    """Show how an answer was produced: route, retrieval, packing, tokens, validation."""
    c = _ctx(ctx)
    trace = _call(c, "trace", {"query_id": query_id}, lambda e: e.why(query_id))
    _print(c, trace, display.why_text)


@app.command()
def status(ctx: typer.Context) -> None:
    """Show the store, the model, the queue, the daemon and counters."""
    c = _ctx(ctx)
    result = _call(c, "status", {}, lambda e: e.status())
    _print(c, result, display.fields_text)


@app.command()
def forget(
    ctx: typer.Context,
    note: Optional[int] = typer.Option(None, "--note", help="Forget this note (and the raw text it stands on)."),
    source: Optional[str] = typer.Option(None, "--source", help="Forget everything from this source (file path or id)."),
    query: Optional[str] = typer.Option(None, "--query", help="Forget the notes matching these words."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do it without asking (otherwise: show what would go, then ask)."),
) -> None:
    """Forget notes for good: shows what would be deleted, then deletes after confirmation."""
    c = _ctx(ctx)
    if source is not None and not source.isdigit() and Path(source).expanduser().exists():
        source = str(Path(source).expanduser().absolute())
    src: Any = int(source) if source is not None and source.isdigit() else source
    params = {"note_id": note, "source": src, "query": query}

    def run(confirm: bool) -> Any:
        return _call(c, "forget", {**params, "confirm": confirm},
                     lambda e: e.forget(note_id=note, source=src, query=query, confirm=confirm))

    if not yes:
        preview = run(False)
        if c.as_json or not sys.stdin.isatty():
            _print(c, preview, lambda r: json.dumps(r, indent=2, default=str) + "\n(nothing deleted; add --yes to forget)")
            return
        typer.echo(json.dumps(preview, indent=2, default=str))
        if not typer.confirm("forget this for good?", default=False):
            raise typer.Exit(1)
    _print(c, run(True), lambda r: json.dumps(r, indent=2, default=str))


@app.command()
def export(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="File to write."),
    fmt: str = typer.Option("json", "--format", help="json (complete, can be imported again) or markdown (to read)."),
) -> None:
    """Export the memory to a file (raw record and derived notes)."""
    c = _ctx(ctx)
    path = path.expanduser().absolute()
    result = _call(c, "export", {"format": fmt, "path": str(path)}, lambda e: e.export(fmt, str(path)))
    _print(c, result, lambda r: f"exported to {path}")


@app.command()
def profile(ctx: typer.Context) -> None:
    """Show the user profile: preferences, identity facts and rules, with validity dates (MemFlow Tier 1)."""
    c = _ctx(ctx)
    result = _call(c, "profile", {}, lambda e: e.profile())
    _print(c, result, _profile_text)


PROFILE_VALUE_CHARS = 60


def _profile_text(result: dict) -> str:
    """One aligned row per fact; a key's values stay together, oldest first, the superseded ones marked."""
    if not result["facts"]:
        return "the profile is empty: facts are compiled from your notes as the daemon organises them"
    rows = []
    for f in result["facts"]:
        value = " ".join(f["value"].split())
        if len(value) > PROFILE_VALUE_CHARS:
            value = value[:PROFILE_VALUE_CHARS - 1] + "…"
        rows.append(("current" if f["current"] else "superseded", f["kind"], f["key"], value, f["valid_from"][:10],
                     f["valid_to"] and f["valid_to"][:10], ",".join(map(str, f["sources"])) or None))
    table = display.table(rows, ("STATE", "KIND", "KEY", "VALUE", "FROM", "TO", "NOTES"))
    return f"{table}\n{result['current']} current, {result['superseded']} superseded"


watch_app = typer.Typer(help="Folders the daemon watches and ingests as they change.", no_args_is_help=True)
app.add_typer(watch_app, name="watch")


@watch_app.command("add")
def watch_add(ctx: typer.Context, path: Path = typer.Argument(..., help="A folder of .txt/.md files.")) -> None:
    """Watch a folder: ingest it now and whenever its files change."""
    c = _ctx(ctx)
    path = path.expanduser().absolute()
    result = _call(c, "watch.add", {"path": str(path)}, lambda e: e.watch_add(str(path)))
    _print(c, result, f"watching {path}")


@watch_app.command("remove")
def watch_remove(ctx: typer.Context, path: Path = typer.Argument(..., help="A watched folder.")) -> None:
    """Stop watching a folder (what was ingested stays)."""
    c = _ctx(ctx)
    path = path.expanduser().absolute()
    result = _call(c, "watch.remove", {"path": str(path)}, lambda e: e.watch_remove(str(path)))
    _print(c, result, f"no longer watching {path}")


@watch_app.command("list")
def watch_list(ctx: typer.Context) -> None:
    """List watched folders."""
    c = _ctx(ctx)
    result = _call(c, "watch.list", {}, lambda e: e.watch_list())
    _print(c, result, lambda r: json.dumps(r, indent=2, default=str))


# -- chat -------------------------------------------------------------------------------------------
CHAT_HELP = "/sources  notes behind the last answer\n/why      how the last answer was made\n" \
            "/forget N forget note N\n/quit     leave (Ctrl+D too)"


class _Session:
    """Where the REPL sends a turn: a daemon connection, or an engine in this process (--local)."""

    def __init__(self, c: Ctx) -> None:
        self.c = c
        self.engine: Any = None
        self.client: Any = None
        if c.local:
            self.engine = _engine(c)
        else:
            from edgemem.daemon.client import Client

            self.client = Client(c.settings().socket).connect()

    def call(self, method: str, params: dict, local: Callable[[Any], Any], on_event: Any = None) -> Any:
        if self.engine is not None:
            return local(self.engine)
        return self.client.call(method, params, on_event=on_event)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        if self.client is not None:
            self.client.close()


def _history(c: Ctx) -> Callable[[], None]:
    """readline history in <data dir>/chat_history (0600: it is what you said); returns a saver."""
    try:
        import readline
    except ImportError:  # no readline on this platform: plain input()
        return lambda: None
    path = c.settings().data_dir / "chat_history"
    if path.is_file():
        readline.read_history_file(path)
    readline.set_history_length(1000)

    def save() -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch(mode=0o600, exist_ok=True)
        os.chmod(path, 0o600)
        readline.write_history_file(path)

    return save


def _chat_command(c: Ctx, s: _Session, line: str, last: dict | None) -> bool:
    """Run a /command; False means leave."""
    cmd, _, arg = line.partition(" ")
    arg = arg.strip()
    if cmd in {"/quit", "/exit", "/q"}:
        return False
    if cmd == "/help":
        typer.echo(CHAT_HELP)
    elif cmd in {"/sources", "/why"} and last is None:
        typer.echo("no answer yet")
    elif cmd == "/sources":
        assert last is not None
        typer.echo(_sources_text(last) or "the last answer used no notes")
    elif cmd == "/why":
        assert last is not None
        qid = last["query_id"]
        trace = s.call("trace", {"query_id": qid}, lambda e: e.why(qid))
        typer.echo(json.dumps(trace, default=str) if c.as_json else display.why_text(trace))
    elif cmd == "/forget":
        if not arg.isdigit():
            typer.echo("usage: /forget NOTE_ID (the [numbers] /sources shows)")
            return True
        note_id = int(arg)

        def forget(confirm: bool) -> Any:
            return s.call("forget", {"note_id": note_id, "confirm": confirm},
                          lambda e: e.forget(note_id=note_id, confirm=confirm))

        typer.echo(json.dumps(forget(False), indent=2, default=str))
        if input("forget this for good? [y/N] ").strip().lower() in {"y", "yes"}:
            typer.echo(json.dumps(forget(True), indent=2, default=str))
    else:
        typer.echo(f"unknown command {cmd}; /help lists them")
    return True


@app.command()
def chat(
    ctx: typer.Context,
    session: Optional[str] = typer.Option(None, "--session", help="Continue this conversation (default: a new one)."),
) -> None:
    """Talk with your memory: streamed answers; /sources, /why, /forget N, /quit."""
    from edgemem.daemon.protocol import answer_result

    c = _ctx(ctx)
    interactive = sys.stdin.isatty()
    save_history = _history(c) if interactive else (lambda: None)
    s = _Session(c)
    session = session or "chat-" + __import__("uuid").uuid4().hex[:12]
    if interactive and not c.as_json:
        typer.echo(f"edgemem chat (session {session}); /help for commands")
    last: dict | None = None
    try:
        while True:
            try:
                line = input("you> " if interactive else "").strip()
            except EOFError:
                break
            if not line:
                continue
            try:
                if line.startswith("/"):
                    if not _chat_command(c, s, line, last):
                        break
                    continue
                out = _Printer(c)
                try:
                    last = s.call("chat", {"message": line, "session": session,
                                           "stream": False if c.as_json else "progress"},
                                  lambda e: answer_result(_cancellable(lambda: e.chat(
                                      line, session=session, on_token=out.token, on_stage=out.stage)), session=session),
                                  on_event=out.event)
                except KeyboardInterrupt:  # Ctrl+C during an answer stops it; the conversation goes on
                    out.cancelled(c)
                    continue
                out.finish()
                if c.as_json:
                    typer.echo(json.dumps(last, default=str))
                else:
                    if not out.printed:
                        typer.echo(last["answer"], nl=False)
                    typer.echo(f"\n(query {last['query_id']}; {len(last['notes'])} notes; /sources, /why)")
            except DaemonUnavailable:
                raise
            except EdgememError as exc:  # one bad turn does not end the conversation
                if c.as_json:
                    typer.echo(json.dumps(error_json(exc.code, exc.message, exc.exit_code)))
                else:
                    typer.echo(f"edgemem: {exc.message}", err=True)
    except KeyboardInterrupt:
        typer.echo()
    finally:
        save_history()
        s.close()


# -- daemon -----------------------------------------------------------------------------------------
@app.command()
def serve(ctx: typer.Context) -> None:
    """Run the daemon in the foreground: the model, the memory and the socket (systemd runs this)."""
    from edgemem.daemon import server

    c = _ctx(ctx)
    settings = c.settings()
    level = logging.getLevelName(settings.log_level.upper())
    if not isinstance(level, int):
        raise ConfigError(f"log_level {settings.log_level!r} is not a logging level (DEBUG, INFO, WARNING, ERROR)")
    root_logger = logging.getLogger()
    root_logger.setLevel(min(root_logger.level, level))  # the daemon logs at log_level; -v can only add
    raise typer.Exit(server.run(settings))


@app.command()
def mcp(ctx: typer.Context) -> None:
    """Serve your memory to other assistants over MCP (stdio): remember, search, ask, why, profile, forget."""
    try:
        from edgemem.daemon import mcp_server
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in {"mcp", "mcp_types"}:
            raise
        raise ConfigError("`edgemem mcp` needs the MCP SDK: pip install 'edgemem[mcp]'") from None

    c = _ctx(ctx)
    raise typer.Exit(mcp_server.run(c.settings(), local=c.local))


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
    _print(c, rows, lambda r: display.table(
        [("*" if x["default"] else "", x["name"], "yes" if x["installed"] else "-", x["source"],
          display.size(x["size"]) if x["size"] else "-", x["context"], x["description"]) for x in r],
        header=("", "NAME", "INSTALLED", "SOURCE", "SIZE", "CONTEXT", "DESCRIPTION")) + "\n(* the configured model)")


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


@app.command("import")
def import_(ctx: typer.Context, path: Path = typer.Argument(..., help="A JSON export from `edgemem export`.")) -> None:
    """Load a JSON export into an empty store (use --db NEW.db for a new one)."""
    c = _ctx(ctx)
    with _engine(c) as engine:
        result = engine.import_json(path.expanduser())
    _print(c, result, lambda r: "imported " + ", ".join(f"{n} {t}" for t, n in r["imported"].items() if n))


@app.command()
def backup(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="File to write the copy to."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the file if it exists."),
) -> None:
    """Copy the store to a file, safely, even while the daemon is using it."""
    c = _ctx(ctx)
    with _engine(c) as engine:
        result = engine.backup(path.expanduser(), overwrite=overwrite)
    _print(c, result, lambda r: f"backed up {r['notes']} notes, {r['raw_turns']} raw turns to {r['path']}")


@app.command()
def restore(ctx: typer.Context, path: Path = typer.Argument(..., help="A backup made by `edgemem backup`.")) -> None:
    """Replace the store with a backup (stop the daemon first; the old store is kept as .pre-restore)."""
    from edgemem import admin

    c = _ctx(ctx)
    result = admin.restore(c.settings().database, path.expanduser())
    _print(c, result, lambda r: f"restored {r['restored']} from {r['from']}"
           + (f" (previous store kept as {r['previous']})" if r["previous"] else ""))


service_app = typer.Typer(help="Run the daemon in the background under systemd (Linux) or launchd (macOS).",
                          no_args_is_help=True)
app.add_typer(service_app, name="service")


def _service_result(c: Ctx, result: Any) -> None:
    def human(r: dict) -> str:
        if r.get("dry_run"):
            lines = [f"would write {path}:\n" + "\n".join(f"  {line}".rstrip() for line in text.splitlines())
                     for path, text in r["units"].items()]
            return "\n".join([*lines, "would run:", *(f"  {cmd}" for cmd in r["to_run"]),
                              "(dry run: nothing written or enabled)"])
        lines = [f"{r['action']}: {f}" for f in r["files"]] + [f"ran: {cmd}" for cmd in r["ran"]]
        if r["error"]:
            lines.append(f"failed: {r['error']}")
        if r["to_run"]:
            lines += ["to finish, run:"] + [f"  {cmd}" for cmd in r["to_run"]]
        return "\n".join(lines)

    _print(c, result.as_dict(), human)
    if not result.ok:
        raise typer.Exit(1)


@service_app.command("install")
def service_install(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the unit files and the commands; write and enable nothing."),
) -> None:
    """Install and start the user service (socket-activated, sandboxed, no network)."""
    from edgemem.daemon import service

    c = _ctx(ctx)
    _service_result(c, service.install(c.settings(), dry_run=dry_run))


@service_app.command("uninstall")
def service_uninstall(ctx: typer.Context) -> None:
    """Stop the user service and remove its unit files."""
    from edgemem.daemon import service

    c = _ctx(ctx)
    _service_result(c, service.uninstall())


@service_app.command("status")
def service_status(ctx: typer.Context) -> None:
    """Show whether the service is installed, current, and running."""
    from edgemem.daemon import service

    c = _ctx(ctx)
    _print(c, service.status(c.settings()), lambda r: json.dumps(r, indent=2, default=str))


@app.command("import-chat")
def import_chat(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="A chat export: generic chat JSON or LoCoMo's format."),
    fmt: str = typer.Option("auto", "--format", help="auto, chat or locomo."),
    no_wait: bool = typer.Option(False, "--no-wait", help=NO_WAIT_HELP),
) -> None:
    """Import conversations from a chat JSON file (one source per session; re-import is safe).

    Then shows a progress bar until the new turns are organised into notes (Ctrl-C stops waiting)."""
    from edgemem.store import lock

    c = _ctx(ctx)
    # With a daemon serving this store its worker organises the new turns (it polls the queue) and
    # this command follows its backlog; without one, they are organised here.
    serving = lock.held(c.settings().database)
    with _engine(c) as engine:
        result = engine.import_chat(path.expanduser(), fmt=fmt, process=False)
        _stored_then_wait(c, result, lambda r: json.dumps(r, indent=2, default=str), result["turns"], no_wait,
                          None if serving else engine)


@app.command()
def rebuild(
    ctx: typer.Context,
    embeddings: bool = typer.Option(False, "--embeddings", help="Accept a store built with another embedder and re-embed everything."),
) -> None:
    """Recompute notes, links, clusters, topics and the profile from the raw record (stop the daemon first)."""
    from edgemem.engine import Engine
    from edgemem.store import lock

    c = _ctx(ctx)
    s = c.settings()
    with lock.exclusive(s.database), Engine.open(s, new_embedder=embeddings) as engine:
        result = engine.rebuild()
    _print(c, result, lambda r: f"rebuilt {r['notes']} notes from {r['raw_turns']} raw turns")


from edgemem.eval.cli import bench as _bench  # noqa: E402 - registered here to keep `edgemem --help` in one place
from edgemem.eval.cli import eval_app  # noqa: E402

app.add_typer(eval_app, name="eval")
app.command("bench")(_bench)


@app.command()
def version(ctx: typer.Context) -> None:
    """Print the version (also `edgemem --version`)."""
    _print(_ctx(ctx), {"version": __version__}, __version__)


try:  # typer >= 0.2x carries its own click; its usage errors derive from TyperException
    from typer import TyperException as _UsageErrors
except ImportError:  # older typer runs on click itself
    from click import ClickException as _UsageErrors


def error_json(code: str, message: str, exit_code: int) -> dict:
    """What ``--json`` prints for an error: the daemon's error shape plus the exit code."""
    return {"error": {"code": code, "message": message, "exit_code": exit_code}}


def _fail(code: str, message: str, exit_code: int, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(error_json(code, message, exit_code), indent=2))
    else:
        typer.echo(f"edgemem: {message}", err=True)
    raise SystemExit(exit_code)


def _log_stream() -> Any:
    """Where the log goes: a duplicate of stderr. llama-cpp-python points file descriptor 2 at
    /dev/null while it loads a model, for the whole process; the daemon's other threads keep
    logging meanwhile, and their lines must not vanish with llama.cpp's."""
    try:
        return os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding=sys.stderr.encoding or "utf-8",
                         errors="backslashreplace")
    except (OSError, ValueError, AttributeError):  # no real stderr (embedded, captured): use what there is
        return sys.stderr


def main() -> None:
    args = sys.argv[1:]
    as_json = "--json" in (args[: args.index("--")] if "--" in args else args)
    try:
        if not as_json:
            app()
            return
        # Not standalone: click's usage errors come back here to be printed as JSON too.
        code = app(standalone_mode=False)
    except EdgememError as exc:
        _fail(exc.code, exc.message, exc.exit_code, as_json)
    except _UsageErrors as exc:
        _fail("usage", exc.format_message(), exc.exit_code, as_json)
    except typer.Abort:
        _fail("aborted", "aborted", 1, as_json)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    raise SystemExit(code if isinstance(code, int) else 0)

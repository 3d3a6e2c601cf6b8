"""Engine: the in-process API that the daemon, ``--local`` CLI commands and tests all use.

It wires the store, the runtime and the stages together; it does not think. Each method is one
user-level operation with plain data in and out.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections import OrderedDict, deque
from dataclasses import asdict
from datetime import date, datetime
from pathlib import Path
from typing import Any

from edgemem import __version__, admin
from edgemem.config import Settings
from edgemem.errors import BadInput, NotFound
from edgemem.ingest import raw as accept
from edgemem.ingest.dates import resolve_dates
from edgemem.ingest import steps as write_steps
from edgemem.ingest.watcher import Change, Watcher, apply_change
from edgemem.ingest.worker import Worker, WriteStep
from edgemem.recall import pipeline
from edgemem.recall.pipeline import Answer
from edgemem.runtime.runtime import Runtime
from edgemem.runtime.scheduler import Cancelled
from edgemem.store import jobs, notes, stats, traces
from edgemem.store import profile as profile_store
from edgemem.store import raw as raw_store
from edgemem.store.db import Store
from edgemem.text import check_text

log = logging.getLogger(__name__)

RETRY_NOTICE = "\n(not supported by your notes; looking further)\n"
CHAT_SESSIONS = 64  # chat sessions whose recent turns are held in memory (remember_chat off)
SEARCH_K = 8  # the notes `search` returns unless asked for another number
MAX_K = 50  # the most notes `search` and `recent` return




class Engine:
    def __init__(self, settings: Settings, store: Store, runtime: Runtime, steps: list[WriteStep] | None = None) -> None:
        self.settings = settings
        self.store = store
        self.runtime = runtime
        # The worker embeds at background priority and waits while an interactive request runs.
        self.worker = Worker(store, runtime.background, runtime.embed_background,
                             write_steps.default_steps(settings.profile_filter) if steps is None else steps, busy=runtime.interactive_busy)
        # Job kinds the steps enqueue (cluster init/profile/split, topics); harmless with steps=[].
        self.worker.handlers.update(write_steps.extra_handlers())
        self._router: Any = None
        self._quiet_router: Any = None
        self._watcher: Watcher | None = None
        self._wake: threading.Event | None = None  # the daemon's worker wake-up, set by start_watching
        # Chat turns held for each session's active context when they are not stored (remember_chat
        # off), newest session last; the daemon answers chats on several threads.
        self._sessions: OrderedDict[str, deque[str]] = OrderedDict()
        self._sessions_lock = threading.Lock()

    @classmethod
    def open(cls, settings: Settings, *, llm: Any = None, embedder: Any = None, steps: list[WriteStep] | None = None,
             create: bool = True, new_embedder: bool = False) -> Engine:
        """``new_embedder`` skips the embedder check: only for `rebuild --embeddings`, which re-embeds."""
        runtime = Runtime(settings, llm=llm, embedder=embedder)
        try:
            store = Store(settings.database, embed_model=runtime.embed_name, dim=runtime.embed_dim, create=create,
                          check_embedder=not new_embedder)
        except BaseException:
            runtime.close()
            raise
        return cls(settings, store, runtime, steps)

    # -- write path ------------------------------------------------------------------------------
    def remember(self, text: str, *, speaker: str | None = None, when: datetime | str | None = None,
                 session: str | None = None, process: bool = False) -> dict:
        acc = accept.remember(self.store, text, max_bytes=self.settings.max_text_bytes, speaker=speaker, when=when, session=session)
        if process:
            self.process()
        return {"raw_ids": acc.raw_ids, "jobs": acc.job_ids, "notes": self._notes_of(acc.raw_ids) if process else []}

    def ingest(self, path: Path | str, *, process: bool = False) -> dict:
        """Ingest a text/Markdown file or every such file under a folder (one source per file).

        A folder's report lists every file it left out, with the reason (a PDF, binary, not UTF-8, too
        big...), and counts the hidden ones; nothing is dropped without a word."""
        path = Path(path).expanduser()
        report: dict[str, Any] = {"added": [], "unchanged": [], "skipped": [], "hidden": 0}
        if path.is_file():
            acc = accept.ingest_file(self.store, path, max_bytes=self.settings.max_file_bytes)
            report["unchanged" if acc.unchanged else "added"].append({"path": str(path), "chunks": len(acc.raw_ids)})
        elif not path.is_dir():
            raise BadInput(f"{path} does not exist")
        else:
            scan = accept.scan_folder(path)
            report["skipped"], report["hidden"] = scan.skipped, scan.hidden
            if not scan.files:
                raise BadInput(f"{path} holds no text files ({', '.join(sorted(accept.TEXT_SUFFIXES))}); "
                               f"{len(scan.skipped)} other file(s) left out")
            for file in scan.files:
                try:
                    acc = accept.ingest_file(self.store, file, max_bytes=self.settings.max_file_bytes)
                except BadInput as exc:
                    report["skipped"].append({"path": str(file), "reason": accept.skip_reason(exc, file)})
                    continue
                report["unchanged" if acc.unchanged else "added"].append({"path": str(file), "chunks": len(acc.raw_ids)})
            report["skipped"].sort(key=lambda s: s["path"])
        if process:
            self.process()
        return report

    def rebuild(self) -> dict:
        """Recompute every derived structure (notes, links, clusters, topics, profile) from raw turns."""
        from edgemem.store import derived

        with self.store.transaction() as conn:
            derived.reset(conn, embed_model=self.runtime.embed_name, dim=self.runtime.embed_dim)
            turns = 0
            for turn in raw_store.iter_turns(conn):
                jobs.enqueue(conn, accept.NOTE_JOB, {"raw_id": turn.id})
                turns += 1
            if self.worker.steps:
                jobs.enqueue(conn, "topics", {}, priority=11)  # one topic rebuild after the notes
        processed = self.process()
        return {"raw_turns": turns, "jobs": processed, "notes": notes.count_active(self.store.conn)}

    # -- forget, export, backup (edgemem.admin) -------------------------------------------------------
    def forget(self, *, note_id: int | None = None, source: str | int | None = None, query: str | None = None,
               confirm: bool = False) -> dict:
        """Forget a note, a source or the notes matching a query; without ``confirm`` only the preview."""
        return admin.forget(self.store, note_ids=None if note_id is None else [note_id], source=source,
                            query=query, confirm=confirm)

    def export(self, fmt: str, path: Path | str) -> dict:
        """Write the memory to ``path``: "json" (everything, restorable with import) or "markdown" (readable)."""
        if fmt == "json":
            return admin.export_json(self.store, Path(path))
        if fmt in ("markdown", "md"):
            return admin.export_markdown(self.store, Path(path))
        raise BadInput(f"unknown export format {fmt!r}; use json or markdown")

    def import_json(self, path: Path | str) -> dict:
        """Load a JSON export into this store, which must be empty (vectors recomputed if needed)."""
        result = admin.import_json(self.store, Path(path), embed=self.runtime.embed)
        if self._wake is not None:
            self._wake.set()  # imported pending jobs
        return result

    def backup(self, path: Path | str, *, overwrite: bool = False) -> dict:
        """Copy the live store to ``path`` with SQLite's online backup (safe while serving)."""
        return admin.backup(self.store, Path(path), overwrite=overwrite)

    # -- watched folders (edgemem.ingest.watcher) -------------------------------------------------------
    @property
    def watcher(self) -> Watcher:
        if self._watcher is None:
            self._watcher = Watcher(self.store, self._on_watch_change, self.settings)
        return self._watcher

    def _on_watch_change(self, change: Change) -> None:
        # Runs on the watcher's thread: raw turns + note jobs in one transaction, then wake the worker.
        apply_change(self.store, change, max_bytes=self.settings.max_file_bytes)
        if self._wake is not None:
            self._wake.set()

    def start_watching(self, wake: threading.Event | None = None) -> None:
        """Start the folder watcher (the daemon does, at startup); ``wake`` nudges the write-path worker."""
        self._wake = wake
        self.watcher.start()

    def stop_watching(self, timeout: float = 5.0) -> bool:
        """Stop the folder watcher; False if it outlived ``timeout``."""
        return self._watcher.stop(timeout) if self._watcher is not None else True

    def watch_add(self, path: Path | str) -> dict:
        """Watch a folder; without a running watcher (--local) its files are ingested now instead."""
        result = self.watcher.add(path)
        if not self.watcher.running and accept.iter_text_files(Path(result["path"])):
            result["ingested"] = self.ingest(result["path"], process=True)
        return result

    def watch_remove(self, path: Path | str) -> dict:
        """Stop watching a folder (what was ingested from it stays)."""
        return self.watcher.remove(path)

    def watch_list(self) -> list[dict]:
        """Watched folders with their state: watching, missing, idle (no daemon), error."""
        return self.watcher.list()

    def import_chat(self, path: Path | str, *, fmt: str = "auto", process: bool = False) -> dict:
        """Import a chat export (generic chat JSON or LoCoMo) as conversation sessions."""
        from edgemem.ingest import importers

        report = importers.import_path(self.store, Path(path), max_file_bytes=self.settings.max_file_bytes,
                                       max_text_bytes=self.settings.max_text_bytes, fmt=fmt)
        if self._wake is not None:
            self._wake.set()
        if process:
            self.process()
        return report.as_dict()

    def process(self, limit: int | None = None) -> int:
        """Run queued write-path jobs in this process (the daemon runs them in its worker thread)."""
        return self.worker.drain(limit)

    def _notes_of(self, raw_ids: list[int]) -> list[int]:
        conn = self.store.conn
        return sorted({n for r in raw_ids for n in notes.by_raw(conn, r)})

    # -- read path ----------------------------------------------------------------------------------
    @property
    def router(self) -> Any:
        """The MemFlow router, built on first use (its labelled examples are embedded once)."""
        if self._router is None:
            from edgemem.recall.router import Router

            self._router = Router(self.runtime.embed, self.runtime.interactive if self.settings.router_model else None)
        return self._router

    def warm(self) -> list[Any]:
        """Queue the answer prompts' static parts for the prompt cache, at the lowest priority
        (:meth:`Runtime.warm`): the first question of each kind then prefills only its own part. The
        daemon calls it once the model is set to load; returns the jobs' futures (tokens kept)."""
        from edgemem.recall import answer as answer_agent

        return self.runtime.warm(answer_agent.warm_prompts())

    def ask(self, question: str, *, session: str | None = None, now: datetime | None = None, on_token: Any = None,
            on_reset: Any = None, evidence: list[int] | None = None, on_stage: Any = None) -> Answer:
        """Answer from memory through the MemFlow read path (the flat-RAG baseline lives in eval.baselines).

        ``now`` is when the question is asked (default: this moment); "how long ago" is measured to it.
        ``on_stage(name, data)`` hears the stages as they are reached (route, notes, checking, retry).
        Cancelled (the caller's cancel scope was set) is re-raised after a trace row records it.
        """
        question = check_text(question, self.settings.max_text_bytes, "question")
        query_id = uuid.uuid4().hex[:12]
        conn = self.store.conn
        if on_reset is None and on_token is not None:
            # A streamed answer the validator rejected is already on the user's screen: say so
            # before the retry streams, rather than silently appending a second answer.
            def on_reset() -> None:
                on_token(RETRY_NOTICE)
        reached: dict[str, dict] = {}  # the stages seen, for the trace of a cancelled query
        streamed: list[str] = []

        def stage(name: str, data: dict) -> None:
            reached[name] = data
            if on_stage is not None:
                on_stage(name, data)

        def token(piece: str) -> None:
            streamed.append(piece)
            on_token(piece)

        # The question's own dates, resolved once: exact ones can clash with a plan, loose ones select.
        asked = asked_spans(question, _local(now))  # what question_days() reads
        try:
            outcome = pipeline.run(conn, question, llm=self.runtime.interactive, embed=self.runtime.embed,
                                   router=self.router, recent=self._recent_turns(session),
                                   on_token=token if on_token is not None else None, on_reset=on_reset,
                                   on_stage=stage, now=_local(now), evidence=evidence,
                                   cluster_model=self.settings.cluster_model,
                                   question_days=[(a, b) for a, b, loose in asked if not loose],
                                   question_window=[(a, b) for a, b, _ in asked])
        except Cancelled as exc:
            self._record_cancelled(query_id, question, exc, reached, streamed)
            raise
        text, trace = outcome.text, outcome.trace
        used = notes.get_many(conn, outcome.note_ids)
        with self.store.transaction() as conn:
            traces.insert(conn, query_id, question, text, route_tag=trace.get("route_tag"),
                          route_layer=trace.get("route_layer"), tier=trace.get("tier"), data=trace)
        return Answer(query_id, question, text, used, trace)

    def _record_cancelled(self, query_id: str, question: str, exc: Cancelled, reached: dict[str, dict],
                          streamed: list[str]) -> None:
        """The trace row of a query stopped by its requester: how far it got, what it had generated."""
        route = reached.get("route", {})
        data = {"system": "edgemem", "cancelled": True, "cancelled_at": exc.stage or next(reversed(reached), "start"),
                "completion_tokens": exc.completion_tokens, "streamed_pieces": len(streamed),
                "route_tag": route.get("tag"), "route_layer": route.get("layer"), "stages_reached": list(reached)}
        if "notes" in reached:
            data.update(tier=reached["notes"].get("tier"), notes_found=reached["notes"].get("found"),
                        notes_packed=reached["notes"].get("packed"))
        exc.query_id = query_id  # type: ignore[attr-defined]
        try:
            with self.store.transaction() as conn:
                traces.insert(conn, query_id, question, "".join(streamed), route_tag=data["route_tag"],
                              route_layer=data["route_layer"], tier=data.get("tier"), data=data)
        except Exception as err:  # the cancellation is what the caller must see
            log.warning("trace of cancelled query %s not stored: %s", query_id, type(err).__name__)

    def retrieve(self, question: str, *, now: datetime | None = None) -> Answer:
        """Route, retrieve and pack without generating (evaluation's --retrieval-only); no model call."""
        from edgemem.recall.router import Router

        if self._quiet_router is None:
            self._quiet_router = Router(self.runtime.embed, None)
        outcome = pipeline.run(self.store.conn, question, llm=self.runtime.tokenizer, embed=self.runtime.embed,
                               router=self._quiet_router, retrieval_only=True, now=_local(now))
        return Answer("", question, "", notes.get_many(self.store.conn, outcome.note_ids), outcome.trace)

    def search(self, query: str, *, k: int | None = None) -> list[notes.Note]:
        """The notes ``query`` would be answered from, best first: the read path without generation."""
        query = check_text(query, self.settings.max_text_bytes, "query")
        k = _limit(SEARCH_K if k is None else k, "k")
        return self.retrieve(query).notes[:k]

    def _recent_turns(self, session: str | None) -> list[str]:
        if not session:
            return []
        with self._sessions_lock:
            held = list(self._sessions.get(session, ()))
        source = raw_store.get_source(self.store.conn, "conversation", session)
        stored = [] if source is None else [t.text for t in raw_store.recent_turns(self.store.conn, source.id, pipeline.ACTIVE_TURNS)]
        return (stored + held)[-pipeline.ACTIVE_TURNS:]

    def _keep_turn(self, message: str, session: str) -> None:
        """A user's chat turn: a memory with ``remember_chat`` on; otherwise held in this process for
        the session's active context only, so a question never comes back cited as a memory."""
        if self.settings.remember_chat:
            self.remember(message, speaker="user", session=session)
            return
        with self._sessions_lock:
            turns = self._sessions.pop(session, None) or deque(maxlen=pipeline.ACTIVE_TURNS)
            turns.append(message)
            self._sessions[session] = turns
            while len(self._sessions) > CHAT_SESSIONS:
                self._sessions.popitem(last=False)

    def chat(self, message: str, *, session: str, on_token: Any = None, on_stage: Any = None) -> Answer:
        """One chat turn: answer it, then keep the user's words as a turn of ``session``.

        Kept after answering so the active-context check sees only earlier turns, and kept even when
        answering fails. Stored as a memory only with the ``remember_chat`` setting (raw is sacred
        then); by default a question is not a memory, or later answers would cite it back. The
        assistant's replies are never stored: they are derived text, and keeping them would let the
        model's own guesses come back as memories.
        """
        message = check_text(message, self.settings.max_text_bytes, "message")
        try:
            answer = self.ask(message, session=session, on_token=on_token, on_stage=on_stage)
        except BaseException:
            try:
                self._keep_turn(message, session)
            except Exception as exc:  # the answer's failure is the one the caller sees
                log.warning("chat turn not stored: %s", type(exc).__name__)
            raise
        self._keep_turn(message, session)
        return answer

    def why(self, query_id: str) -> dict:
        found = traces.get(self.store.conn, query_id)
        if found is None:
            raise NotFound(f"no trace {query_id!r}; `edgemem why` takes the id printed after an answer")
        return found

    # -- inspection -----------------------------------------------------------------------------------
    def profile(self) -> dict:
        """The compiled Tier-1 profile (MemFlow §3.1): every fact, current and superseded, with its
        validity and the notes that stated it; each key's history oldest first."""
        facts = profile_store.all_facts(self.store.conn)
        rows = [{"id": f.id, "key": f.key, "subject": f.subject, "kind": f.kind, "attribute": f.attribute,
                 "value": f.value, "valid_from": f.valid_from, "valid_to": f.valid_to, "current": f.is_current,
                 "sources": f.sources} for f in facts]
        current = sum(f.is_current for f in facts)
        return {"facts": rows, "current": current, "superseded": len(facts) - current}

    def recent(self, limit: int = 20) -> list[notes.Note]:
        """The newest notes by event time, newest first."""
        return notes.recent(self.store.conn, _limit(limit, "limit"))

    def note(self, note_id: int) -> dict:
        found = notes.get(self.store.conn, note_id)
        if found is None:
            raise NotFound(f"no note {note_id}")
        return asdict(found)

    def status(self) -> dict:
        conn = self.store.conn
        size = sum(p.stat().st_size for p in self.store.path.parent.glob(self.store.path.name + "*") if p.is_file())
        return {
            "version": __version__,
            "store": str(self.store.path),
            "store_bytes": size,
            "raw_turns": raw_store.count(conn),
            "notes": notes.count_active(conn),
            "queue": jobs.counts(conn),
            "worker": self.worker.state,
            "model": self.runtime.model_name,
            "model_state": self.runtime.llm_state,
            "model_error": self.runtime.llm_error,
            **self.runtime.model_info(),
            "embedder": self.runtime.embed_name,
            "stats": stats.all_stats(conn),
        }

    def close(self) -> None:
        self.stop_watching()
        self.runtime.close()
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _limit(n: int, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_K:
        raise BadInput(f"{name} must be a whole number from 1 to {MAX_K}, got {n!r:.20}")
    return n


def _local(now: datetime | None) -> datetime:
    """``now`` as local wall-clock time, the form of every time in the store (default: this moment)."""
    if now is None:
        return datetime.now()
    return now.astimezone().replace(tzinfo=None) if now.tzinfo is not None else now


# A date after one of these words bounds the question's window at one end, it is not the window:
# "since March" runs from March to now; "before May", "after the 3rd" name no days to keep.
_SINCE = re.compile(r"\bsince\s+(?:the\s+)?$", re.IGNORECASE)
_BOUND = re.compile(r"\b(?:before|after|until|till|by)\s+(?:the\s+)?$", re.IGNORECASE)


def asked_spans(question: str, now: datetime) -> list[tuple[date, date, bool]]:
    """(first day, last day, loose) of each date the question names, as the window it asks about:
    "in 2025" is that year, "since March" March to today; a date after "before"/"after"/"until"
    bounds no window and is left out."""
    out = []
    cursor = 0
    for d in resolve_dates(question, now):
        at = question.lower().find(d.phrase.lower(), cursor)
        cursor = at + len(d.phrase) if at >= 0 else cursor
        before = question[:at] if at >= 0 else ""
        if _BOUND.search(before):
            continue
        end = max(d.end, now.date()) if _SINCE.search(before) else d.end
        out.append((d.start, end, d.approximate))
    return out


def question_days(question: str, now: datetime, *, approximate: bool = False) -> list[tuple[date, date]]:
    """The days a question's own dates name ("from 22 to 26 December", "on Saturday 27 June"),
    resolved as the write path resolves a note said at ``now``: a proposal is checked against them.
    ``approximate`` adds the loose spans ("in the next couple of months"), which select but never clash.
    What :meth:`Engine.ask` hands the read path (:func:`asked_spans`)."""
    return [(a, b) for a, b, loose in asked_spans(question, now) if approximate or not loose]

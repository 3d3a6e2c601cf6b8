"""Engine: the in-process API that the daemon, ``--local`` CLI commands and tests all use.

It wires the store, the runtime and the stages together; it does not think. Each method is one
user-level operation with plain data in and out.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from edgemem import __version__
from edgemem.config import Settings
from edgemem.errors import BadInput, NotFound
from edgemem.ingest import raw as accept
from edgemem.ingest.worker import Worker, WriteStep
from edgemem.recall.basic import Answer, flat_answer
from edgemem.runtime.runtime import Runtime
from edgemem.store import jobs, notes, stats, traces
from edgemem.store import raw as raw_store
from edgemem.store.db import Store

log = logging.getLogger(__name__)


def default_steps() -> list[WriteStep]:
    """The organising steps of the write path, in order (DESIGN "Write path" 3-7)."""
    try:
        from edgemem.ingest.steps import default_steps as steps
    except ImportError:  # the walking skeleton: notes only
        return []
    return steps()


class Engine:
    def __init__(self, settings: Settings, store: Store, runtime: Runtime, steps: list[WriteStep] | None = None) -> None:
        self.settings = settings
        self.store = store
        self.runtime = runtime
        self.worker = Worker(store, runtime.background, runtime.embed, default_steps() if steps is None else steps)

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
        """Ingest a text/Markdown file or every such file under a folder (one source per file)."""
        path = Path(path).expanduser()
        files = accept.iter_text_files(path)
        report: dict[str, Any] = {"added": [], "unchanged": [], "skipped": []}
        if path.is_file():
            acc = accept.ingest_file(self.store, path, max_bytes=self.settings.max_file_bytes)
            report["unchanged" if acc.unchanged else "added"].append({"path": str(path), "chunks": len(acc.raw_ids)})
        else:
            if not files:
                raise BadInput(f"{path} holds no .txt or .md files")
            for file in files:
                try:
                    acc = accept.ingest_file(self.store, file, max_bytes=self.settings.max_file_bytes)
                except BadInput as exc:
                    report["skipped"].append({"path": str(file), "reason": str(exc)})
                    continue
                report["unchanged" if acc.unchanged else "added"].append({"path": str(file), "chunks": len(acc.raw_ids)})
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
        processed = self.process()
        return {"raw_turns": turns, "jobs": processed, "notes": notes.count_active(self.store.conn)}

    def process(self, limit: int | None = None) -> int:
        """Run queued write-path jobs in this process (the daemon runs them in its worker thread)."""
        return self.worker.drain(limit)

    def _notes_of(self, raw_ids: list[int]) -> list[int]:
        conn = self.store.conn
        return sorted({n for r in raw_ids for n in notes.by_raw(conn, r)})

    # -- read path ----------------------------------------------------------------------------------
    def ask(self, question: str, *, session: str | None = None, on_token: Any = None) -> Answer:
        question = accept.check_text(question, self.settings.max_text_bytes, "question")
        query_id = uuid.uuid4().hex[:12]
        text, used, trace = flat_answer(self.store.conn, self.runtime.interactive, self.runtime.embed, question, on_token=on_token)
        trace["system"] = "flat"
        with self.store.transaction() as conn:
            traces.insert(conn, query_id, question, text, route_tag=None, route_layer=None, tier=None, data=trace)
        return Answer(query_id, question, text, used, trace)

    def chat(self, message: str, *, session: str, on_token: Any = None) -> Answer:
        """One chat turn: answer it, then keep the user's words as a conversation turn of ``session``.

        The turn is stored after answering so the active-context check sees only earlier turns, and
        stored even when answering fails (raw is sacred). The assistant's replies are not stored: they
        are derived text, and keeping them would let the model's own guesses come back as memories.
        """
        message = accept.check_text(message, self.settings.max_text_bytes, "message")
        try:
            answer = self.ask(message, session=session, on_token=on_token)
        except BaseException:
            try:
                self.remember(message, speaker="user", session=session)
            except Exception as exc:  # the answer's failure is the one the caller sees
                log.warning("chat turn not stored: %s", type(exc).__name__)
            raise
        self.remember(message, speaker="user", session=session)
        return answer

    def why(self, query_id: str) -> dict:
        found = traces.get(self.store.conn, query_id)
        if found is None:
            raise NotFound(f"no trace {query_id!r}; `edgemem why` takes the id printed after an answer")
        return found

    # -- inspection -----------------------------------------------------------------------------------
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
            "embedder": self.runtime.embed_name,
            "stats": stats.all_stats(conn),
        }

    def close(self) -> None:
        self.runtime.close()
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

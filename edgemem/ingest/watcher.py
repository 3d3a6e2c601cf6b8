"""Watched folders kept in step with the store (DESIGN "Write path" 1, Accept: the watcher).

watchdog reports file-system events; the watcher does not trust their kinds (editors save by
writing a temp file and renaming it over, a folder move reports only the folder). Each event marks a
path dirty; once the path has been quiet for ``debounce`` seconds it is *settled* by looking at the
disk: a text file that exists becomes an ``upsert`` change, a path that is gone a ``delete`` change
(for a folder: every file source under it), a folder is rescanned. Changes go to the ``on_change``
callback, so its owner (the engine) decides where the work runs; :func:`apply_change` is the work
itself: ``ingest_file`` (content-hashed: unchanged content is a no-op) or ``forget_source``. The
watcher is one more source of raw input, like ``remember`` and the importers: it accepts and
enqueues, and the write-path worker derives the notes.

A watched folder that disappears is marked missing. If it was deleted, its files were deleted with
it and are forgotten; if it was moved away or its disk unmounted, its notes are kept. When it
reappears it is watched again and rescanned (files no longer in it are forgotten then). Every wait
has a timeout and the loop checks a stop event, so nothing here can hang.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from watchdog.events import (
    DirModifiedEvent,
    FileClosedNoWriteEvent,
    FileOpenedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch

from edgemem.config import Settings
from edgemem.errors import BadInput, NotFound
from edgemem.ingest.raw import TEXT_SUFFIXES, ingest_file, iter_text_files
from edgemem.store import watches
from edgemem.store.db import Store
from edgemem.store.forget import forget_source

log = logging.getLogger(__name__)

DEBOUNCE_S = 1.0  # quiet period per path before it is settled
MAX_DELAY_S = 10.0  # a file written to without pause is still settled this often
POLL_S = 1.0  # how often watched folders are checked for disappearing / reappearing


@dataclass(frozen=True)
class Change:
    """A settled path: ``upsert`` a text file that exists, or ``delete`` what was at ``path``."""

    kind: Literal["upsert", "delete"]
    path: Path


@dataclass
class Applied:
    """What :func:`apply_change` did: added, unchanged, skipped (with the reason), forgotten, absent."""

    action: str
    path: str
    reason: str | None = None
    raw_ids: list[int] = field(default_factory=list)
    forgotten_notes: int = 0


def apply_change(store: Store, change: Change, *, max_bytes: int) -> Applied:
    """Bring the store in line with one settled change. Binary, non-UTF-8 and oversized files are
    skipped with their reason logged at INFO (the path and reason, never the content)."""
    path = str(change.path)
    if change.kind == "upsert":
        try:
            acc = ingest_file(store, change.path, max_bytes=max_bytes)
        except BadInput as exc:
            log.info("watch: skipped %s: %s", path, exc.message)
            return Applied("skipped", path, exc.message)
        except OSError as exc:  # the file went away or became unreadable between settling and reading
            log.info("watch: skipped %s: %s", path, exc.strerror)
            return Applied("skipped", path, exc.strerror)
        if acc.unchanged:
            return Applied("unchanged", path)
        log.info("watch: ingested %s (%d chunks)", path, len(acc.raw_ids))
        return Applied("added", path, raw_ids=acc.raw_ids)
    forgotten = 0
    with store.transaction() as conn:
        sources = watches.file_sources_under(conn, path)
        for source in sources:
            forgotten += forget_source(conn, source.id)["notes"]
    if not sources:
        return Applied("absent", path)
    log.info("watch: %s is gone; forgot %d files, %d notes", path, len(sources), forgotten)
    return Applied("forgotten", path, forgotten_notes=forgotten)


@dataclass
class _Folder:
    path: Path
    added_at: str
    state: str = "idle"  # idle (watcher not running) | watching | missing | error
    watch: ObservedWatch | None = None
    identity: tuple[int, int] | None = None  # (st_dev, st_ino) when scheduled: a recreated folder differs
    error: str | None = None


class _Events(FileSystemEventHandler):
    def __init__(self, mark: Callable[[str], None]) -> None:
        self._mark = mark

    def on_any_event(self, event: FileSystemEvent) -> None:
        # A folder's own "modified" fires for every change inside it; opens and reads change nothing.
        if isinstance(event, (DirModifiedEvent, FileOpenedEvent, FileClosedNoWriteEvent)):
            return
        for raw_path in (event.src_path, getattr(event, "dest_path", "")):
            if raw_path:
                self._mark(os.fsdecode(raw_path))


class Watcher:
    """Keeps watched folders in step with the store.

    ``add`` / ``remove`` / ``list`` work whether or not the watcher runs (the folders persist in the
    store); ``start`` schedules them and catches up with what changed while nothing watched;
    ``on_change(Change)`` is called from the watcher's own thread, one change at a time.
    """

    def __init__(self, store: Store, on_change: Callable[[Change], Any], settings: Settings, *,
                 debounce: float = DEBOUNCE_S, poll: float = POLL_S, max_delay: float = MAX_DELAY_S) -> None:
        self.store = store
        self.on_change = on_change
        self.settings = settings
        self.debounce = debounce
        self.poll = poll
        self.max_delay = max(max_delay, debounce)
        self.failures = 0
        self._lock = threading.Lock()  # folders and dirty paths
        self._sched_lock = threading.RLock()  # observer (un)scheduling
        self._folders: dict[Path, _Folder] = {
            Path(w["path"]): _Folder(Path(w["path"]), w["added_at"]) for w in watches.all_watches(store.conn)
        }
        self._dirty: dict[Path, tuple[float, float]] = {}  # path -> (first seen, due)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._observer: Any = None
        self._handler = _Events(self._mark)

    # -- public API -------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def add(self, path: Path | str) -> dict:
        """Watch a folder (persisted); when running, its files are ingested by the next settle."""
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise BadInput(f"{folder} is not a folder")
        with self.store.transaction() as conn:
            added_at = watches.add(conn, str(folder))
        with self._lock:
            entry = self._folders.setdefault(folder, _Folder(folder, added_at))
        if self.running:
            self._refresh(entry)
        log.info("watch: added %s", folder)
        return self._describe(entry)

    def remove(self, path: Path | str) -> dict:
        """Stop watching a folder; its notes stay (forget them with ``forget --source``)."""
        folder = Path(path).expanduser().absolute()
        with self._lock:
            entry = self._folders.get(folder) or self._folders.get(folder.resolve())
        if entry is None:
            raise NotFound(f"{folder} is not watched; `edgemem watch list` shows what is")
        with self.store.transaction() as conn:
            watches.remove(conn, str(entry.path))
        with self._sched_lock:
            with self._lock:
                self._folders.pop(entry.path, None)
                self._dirty = {p: d for p, d in self._dirty.items() if not _within(p, entry.path)}
            self._unschedule(entry)
        log.info("watch: removed %s", entry.path)
        return {"path": str(entry.path), "removed": True}

    def list(self) -> list[dict]:
        with self._lock:
            entries = sorted(self._folders.values(), key=lambda f: str(f.path))
        return [self._describe(e) for e in entries]

    def start(self) -> None:
        if self.running:
            return
        self._stop.clear()
        try:
            observer = Observer(timeout=min(self.poll, 1.0))
            observer.daemon = True
            observer.start()
        except OSError as exc:  # e.g. the per-user inotify instance limit: the daemon serves without it
            log.error("watch: cannot start the folder watcher: %s", exc.strerror or exc)
            with self._lock:
                for entry in self._folders.values():
                    entry.state, entry.error = "error", f"watcher not running: {exc.strerror or exc}"
            return
        self._observer = observer
        with self._lock:
            entries = list(self._folders.values())
        for entry in entries:
            self._refresh(entry)
        self._thread = threading.Thread(target=self.run, args=(self._stop,), name="edgemem-watcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the loop and the observer; False if either outlived ``timeout`` (a stuck callback).
        Changes still waiting for their quiet period are dropped: the next start rescans."""
        self._stop.set()
        self._wake.set()
        clean = True
        if self._thread is not None:
            self._thread.join(timeout)
            clean = not self._thread.is_alive()
        with self._sched_lock:
            if self._observer is not None:
                self._observer.stop()
                self._observer.join(timeout)
                clean = clean and not self._observer.is_alive()
            with self._lock:
                for entry in self._folders.values():
                    entry.watch, entry.identity, entry.state = None, None, "idle"
                self._dirty.clear()
            self._thread = self._observer = None
        if not clean:
            log.warning("watch: the watcher did not stop within %.1f s", timeout)
        return clean

    def run(self, stop: threading.Event) -> None:
        """The loop: check folders every ``poll`` seconds, settle paths once quiet, until ``stop``."""
        next_poll = 0.0
        while not stop.is_set():
            now = time.monotonic()
            if now >= next_poll:
                with self._lock:
                    entries = list(self._folders.values())
                for entry in entries:
                    self._refresh(entry)
                next_poll = now + self.poll
            for path in self._take_due(now):
                if stop.is_set():
                    return
                self._settle(path)
            with self._lock:
                soonest = min((due for _, due in self._dirty.values()), default=next_poll)
            self._wake.wait(max(0.01, min(soonest, next_poll) - time.monotonic()))
            self._wake.clear()

    # -- folders -----------------------------------------------------------------------------------
    def _refresh(self, entry: _Folder) -> None:
        """Schedule a folder that exists and is not watched yet (or was recreated); mark a gone one."""
        try:
            st = entry.path.stat()
            identity = (st.st_dev, st.st_ino) if entry.path.is_dir() else None
        except OSError:
            identity = None
        # watchdog calls our handler while holding its own lock, and the handler takes self._lock:
        # so the observer is only ever called under _sched_lock, never under self._lock.
        with self._sched_lock:
            with self._lock:
                if entry.path not in self._folders or self._observer is None:
                    return
            if identity is None:
                if entry.state != "missing":
                    log.info("watch: folder %s is missing; its notes are kept until it reappears", entry.path)
                self._unschedule(entry)
                entry.state = "missing"
                return
            if entry.watch is not None and entry.identity == identity and entry.state == "watching":
                return
            self._unschedule(entry)
            try:
                entry.watch = self._observer.schedule(self._handler, str(entry.path), recursive=True)
            except OSError as exc:  # e.g. the inotify watch limit: retried at the next poll
                entry.state, entry.error = "error", exc.strerror or str(exc)
                log.warning("watch: cannot watch %s: %s", entry.path, entry.error)
                return
            if entry.state == "missing":
                log.info("watch: folder %s is back; rescanning", entry.path)
            entry.identity, entry.state, entry.error = identity, "watching", None
        # Catch up with whatever happened while it was not watched (or since the last start).
        due = time.monotonic()
        with self._lock:
            self._dirty[entry.path] = (due, due)
        self._wake.set()

    def _unschedule(self, entry: _Folder) -> None:
        """Drop the folder's watch (watchdog's emitter stops by itself when the folder is deleted,
        and would never be recreated for the same path unless the old watch is removed).
        Called with _sched_lock held."""
        if entry.watch is not None and self._observer is not None:
            try:
                self._observer.unschedule(entry.watch)
            except KeyError:
                pass  # already gone with its emitter
        entry.watch, entry.identity = None, None

    def _describe(self, entry: _Folder) -> dict:
        state = entry.state
        if not self.running and state != "error":
            state = "idle" if entry.path.is_dir() else "missing"
        out = {"path": str(entry.path), "added_at": entry.added_at, "state": state}
        if entry.error:
            out["error"] = entry.error
        return out

    # -- events ---------------------------------------------------------------------------------------
    def _mark(self, raw_path: str) -> None:
        path = Path(raw_path)
        now = time.monotonic()
        with self._lock:
            if not any(_within(path, f) for f in self._folders):
                return
            first, _ = self._dirty.get(path, (now, now))
            self._dirty[path] = (first, min(now + self.debounce, first + self.max_delay))
        self._wake.set()

    def _take_due(self, now: float) -> list[Path]:
        with self._lock:
            due = sorted(p for p, (_, at) in self._dirty.items() if at <= now)
            for p in due:
                del self._dirty[p]
        return due

    def _settle(self, path: Path) -> None:
        """Decide from the disk what a quiet path means, and report it."""
        with self._lock:
            roots = [f for f in self._folders if _within(path, f)]
        if not roots or any(_hidden(path, root) for root in roots):
            return
        if path.is_symlink():
            log.debug("watch: ignoring symlink %s", path)
            return
        if path.is_dir():
            self._scan(path)
        elif path.is_file():
            if path.suffix.lower() in TEXT_SUFFIXES:
                self._emit(Change("upsert", path))
            else:
                log.debug("watch: ignoring %s (not a text file suffix)", path)
        elif not path.exists():
            if watches.file_sources_under(self.store.conn, str(path)):
                self._emit(Change("delete", path))

    def _scan(self, folder: Path) -> None:
        """Reconcile a folder: new or touched text files are upserted, vanished ones deleted."""
        try:
            files = [f for f in iter_text_files(folder) if not f.is_symlink()]
        except (BadInput, OSError) as exc:
            log.info("watch: cannot scan %s: %s", folder, exc)
            return
        known = {Path(s.uri): s for s in watches.file_sources_under(self.store.conn, str(folder))}
        for file in files:
            source = known.pop(file, None)
            try:
                mtime = file.stat().st_mtime
            except OSError:
                continue
            # The stored mtime is a cheap pre-check; ingest_file's content hash decides.
            if source is None or source.mtime != mtime:
                self._emit(Change("upsert", file))
        for gone in sorted(known):
            if not gone.exists():
                self._emit(Change("delete", gone))

    def _emit(self, change: Change) -> None:
        try:
            self.on_change(change)
        except Exception as exc:  # one bad change must not stop the watcher: counted and logged
            self.failures += 1
            log.warning("watch: handling %s %s failed: %s", change.kind, change.path, type(exc).__name__)
            log.debug("watch: failure detail", exc_info=True)


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _hidden(path: Path, root: Path) -> bool:
    """Dot-files and anything under a dot-folder (editor swap files, .git) are never ingested."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return False
    return any(part.startswith(".") for part in parts)

"""Open the store: one SQLite file in WAL mode with foreign keys, sqlite-vec, FTS5, owner-only mode.

The file is created 0600 before SQLite touches it (SQLite gives its -wal and -shm files the mode of
the main file). A file that is not SQLite, or a SQLite file that is not an edgemem store, is refused
and never written to. The embedding model and its dimension are recorded at creation; opening with
another embedder is an error, because every stored vector would be meaningless to it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sqlite3 as _stdlib_sqlite3
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlite_vec

from edgemem.errors import StoreError
from edgemem.store.migrations import MIGRATIONS

log = logging.getLogger(__name__)

APPLICATION_ID = 0x45444D4D  # "EDMM" in the SQLite header: marks the file as an edgemem store
_SQLITE_MAGIC = b"SQLite format 3\x00"
CLOSE_WAIT_S = 5.0  # how long close() waits for the transactions in flight

if hasattr(_stdlib_sqlite3.Connection, "enable_load_extension"):
    driver: Any = _stdlib_sqlite3
else:  # this Python's sqlite3 was built without extension loading (ENVIRONMENT.md)
    import sqlean as driver  # type: ignore[no-redef]

DatabaseError = driver.DatabaseError
IntegrityError = driver.IntegrityError


def now() -> str:
    """Local wall-clock time as ISO 8601 to the second: the format of every time column."""
    return datetime.now().replace(microsecond=0).isoformat()


def connect_driver(path: Path | str) -> Any:
    """A connection with sqlite-vec loaded and edgemem's per-connection pragmas set."""
    conn = driver.connect(str(path), isolation_level=None, check_same_thread=False, timeout=30)
    conn.row_factory = driver.Row
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 30000")
    # FULL: a commit is on disk before the caller is acknowledged (survives power loss, not only kill -9).
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA secure_delete = ON")
    return conn


class Store:
    """The single SQLite file. One connection per thread; transactions nest with savepoints."""

    def __init__(self, path: Path, *, embed_model: str, dim: int, create: bool = True, check_embedder: bool = True) -> None:
        self.path = Path(path)
        self.embed_model = embed_model
        self.dim = dim
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()
        self._savepoints = itertools.count()
        # Outermost transactions in flight, and whether close() is under way: close() waits for the
        # running ones and holds new ones back, so no thread writes through a connection being closed
        # (a daemon cancelling an answer records its trace while shutting down).
        self._use = threading.Condition()
        self._active = 0
        self._closing = False
        self._check = check_embedder
        self._open(create)

    # -- opening ---------------------------------------------------------------------------
    def _open(self, create: bool) -> None:
        exists = self.path.exists() and self.path.stat().st_size > 0
        if not exists:
            if not create:
                raise StoreError(f"no store at {self.path}; run `edgemem setup` to create one")
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        else:
            with open(self.path, "rb") as fh:
                if fh.read(16) != _SQLITE_MAGIC:
                    raise StoreError(f"{self.path} is not a SQLite database (corrupt or foreign file); refusing to touch it")
        os.chmod(self.path, 0o600)
        try:
            conn = self.conn
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if app_id != APPLICATION_ID and (app_id != 0 or tables):
                raise StoreError(f"{self.path} is a SQLite database but not an edgemem store; refusing to touch it")
            if conn.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
                raise StoreError(f"{self.path}: cannot switch to WAL mode")
            if app_id == 0:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self._migrate(conn)
            if self._check:
                self._check_embedder(conn)
        except DatabaseError as exc:
            self.close()
            raise StoreError(f"{self.path}: {exc} (the file may be corrupt; restore a backup with `edgemem restore`)") from None
        except StoreError:
            self.close()
            raise

    def _migrate(self, conn: Any) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        applied = {row[0] for row in conn.execute("SELECT name FROM migrations")}
        for name, build in MIGRATIONS:
            if name in applied:
                continue
            script = f"BEGIN IMMEDIATE;\n{build(self.dim)}\nINSERT INTO migrations VALUES ('{name}', '{now()}');\nCOMMIT;"
            try:
                conn.executescript(script)
            except BaseException:
                if conn.in_transaction:
                    with contextlib.suppress(DatabaseError):
                        conn.execute("ROLLBACK")
                raise
            log.info("applied migration %s", name)
            if name == MIGRATIONS[0][0]:
                with self.transaction():
                    conn.executemany(
                        "INSERT INTO meta(key, value) VALUES (?, ?)",
                        [("embed_model", self.embed_model), ("embed_dim", str(self.dim)), ("created_at", now())],
                    )

    def _check_embedder(self, conn: Any) -> None:
        meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('embed_model', 'embed_dim')").fetchall())
        if meta.get("embed_model") != self.embed_model or meta.get("embed_dim") != str(self.dim):
            raise StoreError(
                f"{self.path} was built with embedder {meta.get('embed_model')} (dim {meta.get('embed_dim')}), "
                f"this run uses {self.embed_model} (dim {self.dim}); run `edgemem rebuild --embeddings` "
                "or point to another store"
            )

    # -- connections and transactions ---------------------------------------------------------
    @property
    def conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect_driver(self.path)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """BEGIN IMMEDIATE at the outermost level, SAVEPOINT inside; the original error always wins."""
        conn = self.conn
        if conn.in_transaction:
            name = f"sp{next(self._savepoints)}"
            conn.execute(f"SAVEPOINT {name}")
            try:
                yield conn
            except BaseException:
                with contextlib.suppress(DatabaseError):
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                raise
            conn.execute(f"RELEASE {name}")
            return
        with self._use:
            self._use.wait_for(lambda: not self._closing)
            self._active += 1
        try:
            conn = self.conn  # after a close() this is a fresh connection
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                with contextlib.suppress(DatabaseError):
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            with self._use:
                self._active -= 1
                self._use.notify_all()

    def checkpoint(self) -> None:
        """Fold the WAL into the main file and truncate it (used by forget, backup and close)."""
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def integrity_check(self) -> str:
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0]

    def close(self, wait: float = CLOSE_WAIT_S) -> None:
        """Close every thread's connection, once the transactions in flight have ended (at most
        ``wait`` seconds); transactions that start meanwhile wait for the close to finish."""
        with self._use:
            self._closing = True
            self._use.wait_for(lambda: self._active == 0, timeout=wait)
        try:
            with self._lock:
                conns, self._all = self._all, []
            for conn in conns:
                with contextlib.suppress(DatabaseError):
                    conn.close()
            self._local = threading.local()
        finally:
            with self._use:
                self._closing = False
                self._use.notify_all()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""The store lock: an exclusive ``flock`` on ``<database>.lock``, one holder per store.

The daemon holds it for its whole life, so a second daemon on the same store is refused before it
runs migrations or a worker. Commands that must not run beside a daemon (restore, rebuild) take it
for their duration, and ``held`` tells a command whether a daemon is serving the store. The kernel
releases the lock when its holder exits, even on ``kill -9``; the file itself stays, because
unlinking a lock file lets a racing process lock a different inode. The holder writes its pid into
the file so a refusal can name it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from edgemem.errors import StoreError

# Refusals, filled with the holder's pid and the store's path: the daemon's and a maintenance
# command's (the daemon is what holds the lock in both cases).
DAEMON_REFUSAL = ("another edgemem daemon (pid {pid}) is already serving {store}; "
                  "stop it first, or point this one at another store with --db")
COMMAND_REFUSAL = ("a running edgemem daemon holds {lock}; stop it first "
                   "(systemctl --user stop edgemem.socket edgemem.service)")


def lock_path(database: Path) -> Path:
    """The file the lock is taken on, beside the database."""
    return Path(f"{database}.lock")


class StoreLock:
    """The exclusive lock on one store; ``acquire`` raises StoreError while another process holds it."""

    def __init__(self, database: Path, *, refusal: str = DAEMON_REFUSAL) -> None:
        self.database = Path(database)
        self.path = lock_path(self.database)
        self.refusal = refusal
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise StoreError(self.refusal.format(pid=holder, store=self.database, lock=self.path)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def exclusive(database: Path) -> Iterator[None]:
    """Hold the store's lock for a command that must not run beside a daemon (restore, rebuild)."""
    with StoreLock(database, refusal=COMMAND_REFUSAL):
        yield


def held(database: Path) -> bool:
    """True while another process (a daemon) holds the store's lock."""
    if not lock_path(database).exists():  # a daemon creates it before serving
        return False
    try:
        with StoreLock(database):
            return False
    except StoreError:
        return True

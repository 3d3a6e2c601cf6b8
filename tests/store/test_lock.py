"""The one store lock, used by the daemon (held for its life) and by restore / rebuild (for their run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgemem.errors import StoreError
from edgemem.store import lock


def test_one_holder_at_a_time_and_the_refusal_names_it(tmp_path: Path) -> None:
    database = tmp_path / "data" / "memory.db"  # the folder does not exist yet: the lock creates it
    assert not lock.held(database)
    daemon = lock.StoreLock(database)
    daemon.acquire()
    try:
        assert lock.lock_path(database) == tmp_path / "data" / "memory.db.lock"
        assert int(lock.lock_path(database).read_text()) == os.getpid()
        assert oct(lock.lock_path(database).stat().st_mode & 0o777) == "0o600"
        assert lock.held(database)
        with pytest.raises(StoreError, match=rf"another edgemem daemon \(pid {os.getpid()}\) is already serving {database}"):
            lock.StoreLock(database).acquire()
        with pytest.raises(StoreError, match="a running edgemem daemon holds .*memory.db.lock; stop it first"):
            with lock.exclusive(database):
                pass
    finally:
        daemon.release()
    assert not lock.held(database)
    assert lock.lock_path(database).exists()  # the file stays: unlinking it would let a racer lock another inode
    with lock.exclusive(database):
        assert lock.held(database)
    assert not lock.held(database)

"""``python -m edgemem serve`` as a real process: SIGTERM and ``kill -9`` during an ingest lose nothing
acknowledged, one daemon per store, systemd socket activation. The model is the smallest GGUF."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from edgemem import config
from edgemem.daemon.client import Client, call
from edgemem.errors import EdgememError
from edgemem.ingest.raw import chunk_text
from edgemem.store import raw as raw_store
from edgemem.store.db import Store

pytestmark = pytest.mark.slow

SHUTDOWN_TIMEOUT = 5.0
SERVE = [sys.executable, "-m", "edgemem", "--model", "smollm2-135m", "serve"]
# Enough files that the ingest is still running when the signal lands: 300 took 0.46 s here, and a
# CI run on a faster or less loaded moment finished them before the first acknowledged remember.
FILES = 3000


def daemon_env(home: Path) -> dict[str, str]:
    return {**os.environ, "EDGEMEM_HOME": str(home), "EDGEMEM_SHUTDOWN_TIMEOUT": str(SHUTDOWN_TIMEOUT)}


def start(settings: config.Settings, log: Path, argv: list[str] | None = None, **kw) -> subprocess.Popen:
    with log.open("ab") as err:  # the child keeps its own copy
        proc = subprocess.Popen(argv or SERVE, env=daemon_env(settings.home), stdout=subprocess.DEVNULL, stderr=err, **kw)
    wait_serving(settings.socket, proc, log)
    return proc


def wait_serving(path: Path, proc: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, f"the daemon exited with {proc.returncode}: {log.read_text()}"
        try:
            call(path, "status", timeout=10)
            return
        except EdgememError:
            time.sleep(0.1)
    raise AssertionError(f"the daemon did not serve within {timeout}s: {log.read_text()}")


def write_folder(folder: Path, n: int) -> dict[str, int]:
    """n Markdown files; returns the number of chunks each one makes."""
    folder.mkdir()
    chunks = {}
    for i in range(n):
        text = "\n\n".join(f"File {i}, paragraph {p}: the orchid on shelf {i * 7 + p} needs water every {p + 2} days."
                           for p in range(3))
        path = folder / f"note-{i:04d}.md"
        path.write_text(text)
        chunks[str(path)] = len(chunk_text(text))
    return chunks


class Load:
    """Clients writing while the daemon is stopped: one ingest of a folder, one stream of remembers."""

    def __init__(self, settings: config.Settings, folder: Path) -> None:
        self.socket = settings.socket
        self.folder = folder
        self.acked: list[tuple[int, str]] = []
        self.ingest: dict | None = None
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._remember, daemon=True), threading.Thread(target=self._ingest, daemon=True)]

    def _remember(self) -> None:
        try:
            with Client(self.socket, timeout=30) as c:
                i = 0
                while not self.stop.is_set():
                    text = f"acknowledged fact number {i}"
                    raw_id = c.call("remember", {"text": text})["raw_ids"][0]
                    self.acked.append((raw_id, text))  # only after the reply: the write was acknowledged
                    i += 1
        except EdgememError:
            return  # the daemon went away: what it acknowledged is what counts

    def _ingest(self) -> None:
        try:
            self.ingest = call(self.socket, "ingest", {"path": str(self.folder)}, timeout=60)
        except EdgememError:
            return

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)


def file_sources(store: Store) -> dict[str, int]:
    conn = store.conn
    return {s.uri: len(raw_store.turns_of_source(conn, s.id)) for s in raw_store.list_sources(conn, "file")}


def wait_for_first_file(settings: config.Settings, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with Store(settings.database, embed_model="all-MiniLM-L6-v2", dim=384, create=False) as store:
            if file_sources(store):
                return
        time.sleep(0.01)
    raise AssertionError("the ingest never started")


def check_nothing_acknowledged_lost(settings: config.Settings, load: Load, chunks: dict[str, int]) -> None:
    with Store(settings.database, embed_model="all-MiniLM-L6-v2", dim=384, create=False) as store:
        assert store.integrity_check() == "ok"
        conn = store.conn
        for raw_id, text in load.acked:
            turn = raw_store.get_turn(conn, raw_id)
            assert turn is not None and turn.text == text
        stored = file_sources(store)
    for uri, n in stored.items():  # a file is in whole or not at all (one transaction per file)
        assert n == chunks[uri], uri
    if load.ingest is not None:  # acknowledged: every file is there
        assert len(load.ingest["added"]) == len(chunks)
        assert stored == chunks


@pytest.mark.timeout(300)
def test_sigterm_during_an_ingest_exits_in_time_and_loses_nothing_acknowledged(settings, tmp_path: Path) -> None:
    chunks = write_folder(tmp_path / "notes", FILES)
    log = tmp_path / "daemon.log"
    proc = start(settings, log)
    try:
        with Load(settings, tmp_path / "notes") as load:
            wait_for_first_file(settings)
            assert load.ingest is None  # the signal lands during the ingest
            stopping = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(SHUTDOWN_TIMEOUT + 10)
            took = time.monotonic() - stopping
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert rc == 0, log.read_text()
    assert took < SHUTDOWN_TIMEOUT + 3, f"took {took:.1f}s to stop"
    assert not settings.socket.exists()
    assert load.acked
    check_nothing_acknowledged_lost(settings, load, chunks)
    assert "stopped" in log.read_text()


@pytest.mark.timeout(300)
def test_kill_9_during_an_ingest_loses_nothing_acknowledged(settings, tmp_path: Path) -> None:
    chunks = write_folder(tmp_path / "notes", FILES)
    log = tmp_path / "daemon.log"
    proc = start(settings, log)
    try:
        with Load(settings, tmp_path / "notes") as load:
            wait_for_first_file(settings)
            while not load.acked:
                time.sleep(0.005)
            assert load.ingest is None  # killed during the ingest
            proc.kill()
            proc.wait(10)
    finally:  # never leave a daemon behind for a later test to trip over
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert load.acked
    check_nothing_acknowledged_lost(settings, load, chunks)

    # a restart takes over the stale socket and the lock, requeues the interrupted job, and the
    # interrupted ingest completes by ingesting again (files already in are unchanged)
    proc = start(settings, log)
    try:
        again = call(settings.socket, "ingest", {"path": str(tmp_path / "notes")}, timeout=120)
        assert len(again["added"]) + len(again["unchanged"]) == len(chunks)
        status = call(settings.socket, "status")
        assert status["raw_turns"] >= len(load.acked) + sum(chunks.values())
        assert status["daemon"]["worker_alive"]
        with Store(settings.database, embed_model="all-MiniLM-L6-v2", dim=384, create=False) as store:
            assert file_sources(store) == chunks
            assert store.integrity_check() == "ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(SHUTDOWN_TIMEOUT + 10) == 0


@pytest.mark.timeout(300)
def test_a_second_daemon_on_the_same_store_refuses_clearly(settings, tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    first = start(settings, log)
    try:
        other = tmp_path / "other.sock"  # even on another socket: the store is what is locked
        env = {**daemon_env(settings.home), "EDGEMEM_SOCKET_PATH": str(other)}
        second = subprocess.run(SERVE, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 3
        assert second.stderr.strip() == (f"edgemem: another edgemem daemon (pid {first.pid}) is already serving "
                                         f"{settings.database}; stop it first, or point this one at another store with --db")
        assert not other.exists()
        assert call(settings.socket, "status")["daemon"]["pid"] == first.pid
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(SHUTDOWN_TIMEOUT + 10) == 0


ACTIVATE = """
import os, sys
os.dup2(int(sys.argv[1]), 3)  # where systemd puts the first socket
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid())  # exec keeps the pid: the daemon sees itself named
os.execvp(sys.argv[2], sys.argv[2:])
"""


@pytest.mark.timeout(300)
def test_socket_activation_serves_the_inherited_socket(settings, tmp_path: Path) -> None:
    path = tmp_path / "activated.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))  # what systemd's edgemem.socket unit does
    listener.listen(16)
    log = tmp_path / "daemon.log"
    try:
        with log.open("ab") as err:
            proc = subprocess.Popen([sys.executable, "-c", ACTIVATE, str(listener.fileno()), *SERVE],
                                    env=daemon_env(settings.home), pass_fds=(listener.fileno(),),
                                    stdout=subprocess.DEVNULL, stderr=err)
        wait_serving(path, proc, log)
        status = call(path, "status")
        assert status["daemon"]["socket"] == "inherited" and status["daemon"]["pid"] == proc.pid
        assert not settings.socket.exists()  # it did not bind its own
        assert call(path, "shutdown")["stopping"]
        assert proc.wait(SHUTDOWN_TIMEOUT + 10) == 0, log.read_text()
        assert path.exists()  # the socket belongs to systemd: it stays for the next activation
    finally:
        listener.close()

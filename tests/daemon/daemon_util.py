"""Helpers for the daemon tests: a server thread for blocking clients, raw NDJSON frames."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import Any

from edgemem import config
from edgemem.daemon.server import Server, run_server


class ServerThread:
    """``run_server`` on an event loop in a background thread, for tests whose clients block."""

    def __init__(self, settings: config.Settings, engine: Any) -> None:
        self.settings = settings
        self.engine = engine
        self.server: Server | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            async with run_server(self.settings, self.engine) as server:
                self.server = server
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    def __enter__(self) -> ServerThread:
        self._thread.start()
        assert self._ready.wait(30), "server did not start"
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        assert not self._thread.is_alive(), "server did not stop"


def frame(method: str, params: dict | None = None, request_id: Any = "1", **extra: Any) -> bytes:
    return (json.dumps({"v": 1, "id": request_id, "method": method, "params": params or {}, **extra}) + "\n").encode()


async def read_reply(reader: asyncio.StreamReader, request_id: Any = None, timeout: float = 30) -> tuple[dict, list[dict]]:
    """The final reply (to ``request_id`` if given) and the events before it."""
    events = []
    while True:
        line = await asyncio.wait_for(reader.readline(), timeout)
        assert line, "connection closed before the reply"
        msg = json.loads(line)
        if "event" in msg:
            events.append(msg)
            continue
        if request_id is None or msg.get("id") == request_id:
            return msg, events


class connection:
    """``async with connection(path) as (reader, writer)``: a raw NDJSON connection, always closed."""

    def __init__(self, path: Any, limit: int = 1 << 16) -> None:
        self.path = str(path)
        self.limit = limit

    async def __aenter__(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        self.reader, self.writer = await asyncio.open_unix_connection(self.path, limit=self.limit)
        return self.reader, self.writer

    async def __aexit__(self, *exc: object) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


def cli(*args: str, input: str | None = None) -> tuple[int, str]:
    """Run the ``edgemem`` CLI in this process; an EdgememError becomes its exit code and message, as ``main()`` does."""
    from typer.testing import CliRunner

    from edgemem.cli import app
    from edgemem.errors import EdgememError

    result = CliRunner().invoke(app, list(args), input=input)
    if isinstance(result.exception, EdgememError):
        return result.exception.exit_code, result.exception.message
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


# The CLI as a terminal starts it, whatever this test run inherited: a shell that starts a job in the
# background without job control (nohup …&, a CI runner) sets SIGINT to "ignore", and an ignored
# signal stays ignored across exec, so the Ctrl+C a test sends would never reach the client.
_WITH_CTRL_C = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "sys.argv[0] = 'edgemem'; runpy.run_module('edgemem', run_name='__main__', alter_sys=True)")


def edgemem_argv(*args: str) -> list[str]:
    """``python -m edgemem ARGS`` with Ctrl+C (SIGINT) raising KeyboardInterrupt, as in a terminal."""
    return [sys.executable, "-c", _WITH_CTRL_C, *args]

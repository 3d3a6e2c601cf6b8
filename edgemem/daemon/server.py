"""The daemon: an asyncio Unix-socket server in front of one :class:`Engine` (DESIGN "Socket protocol").

Lifecycle after uvicorn's ``Server.serve``: startup (lock the store, open it, bind or inherit the
socket, start the model loading and the write-path worker in the background, so ``status`` answers at
once) → serve until SIGTERM/SIGINT or a ``shutdown`` request → graceful shutdown bounded by
``settings.shutdown_timeout`` (a second SIGINT skips the waiting) → the socket file removed in the
outermost ``finally``.

The event loop never touches the model or the database: engine calls run on two small thread pools
(one for model-bound calls, one for store-only calls, so ``status`` is never queued behind answers),
and the model itself is only touched by the runtime's scheduler thread, interactive lane first
(DESIGN Principle 4). Streamed tokens come back through ``loop.call_soon_threadsafe``.

Cancellation: every answer runs in a cancel scope (:mod:`edgemem.runtime.scheduler`). A ``cancel``
request, a client that hangs up (a write fails, or its socket reports a hang-up: checked at end of
input and every 50 ms while it has requests in flight, so a client gone during retrieval or prefill
is noticed too) or a shutdown sets it: the generation stops at its next token, a prefill is aborted,
model jobs still queued for it are dropped, so the model is free for the next request at once, and
the query's trace row says it was cancelled.

Safety: the socket is 0600 in a 0700 folder and every peer's uid is checked (SO_PEERCRED); a second
daemon on the same store is refused by an ``flock`` on ``<db>.lock``; writes are acknowledged only
after their commit, so stopping at any point — even ``kill -9`` — loses nothing acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import os
import queue
import select
import signal
import socket
import stat
import struct
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

from edgemem import __version__, display
from edgemem.config import Settings
from edgemem.daemon import protocol
from edgemem.daemon.protocol import Forbidden, InternalError, Request, RequestCancelled, ShuttingDown
from edgemem.errors import ConfigError, EdgememError
from edgemem.runtime.scheduler import Cancelled, cancel_scope
from edgemem.store.lock import StoreLock

log = logging.getLogger(__name__)

SD_LISTEN_FDS_START = 3  # systemd passes activated sockets from fd 3 on (sd_listen_fds(3))
MAX_SOCKET_PATH = 107  # sizeof(sockaddr_un.sun_path) - 1 on Linux
READ_CHUNK = 64 * 1024
INFLIGHT_PER_CONNECTION = 16  # past this a connection is not read until a request finishes (backpressure)
ABORT_GRACE = 1.0  # seconds a job interrupted at the shutdown deadline gets to unwind
HANGUP_POLL = 0.05  # seconds between hang-up checks of a half-closed connection with requests in flight
_END = object()


# -- sockets --------------------------------------------------------------------------------------
def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end, from the kernel (None if the platform cannot tell)."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        return uid
    if sys.platform == "darwin":  # LOCAL_PEERCRED (SOL_LOCAL=0, 1): struct xucred {version, uid, ...}
        raw = sock.getsockopt(0, 1, struct.calcsize("2I") + 17 * 4)
        return struct.unpack_from("2I", raw)[1]
    return None


def inherited_socket() -> socket.socket | None:
    """The listening socket systemd passed (LISTEN_PID/LISTEN_FDS, fd 3), or None when not activated."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()):
        return None
    try:
        count = int(os.environ.get("LISTEN_FDS", "0"))
    except ValueError:
        raise ConfigError(f"LISTEN_FDS={os.environ['LISTEN_FDS']!r} is not a number") from None
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):  # not for our children
        os.environ.pop(name, None)
    if count < 1:
        return None
    if count > 1:
        log.warning("socket activation passed %d sockets; using fd %d only", count, SD_LISTEN_FDS_START)
    os.set_inheritable(SD_LISTEN_FDS_START, False)
    sock = socket.socket(fileno=SD_LISTEN_FDS_START)
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
        sock.detach()
        raise ConfigError("the socket passed by systemd (fd 3) is not a Unix stream socket; edgemem listens on Unix sockets only")
    return sock


def _daemon_answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def check_socket_path(path: Path) -> None:
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise ConfigError(f"socket path {path} is {len(os.fsencode(path))} bytes; Unix sockets allow {MAX_SOCKET_PATH} "
                          "(set socket_path, or a shorter EDGEMEM_HOME)")


def bind_socket(path: Path, runtime_dir: Path) -> socket.socket:
    """Listen on ``path``: folder 0700, socket 0600 from the start; a stale socket file is replaced."""
    check_socket_path(path)
    folder = path.parent
    if not folder.exists():
        folder.mkdir(parents=True, mode=0o700)
        os.chmod(folder, 0o700)
    elif folder == runtime_dir and folder.stat().st_uid == os.getuid():
        os.chmod(folder, 0o700)  # our own runtime folder, whatever made it
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ConfigError(f"{path} exists and is not a socket; refusing to replace it")
        if _daemon_answers(path):
            raise ConfigError(f"another edgemem daemon already listens on {path}")
        log.info("removing the stale socket %s", path)
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600: no window in which another user could connect
    try:
        sock.bind(str(path))
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


# -- threads ----------------------------------------------------------------------------------------
class DaemonPool(Executor):
    """A fixed pool of daemon threads for blocking engine calls.

    Not ``ThreadPoolExecutor``: its threads are joined at interpreter exit, so one call stuck past the
    shutdown deadline would hold the process; daemon threads keep the shutdown bound real.
    """

    def __init__(self, name: str, workers: int) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        self.busy = 0  # calls running now (a cancelled request's call runs on to its end)
        self._threads = [threading.Thread(target=self._run, name=f"edgemem-{name}-{i}", daemon=True) for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if self._closed:
            raise RuntimeError("pool is shut down")
        future: Future = Future()
        self._queue.put((future, fn, args, kwargs))
        return future

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            with self._lock:
                self.busy += 1
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to the awaiting request
                future.set_exception(exc)
            finally:
                with self._lock:
                    self.busy -= 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        if cancel_futures:
            with contextlib.suppress(queue.Empty):
                while True:
                    item = self._queue.get_nowait()
                    if item is not None:
                        item[0].cancel()
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            for t in self._threads:
                t.join()


# -- connections ------------------------------------------------------------------------------------
class Connection:
    _ids = itertools.count(1)

    def __init__(self, server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.number = next(self._ids)
        self.gone = False
        self.tasks: set[asyncio.Task] = set()
        self.cancels: dict[Any, threading.Event] = {}  # request id -> its cancel event (answers in flight)
        self._slots = asyncio.Semaphore(INFLIGHT_PER_CONNECTION)
        self._write_lock = asyncio.Lock()

    async def send(self, line: bytes) -> None:
        """Write one frame; a peer that went away only marks the connection gone."""
        if self.gone:
            return
        async with self._write_lock:
            try:
                self.writer.write(line)
                await self.writer.drain()
            except (ConnectionError, RuntimeError, OSError):
                self.hang_up()

    def hung_up(self) -> bool:
        """The peer closed its socket for good (a half-close, shutdown of its writing side, is not)."""
        sock = self.writer.get_extra_info("socket")
        if sock is None:
            return False
        try:
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLHUP)  # POLLHUP and POLLERR are always reported
            return any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, ev in poller.poll(0))
        except (OSError, ValueError):
            return True

    def hang_up(self) -> None:
        """Nobody reads any more: stop every answer this connection is waiting for."""
        if not self.gone:
            log.info("connection %d hung up with %d answer(s) in flight", self.number, len(self.cancels))
        self.gone = True
        for cancel in list(self.cancels.values()):
            cancel.set()

    async def run(self) -> None:
        sock = self.writer.get_extra_info("socket")
        uid = peer_uid(sock) if sock is not None else None
        if uid != os.getuid():
            log.warning("refused a connection from uid %s (this daemon serves uid %d only)", uid, os.getuid())
            await self.send(protocol.error(None, Forbidden("this edgemem daemon belongs to another user")))
            return
        framer = protocol.FrameReader(self.server.settings.max_frame_bytes)
        while not self.gone:
            try:
                data = await self.reader.read(READ_CHUNK)
            except (ConnectionError, OSError):
                break
            for item in framer.feed(data) if data else framer.close():
                await self.dispatch(item)
            if not data:
                break
        # A client may half-close and still read its replies; one that hung up cancels its requests.
        while self.tasks:
            if not self.gone and self.hung_up():
                self.hang_up()
            await asyncio.wait(set(self.tasks), timeout=HANGUP_POLL)

    async def dispatch(self, item: bytes | object) -> None:
        if item is protocol.OVERSIZED:
            limit = display.size(self.server.settings.max_frame_bytes)
            await self.send(protocol.error(None, protocol.FrameTooLarge(
                f"a request over {limit} was refused (setting max_frame_bytes); to keep a long text, "
                "save it to a file and use `edgemem ingest`")))
            return
        try:
            req = protocol.decode(item)  # type: ignore[arg-type]
        except protocol.ProtocolError as exc:
            await self.send(protocol.error(getattr(exc, "request_id", None), exc))
            return
        if self.server.closing:
            await self.send(protocol.error(req.id, ShuttingDown("the daemon is shutting down; retry once it is back")))
            return
        await self._slots.acquire()
        task = asyncio.create_task(self.server.handle(self, req), name=f"edgemem-request-{self.number}-{req.method}")
        self.tasks.add(task)
        self.server.inflight.add(task)

        def done(t: asyncio.Task) -> None:
            self.tasks.discard(t)
            self.server.inflight.discard(t)
            self._slots.release()

        task.add_done_callback(done)

    def close(self) -> None:
        self.gone = True
        with contextlib.suppress(Exception):
            self.writer.close()


# -- the server ---------------------------------------------------------------------------------------
class Server:
    """Serves one store. Pass ``engine`` to serve an open one (tests); otherwise it opens and closes its own."""

    def __init__(self, settings: Settings, engine: Any = None) -> None:
        self.settings = settings
        self.engine = engine
        self._owns_engine = engine is None
        self.should_exit = False
        self.force_exit = False
        self.closing = False
        self.started = False
        self.inflight: set[asyncio.Task] = set()
        self.connections: set[Connection] = set()
        self.requests = 0
        self._lock = StoreLock(settings.database)
        self._socket_path: Path | None = None
        self._socket_ino: int | None = None
        self._server: asyncio.AbstractServer | None = None
        self._stop = threading.Event()  # the worker finishes the job in hand, then stops
        self._abort = threading.Event()  # the job in hand stops too, at its next token (deadline passed)
        self._wake = threading.Event()
        self.abandoned = False  # exited with a thread still running: see run()
        self._worker: threading.Thread | None = None
        self._cancels: set[threading.Event] = set()
        self._model_pool: DaemonPool | None = None
        self._store_pool: DaemonPool | None = None
        self._exit: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started_at = time.monotonic()
        self.handlers: dict[str, Callable[[Connection, Request], Any]] = {
            "ask": self._ask, "chat": self._chat, "remember": self._remember, "ingest": self._ingest,
            "forget": self._forget, "export": self._export, "status": self._status, "profile": self._profile,
            "search": self._search, "recent": self._recent,
            "watch.add": self._watch_add, "watch.remove": self._watch_remove, "watch.list": self._watch_list,
            "trace": self._trace, "note": self._note, "shutdown": self._shutdown, "cancel": self._cancel,
        }
        missing = set(protocol.METHODS) ^ set(self.handlers)
        assert not missing, f"protocol and server disagree on {missing}"

    # -- lifecycle ------------------------------------------------------------------------------------
    async def serve(self, sock: socket.socket | None = None, *, install_signals: bool = True) -> None:
        self._loop = asyncio.get_running_loop()
        self._exit = asyncio.Event()
        with self.capture_signals() if install_signals else contextlib.nullcontext():
            try:
                await self.startup(sock)
                if not self.should_exit:
                    await self.main_loop()
                await self.shutdown()
            finally:
                self._remove_socket()
                self._lock.release()

    async def startup(self, sock: socket.socket | None = None) -> None:
        self._lock.acquire()  # before the store opens: a second daemon never runs migrations or the worker
        try:
            if self.engine is None:
                from edgemem.engine import Engine

                self.engine = Engine.open(self.settings)
            listener = sock or inherited_socket()
            if listener is None:
                listener = bind_socket(self.settings.socket, self.settings.runtime_dir)
                self._socket_path = self.settings.socket
                self._socket_ino = os.stat(self._socket_path).st_ino
            # Model work is serialised by the scheduler anyway; these threads only wait on it.
            self._model_pool = DaemonPool("model", 8)
            self._store_pool = DaemonPool("store", 4)
            self._server = await asyncio.start_unix_server(self._on_connect, sock=listener)
        except BaseException:
            if self._owns_engine and self.engine is not None:
                self.engine.close()
            raise
        self.engine.runtime.start_loading()
        self.engine.warm()  # after the load, below every request: the answer prompts' static parts
        self._worker = threading.Thread(target=self._run_worker, name="edgemem-worker", daemon=True)
        self._worker.start()
        self.engine.start_watching(self._wake)
        self.started = True
        log.info("edgemem %s serving %s on %s (pid %d)", __version__, self.settings.database,
                 self._socket_path or "an inherited socket", os.getpid())

    async def main_loop(self) -> None:
        assert self._exit is not None
        await self._exit.wait()

    async def shutdown(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.shutdown_timeout
        log.info("shutting down (%d requests in flight)", len(self.inflight))
        self.closing = True
        if self._server is not None:
            self._server.close()
        # 1. let requests in flight finish and reply, until the deadline or a second Ctrl+C
        while self.inflight and not self.force_exit and loop.time() < deadline:
            await asyncio.wait(set(self.inflight), timeout=min(0.1, max(0.0, deadline - loop.time())))
        # 2. whatever is left is cancelled; a generation stops at its next token
        for cancel in list(self._cancels):
            cancel.set()
        for task in list(self.inflight):
            task.cancel()
        if self.inflight:
            await asyncio.wait(set(self.inflight), timeout=1.0)
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            await self._server.wait_closed()
        # 3. the worker finishes the job it holds (its transaction commits or never happened), and
        #    calls of cancelled requests run out (an ingest past the deadline keeps what it committed)
        await loop.run_in_executor(None, self.engine.stop_watching, 2.0)
        self._stop.set()
        self._wake.set()
        pools = [p for p in (self._model_pool, self._store_pool) if p is not None]

        def idle() -> bool:
            return (self._worker is None or not self._worker.is_alive()) and not any(p.busy for p in pools)

        while not idle() and not self.force_exit and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if self._worker is not None and self._worker.is_alive():
            # Past the deadline: interrupt the job in hand at its next token or prefill node (its
            # transaction never happens and it stays queued), so the model can close under nobody.
            self._abort.set()
            grace = loop.time() + ABORT_GRACE
            while self._worker.is_alive() and loop.time() < grace:
                await asyncio.sleep(0.05)
        # 4. the model and the store, if this server opened them and nothing uses them any more
        if self._owns_engine and self.engine is not None:
            if idle() and not self.force_exit:
                closer = threading.Thread(target=self.engine.close, name="edgemem-close", daemon=True)
                closer.start()
                while closer.is_alive() and not self.force_exit and loop.time() < deadline + 1.0:
                    await asyncio.sleep(0.05)
                if closer.is_alive():
                    log.warning("the model did not close within the shutdown timeout; exiting anyway")
                    self.abandoned = True
            else:
                log.warning("exiting with work still running; an unfinished job is retried at the next start")
                self.abandoned = True
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)
        log.info("stopped")

    def _remove_socket(self) -> None:
        """Remove the socket file this server bound (an inherited one belongs to systemd)."""
        path = self._socket_path
        if path is None:
            return
        with contextlib.suppress(FileNotFoundError):
            if os.lstat(path).st_ino == self._socket_ino:
                path.unlink()

    def handle_exit(self, sig: int | None = None) -> None:
        """Signal handler (called on the loop): first request graceful, a second SIGINT forces."""
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
            log.warning("second interrupt: stopping without waiting")
        self.should_exit = True
        if self._exit is not None:
            self._exit.set()

    def request_exit(self) -> None:
        """Thread-safe graceful stop."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.handle_exit, None)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals can only be listened to from the main thread.
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        for sig in previous:
            loop.add_signal_handler(sig, self.handle_exit, sig)
        try:
            yield
        finally:
            for sig, handler in previous.items():
                loop.remove_signal_handler(sig)
                signal.signal(sig, handler)

    def _run_worker(self) -> None:
        try:
            self.engine.worker.run_forever(self._stop, self._wake, abort=self._abort)
        except Exception as exc:  # the queue is durable: the jobs wait for the next start
            log.error("the write-path worker stopped: %s", type(exc).__name__)
            log.debug("worker failure detail", exc_info=True)

    # -- requests -------------------------------------------------------------------------------------
    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(self, reader, writer)
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            conn.close()

    async def handle(self, conn: Connection, req: Request) -> None:
        self.requests += 1
        try:
            value = await self.handlers[req.method](conn, req)
        except RequestCancelled as exc:
            log.info("request %r (%s) cancelled by its client", req.id, req.method)
            await conn.send(protocol.error(req.id, exc))
            return
        except EdgememError as exc:
            await conn.send(protocol.error(req.id, exc))
            return
        except asyncio.CancelledError:
            await asyncio.shield(conn.send(protocol.error(req.id, ShuttingDown("the daemon stopped before answering"))))
            raise
        except Exception as exc:  # a bug: this request fails, the daemon keeps serving
            log.error("request %r (%s) failed: %s", req.id, req.method, type(exc).__name__)
            log.debug("request failure detail", exc_info=True)
            await conn.send(protocol.error(req.id, InternalError(f"internal error ({type(exc).__name__}); see the daemon log")))
            return
        await conn.send(protocol.result(req.id, value))

    async def _store_call(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._store_pool, fn)

    async def _model_call(self, conn: Connection, req: Request, fn: Callable[[Any, Any], Any]) -> Any:
        """Run ``fn(on_token, on_stage)`` on the model pool in a cancel scope; stream its tokens (and,
        with ``progress``, its stages) to the client if asked to."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()
        cancel = threading.Event()
        stream = req.streams
        progress = req.progress

        def on_token(piece: str) -> None:
            if cancel.is_set():
                raise Cancelled(stage="generate")
            if stream:
                loop.call_soon_threadsafe(events.put_nowait, ("token", piece))

        def on_stage(name: str, data: dict) -> None:
            if cancel.is_set():  # between stages: before retrieval, before the answer, before checking
                raise Cancelled(stage=name)
            if progress:
                loop.call_soon_threadsafe(events.put_nowait, (name, data))

        def work() -> Any:
            try:
                with cancel_scope(cancel):
                    return fn(on_token, on_stage)
            finally:
                with contextlib.suppress(RuntimeError):  # the loop is gone after a forced exit
                    loop.call_soon_threadsafe(events.put_nowait, _END)

        self._cancels.add(cancel)
        previous = conn.cancels.get(req.id)
        conn.cancels[req.id] = cancel
        future: asyncio.Future | None = None
        try:
            if conn.gone:
                cancel.set()
            future = loop.run_in_executor(self._model_pool, work)
            while (item := await events.get()) is not _END:
                await conn.send(protocol.event(req.id, *item))
                if conn.gone:
                    cancel.set()  # nobody reads: stop generating at the next token
            try:
                return await future
            except Cancelled as exc:
                query = getattr(exc, "query_id", None)
                raise RequestCancelled("cancelled" + (f" (query {query})" if query else "")) from None
        except BaseException:
            cancel.set()
            if future is not None and not future.done():
                # Left before the work ended (the daemon is stopping): its outcome, a Cancelled once
                # it sees the event, is nobody's to report; retrieved so asyncio does not log it.
                future.add_done_callback(lambda f: f.cancelled() or f.exception())
            raise
        finally:
            self._cancels.discard(cancel)
            if conn.cancels.get(req.id) is cancel:
                if previous is not None:
                    conn.cancels[req.id] = previous
                else:
                    del conn.cancels[req.id]

    async def _ask(self, conn: Connection, req: Request) -> dict:
        p = req.params
        now = protocol.parse_time(p["now"]) if p["now"] is not None else None  # None: the engine's clock
        answer = await self._model_call(
            conn, req, lambda on_token, on_stage: self.engine.ask(p["question"], session=p["session"], now=now,
                                                                  on_token=on_token, on_stage=on_stage))
        return protocol.answer_result(answer)

    async def _chat(self, conn: Connection, req: Request) -> dict:
        p = req.params
        session = p["session"] or _new_session()
        try:
            answer = await self._model_call(conn, req, lambda on_token, on_stage: self.engine.chat(
                p["message"], session=session, on_token=on_token, on_stage=on_stage))
        finally:
            self._wake.set()  # the user's turn was stored, answered or not
        return protocol.answer_result(answer, session=session)

    async def _remember(self, conn: Connection, req: Request) -> dict:
        p = req.params
        out = await self._store_call(lambda: self.engine.remember(p["text"], speaker=p["speaker"], when=p["when"], session=p["session"]))
        self._wake.set()
        return out

    async def _ingest(self, conn: Connection, req: Request) -> dict:
        out = await self._store_call(lambda: self.engine.ingest(req.params["path"]))
        self._wake.set()
        return out

    async def _forget(self, conn: Connection, req: Request) -> dict:
        p = req.params
        return await self._store_call(lambda: self.engine.forget(note_id=p["note_id"], source=p["source"], query=p["query"],
                                                                 confirm=p["confirm"]))

    async def _export(self, conn: Connection, req: Request) -> dict:
        return await self._store_call(lambda: self.engine.export(req.params["format"], req.params["path"]))

    async def _profile(self, conn: Connection, req: Request) -> dict:
        return await self._store_call(self.engine.profile)

    async def _search(self, conn: Connection, req: Request) -> dict:
        # Retrieval only: embedder and tokenizer, never the model, so it runs beside answers.
        p = req.params
        found = await self._store_call(lambda: self.engine.search(p["query"], k=p["k"]))
        return protocol.notes_result(found, query=p["query"])

    async def _recent(self, conn: Connection, req: Request) -> dict:
        return protocol.notes_result(await self._store_call(lambda: self.engine.recent(req.params["limit"])))

    async def _watch_add(self, conn: Connection, req: Request) -> dict:
        return await self._store_call(lambda: self.engine.watch_add(req.params["path"]))

    async def _watch_remove(self, conn: Connection, req: Request) -> dict:
        return await self._store_call(lambda: self.engine.watch_remove(req.params["path"]))

    async def _watch_list(self, conn: Connection, req: Request) -> list[dict]:
        return await self._store_call(self.engine.watch_list)

    async def _trace(self, conn: Connection, req: Request) -> dict:
        return await self._store_call(lambda: self.engine.why(req.params["query_id"]))

    async def _note(self, conn: Connection, req: Request) -> dict:
        return await self._store_call(lambda: self.engine.note(req.params["note_id"]))

    async def _status(self, conn: Connection, req: Request) -> dict:
        out = await self._store_call(self.engine.status)
        # The write path's backlog (records without their note yet): what `ingest` waits on.
        out["backlog"] = await self._store_call(self.engine.worker.backlog)
        out["daemon"] = {
            "pid": os.getpid(),
            "socket": str(self._socket_path) if self._socket_path else "inherited",
            "uptime_s": round(time.monotonic() - self._started_at, 1),
            "connections": len(self.connections),
            "requests_in_flight": len(self.inflight),
            "requests_served": self.requests,
            "model_queue": self.engine.runtime.pending(),
            "model_busy": self.engine.runtime.busy()["llm"],  # a model job is running now
            "answers_in_flight": len(self._cancels),  # ask/chat requests not yet finished or cancelled
            "worker_alive": bool(self._worker and self._worker.is_alive()),
        }
        out["versions"] = versions()
        return out

    async def _cancel(self, conn: Connection, req: Request) -> dict:
        """Cancel a request of this connection (another connection's requests are not its to stop)."""
        cancel = conn.cancels.get(req.params["request"])
        if cancel is None:
            return {"cancelled": False}
        cancel.set()
        return {"cancelled": True}

    async def _shutdown(self, conn: Connection, req: Request) -> dict:
        self.handle_exit(None)  # graceful: this reply is in flight, so it is sent before the loop stops
        return {"stopping": True, "pid": os.getpid()}


def _new_session() -> str:
    import uuid

    return "chat-" + uuid.uuid4().hex[:12]


def versions() -> dict[str, str]:
    return dict(_versions())


@functools.lru_cache(maxsize=1)
def _versions() -> dict[str, str]:
    from importlib import metadata

    from edgemem.store.db import driver

    found = {"edgemem": __version__, "protocol": str(protocol.VERSION), "python": sys.version.split()[0],
             "sqlite": driver.sqlite_version}
    for dist in ("sqlite-vec", "llama-cpp-python", "fastembed"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    return found


def run(settings: Settings) -> int:
    """``edgemem serve``: run the daemon in the foreground until stopped."""
    server = Server(settings)
    asyncio.run(server.serve())
    if server.abandoned:
        # A thread is still inside llama.cpp or onnxruntime: letting the interpreter finalise around
        # it can crash the process (SIGSEGV seen when a 5 s shutdown timeout passed mid-generation).
        # Everything acknowledged is committed, and an interrupted job is requeued at the next start,
        # so end here, the way kill -9 would, after the log is out.
        logging.shutdown()
        os._exit(0)
    return 0


@contextlib.asynccontextmanager
async def run_server(settings: Settings, engine: Any = None, sock: socket.socket | None = None) -> AsyncIterator[Server]:
    """Serve in this event loop for the duration of the block (tests, embedding): no signal handlers."""
    server = Server(settings, engine)
    task = asyncio.create_task(server.serve(sock, install_signals=False))
    try:
        while not server.started:
            if task.done():
                task.result()  # startup failed: raise its error here
            await asyncio.sleep(0.01)
        yield server
    finally:
        server.handle_exit(None)
        await task

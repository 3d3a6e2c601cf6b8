"""The daemon in this process on a real socket: streaming, concurrency, hostile frames, permissions,
lifecycle. The model is scripted (decision logic only); the store and the embedder are real."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ANSWER
from daemon_util import connection, frame, read_reply

from edgemem.daemon.client import Client, call
from edgemem.daemon.server import Server, run_server
from edgemem.engine import Engine
from edgemem.errors import ConfigError, DaemonUnavailable, EdgememError, StoreError
from edgemem.ingest.worker import WriteContext
from edgemem.runtime.fake import ScriptedLLM
from edgemem.store import raw as raw_store


def run(coro, timeout: float = 120):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def in_thread(fn, *args):
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def wait_for(predicate, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


# -- answering --------------------------------------------------------------------------------------
def test_ask_streams_tokens_then_replies(settings, engine) -> None:
    async def main() -> None:
        async with run_server(settings, engine):
            async with connection(settings.socket) as (reader, writer):
                writer.write(frame("remember", {"text": "My sister Ana loves orchids."}, "r1"))
                reply, _ = await read_reply(reader, "r1")
                assert reply["result"]["raw_ids"]
                await in_thread(lambda: wait_for(lambda: engine.status()["notes"] == 1))  # the worker thread made the note

                writer.write(frame("ask", {"question": "What flowers does Ana love?"}, "q1"))
                reply, events = await read_reply(reader, "q1")
                assert len(events) > 1 and all(e["id"] == "q1" and e["event"] == "token" for e in events)
                result = reply["result"]
                assert "".join(e["data"] for e in events) == result["answer"] == ANSWER
                assert [n["content"] for n in result["notes"]] == ["My sister Ana loves orchids."]

                writer.write(frame("trace", {"query_id": result["query_id"]}, "t1"))
                trace, _ = await read_reply(reader, "t1")
                assert trace["result"]["answer"] == ANSWER

                writer.write(frame("ask", {"question": "And cake?", "stream": False}, "q2"))
                reply, events = await read_reply(reader, "q2")
                assert events == [] and reply["result"]["answer"] == ANSWER

    run(main())


def test_ask_measures_time_from_the_reference_it_is_given(settings, engine) -> None:
    """``now`` reaches the read path (the trace records it); without it the daemon's clock is used."""
    from datetime import date

    engine.remember("My sister Ana adopted a puppy.", when="2023-05-20T09:00:00", process=True)

    async def main() -> None:
        async with run_server(settings, engine):
            with Client(settings.socket, timeout=30) as c:
                given = await in_thread(c.call, "ask", {"question": "How many days ago did Ana adopt a puppy?",
                                                        "now": "2023-06-20T10:00:00", "stream": False})
                default = await in_thread(c.call, "ask", {"question": "How many days ago did Ana adopt a puppy?",
                                                          "stream": False})
                with pytest.raises(EdgememError, match="ISO 8601") as bad:
                    await in_thread(c.call, "ask", {"question": "q", "now": "next week"})
                assert bad.value.code == "bad_params"
                traces = [await in_thread(c.call, "trace", {"query_id": r["query_id"]}) for r in (given, default)]
        assert traces[0]["data"]["reference_date"] == "2023-06-20"
        assert traces[1]["data"]["reference_date"] == date.today().isoformat()

    run(main())


def test_status_answers_while_the_model_is_busy(settings, embedder) -> None:
    release = threading.Event()

    def slow(messages, schema):
        release.wait(20)
        return ANSWER

    with Engine.open(settings, llm=ScriptedLLM(default=slow), embedder=embedder) as engine:
        engine.remember("Ana loves orchids.", process=True)

        async def main() -> None:
            async with run_server(settings, engine):
                async with connection(settings.socket) as (reader, writer):
                    writer.write(frame("ask", {"question": "flowers?"}, "slow"))
                    await asyncio.sleep(0.2)
                    started = time.monotonic()
                    writer.write(frame("status", {}, "s"))
                    status, _ = await read_reply(reader, "s")
                    assert time.monotonic() - started < 2.0
                    assert status["result"]["daemon"]["requests_in_flight"] >= 1
                    assert status["result"]["versions"]["protocol"] == "1"
                    release.set()
                    reply, _ = await read_reply(reader, "slow")
                    assert reply["result"]["answer"] == ANSWER

        run(main())


def test_chat_keeps_user_turns_in_its_session(settings, engine) -> None:
    engine.settings = replace(engine.settings, remember_chat=True)  # turns become memories (default off)

    async def main() -> None:
        async with run_server(settings, engine):
            async with connection(settings.socket) as (reader, writer):
                writer.write(frame("chat", {"message": "I just adopted a cat called Miso."}, "c1"))
                first, _ = await read_reply(reader, "c1")
                session = first["result"]["session"]
                assert session.startswith("chat-")
                await in_thread(lambda: wait_for(lambda: engine.status()["notes"] == 1))
                writer.write(frame("chat", {"message": "What is my cat called?", "session": session}, "c2"))
                second, _ = await read_reply(reader, "c2")
                # MemFlow's active-context check: the session's own recent turn answers, no retrieval.
                assert second["result"]["session"] == session
                assert second["result"]["answer"] == "I just adopted a cat called Miso."
                writer.write(frame("chat", {"message": "Where did I park?", "session": "other"}, "c3"))
                third, _ = await read_reply(reader, "c3")
                assert third["result"]["answer"] == ANSWER  # another session: the full pipeline

    run(main())
    conn = engine.store.conn
    source = raw_store.get_source(conn, "conversation", engine.store.conn.execute(
        "SELECT uri FROM sources WHERE kind = 'conversation' ORDER BY id").fetchone()[0])
    turns = raw_store.turns_of_source(conn, source.id)
    assert [(t.speaker, t.text) for t in turns] == [("user", "I just adopted a cat called Miso."), ("user", "What is my cat called?")]


def test_search_recent_and_profile_answer_and_bad_calls_get_typed_errors(settings, engine) -> None:
    engine.remember("My sister Ana loves orchids.", when="2024-05-08T10:00:00", process=True)
    engine.remember("The car is on level 3.", when="2024-05-09T10:00:00", process=True)
    note = {"id": 1, "date": "2024-05-08T10:00:00", "speaker": None, "content": "My sister Ana loves orchids."}

    async def main() -> None:
        async with run_server(settings, engine):
            async with connection(settings.socket) as (reader, writer):
                writer.write(frame("search", {"query": "What flowers does Ana love?", "k": 1}, "s"))
                reply, _ = await read_reply(reader, "s")
                assert reply["result"] == {"query": "What flowers does Ana love?", "notes": [note]}
                writer.write(frame("recent", {"limit": 1}, "r"))
                reply, _ = await read_reply(reader, "r")
                assert [n["content"] for n in reply["result"]["notes"]] == ["The car is on level 3."]
                writer.write(frame("profile", {}, "p"))
                reply, _ = await read_reply(reader, "p")
                assert reply["result"] == {"facts": [], "current": 0, "superseded": 0}
                for i, (method, params, code) in enumerate([("search", {"query": "x", "k": 0}, "bad_input"),
                                                            ("search", {"query": "x", "k": "5"}, "bad_params"),
                                                            ("search", {}, "bad_params"),
                                                            ("recent", {"limit": 51}, "bad_input")]):
                    writer.write(frame(method, params, i))
                    reply, _ = await read_reply(reader, i)
                    assert reply["error"]["code"] == code, reply
                writer.write(frame("note", {"note_id": 12345}, "n"))
                reply, _ = await read_reply(reader, "n")
                assert reply["error"]["code"] == "not_found"
                writer.write(frame("remember", {"text": "   "}, "e"))
                reply, _ = await read_reply(reader, "e")
                assert reply["error"]["code"] == "bad_input"

    run(main())


def test_an_engine_bug_is_an_internal_error_and_the_daemon_keeps_serving(settings, engine) -> None:
    class Buggy:
        def __init__(self, inner: Engine) -> None:
            self._inner = inner

        def __getattr__(self, name: str):
            return getattr(self._inner, name)

        def why(self, query_id: str) -> dict:
            raise KeyError(query_id)

    async def main() -> None:
        async with run_server(settings, Buggy(engine)):
            async with connection(settings.socket) as (reader, writer):
                writer.write(frame("trace", {"query_id": "q"}, 1) + frame("status", {}, 2))
                bug, _ = await read_reply(reader, 1)
                assert bug["error"]["code"] == "internal"
                ok, _ = await read_reply(reader, 2)
                assert "result" in ok

    run(main())


# -- load and abuse -------------------------------------------------------------------------------------
@pytest.mark.timeout(300)
def test_32_clients_20_requests_each_all_answered(settings, engine) -> None:
    def client(n: int) -> dict:
        seen = {"raw_ids": [], "answers": 0}
        with Client(settings.socket, timeout=60) as c:
            for i in range(20):
                kind = i % 4
                if kind == 0:
                    tokens: list[str] = []
                    r = c.call("ask", {"question": f"client {n} question {i}?"}, on_event=lambda e, d: tokens.append(d))
                    assert r["answer"] == ANSWER and "".join(tokens) == ANSWER
                    seen["answers"] += 1
                    assert c.call("trace", {"query_id": r["query_id"]})["question"] == f"client {n} question {i}?"
                elif kind == 1:
                    seen["raw_ids"] += c.call("remember", {"text": f"client {n} fact {i}", "speaker": f"c{n}"})["raw_ids"]
                elif kind == 2:
                    r = c.call("chat", {"message": f"client {n} says {i}", "session": f"s{n}", "stream": False})
                    assert r["session"] == f"s{n}"
                    seen["answers"] += 1
                else:
                    assert c.call("status")["version"]
        return seen

    engine.remember("My sister Ana loves orchids.", process=True)
    engine.settings = replace(engine.settings, remember_chat=True)  # chat turns are stored too: none may be lost

    async def main() -> list[dict]:
        async with run_server(settings, engine):
            loop = asyncio.get_running_loop()
            with ThreadPoolExecutor(32) as pool:  # every client finishes before the pool is joined
                return await asyncio.gather(*(loop.run_in_executor(pool, client, n) for n in range(32)), return_exceptions=True)

    results = run(main(), 280)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    raw_ids = [r for s in results for r in s["raw_ids"]]
    assert len(raw_ids) == 32 * 5 and len(set(raw_ids)) == len(raw_ids)
    assert sum(s["answers"] for s in results) == 32 * 10
    assert engine.status()["raw_turns"] == 1 + 32 * 5 * 2  # remembered facts + chat turns, none lost


def _garbage(rng: random.Random, limit: int) -> list[bytes]:
    frames: list[bytes] = []
    structured = [
        b"[]", b"null", b"42", b'"ask"', b"{}", b'{"v": 1}', b'{"v": "1", "id": "x", "method": "status"}',
        b'{"v": 1, "id": "x", "method": 7}', b'{"v": 1, "id": {"a": 1}, "method": "status"}',
        b'{"v": 1, "id": "x", "method": "ask", "params": {"question": ["list"]}}',
        b'{"v": 1, "id": "x", "method": "ask", "params": {"question": "q", "stream": "yes"}}',
        b'{"v": 1, "id": "x", "method": "remember", "params": {"txt": "typo"}}',
        b'{"v": 1, "id": "x", "method": "watch.add", "params": {"path": "~/notes"}}',
        b'{"v": 1, "id": "x", "method": "__class__"}', b'{"v": 1, "id": "x", "method": ""}',
        b"[" * 3000, b'{"v": 1, "id": "x", "method": "status"', b"\xc3\x28", b"\x00\x01\x02",
    ]
    for i in range(2000):
        kind = i % 4
        if kind == 0:  # random bytes (no newline, not blank)
            data = bytes(rng.choice([b for b in range(256) if b != 10]) for _ in range(rng.randint(1, 300)))
            frames.append(data if data.strip() else b"x" + data)
        elif kind == 1:
            frames.append(rng.choice(structured))
        elif kind == 2:  # oversized: over the limit by 1 to several times
            frames.append(b"{" + b"a" * rng.randint(limit, limit * 3))
        else:  # a request whose parameter is missing, mistyped or unknown
            msg = {"v": 1, "id": f"g{i}", "method": rng.choice(["ask", "remember", "ingest", "trace"]), "params": {}}
            msg["params"][rng.choice(["question", "text", "path", "query_id", "bogus"])] = rng.choice([1, None, [], {}, True, 2.5])
            frames.append(json.dumps(msg).encode())
    return frames


@pytest.mark.timeout(180)
def test_2000_bad_frames_each_get_an_error_and_the_daemon_keeps_serving(settings, engine) -> None:
    limit = 4096
    small = replace(settings, max_frame_bytes=limit)
    frames = _garbage(random.Random(1234), limit)

    async def main() -> None:
        async with run_server(small, engine):
            async with connection(small.socket, limit=1 << 20) as (reader, writer):

                async def send() -> None:
                    for f in frames:
                        writer.write(f + b"\n")
                        await writer.drain()
                    writer.write(frame("status", {}, "final"))
                    await writer.drain()

                sender = asyncio.create_task(send())
                replies = []
                while True:
                    line = await asyncio.wait_for(reader.readline(), 30)
                    assert line, "the daemon closed the connection"
                    msg = json.loads(line)
                    if msg.get("id") == "final":
                        break
                    replies.append(msg)
                await sender
                assert len(replies) == len(frames)
                assert all("error" in r and r["error"]["code"] for r in replies)
                codes = {r["error"]["code"] for r in replies}
                assert {"bad_frame", "frame_too_large", "bad_version", "unknown_method", "bad_params"} <= codes
                assert msg["result"]["daemon"]["connections"] == 1
            async with connection(small.socket) as (reader, writer):  # a fresh connection is served too
                writer.write(frame("status", {}, "again"))
                again, _ = await read_reply(reader, "again")
                assert "result" in again

    run(main())


def test_a_client_that_vanishes_mid_stream_does_not_hurt_the_daemon(settings, embedder) -> None:
    long_answer = " ".join(f"word{i}" for i in range(2000))
    with Engine.open(settings, llm=ScriptedLLM(default=long_answer), embedder=embedder) as engine:
        engine.remember("Ana loves orchids.", process=True)

        async def main() -> None:
            async with run_server(settings, engine):
                for _ in range(5):
                    async with connection(settings.socket) as (reader, writer):
                        writer.write(frame("ask", {"question": "flowers?"}, "gone"))
                        await reader.readline()  # the first token arrived; hang up
                        writer.transport.abort()
                async with connection(settings.socket) as (reader, writer):
                    writer.write(frame("status", {}, "s"))
                    status, _ = await read_reply(reader, "s")
                    assert "result" in status

        run(main())


# -- permissions -------------------------------------------------------------------------------------
def test_socket_folder_and_database_are_private(settings, served) -> None:
    assert settings.socket == settings.runtime_dir / "edgemem.sock"  # the default place, created by the daemon
    assert stat.S_IMODE(os.stat(settings.socket).st_mode) == 0o600
    assert stat.S_ISSOCK(os.stat(settings.socket).st_mode)
    assert stat.S_IMODE(os.stat(settings.socket.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(settings.database).st_mode) == 0o600
    lock = settings.database.with_name(settings.database.name + ".lock")
    assert stat.S_IMODE(os.stat(lock).st_mode) == 0o600
    assert int(lock.read_text()) == os.getpid()


def _python_for(uid: int) -> str | None:
    for exe in (os.path.realpath(sys.executable), "/usr/bin/python3"):
        probe = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", exe, "-I", "-c", "pass"],
                               capture_output=True, cwd="/", timeout=30)
        if probe.returncode == 0:
            return exe
    return None


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="needs setpriv and root")
def test_a_peer_running_as_another_user_is_refused(engine) -> None:
    nobody = 65534
    python = _python_for(nobody)
    if python is None:
        pytest.skip("no python that uid 65534 can run")
    # A world-traversable folder, and the socket opened up for this test only: the kernel lets the
    # other user connect, so what refuses it is the daemon's SO_PEERCRED check.
    folder = Path(tempfile.mkdtemp(prefix="emd-", dir="/tmp"))
    try:
        os.chmod(folder, 0o755)
        s = replace(engine.settings, socket_path=folder / "edgemem.sock")
        code = textwrap.dedent("""
            import socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            f = s.makefile("rb")
            print(f.readline().decode().strip())  # the daemon speaks first: the refusal
            try:
                s.sendall(b'{"v": 1, "id": "x", "method": "status"}\\n')
                print(repr(f.readline()))
            except OSError as exc:  # closed already
                print(type(exc).__name__)
        """)

        async def main() -> None:
            async with run_server(s, engine):
                assert stat.S_IMODE(os.stat(s.socket).st_mode) == 0o600
                os.chmod(s.socket, 0o666)
                out = await in_thread(lambda: subprocess.run(
                    ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups", python, "-I", "-c", code, str(s.socket)],
                    capture_output=True, text=True, cwd="/", timeout=60))
                assert out.returncode == 0, out.stderr
                first, second = out.stdout.splitlines()
                assert json.loads(first)["error"]["code"] == "forbidden"
                assert second in {"b''", "BrokenPipeError", "ConnectionResetError"}  # closed: no status for them
                # the owner is still served
                assert (await in_thread(lambda: call(s.socket, "status")))["version"]

        run(main())
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- lifecycle -------------------------------------------------------------------------------------------
def test_a_second_server_on_the_same_store_is_refused(settings, engine, served, embedder) -> None:
    other = replace(settings, socket_path=settings.runtime_dir / "other.sock")

    async def main() -> None:
        with pytest.raises(StoreError, match="already serving"):
            async with run_server(other, engine):
                pass

    run(main())
    assert not other.socket.exists()
    assert call(settings.socket, "status")["version"]  # the first one is untouched


def test_a_second_server_on_the_same_socket_is_refused(settings, served, embedder, tmp_path) -> None:
    other = replace(settings, db_path=tmp_path / "other.db")
    with Engine.open(other, llm=ScriptedLLM(default="x"), embedder=embedder) as engine2:
        async def main() -> None:
            with pytest.raises(ConfigError, match="already listens"):
                async with run_server(other, engine2):
                    pass

        run(main())
    assert call(settings.socket, "status")["store"] == str(settings.database)


def test_stale_socket_is_replaced_but_other_files_are_not(settings, engine) -> None:
    settings.socket.parent.mkdir(parents=True, mode=0o700)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(settings.socket))  # a crashed daemon's socket: the file exists, nobody listens
    stale.close()

    async def main() -> None:
        async with run_server(settings, engine):
            assert (await in_thread(lambda: call(settings.socket, "status")))["version"]
        assert not settings.socket.exists()  # removed on the way out
        settings.socket.write_text("not a socket")
        with pytest.raises(ConfigError, match="not a socket"):
            async with run_server(settings, engine):
                pass
        assert settings.socket.read_text() == "not a socket"

    run(main())


def test_shutdown_request_stops_the_server_and_removes_the_socket(settings, engine) -> None:
    async def main() -> None:
        server = Server(settings, engine)
        task = asyncio.create_task(server.serve(install_signals=False))
        await in_thread(lambda: wait_for(lambda: server.started))
        reply = await in_thread(lambda: call(settings.socket, "shutdown"))
        assert reply["stopping"]
        await asyncio.wait_for(task, 15)
        assert not settings.socket.exists()
        with pytest.raises(DaemonUnavailable, match="no edgemem daemon"):
            call(settings.socket, "status")

    run(main())


def test_graceful_stop_finishes_requests_in_flight(settings, embedder) -> None:
    def slow(messages, schema):
        time.sleep(1.0)
        return ANSWER

    with Engine.open(settings, llm=ScriptedLLM(default=slow), embedder=embedder) as engine:
        engine.remember("Ana loves orchids.", process=True)

        async def main() -> None:
            server = Server(settings, engine)
            task = asyncio.create_task(server.serve(install_signals=False))
            await in_thread(lambda: wait_for(lambda: server.started))
            async with connection(settings.socket) as (reader, writer):
                writer.write(frame("ask", {"question": "flowers?"}, "inflight"))
                await asyncio.sleep(0.3)
                server.handle_exit(signal.SIGTERM)
                reply, events = await read_reply(reader, "inflight")
                assert reply["result"]["answer"] == ANSWER and events  # answered, not cut off
                await asyncio.wait_for(task, 15)
                assert not server.force_exit
                assert not settings.socket.exists()

        run(main())


def test_shutdown_is_bounded_and_a_second_sigint_forces(settings, embedder) -> None:
    def slow(messages, schema):
        time.sleep(3.0)
        return ANSWER

    quick = replace(settings, shutdown_timeout=0.5)
    with Engine.open(quick, llm=ScriptedLLM(default=slow), embedder=embedder) as engine:
        engine.remember("Ana loves orchids.", process=True)

        async def main() -> None:
            server = Server(quick, engine)
            task = asyncio.create_task(server.serve(install_signals=False))
            await in_thread(lambda: wait_for(lambda: server.started))
            async with connection(quick.socket) as (reader, writer):
                writer.write(frame("ask", {"question": "flowers?"}, "late"))
                await asyncio.sleep(0.2)
                started = time.monotonic()
                server.handle_exit(signal.SIGINT)
                reply, _ = await read_reply(reader, "late")
                assert reply["error"]["code"] == "shutting_down"  # told, not left hanging
                await asyncio.wait_for(task, 10)
                assert time.monotonic() - started < 0.5 + 2.0
                assert not quick.socket.exists()

            server2 = Server(quick, engine)
            task2 = asyncio.create_task(server2.serve(install_signals=False))
            await in_thread(lambda: wait_for(lambda: server2.started))
            server2.handle_exit(signal.SIGINT)
            server2.handle_exit(signal.SIGINT)
            assert server2.should_exit and server2.force_exit
            await asyncio.wait_for(task2, 10)
            assert not quick.socket.exists()

        run(main())


def test_interactive_answers_do_not_wait_for_the_background_backlog(settings, embedder, monkeypatch) -> None:
    """DESIGN Principle 4: the write path's model calls queue behind the user's question, not before."""
    from edgemem.runtime import scheduler as scheduler_mod

    order: list[str] = []
    submit = scheduler_mod.Scheduler.submit

    def logged_submit(self, fn, *args, priority=scheduler_mod.INTERACTIVE, **kwargs):
        if self.name == "llm" and priority == scheduler_mod.INTERACTIVE:
            order.append("answer submitted")
        return submit(self, fn, *args, priority=priority, **kwargs)

    monkeypatch.setattr(scheduler_mod.Scheduler, "submit", logged_submit)

    def model(messages, schema):
        kind = messages[0]["content"]
        order.append("background" if kind == "organise" else "answer")
        if kind == "organise":
            time.sleep(0.4)
        return ANSWER

    class Organise:  # a write step that asks the (background) model about every note
        name = "organise"

        def plan(self, ctx: WriteContext, draft):
            ctx.llm.complete([{"role": "system", "content": "organise"}, {"role": "user", "content": draft.content}], max_tokens=8)
            return self

        def apply(self, conn, draft, note_id):
            return note_id

    with Engine.open(settings, llm=ScriptedLLM(default=model), embedder=embedder, steps=[Organise()]) as engine:
        engine.remember("Ana loves orchids.", process=True)
        order.clear()

        async def main() -> None:
            async with run_server(settings, engine):
                with Client(settings.socket, timeout=30) as c:
                    for i in range(8):
                        await in_thread(c.call, "remember", {"text": f"background fact number {i}"})
                    await in_thread(lambda: wait_for(lambda: "background" in order))
                    r = await in_thread(c.call, "ask", {"question": "flowers?"})
                    pending = (await in_thread(c.call, "status"))["queue"].get("pending", 0)
                assert r["answer"] == ANSWER
                # Order, not wall time (timed tests lie on a shared machine): once the answer's model call
                # was queued, no background call started before it (the one in progress may finish).
                assert pending >= 1  # the backlog was still there when the answer came
                queued = order.index("answer submitted", order.index("background"))
                assert "background" not in order[queued:order.index("answer")], order

        run(main())

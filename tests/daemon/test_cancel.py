"""Cancelling an answer: a ``cancel`` request, or a client that hangs up while its answer streams,
prefills or retrieves, stops the daemon's work at once; the model is free, the trace says
"cancelled", the daemon serves on. A half-close is not a hang-up. Real daemon, real socket, real
store and embedder; the model is scripted (test_cancel_real_model.py runs llama.cpp)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

from daemon_util import connection, edgemem_argv, frame, read_reply

from edgemem.daemon.server import run_server
from edgemem.engine import Engine
from edgemem.runtime import scheduler
from edgemem.runtime.fake import ScriptedLLM
from edgemem.store import traces

QUESTION = "What is my current favourite flower?"
LONG = " ".join(f"word{i}" for i in range(5000))


def run(coro, timeout: float = 300):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def until(predicate, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        await asyncio.sleep(0.01)


def last_trace(engine: Engine) -> dict | None:
    rows = traces.latest(engine.store.conn, 1)
    return engine.why(rows[0]["id"]) if rows else None


def cancelled_trace(engine: Engine) -> dict | None:
    trace = last_trace(engine)
    return trace if trace is not None and trace["data"].get("cancelled") else None


class CountingLLM(ScriptedLLM):
    """A scripted model that streams a piece every 5 ms, like a (fast) real one, and counts them."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.streamed = 0

    def complete(self, messages, *, max_tokens=256, stop=None, on_token=None):
        def counted(piece: str) -> None:
            time.sleep(0.005)
            self.streamed += 1
            if on_token is not None:
                on_token(piece)

        return super().complete(messages, max_tokens=max_tokens, stop=stop, on_token=counted)


async def status(reader, writer, rid: str) -> dict:
    writer.write(frame("status", {}, rid))
    reply, _ = await read_reply(reader, rid)
    return reply["result"]["daemon"]


def test_a_cancel_request_stops_the_answer_and_frees_the_model(settings, embedder) -> None:
    llm = CountingLLM(default=LONG)
    with Engine.open(settings, llm=llm, embedder=embedder, steps=[]) as engine:
        engine.remember("My favourite flower is the orchid.", process=True)

        async def main() -> None:
            async with run_server(settings, engine):
                async with connection(settings.socket) as (reader, writer):
                    writer.write(frame("ask", {"question": QUESTION, "stream": "progress"}, "q"))
                    while (await read_reply_event(reader))["event"] != "token":
                        pass  # route, notes: the first token is the signal
                    writer.write(frame("cancel", {"request": "q"}, "c"))
                    replies = {}
                    while len(replies) < 2:  # the cancel's result and q's error, in either order
                        reply, _ = await read_reply(reader)
                        replies[reply["id"]] = reply
                    assert replies["c"]["result"] == {"cancelled": True}
                    assert replies["q"]["error"]["code"] == "cancelled"
                    trace = cancelled_trace(engine)
                    assert trace is not None and trace["id"] in replies["q"]["error"]["message"]
                    assert trace["data"]["cancelled_at"] == "generate" and trace["data"]["route_tag"]
                    assert llm.streamed < len(LONG.split()) // 2  # stopped, not streamed to its end
                    daemon = await status(reader, writer, "s")
                    assert daemon["answers_in_flight"] == 0 and daemon["model_busy"] is False
                    # a request of nobody in flight: nothing to cancel
                    writer.write(frame("cancel", {"request": "q"}, "c2"))
                    reply, _ = await read_reply(reader, "c2")
                    assert reply["result"] == {"cancelled": False}

        run(main())


async def read_reply_event(reader) -> dict:
    import json

    line = await asyncio.wait_for(reader.readline(), 30)
    assert line, "connection closed"
    return json.loads(line)


def test_a_client_that_hangs_up_before_any_token_cancels_the_prefill(settings, embedder) -> None:
    """A model call that honours cancellation the way llama.cpp's abort callback does: the daemon
    must notice the hang-up by itself, as no token is written that could fail."""
    started, saw_cancel = threading.Event(), threading.Event()

    def reply(messages, schema):
        if schema is not None or started.is_set():  # the router's or validator's structured calls
            return "ok"
        started.set()  # the answer's call: a long prefill
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if scheduler.cancelled():
                saw_cancel.set()
                raise scheduler.Cancelled(stage="prefill")
            time.sleep(0.01)
        return "too late"

    llm = ScriptedLLM(default=reply)
    with Engine.open(settings, llm=llm, embedder=embedder, steps=[]) as engine:
        engine.remember("My favourite flower is the orchid.", process=True)

        async def main() -> None:
            async with run_server(settings, engine):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(settings.socket))
                sock.sendall(frame("ask", {"question": QUESTION, "stream": "progress"}, "q"))
                await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
                t = time.monotonic()
                sock.close()  # Ctrl+C in the middle of the prefill
                await until(saw_cancel.is_set, 10)
                assert time.monotonic() - t < 5
                await until(lambda: cancelled_trace(engine) is not None)
                trace = cancelled_trace(engine)["data"]
                assert trace["cancelled_at"] == "prefill" and trace["completion_tokens"] == 0
                assert trace["stages_reached"] == ["route", "notes"]
                async with connection(settings.socket) as (reader, writer):
                    await until(lambda: not engine.runtime.busy()["llm"], 10)
                    daemon = await status(reader, writer, "s")
                    assert daemon["answers_in_flight"] == 0 and daemon["model_busy"] is False
                    writer.write(frame("ask", {"question": QUESTION, "stream": False}, "again"))
                    reply, _ = await read_reply(reader, "again")
                    assert reply["result"]["answer"] == "ok"  # the model is free for the next answer

        run(main())


def test_a_half_closed_client_still_gets_its_answer(settings, embedder) -> None:
    llm = ScriptedLLM(default="The orchid.")
    with Engine.open(settings, llm=llm, embedder=embedder, steps=[]) as engine:
        engine.remember("My favourite flower is the orchid.", process=True)

        async def main() -> None:
            async with run_server(settings, engine):
                async with connection(settings.socket) as (reader, writer):
                    writer.write(frame("ask", {"question": QUESTION, "stream": "progress"}, "q"))
                    writer.write_eof()  # shutdown(SHUT_WR): no more requests, but the replies are wanted
                    reply, events = await read_reply(reader, "q")
                    assert reply["result"]["answer"] == "The orchid." and events
                assert not last_trace(engine)["data"].get("cancelled")

        run(main())


def test_a_queued_model_job_of_a_cancelled_request_is_dropped_unrun() -> None:
    sched = scheduler.Scheduler("test")
    try:
        gate, ran = threading.Event(), []
        sched.submit(gate.wait, 10)  # the worker is busy
        cancel = threading.Event()
        errors: list[BaseException] = []

        def caller() -> None:
            with scheduler.cancel_scope(cancel):
                try:
                    sched.call(lambda: ran.append(1))
                except scheduler.Cancelled as exc:
                    errors.append(exc)

        t = threading.Thread(target=caller)
        t.start()
        time.sleep(0.1)
        cancel.set()
        t.join(5)
        assert not t.is_alive() and errors and errors[0].stage == "queued"  # the caller did not wait
        gate.set()
        assert sched.call(lambda: "next") == "next" and ran == []
    finally:
        sched.close(5)


class SlowLLM(ScriptedLLM):
    """A scripted model that streams one piece every 10 ms, like a (fast) real one."""

    def complete(self, messages, *, max_tokens=256, stop=None, on_token=None):
        def slow(piece: str) -> None:
            time.sleep(0.01)
            if on_token is not None:
                on_token(piece)

        return super().complete(messages, max_tokens=max_tokens, stop=stop, on_token=slow)


def test_ctrl_c_in_chat_cancels_the_answer_and_the_conversation_goes_on(settings, embedder) -> None:
    import os
    import signal
    import subprocess

    llm = SlowLLM(default=LONG)
    with Engine.open(settings, llm=llm, embedder=embedder, steps=[]) as engine:
        engine.remember("My favourite flower is the orchid.", process=True)
        from daemon_util import ServerThread

        with ServerThread(settings, engine):
            env = {**os.environ, "EDGEMEM_HOME": str(settings.home)}
            chat = subprocess.Popen(edgemem_argv("chat"), env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            chat.stdin.write((QUESTION + "\n").encode())
            chat.stdin.flush()
            assert os.read(chat.stdout.fileno(), 1)  # the first token
            chat.send_signal(signal.SIGINT)
            end = time.monotonic() + 30
            while cancelled_trace(engine) is None:
                # the last trace tells a cancel that never arrived from an answer that needed no model
                assert time.monotonic() < end, f"the daemon did not record the cancel; last trace: {last_trace(engine)}"
                time.sleep(0.02)
            llm.default = "The orchid."
            out, err = chat.communicate(b"Which flower do I currently like best?\n/quit\n", timeout=60)
            assert chat.returncode == 0, err
            assert "cancelled" in err.decode().splitlines()
            assert out.decode().rstrip().splitlines()[-1].startswith("(query ")  # the next turn was answered
            assert "The orchid." in out.decode()
            assert not last_trace(engine)["data"].get("cancelled")

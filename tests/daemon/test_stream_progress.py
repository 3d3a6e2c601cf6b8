"""Time to first feedback: with ``"stream": "progress"`` an answer streams what the daemon is doing
(route, notes, tokens, checking) before its reply, and the CLI shows it at once: a status line on
stderr, the tokens on stdout. Real daemon on a real socket, real store and embedder; the model is
scripted here (the real model's run is in test_cancel_real_model.py)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time

from conftest import ANSWER
from daemon_util import connection, frame, read_reply

from edgemem.daemon.server import run_server
from edgemem.engine import RETRY_NOTICE
from edgemem.store import traces


def run(coro, timeout: float = 300):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def wait_for(predicate, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


QUESTION = "What is my current favourite flower?"


def order_of(events: list[dict]) -> list[str]:
    """Event names with runs of tokens collapsed to one "token"."""
    names: list[str] = []
    for e in events:
        if not (names and names[-1] == "token" and e["event"] == "token"):
            names.append(e["event"])
    return names


def test_progress_events_come_in_order_route_notes_tokens_then_result(settings, engine) -> None:
    engine.remember("My sister Ana loves orchids; my own favourite flower is the orchid too.", process=True)

    async def main() -> None:
        async with run_server(settings, engine):
            async with connection(settings.socket) as (reader, writer):
                writer.write(frame("ask", {"question": QUESTION, "stream": "progress"}, "p"))
                reply, events = await read_reply(reader, "p")
                assert all(e["id"] == "p" for e in events)
                names = order_of(events)
                # route → notes → token(s) → (the validator's check) → the reply
                assert names[:3] == ["route", "notes", "token"], names
                assert names[3:] in ([], ["checking"]), names
                route, notes = events[0]["data"], events[1]["data"]
                trace = engine.why(reply["result"]["query_id"])
                assert route == {"tag": trace["route_tag"], "layer": trace["route_layer"]} and route["tag"] and route["layer"]
                assert notes["found"] >= 1 and notes["packed"] >= 1 and notes["attempt"] == 0 and "tier" in notes
                tokens = [e["data"] for e in events if e["event"] == "token"]
                assert "".join(tokens) == reply["result"]["answer"] == ANSWER
                assert "cancelled" not in trace["data"]

                # Backwards compatible: "stream": true is token events only, false none at all.
                writer.write(frame("ask", {"question": QUESTION}, "t"))
                reply, events = await read_reply(reader, "t")
                assert events and {e["event"] for e in events} == {"token"} and reply["result"]["answer"] == ANSWER
                writer.write(frame("ask", {"question": QUESTION, "stream": False}, "f"))
                reply, events = await read_reply(reader, "f")
                assert events == [] and reply["result"]["answer"] == ANSWER
                writer.write(frame("ask", {"question": QUESTION, "stream": "everything"}, "b"))
                reply, events = await read_reply(reader, "b")
                assert events == [] and reply["error"]["code"] == "bad_params"

    run(main())


def test_a_rejected_draft_streams_checking_then_retry_then_the_second_round(settings, engine, llm) -> None:
    engine.remember("My sister Ana loves orchids; my own favourite flower is the orchid too.", process=True)
    # The first draft names a flower no note mentions: the validator rejects it, the read path
    # escalates once; the second draft is grounded.
    llm.enqueue("Tulips, planted in Amsterdam during 1999 with Bob.")

    async def main() -> None:
        async with run_server(settings, engine):
            async with connection(settings.socket) as (reader, writer):
                writer.write(frame("ask", {"question": QUESTION, "stream": "progress"}, "p"))
                reply, events = await read_reply(reader, "p")
                names = order_of(events)
                assert names[:3] == ["route", "notes", "token"], names
                # the draft streamed, was checked and rejected; the daemon's notice says so (a token,
                # as before), the second round gathers notes again and streams the new answer
                assert names == ["route", "notes", "token", "checking", "retry", "token", "notes", "token", "checking"], names
                retry = next(i for i, e in enumerate(events) if e["event"] == "retry")
                assert events[retry]["data"]["tag"]
                assert events[retry + 1]["data"] == RETRY_NOTICE
                assert [e["data"]["attempt"] for e in events if e["event"] == "notes"] == [0, 1]
                second = "".join(e["data"] for e in events[retry + 3:] if e["event"] == "token")
                assert second == reply["result"]["answer"] == ANSWER
                assert "result" in reply

    run(main())


def test_cli_ask_shows_route_and_notes_on_stderr_and_tokens_on_stdout(settings, served, engine) -> None:
    engine.remember("My sister Ana loves orchids; my own favourite flower is the orchid too.", process=True)
    env = {**os.environ, "EDGEMEM_HOME": str(settings.home)}
    done = subprocess.run([sys.executable, "-m", "edgemem", "ask", QUESTION], env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(ANSWER + "\n")  # the streamed answer, then the sources
    status = done.stderr.splitlines()  # not a terminal: one plain line per update, no escape codes
    trace = engine.why(traces.latest(engine.store.conn, 1)[0]["id"])
    route = f"{trace['route_tag']} ({'decided by ' + trace['route_layer']})"
    assert status[0] == route
    assert status[1].startswith(route + " · ") and re.search(r"notes? packed$", status[1])
    assert "\x1b" not in done.stderr

    # --json: one JSON object on stdout, no status lines
    done = subprocess.run([sys.executable, "-m", "edgemem", "--json", "ask", QUESTION], env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0 and done.stderr == ""
    import json

    assert json.loads(done.stdout)["answer"] == ANSWER

"""Ctrl+C cancels the daemon's work, with the real model: the smallest GGUF through llama.cpp, a
real daemon on a real socket, the real ``edgemem ask`` client in a subprocess."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from daemon_util import ServerThread, edgemem_argv

from edgemem.daemon import protocol
from edgemem.daemon.client import call
from edgemem.engine import Engine
from edgemem.recall import answer as answer_agent
from edgemem.runtime.llm import LlamaCppLLM
from edgemem.runtime.scheduler import Cancelled, cancel_scope
from edgemem.store import traces

pytestmark = pytest.mark.slow

QUESTION = "What is my current garden plan? Describe it in detail."
NOTES = [
    "My garden has tomatoes, basil and three kinds of orchids.",
    "I currently plan to build a greenhouse for the orchids in spring.",
    "The greenhouse will have a rain barrel and a small pond.",
]


def own_model(small_llm: LlamaCppLLM, cache_bytes: int = 0) -> LlamaCppLLM:
    """A model of its own (the engine closes it), same file and CPU layout as the shared fixture."""
    return LlamaCppLLM(small_llm.path, name=small_llm.name, n_ctx=2048, n_threads=2,
                       chat_format=None if small_llm.template_source == "gguf" else small_llm.template_source,
                       repack=small_llm.repack, cache_bytes=cache_bytes)


def wait_for(predicate, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def latest_trace(engine: Engine) -> dict | None:
    rows = traces.latest(engine.store.conn, 1)
    return engine.why(rows[0]["id"]) if rows else None


def events_of(path: Path, request: dict) -> tuple[list[dict], dict]:
    """One request on a raw connection: its events, then its reply."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    events = []
    with sock, sock.makefile("rb") as f:
        sock.sendall(protocol.request("r", "ask", request))
        while True:
            msg = json.loads(f.readline())
            if "event" not in msg:
                return events, msg
            events.append(msg)


def test_ctrl_c_stops_the_generation_frees_the_model_and_records_the_cancel(settings, embedder, small_llm, monkeypatch) -> None:
    llm = own_model(small_llm, cache_bytes=settings.prompt_cache_mb << 20)  # as the daemon builds it
    with Engine.open(settings, llm=llm, embedder=embedder, steps=[]) as engine, ServerThread(settings, engine):
        # 0. The daemon warmed every answer prompt's static part once the model was there.
        warming = engine.runtime.warming
        assert len(warming) == len(answer_agent.warm_prompts())
        wait_for(lambda: all(job.done() for job in warming), 300, "the answer prompts to be warmed")
        assert all(job.result() > 0 for job in warming)
        assert engine.runtime.model_info()["prompt_cache"]["entries"] >= len(warming)
        for text in NOTES:
            engine.remember(text, when="2024-05-08T10:00:00")
        engine.process()

        # 1. `edgemem ask` in a subprocess; Ctrl+C (SIGINT) once the first answer token is on its stdout.
        env = {**os.environ, "EDGEMEM_HOME": str(settings.home)}
        client = subprocess.Popen(edgemem_argv("ask", QUESTION), env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first: list[bytes] = []
        reader = threading.Thread(target=lambda: first.append(os.read(client.stdout.fileno(), 1)), daemon=True)
        reader.start()
        reader.join(600)
        assert first and first[0], f"no token within the time limit: {client.stderr.read1(65536)!r}"
        client.send_signal(signal.SIGINT)
        _out, err = client.communicate(timeout=60)
        assert client.returncode == 130, (err, latest_trace(engine))  # the trace: what answered, and how
        lines = err.decode().splitlines()
        assert lines[-1] == "cancelled"
        assert lines[0].endswith(")") and "(decided by " in lines[0] and any(re.search(r"notes? packed$", x) for x in lines)

        # 2. The trace row says cancelled, with the tokens generated when it stopped: fewer than its
        #    max_tokens, i.e. the generation did not run on to its end.
        wait_for(lambda: (latest_trace(engine) or {}).get("data", {}).get("cancelled"), 60, "the cancelled trace row")
        cancelled = latest_trace(engine)
        data = cancelled["data"]
        assert data["cancelled_at"] == "generate", data
        assert 1 <= data["completion_tokens"] < answer_agent.ANSWER_TOKENS, data
        assert lines[0] == f"{data['route_tag']} (decided by {data['route_layer']})" and data["notes_packed"] >= 1
        tokens_when_cancelled = data["completion_tokens"]

        # 3. The daemon is alive and holds no job: no answer in flight, the model slot is free.
        wait_for(lambda: not engine.runtime.busy()["llm"], 10, "the model to be free")
        daemon = call(settings.socket, "status", timeout=30)["daemon"]
        assert daemon["answers_in_flight"] == 0 and daemon["model_busy"] is False
        assert daemon["model_queue"]["llm"] == 0
        time.sleep(1.0)  # had the generation gone on, its tokens would show up as a busy model
        assert not engine.runtime.busy()["llm"]
        assert latest_trace(engine)["id"] == cancelled["id"]
        assert latest_trace(engine)["data"]["completion_tokens"] == tokens_when_cancelled

        # 4. A second request that needs the model completes (a short answer keeps this test quick),
        #    and streams route → notes → token(s) → (checking) → result.
        monkeypatch.setattr(answer_agent, "ANSWER_TOKENS", 8)
        start = time.monotonic()
        events, reply = events_of(settings.socket, {"question": QUESTION, "stream": "progress"})
        elapsed = time.monotonic() - start
        assert "result" in reply, reply
        names = " ".join(e["event"] for e in events)
        # the first round, then (a truncated answer may be rejected) the notice and a second round, and
        # when that is rejected too, the notice again and the reply it ends with
        assert re.fullmatch(r"route notes (token )+checking( retry (token )*notes (token )*checking( token)*)?", names), names
        second = engine.why(reply["result"]["query_id"])["data"]
        assert not second.get("cancelled") and second["stages"]["answer0"]["completion_tokens"] <= 8
        print(f"cancelled after {tokens_when_cancelled} tokens; the next answer took {elapsed:.1f}s")


def test_a_prefill_is_aborted_and_the_model_answers_alike_afterwards(small_llm) -> None:
    llm = own_model(small_llm)
    try:
        short = [{"role": "user", "content": "Name a flower."}]
        before = llm.complete(short, max_tokens=4).text
        long = [{"role": "user", "content": "The quick brown fox jumps over the lazy dog. " * 150 + "Summarise."}]
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        start = time.monotonic()
        with pytest.raises(Cancelled) as stopped, cancel_scope(cancel):
            llm.complete(long, max_tokens=64)
        assert stopped.value.stage == "prefill" and stopped.value.completion_tokens == 0
        # ~1500 prompt tokens: far longer than this without the abort on a loaded 2-core machine
        assert time.monotonic() - start < 10
        assert llm.complete(short, max_tokens=4).text == before  # the KV cache was left consistent
    finally:
        llm.close()

"""The CLI as a client of a real daemon (served in this process), and without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ANSWER
from daemon_util import cli as edgemem

from edgemem.store import raw as raw_store


def test_no_daemon_is_a_clear_error_with_its_exit_code(settings) -> None:
    out = subprocess.run([sys.executable, "-m", "edgemem", "status"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "EDGEMEM_HOME": str(settings.home)})
    assert out.returncode == 6
    assert out.stderr == f"edgemem: no edgemem daemon at {settings.socket}; start one with `edgemem serve` (or use --local)\n"
    assert out.stdout == ""


def test_memory_commands_go_through_the_daemon(settings, served, engine, tmp_path: Path, monkeypatch) -> None:
    code, out = edgemem("remember", "My sister Ana loves orchids.")
    assert (code, out) == (0, "remembered (note queued)\n")

    monkeypatch.chdir(tmp_path)
    Path("notes.md").write_text("# Garden\n\nThe tulips bloom in April.\n")
    code, out = edgemem("--json", "ingest", "notes.md")  # a relative path, resolved by the client
    assert code == 0 and json.loads(out)["added"] == [{"path": str(tmp_path / "notes.md"), "chunks": 1}]

    code, out = edgemem("--json", "status")
    status = json.loads(out)
    assert code == 0 and status["daemon"]["pid"] == os.getpid() and status["raw_turns"] == 2

    engine.process()  # the notes exist before asking (the worker thread may be slower)
    code, out = edgemem("ask", "What flowers does Ana love?")
    assert code == 0
    assert out.startswith(ANSWER + "\n")  # streamed, then the sources
    assert "notes used:" in out and "My sister Ana loves orchids." in out

    code, out = edgemem("--json", "ask", "What flowers does Ana love?")
    answer = json.loads(out)
    assert code == 0 and answer["answer"] == ANSWER and answer["notes"]

    code, out = edgemem("--json", "why", answer["query_id"])
    assert code == 0 and json.loads(out)["question"] == "What flowers does Ana love?"

    assert edgemem("why", "no-such-query")[0] == 5
    assert edgemem("remember", " ")[0] == 2


def test_chat_repl_streams_and_runs_slash_commands(settings, served, engine) -> None:
    engine.remember("My sister Ana loves orchids.", process=True)
    code, out = edgemem("chat", "--session", "s1", input="What flowers does Ana love?\n/sources\n/why\n/nope\n/quit\nnot sent\n")
    assert code == 0
    assert out.startswith(ANSWER + "\n(query ")
    assert "[1]" in out and "My sister Ana loves orchids." in out  # /sources
    assert "question  What flowers does Ana love?" in out and "\ntimeline\n" in out  # /why
    assert "unknown command /nope" in out
    # remember_chat is off by default: the question is not a memory (checked in test_cli_habits).
    assert raw_store.get_source(engine.store.conn, "conversation", "s1") is None


def test_chat_json_prints_one_object_per_turn(settings, served) -> None:
    code, out = edgemem("--json", "chat", input="first message\nsecond message\n")
    lines = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and len(lines) == 2
    assert lines[0]["session"] == lines[1]["session"] and lines[0]["session"].startswith("chat-")


def test_local_mode_needs_no_daemon(settings, embedder) -> None:
    assert not settings.socket.exists()
    code, out = edgemem("--local", "remember", "The car is on level 3.")
    assert code == 0 and out == "remembered (note 1)\n"
    code, out = edgemem("--local", "--json", "status")
    status = json.loads(out)
    assert code == 0 and status["notes"] == 1 and "daemon" not in status


@pytest.mark.parametrize("command", [["status"], ["ask", "q"], ["remember", "x"], ["why", "q"], ["chat"]])
def test_commands_without_a_daemon_exit_6(settings, command) -> None:
    code, message = edgemem(*command, input="hello\n")
    assert code == 6 and "edgemem serve" in message and "--local" in message

"""``edgemem mcp`` as a subprocess, driven over stdio by the MCP SDK's own client, against a real daemon
(served in this process on a real socket; real store and embedder, scripted model). Also the same
server on an in-process engine (``--local``), and its refusal to start without a daemon."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from conftest import ANSWER
from daemon_util import cli
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from edgemem.daemon.mcp_server import LocalBackend, build_server

FACT = "My sister Ana loves orchids."
QUESTION = "What flowers does Ana love?"
TOOLS = {"remember", "search", "ask", "why", "profile", "forget"}

# Runs `edgemem` with an audit hook that records every socket that is not a Unix socket and every
# name lookup, from the first import on (C code that bypasses Python is caught by /proc below).
GUARD = r"""
import os, socket, sys

def audit(event, args):
    if (event == "socket.__new__" and args[1] != socket.AF_UNIX) or event.startswith(("socket.getaddrinfo", "socket.gethostby")):
        with open(os.environ["NET_AUDIT_LOG"], "a") as log:
            log.write(f"{event} {args[1:]!r}\n")

sys.addaudithook(audit)
sys.argv[0] = "edgemem"
from edgemem.cli import main
main()
"""


@contextlib.asynccontextmanager
async def mcp_session(settings, tmp_path: Path, *args: str) -> AsyncIterator[ClientSession]:
    env = {"EDGEMEM_HOME": str(settings.home), "NET_AUDIT_LOG": str(tmp_path / "net.log")}
    server = StdioServerParameters(command=sys.executable, args=["-c", GUARD, *args, "mcp"], env=env, cwd=str(tmp_path))
    with (tmp_path / "mcp.log").open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def child_pid(word: str) -> int:
    """The pid of this process's child whose command line holds ``word``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and word.encode() in cmdline:
            return int(entry.name)
    raise AssertionError(f"no child process running {word!r}")


def network_sockets(pid: int) -> list[str]:
    """The sockets ``pid`` holds that are not Unix sockets (TCP, UDP, raw, netlink ...), by inode."""
    unix = {line.split()[6] for line in Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]}
    held = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                held.append(target[len("socket:["):-1])
    return [inode for inode in held if inode not in unix]


async def call(session: ClientSession, tool: str, args: dict) -> dict:
    result = await session.call_tool(tool, args)
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def error(session: ClientSession, tool: str, args: dict) -> str:
    result = await session.call_tool(tool, args)
    assert result.is_error, result
    assert len(result.content) == 1 and "\n" not in result.content[0].text
    return result.content[0].text


async def search_until(session: ClientSession, query: str, content: str, timeout: float = 30.0) -> dict:
    """The note with ``content`` among the search results, once the daemon's worker has made it."""
    end = time.monotonic() + timeout
    while True:
        found = await call(session, "search", {"query": query})
        hits = [n for n in found["notes"] if n["content"] == content]
        if hits:
            return hits[0]
        assert time.monotonic() < end, f"{content!r} never became searchable: {found}"
        await anyio.sleep(0.1)


def test_the_network_check_can_fail() -> None:
    inet = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    pair = socket.socketpair()
    try:
        flagged = network_sockets(os.getpid())
        assert str(os.fstat(inet.fileno()).st_ino) in flagged
        assert not {str(os.fstat(s.fileno()).st_ino) for s in pair} & set(flagged)
    finally:
        inet.close()
        for s in pair:
            s.close()


@pytest.mark.slow
def test_mcp_serves_the_daemon_over_stdio(settings, served, tmp_path: Path) -> None:
    async def main() -> None:
        async with mcp_session(settings, tmp_path) as session:
            pid = child_pid("mcp")
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.description and tool.input_schema["type"] == "object"
            assert tools["search"].input_schema["required"] == ["query"]
            assert tools["forget"].annotations.destructive_hint and tools["search"].annotations.read_only_hint

            remembered = await call(session, "remember", {"text": FACT, "when": "2024-05-08T10:00:00"})
            assert remembered["raw_ids"]
            note = await search_until(session, QUESTION, FACT)
            assert note["date"].startswith("2024-05-08") and note["speaker"] is None and isinstance(note["id"], int)

            answer = await call(session, "ask", {"question": QUESTION})
            assert answer["answer"] == ANSWER
            assert note["id"] in [n["id"] for n in answer["notes"]]
            trace = await call(session, "why", {"query_id": answer["query_id"]})
            assert trace["question"] == QUESTION and trace["answer"] == ANSWER

            # Bad calls get edgemem's one-line errors; the server keeps serving.
            assert await error(session, "search", {"query": 5}) == "search: argument 'query' must be string, got integer"
            assert await error(session, "ask", {}) == "ask: argument 'question' is required"
            assert await error(session, "search", {"query": "x", "k": 0}) == "search: argument 'k' must be from 1 to 50, got 0"
            assert await error(session, "forget", {"note_id": True}) == "forget: argument 'note_id' must be integer, got boolean"
            assert await error(session, "remember", {"text": "x", "colour": "red"}) == (
                "remember: unknown argument(s) colour; it takes text, when, speaker")
            bad_time = await error(session, "remember", {"text": "x", "when": "last tuesday"})
            assert bad_time == "remember: 'when' must be an ISO 8601 date or time, got 'last tuesday'"
            assert (await error(session, "why", {"query_id": "no-such"})).startswith("no trace 'no-such'")
            with pytest.raises(MCPError, match="unknown tool 'nope'"):
                await session.call_tool("nope", {})

            profile = await call(session, "profile", {})
            assert profile == {"facts": [], "current": 0, "superseded": 0}
            resources = {str(r.uri) for r in (await session.list_resources()).resources}
            assert resources == {"edgemem://profile", "edgemem://notes/recent"}
            recent = await session.read_resource("edgemem://notes/recent")
            assert [n["content"] for n in json.loads(recent.contents[0].text)["notes"]] == [FACT]
            with pytest.raises(MCPError, match="unknown resource"):
                await session.read_resource("edgemem://nothing")

            assert network_sockets(pid) == []
        assert not (tmp_path / "net.log").exists(), (tmp_path / "net.log").read_text()

    anyio.run(main)


@pytest.mark.slow
def test_forget_deletes_only_when_confirmed(settings, served, engine, tmp_path: Path) -> None:
    async def main() -> None:
        async with mcp_session(settings, tmp_path) as session:
            await call(session, "remember", {"text": "My locker code is 4417."})
            await call(session, "remember", {"text": FACT})
            note = await search_until(session, "locker code", "My locker code is 4417.")
            await search_until(session, QUESTION, FACT)

            preview = await call(session, "forget", {"query": "locker code"})
            assert preview["deleted"] is False
            assert [n["id"] for n in preview["preview"]["notes"]] == [note["id"]]
            assert await search_until(session, "locker code", "My locker code is 4417.") == note  # still there

            assert await error(session, "forget", {"note_id": note["id"], "query": "locker"}) == (
                "forget: give exactly one of note_id or query")
            done = await call(session, "forget", {"note_id": note["id"], "confirm": True})
            assert done["deleted"] is True and done["notes"] == 1
            found = await call(session, "search", {"query": "locker code"})
            assert note["id"] not in [n["id"] for n in found["notes"]]
            assert all("4417" not in n["content"] for n in found["notes"])
            assert (await error(session, "forget", {"note_id": note["id"]})) == f"no note {note['id']}"

    anyio.run(main)
    assert engine.status()["notes"] == 1  # the orchid note stays


@pytest.mark.slow
def test_without_a_daemon_it_says_so_in_one_line(settings) -> None:
    out = subprocess.run([sys.executable, "-m", "edgemem", "mcp"], stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "EDGEMEM_HOME": str(settings.home)})
    assert out.returncode == 6
    assert out.stderr == f"edgemem: no edgemem daemon at {settings.socket}; start one with `edgemem serve` (or use --local)\n"
    assert out.stdout == ""  # stdout is the protocol's


def test_local_is_refused_while_a_daemon_serves_the_store(settings, served) -> None:
    code, message = cli("--local", "mcp")
    assert (code, message) == (3, f"a daemon is serving {settings.database}; run `edgemem mcp` without --local to use it")


@pytest.mark.slow
def test_local_backend_serves_an_engine_in_process(engine) -> None:
    from mcp import Client

    async def main() -> None:
        async with Client(build_server(LocalBackend(engine))) as client:
            remembered = await client.call_tool("remember", {"text": FACT})
            assert not remembered.is_error and remembered.structured_content["notes"]  # organised before returning
            found = (await client.call_tool("search", {"query": QUESTION, "k": 3})).structured_content
            assert [n["content"] for n in found["notes"]] == [FACT] and found["query"] == QUESTION
            answer = (await client.call_tool("ask", {"question": QUESTION})).structured_content
            assert answer["answer"] == ANSWER and [n["content"] for n in answer["notes"]] == [FACT]
            bad_time = await client.call_tool("remember", {"text": "x", "when": "last tuesday"})
            assert bad_time.content[0].text == "remember: 'when' must be an ISO 8601 date or time, got 'last tuesday'"
            bad = await client.call_tool("search", {"query": "   "})
            assert bad.is_error and bad.content[0].text == "query is empty"
            profile = await client.read_resource("edgemem://profile")
            assert json.loads(profile.contents[0].text)["facts"] == []

    anyio.run(main)

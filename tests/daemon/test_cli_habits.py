"""CLI habits (issue 13): ``--json`` anywhere and JSON errors, ``--version``, flags in help, text for
people from ``status`` / ``why`` / ``models list``, the ``why`` hint, ``service install --dry-run``,
over-size ``remember``, skipped files in a folder ingest, chat turns that are not memories.

Against a real daemon (served in this process on the real socket, a real store, the real embedder and
a scripted model) wherever the command talks to one; ``python -m edgemem`` subprocesses where what is
tested is the process boundary (stdout, stderr, the exit code).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ANSWER
from typer.testing import CliRunner

from edgemem import __version__, config, display
from edgemem.cli import app, lift_flags
from edgemem.daemon.client import Client
from edgemem.errors import BadInput, EdgememError
from edgemem.store import raw as raw_store


class Ran:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err


def cli(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Ran:
    """The CLI in this process; an EdgememError becomes its exit code and message, as ``main()`` does."""
    result = CliRunner().invoke(app, list(args), input=input, env=env)
    if isinstance(result.exception, EdgememError):
        return Ran(result.exception.exit_code, result.stdout, result.exception.message)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


def process(*args: str, settings: config.Settings, input: str | None = None) -> subprocess.CompletedProcess:
    """``python -m edgemem ARGS`` as a user runs it (own process, real stdout/stderr/exit code)."""
    return subprocess.run([sys.executable, "-m", "edgemem", *args], capture_output=True, text=True, timeout=120,
                          input=input, env={**os.environ, "EDGEMEM_HOME": str(settings.home)})


# -- --json anywhere, JSON errors, --version, help ---------------------------------------------------
def test_lift_flags_moves_root_flags_but_not_past_a_double_dash() -> None:
    assert lift_flags(["status", "--json"]) == ["--json", "status"]
    assert lift_flags(["why", "abc", "--local", "--json"]) == ["--local", "--json", "why", "abc"]
    assert lift_flags(["remember", "--", "--json"]) == ["remember", "--", "--json"]


def test_json_and_local_work_before_or_after_the_command(settings, served) -> None:
    before, after = cli("--json", "status"), cli("status", "--json")
    assert before.code == after.code == 0
    assert json.loads(before.out)["daemon"]["pid"] == json.loads(after.out)["daemon"]["pid"] == os.getpid()
    local = cli("status", "--json", "--local")  # in this process: no daemon section
    assert local.code == 0 and "daemon" not in json.loads(local.out)


def test_errors_under_json_are_json_on_stdout_with_the_same_exit_code(settings, served) -> None:
    for args in (["--json", "why", "no-such-query"], ["why", "no-such-query", "--json"]):
        proc = process(*args, settings=settings)
        assert proc.returncode == 5 and proc.stderr == ""
        error = json.loads(proc.stdout)["error"]
        assert error["code"] == "not_found" and error["exit_code"] == 5 and "no-such-query" in error["message"]
    plain = process("why", "no-such-query", settings=settings)
    assert plain.returncode == 5 and plain.stdout == "" and plain.stderr.startswith("edgemem: no trace")
    usage = process("status", "--bogus", "--json", settings=settings)
    assert usage.returncode == 2 and json.loads(usage.stdout)["error"]["code"] == "usage"


def test_no_daemon_under_json_is_a_json_error(settings) -> None:
    proc = process("status", "--json", settings=settings)
    assert proc.returncode == 6 and proc.stderr == ""
    assert json.loads(proc.stdout) == {"error": {
        "code": "no_daemon", "exit_code": 6,
        "message": f"no edgemem daemon at {settings.socket}; start one with `edgemem serve` (or use --local)"}}


def test_version_flag_and_command() -> None:
    assert (cli("--version").code, cli("--version").out) == (0, f"{__version__}\n")
    assert cli("version").out == f"{__version__}\n"
    assert json.loads(cli("--json", "version").out) == {"version": __version__}


@pytest.mark.parametrize("command", [[], ["status"], ["service", "install"], ["models", "list"]])
def test_help_shows_flags_as_flags(command: list[str]) -> None:
    out = cli(*command, "--help", env={"COLUMNS": "200"}).out
    assert "<bool>" not in out
    if not command:
        assert re.search(r"^  --json\s{2,}Print results", out, re.MULTILINE)
        assert re.search(r"^  --version\s{2,}Print the version", out, re.MULTILINE)


# -- status, why, models list for people ---------------------------------------------------------
def test_status_prints_aligned_fields_and_nested_sections(settings, served, engine) -> None:
    engine.remember("My sister Ana loves orchids.", process=True)
    ran = cli("status")
    assert ran.code == 0 and not ran.out.lstrip().startswith("{")
    lines = ran.out.splitlines()
    top = [line for line in lines if re.match(r"^\S+\s{2,}\S", line)]  # top-level key and value
    assert len(top) > 8 and len({re.match(r"^\S+\s+", line).end() for line in top}) == 1  # one value column
    assert re.search(r"^notes\s+1$", ran.out, re.MULTILINE)
    assert re.search(r"^store_bytes\s+\d+(\.\d)? (KiB|MiB)$", ran.out, re.MULTILINE)
    daemon = lines.index("daemon")
    assert re.match(rf"^  pid\s+{os.getpid()}$", next(x for x in lines[daemon:] if x.startswith("  pid")))


def test_status_text_shows_keys_it_does_not_know() -> None:
    status = {"version": "9", "cpu_repack": {"setting": "auto", "active": True},
              "prompt_cache": {"hits": 3, "size_bytes": 2048, "entries": [], "by_prompt": {"answer": {"hits": 2}}},
              "new_list": [{"a": 1}], "none": None, "took_ms": 1.5}
    assert display.fields_text(status).splitlines() == [
        "version  9",
        "cpu_repack",
        "  setting  auto",
        "  active   yes",
        "prompt_cache",
        "  hits        3",
        "  size_bytes  2 KiB",
        "  entries     -",
        "  by_prompt",
        "    answer",
        "      hits  2",
        "new_list",
        "  - a 1",
        "none     -",
        "took_ms  1.5 ms",
    ]


def test_why_prints_a_timeline_and_json_the_trace(settings, served, engine) -> None:
    engine.remember("My sister Ana loves orchids.", process=True)
    asked = cli("--json", "ask", "What flowers does Ana love?")
    query_id = json.loads(asked.out)["query_id"]
    ran = cli("why", query_id)
    assert ran.code == 0, ran.err
    out = ran.out
    trace = json.loads(cli("why", query_id, "--json").out)
    data = trace["data"]
    assert re.search(rf"^query\s+{query_id}\s", out, re.MULTILINE)
    assert re.search(r"^question\s+What flowers does Ana love\?$", out, re.MULTILINE)
    assert re.search(rf"^route\s+{data['route_tag']}, decided by the {data['route_layer']} layer$", out, re.MULTILINE)
    notes = f"{len(data['retrieved'])} retrieved, {len(data['used'])} used"
    notes += f" (note{'s' if len(data['used']) > 1 else ''} {', '.join(map(str, data['used']))})" if data["used"] else ""
    assert re.search(rf"^notes\s+{re.escape(notes)}$", out, re.MULTILINE)
    assert re.search(rf"^tokens\s+{data['packed_tokens']} packed for the answer, {data['pipeline_tokens']} model tokens in all$",
                     out, re.MULTILINE)
    timeline = out.split("\ntimeline\n", 1)[1].splitlines()
    for name, stage in data["stages"].items():
        assert any(re.match(rf"^  {name}\s+{stage['ms']:g} ms", line) for line in timeline), name
    assert re.search(rf"^verdict\s+grounded \({data['verdict']}\), (first try|after one escalation)$", out, re.MULTILINE)
    assert re.search(rf"^answer\s+{re.escape(ANSWER)}$", out, re.MULTILINE)


def test_why_text_marks_the_escalation_and_an_abstention() -> None:
    trace = {"id": "q1", "created_at": "2024-05-01T10:00:00", "question": "q?",
             "answer": "I could not find reliable information.",
             "data": {"route_tag": "temporal-reasoning", "route_layer": "rules", "tier": 3, "retrieved": [4, 5], "used": [],
                      "packed_tokens": 120, "pipeline_tokens": 900, "escalated_to": "targeted-extraction", "escalated": True,
                      "verdict": "abstain", "total_ms": 1234.5,
                      "stages": {"route": {"ms": 1.0, "tokens": 0}, "retrieve0": {"ms": 5.0, "tier": 3, "pinned": 1, "sizes": {"dense": 4, "bm25": 2}},
                                 "answer0": {"ms": 500.0, "prompt_tokens": 300, "completion_tokens": 20, "tool_calls": 0,
                                             "prefill_ms": 120.5},
                                 "validate0": {"ms": 40.0, "stage": "model-judge", "grounded": False, "tokens": 80},
                                 "retrieve1": {"ms": 6.0, "tier": 2}}}}
    lines = display.why_text(trace).splitlines()
    assert lines.index("  escalated to targeted-extraction") == lines.index(next(x for x in lines if "retrieve1" in x)) - 1
    assert any(re.match(r"^  answer0\s+500 ms  300 prompt \+ 20 generated tokens, prefill 120.5 ms$", x) for x in lines)
    assert any(re.match(r"^  validate0\s+40 ms  model-judge: not grounded, 80 tokens$", x) for x in lines)
    assert any(re.match(r"^  retrieve0\s+5 ms  tier 3, pinned 1, sizes \(dense 4, bm25 2\)$", x) for x in lines)
    assert any(x.startswith("verdict") and "abstained" in x for x in lines)
    assert "total     1234.5 ms" in lines


def test_why_text_says_a_suggestion_is_the_models_own() -> None:
    trace = {"id": "q3", "created_at": "2024-05-01T10:00:00", "question": "Plan me a nice evening.",
             "answer": "Book a pottery evening.",
             "data": {"route_tag": "profile-injection", "route_layer": "classifier", "tier": 1, "verdict": "suggested",
                      "escalated": True, "stages": {"route": {"ms": 1.0, "tokens": 0},
                                                    "suggest": {"ms": 900.0, "prompt_tokens": 400, "completion_tokens": 12}}}}
    lines = display.why_text(trace).splitlines()
    assert any(x.startswith("verdict") and x.endswith("a suggestion in the model's words from your lines: no answer "
                                                      "passed the validator") for x in lines)


def test_why_text_says_an_answer_was_cancelled() -> None:
    trace = {"id": "q2", "created_at": "2024-05-01T10:00:00", "question": "q?", "answer": "The",
             "data": {"route_tag": "targeted-extraction", "route_layer": "classifier", "tier": 2, "cancelled": True,
                      "cancelled_at": "generate", "completion_tokens": 1, "notes_found": 8, "notes_packed": 3,
                      "stages": {"route": {"ms": 1.0, "tokens": 0}}}}
    lines = display.why_text(trace).splitlines()
    assert any(x.startswith("notes") and x.endswith("8 found, 3 packed") for x in lines)
    assert any(x.startswith("verdict") and x.endswith("cancelled by the client during generate, after 1 generated token(s)")
               for x in lines)


def test_models_list_has_a_header_row() -> None:
    ran = cli("models", "list")
    lines = ran.out.splitlines()
    assert ran.code == 0 and lines[0].split() == ["NAME", "INSTALLED", "SOURCE", "SIZE", "CONTEXT", "DESCRIPTION"]
    default = next(line for line in lines if line.startswith("*  "))
    assert default.index("qwen2.5-coder-1.5b") == lines[0].index("NAME")  # the columns line up
    assert lines[-1] == "(* the configured model)"


# -- the why hint ------------------------------------------------------------------------------------
def test_the_why_hint_after_an_answer_is_a_command_that_works(settings, served, engine) -> None:
    engine.remember("My sister Ana loves orchids.", process=True)
    asked = cli("ask", "What flowers does Ana love?")
    hint = re.search(r"\(query ([0-9a-f]{12}); `(edgemem [^`]+)` shows how it was answered\)", asked.out)
    assert hint is not None, asked.out
    argv = shlex.split(hint.group(2))
    assert argv == ["edgemem", "why", hint.group(1)]
    ran = cli(*argv[1:])
    assert ran.code == 0 and "question  What flowers does Ana love?" in ran.out


def test_the_why_hint_for_a_scratch_store_finds_the_trace(settings, served, llm, embedder, tmp_path: Path) -> None:
    """What quickstart prints: its answer lives on a scratch store that the daemon does not serve."""
    from edgemem.cli import Ctx, _why_command
    from edgemem.engine import Engine

    scratch = replace(settings, db_path=tmp_path / "quickstart.db")
    with Engine.open(scratch, llm=llm, embedder=embedder) as engine:
        engine.remember("My sister Ana loves orchids.", process=True)
        query_id = engine.ask("What flowers does Ana love?").query_id
    hint = _why_command(Ctx({}, as_json=False), query_id, db=scratch.database)
    assert hint == f"edgemem --db {scratch.database} --local why {query_id}"
    ran = cli(*shlex.split(hint)[1:])
    assert ran.code == 0 and "question  What flowers does Ana love?" in ran.out
    assert cli("why", query_id).code == 5  # the daemon's store does not hold it: hence the flags


# -- service install --dry-run ---------------------------------------------------------------------
def test_service_install_dry_run_writes_and_enables_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "user"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = bin_dir / "systemctl.log"
    (bin_dir / "systemctl").write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\n')
    (bin_dir / "systemctl").chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    if sys.platform != "linux":
        pytest.skip("systemd units")
    settings = config.load()
    unit_dir = home / ".config" / "systemd" / "user"

    ran = cli("service", "install", "--dry-run")
    assert ran.code == 0, ran.err
    assert f"would write {unit_dir / 'edgemem.service'}:" in ran.out and f"would write {unit_dir / 'edgemem.socket'}:" in ran.out
    assert re.search(r"^  ExecStart=.*serve$", ran.out, re.MULTILINE) and "  PrivateNetwork=yes" in ran.out
    assert "would run:\n  systemctl --user daemon-reload\n  systemctl --user enable --now edgemem.socket\n" in ran.out
    as_json = json.loads(cli("--json", "service", "install", "--dry-run").out)
    assert as_json["dry_run"] and as_json["ran"] == [] and sorted(as_json["units"]) == sorted(as_json["files"])
    assert not unit_dir.exists() and not calls.exists()  # nothing written, systemctl never called
    assert not settings.data_dir.exists() and not settings.cache_dir.exists()


# -- over-size remember --------------------------------------------------------------------------
def test_an_oversize_remember_says_what_to_do(settings, served, engine) -> None:
    big = "orchids " * (2 * 1024 * 1024 // 8)  # 2 MiB: past the frame limit too
    message = "text is 2 MiB; the limit is 256 KiB (setting max_text_bytes): save it to a file and use `edgemem ingest`"
    ran = cli("remember", "-", input=big)
    assert (ran.code, ran.err) == (2, message)
    proc = process("--json", "remember", "-", settings=settings, input=big)
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"] == {"code": "bad_input", "message": message, "exit_code": 2}
    # The daemon says the same to a client that does not check (300 KiB fits in a frame) ...
    with Client(settings.socket, timeout=30) as client, pytest.raises(EdgememError) as refused:
        client.call("remember", {"text": "x" * 300 * 1024})
    assert refused.value.exit_code == 2 and refused.value.message.startswith("text is 300 KiB; the limit is 256 KiB")
    assert refused.value.message.endswith("save it to a file and use `edgemem ingest`")
    # ... and a request past the frame limit is not explained in frames alone.
    with Client(settings.socket, timeout=30) as client, pytest.raises(EdgememError) as too_big:
        client.call("remember", {"text": big})
    assert "1 MiB" in too_big.value.message and "edgemem ingest" in too_big.value.message
    assert engine.status()["raw_turns"] == 0


def test_an_oversize_remember_is_refused_before_looking_for_a_daemon(settings) -> None:
    ran = cli("remember", "-", input="x" * (300 * 1024))
    assert ran.code == 2 and ran.err.startswith("text is 300 KiB")  # not exit 6 (no daemon): never sent


def test_the_engine_refuses_with_the_same_message(engine) -> None:
    with pytest.raises(BadInput, match=r"^text is 300 KiB; the limit is 256 KiB .*edgemem ingest`$"):
        engine.remember("x" * (300 * 1024))


# -- skipped files in a folder ingest --------------------------------------------------------------
def test_folder_ingest_lists_every_file_it_left_out(settings, served, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "garden.md").write_text("The tulips bloom in April.")
    (folder / "sub" / "photo.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00IHDR")
    (folder / "latin.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (folder / "report.pdf").write_bytes(b"%PDF-1.7\n%\xe2\xe3\n")
    (folder / "table.csv").write_text("a,b\n1,2\n")
    (folder / ".DS_Store").write_bytes(b"\x00\x01")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("[core]\n")

    result = json.loads(cli("--json", "ingest", str(folder)).out)
    reasons = {Path(s["path"]).relative_to(folder).as_posix(): s["reason"] for s in result["skipped"]}
    assert [Path(a["path"]).name for a in result["added"]] == ["garden.md"]
    assert sorted(reasons) == ["latin.txt", "report.pdf", "sub/photo.txt", "table.csv"]
    assert reasons["latin.txt"] == "not UTF-8 text"
    assert reasons["report.pdf"].startswith("a PDF") and "pdftotext" in reasons["report.pdf"]
    assert reasons["sub/photo.txt"].startswith("looks binary")
    assert reasons["table.csv"].startswith("not a text file (.csv)")
    assert result["hidden"] == 2

    ran = cli("ingest", str(folder))
    assert ran.code == 0
    for name in reasons:
        assert f"skipped {folder / name}: {reasons[name]}" in ran.out
    assert ran.out.splitlines()[-1] == "0 added (0 chunks), 1 unchanged, 4 skipped, 2 hidden files and folders left out"


# -- chat turns are not memories unless remember_chat is on --------------------------------------
def test_remember_chat_is_a_setting_off_by_default(settings) -> None:
    assert settings.remember_chat is False
    assert config.load(env={"EDGEMEM_HOME": str(settings.home), "EDGEMEM_REMEMBER_CHAT": "true"}).remember_chat is True


def test_chat_questions_are_not_stored_or_cited_by_default(settings, served, engine) -> None:
    engine.remember("My sister Ana loves orchids.", process=True)
    before = engine.status()["raw_turns"]
    ran = cli("--json", "chat", "--session", "s1", input="What flowers does Ana love?\nI just adopted a cat called Miso.\n"
                                                          "What is my cat called?\n")
    turns = [json.loads(line) for line in ran.out.splitlines()]
    assert ran.code == 0 and len(turns) == 3
    # The session still has its active context (MemFlow stage 1): the earlier turn answers.
    assert turns[2]["answer"] == "I just adopted a cat called Miso." and turns[2]["notes"] == []
    assert engine.status()["raw_turns"] == before and raw_store.get_source(engine.store.conn, "conversation", "s1") is None
    engine.process()
    asked = json.loads(cli("--json", "ask", "What flowers does Ana love?").out)
    assert [n["content"] for n in asked["notes"]] == ["My sister Ana loves orchids."]  # not the question


def test_chat_turns_are_memories_with_remember_chat_on(settings, served, engine) -> None:
    engine.settings = replace(engine.settings, remember_chat=True)
    ran = cli("chat", "--session", "s2", input="I just adopted a cat called Miso.\n/quit\nnot sent\n")
    assert ran.code == 0
    source = raw_store.get_source(engine.store.conn, "conversation", "s2")
    assert [t.text for t in raw_store.turns_of_source(engine.store.conn, source.id)] == ["I just adopted a cat called Miso."]


def test_a_bad_chat_turn_under_json_is_a_json_line_and_the_chat_goes_on(settings, served) -> None:
    ran = cli("--json", "chat", input="x" * (300 * 1024) + "\nhello there\n")
    first, second = (json.loads(line) for line in ran.out.splitlines())
    assert ran.code == 0
    assert first["error"]["code"] == "bad_input" and first["error"]["message"].startswith("message is 300 KiB")
    assert second["query_id"] and second["session"] == first.get("session", second["session"])

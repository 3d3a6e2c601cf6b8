"""`ingest` and `import-chat` wait for the worker to organise what they stored, against a real daemon
(served in this process: real store, real embedder, scripted model)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from edgemem.cli import _Backlog, app
from edgemem.daemon.client import call


def run(*args: str):
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def write_guide(path: Path, parts: int = 8) -> Path:
    path.write_text("# Guide\n\n" + "\n\n".join(
        f"## Part {i}\n\n" + f"Part {i} explains how the orchids in room {i} are watered and fed. " * 25 for i in range(parts)) + "\n")
    return path


def test_ingest_waits_until_the_backlog_is_organised(settings, served, tmp_path: Path) -> None:
    doc = write_guide(tmp_path / "guide.md")
    ran = run("ingest", str(doc))
    assert ran.exit_code == 0, ran.stderr
    chunks = json.loads(run("--json", "status").stdout)["raw_turns"]
    assert chunks > 4
    assert ran.stdout.splitlines()[-1] == f"1 added ({chunks} chunks), 0 unchanged, 0 skipped"
    # stderr is not a terminal: no bar, one final line.
    (line,) = ran.stderr.splitlines()
    assert line.startswith(f"organised {chunks} records in ") and "\r" not in ran.stderr
    status = call(settings.socket, "status")
    assert status["backlog"]["records"] == 0 and status["notes"] == chunks


def test_ingest_json_prints_one_object_and_no_wait_returns_at_once(settings, served, tmp_path: Path) -> None:
    ran = run("--json", "ingest", str(write_guide(tmp_path / "a.md")))
    result = json.loads(ran.stdout)  # one JSON object, nothing on stderr
    assert ran.stderr == "" and result["organised"]["left"] == 0
    assert result["organised"]["records"] == result["added"][0]["chunks"]

    ran = run("--json", "ingest", "--no-wait", str(write_guide(tmp_path / "b.md", parts=12)))
    result = json.loads(ran.stdout)
    assert "organised" not in result and ran.stderr == ""
    assert call(settings.socket, "status")["backlog"]["records"] > 0  # still being organised


def test_import_chat_waits_for_the_daemon(settings, served, tmp_path: Path) -> None:
    export = tmp_path / "chat.json"
    export.write_text(json.dumps({"sessions": [{"id": "s1", "started_at": "2024-05-01T10:00:00", "turns": [
        {"speaker": "Ana", "text": f"Message {i}: the orchids in room {i} need water."} for i in range(6)]}]}))
    ran = run("import-chat", str(export))
    assert ran.exit_code == 0, ran.stderr
    assert ran.stderr.startswith("organised 6 records in ")
    assert call(settings.socket, "status")["backlog"]["records"] == 0


def test_ctrl_c_stops_waiting_not_the_work(capsys) -> None:
    from edgemem.cli import Ctx

    left = iter([10, 7])

    def poll(first: bool) -> dict:
        n = next(left, None)
        if n is None:
            raise KeyboardInterrupt
        return {"records": n, "jobs": n, "alive": True}

    out = _Backlog(Ctx({}, as_json=False)).wait(poll)
    assert out["interrupted"] and out["left"] == 7 and out["records"] == 10
    err = capsys.readouterr().err
    assert "stopped waiting with 7 of 10 records left" in err and "in the background" in err

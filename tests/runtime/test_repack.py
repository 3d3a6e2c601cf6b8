"""``cpu_repack``: the auto decision is made by a child process, and a crashing child means "off"."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from edgemem.errors import ConfigError, ModelError
from edgemem.runtime import repack

# A stand-in for the probe child: it dies by SIGSEGV when asked for the repacked layout (as llama.cpp's
# AMX path does on the affected Xeons) and answers like the real probe otherwise. Each run is logged.
FAKE_CHILD = r"""
import json, os, signal, sys
log, mode = sys.argv[1], sys.argv[sys.argv.index("--repack") + 1]
with open(log, "a") as fh:
    fh.write(mode + "\n")
if mode in os.environ.get("CRASH_ON", "").split(","):
    os.kill(os.getpid(), signal.SIGSEGV)
prefill = float(os.environ.get("PREFILL_" + mode.upper(), "100"))
print(json.dumps({"repack": mode, "prefill_tok_s": prefill, "decode_tok_s": 20.0}))
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "weights.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 64)
    return path


def child(tmp_path: Path) -> tuple[list[str], Path]:
    log = tmp_path / "runs.log"
    return [sys.executable, "-c", FAKE_CHILD, str(log)], log


def runs(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_auto_falls_back_to_off_when_the_probe_crashes(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRASH_ON", "on")
    cmd, log = child(tmp_path)
    decision = repack.resolve("auto", model, tmp_path / "models", child=cmd)
    assert (decision.setting, decision.active, decision.repack) == ("auto", "off", False)
    assert decision.reason == "probe with repacked weights crashed (SIGSEGV); cpu_repack=off is used"
    assert runs(log) == ["on", "off"]  # the plain layout was checked too
    record = json.loads(repack.record_path(tmp_path / "models", model).read_text())
    assert record["active"] == "off" and record["fingerprint"]
    assert oct(repack.record_path(tmp_path / "models", model).stat().st_mode & 0o777) == "0o600"


def test_the_decision_is_remembered_and_made_again_when_the_model_changes(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRASH_ON", "on")
    cmd, log = child(tmp_path)
    repack.resolve("auto", model, tmp_path / "models", child=cmd)
    again = repack.resolve("auto", model, tmp_path / "models", child=cmd)
    assert again.active == "off" and runs(log) == ["on", "off"]  # no second probe
    assert repack.saved(tmp_path / "models", model.name)["active"] == "off"
    monkeypatch.setenv("CRASH_ON", "")
    monkeypatch.setenv("PREFILL_ON", "200")
    model.write_bytes(b"GGUF" + b"\1" * 80)  # another file: the old decision does not apply
    assert repack.resolve("auto", model, tmp_path / "models", child=cmd).active == "on"
    assert runs(log) == ["on", "off", "on", "off"]


def test_auto_keeps_the_repacked_layout_only_where_it_is_faster(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an ask-sized call: 700 prompt tokens at the measured prefill, 30 generated at 20 tok/s
    monkeypatch.setenv("PREFILL_ON", "200")  # 3.5 + 1.5 = 5.0 s against 7.0 + 1.5 = 8.5 s
    cmd, log = child(tmp_path)
    decision = repack.resolve("auto", model, tmp_path / "models", child=cmd)
    assert decision.repack
    assert decision.reason == "probe: an ask-sized call 5.0 s with repacked weights, 8.5 s without"
    assert decision.probe == {"on": {"repack": "on", "prefill_tok_s": 200.0, "decode_tok_s": 20.0},
                              "off": {"repack": "off", "prefill_tok_s": 100.0, "decode_tok_s": 20.0}}
    assert runs(log) == ["on", "off"]


@pytest.mark.parametrize(("on", "off"), [("66", "110"), ("100", "100"), ("105", "100")])
def test_a_repacked_layout_that_is_slower_or_not_clearly_faster_is_not_kept(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        on: str, off: str) -> None:
    # 2-core AMD EPYC, Qwen2.5-1.5B Q4_K_M: 66-79 tok/s prefill repacked, 104-117 plain. Within the
    # 10% margin the plain layout, which never crashed, is kept too.
    monkeypatch.setenv("PREFILL_ON", on)
    monkeypatch.setenv("PREFILL_OFF", off)
    cmd, _ = child(tmp_path)
    decision = repack.resolve("auto", model, tmp_path / "models", child=cmd)
    assert not decision.repack and decision.reason.endswith("; cpu_repack=off is used")


def test_a_decision_of_an_older_probe_is_made_again(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cmd, log = child(tmp_path)
    monkeypatch.setattr(repack, "PROBE_VERSION", "1")
    repack.resolve("auto", model, tmp_path / "models", child=cmd)
    assert repack.resolve("auto", model, tmp_path / "models", child=cmd).active == "off"
    assert runs(log) == ["on", "off"]  # remembered
    monkeypatch.setattr(repack, "PROBE_VERSION", "2")
    repack.resolve("auto", model, tmp_path / "models", child=cmd)
    assert runs(log) == ["on", "off", "on", "off"]  # the record of the older probe is not used


def test_a_model_that_crashes_either_way_is_one_clear_error(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRASH_ON", "on,off")
    cmd, _ = child(tmp_path)
    with pytest.raises(ModelError) as err:
        repack.resolve("auto", model, tmp_path / "models", child=cmd)
    message = str(err.value)
    assert "\n" not in message and "cpu_repack=off" in message and "crashed (SIGSEGV)" in message
    assert not repack.record_path(tmp_path / "models", model).exists()  # nothing wrong is remembered


def test_a_hanging_probe_counts_as_a_crash(tmp_path: Path, model: Path) -> None:
    result = repack.probe(model, repack=True, timeout=1, child=[sys.executable, "-c", "import time; time.sleep(30)"])
    assert not result.ok and result.crashed and result.detail == "timed out after 1 s"


def test_on_and_off_skip_the_probe_and_anything_else_is_refused(tmp_path: Path, model: Path) -> None:
    cmd, log = child(tmp_path)
    assert repack.resolve("on", model, tmp_path, child=cmd).repack is True
    assert repack.resolve("OFF", model, tmp_path, child=cmd).repack is False
    assert runs(log) == []
    with pytest.raises(ConfigError, match="cpu_repack must be one of auto, on, off"):
        repack.resolve("amx", model, tmp_path, child=cmd)


@pytest.mark.model
def test_the_real_probe_and_both_layouts_answer_alike(small_llm, tmp_path: Path) -> None:
    """The real child loads the smallest GGUF; the plain layout is really selected and answers the same."""
    from edgemem.runtime.llm import LlamaCppLLM

    result = repack.probe(small_llm.path, repack=False, threads=2)
    assert result.ok, result.detail
    assert result.report["repack"] == "off" and result.report["decode_tok_s"] > 0
    messages = [{"role": "user", "content": "Name a colour."}]
    plain = LlamaCppLLM(small_llm.path, n_ctx=512, n_threads=2, repack=False)
    try:
        assert plain._llama.model_params.use_extra_bufts is False
        assert small_llm._llama.model_params.use_extra_bufts is small_llm.repack
        if small_llm.repack:  # both layouts run here: greedy replies agree
            assert plain.complete(messages, max_tokens=8).text == small_llm.complete(messages, max_tokens=8).text
    finally:
        plain.close()
    assert os.environ.get("EDGEMEM_CPU_REPACK") is None  # the suite runs with the default setting


def test_status_shows_the_decision(settings, tmp_path: Path) -> None:
    from edgemem.runtime.runtime import Runtime

    info = Runtime(settings).model_info()
    assert info["cpu_repack"]["setting"] == "auto"
    assert "undecided" in info["cpu_repack"]["active"]
    import dataclasses

    assert Runtime(dataclasses.replace(settings, cpu_repack="off")).model_info()["cpu_repack"] == {"setting": "off", "active": "off"}

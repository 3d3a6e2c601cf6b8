"""Which CPU weight layout llama.cpp may use on this machine: the ``cpu_repack`` setting.

llama.cpp can copy weights into "extra" CPU buffer types at load time (repacked layouts for AVX2 /
ARM kernels, and the AMX buffer on Intel Xeon 4th gen and later). On some AMX machines that path
segfaults on the first decode of Q4_K/Q6_K weights (ggml-org/llama.cpp#20824), killing whatever
process loaded the model. ``use_extra_bufts = False`` in the model parameters avoids it.

A crash cannot be caught in the process that has it, so ``auto`` decides in a child: load the model
with the repacked layout, prefill a prompt of a few hundred tokens, decode a few, and report. A child
that dies by a signal (or hangs) makes the decision "off". One that answers is not enough to keep the
repacked layout: it is not always the faster one. On a 2-core AMD EPYC (Zen 4, AVX-512) it prefilled
the 1.5B Q4_K_M model at 66-79 tok/s against 104-117 tok/s without it (decode 20 tok/s either way,
three runs each), and prefill is most of what a user waits for. So the plain layout is probed too
and ``auto`` keeps the repacked one only where it answers an ask-sized call (:data:`ANSWER_PROMPT`
prompt tokens, :data:`ANSWER_DECODE` generated) at least :data:`MARGIN` faster; otherwise it takes
the plain layout, which has never crashed. The decision is remembered beside the model's
verification stamp, keyed by the CPU, the llama.cpp build and the model file, so it is made once per
machine and model (``edgemem setup`` makes it ahead of the daemon's first load).

``on`` and ``off`` skip the probe. When even the plain layout crashes in the child, the model cannot
run here at all and :class:`ModelError` says so in one line instead of letting the daemon die.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from edgemem.errors import ConfigError, ModelError

CHOICES = ("auto", "on", "off")
PROBE_TIMEOUT_S = 300.0
# What an ask costs the model, for comparing the layouts: the answer call's prefill and decode
# (`edgemem bench --paths`, twelfth session: 764 prefilled tokens p50; answers are a line long).
ANSWER_PROMPT = 700
ANSWER_DECODE = 30
# The repacked layout must be this much faster to be kept: two probes in a row on a shared machine
# differ by a few percent, and the plain layout is the one that never crashed.
MARGIN = 0.10
# Part of the fingerprint: a decision made by an older probe (one that only checked for a crash) is
# made again.
PROBE_VERSION = "2"
PROBE_PROMPT_WORDS = 300  # the probe's prompt: about 400 tokens, so prefill runs in full batches


@dataclass(frozen=True)
class Decision:
    """Whether the model loads with llama.cpp's extra (repacked) CPU buffers, and why."""

    setting: str  # auto | on | off
    repack: bool
    reason: str
    probe: dict | None = None  # the child's report (tok/s) when a probe ran

    @property
    def active(self) -> str:
        return "on" if self.repack else "off"

    def as_dict(self) -> dict:
        return {"setting": self.setting, "active": self.active, "reason": self.reason, **({"probe": self.probe} if self.probe else {})}


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    detail: str  # one line: "answered", "crashed (SIGSEGV)", "timed out after 300 s", the child's error
    crashed: bool = False
    report: dict | None = None


def cpu_signature() -> dict[str, str]:
    """What identifies this CPU for the decision: model name and feature flags (Linux), or the platform."""
    name, flags = "", ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and not name:
                name = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = " ".join(sorted(value.split()))
    except OSError:
        pass  # not Linux: the platform string is all there is
    return {"cpu": name or platform.processor() or platform.machine(), "flags": flags, "machine": platform.machine()}


def has_amx() -> bool:
    return "amx_tile" in cpu_signature()["flags"].split()


def fingerprint(model: Path, *, gpu: bool) -> str:
    import llama_cpp

    st = model.stat()
    parts = {**cpu_signature(), "llama_cpp": llama_cpp.__version__, "model": f"{model.name}:{st.st_size}:{st.st_mtime_ns}", "gpu": str(gpu),
             "probe": PROBE_VERSION}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def record_path(models_dir: Path, model: Path) -> Path:
    return models_dir / (model.name + ".repack.json")


def probe(model: Path, *, repack: bool, threads: int = 2, n_gpu_layers: int = 0, timeout: float = PROBE_TIMEOUT_S, child: list[str] | None = None) -> ProbeResult:
    """Load ``model`` in a child process with the given layout and decode a few tokens.

    ``child`` replaces the start of the child's command; ``--repack on|off`` is always appended
    (tests use a child that crashes on purpose).
    """
    cmd = child or [sys.executable, "-m", "edgemem.runtime.repack", str(model), "--threads", str(threads), "--gpu-layers", str(n_gpu_layers)]
    cmd = [*cmd, "--repack", "on" if repack else "off"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return ProbeResult(False, f"timed out after {timeout:g} s", crashed=True)
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        return ProbeResult(False, f"crashed ({name})", crashed=True)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        return ProbeResult(False, f"failed: {lines[-1] if lines else f'exit {proc.returncode}'}")
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return ProbeResult(False, "failed: the probe printed no report")
    return ProbeResult(True, "answered", report=report)


def resolve(setting: str, model: Path, models_dir: Path, *, threads: int = 2, n_gpu_layers: int = 0, child: list[str] | None = None) -> Decision:
    """The layout to load ``model`` with: the setting, or for ``auto`` the remembered or probed decision."""
    setting = (setting or "auto").lower()
    if setting not in CHOICES:
        raise ConfigError(f"cpu_repack must be one of {', '.join(CHOICES)}, not {setting!r}")
    if setting == "on":
        return Decision(setting, True, "set on")
    if setting == "off":
        return Decision(setting, False, "set off")
    stamp = fingerprint(model, gpu=n_gpu_layers != 0)
    path = record_path(models_dir, model)
    try:
        saved = json.loads(path.read_text())
        if saved.get("fingerprint") == stamp:
            return Decision(setting, saved["active"] == "on", saved["reason"], saved.get("probe"))
    except (OSError, json.JSONDecodeError, KeyError):
        pass  # no usable record: probe below
    decision = _probe_decision(model, threads=threads, n_gpu_layers=n_gpu_layers, child=child)
    _save(path, {**decision.as_dict(), "fingerprint": stamp, "probed_at": time.strftime("%Y-%m-%dT%H:%M:%S")})
    return decision


def ask_seconds(report: dict | None) -> float | None:
    """What an ask-sized call would take at a probe's measured speeds, or None without them."""
    try:
        prefill, decode = float(report["prefill_tok_s"]), float(report["decode_tok_s"])
    except (TypeError, KeyError, ValueError):
        return None
    if prefill <= 0 or decode <= 0:
        return None
    return ANSWER_PROMPT / prefill + ANSWER_DECODE / decode


def _faster(on: dict | None, off: dict | None) -> tuple[bool, str]:
    """Whether the repacked layout is kept, given both probes' reports, and why."""
    t_on, t_off = ask_seconds(on), ask_seconds(off)
    if t_on is None or t_off is None:
        return True, "probe answered with repacked weights (speeds not comparable)"
    shown = f"an ask-sized call {t_on:.1f} s with repacked weights, {t_off:.1f} s without"
    if t_on <= t_off * (1 - MARGIN):
        return True, f"probe: {shown}"
    return False, f"probe: {shown}; cpu_repack=off is used"


def _probe_decision(model: Path, *, threads: int, n_gpu_layers: int, child: list[str] | None) -> Decision:
    first = probe(model, repack=True, threads=threads, n_gpu_layers=n_gpu_layers, child=child)
    if first.ok:
        if n_gpu_layers != 0:  # the CPU layout does not decide a GPU's speed: keep what answered
            return Decision("auto", True, "probe answered with repacked weights", {"on": first.report})
        second = probe(model, repack=False, threads=threads, n_gpu_layers=n_gpu_layers, child=child)
        if not second.ok:
            return Decision("auto", True, f"probe answered with repacked weights; without them it {second.detail}",
                            {"on": first.report})
        keep, reason = _faster(first.report, second.report)
        return Decision("auto", keep, reason, {"on": first.report, "off": second.report})
    if not first.crashed:
        # The model did not load for another reason (a bad file, no memory): the parent's load will
        # say why; the safe layout costs only speed.
        return Decision("auto", False, f"probe {first.detail}")
    second = probe(model, repack=False, threads=threads, n_gpu_layers=n_gpu_layers, child=child)
    if second.crashed:
        raise ModelError(
            f"llama.cpp {second.detail} running {model.name} in a probe, with cpu_repack=off too "
            f"(with cpu_repack=on it {first.detail}); this model cannot run on this CPU with this build"
        )
    report = {"off": second.report} if second.ok else None
    return Decision("auto", False, f"probe with repacked weights {first.detail}; cpu_repack=off is used", report)


def _save(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def saved(models_dir: Path, model_name: str) -> dict | None:
    """The remembered decision for a model file name, without probing (for ``status``)."""
    try:
        data = json.loads((models_dir / (model_name + ".repack.json")).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return {k: data[k] for k in ("setting", "active", "reason", "probed_at") if k in data}


def forget_decision(models_dir: Path, model: Path) -> None:
    record_path(models_dir, model).unlink(missing_ok=True)


def _child(argv: list[str] | None = None) -> int:
    """The probe itself: load, prefill a few hundred tokens, decode a few, print a one-line JSON report."""
    parser = argparse.ArgumentParser(prog="python -m edgemem.runtime.repack")
    parser.add_argument("model", type=Path)
    parser.add_argument("--repack", choices=("on", "off"), default="on")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gpu-layers", type=int, default=0)
    parser.add_argument("--tokens", type=int, default=16)
    args = parser.parse_args(argv)
    from edgemem.runtime.llm import LlamaCppLLM

    try:
        llm = LlamaCppLLM(args.model, n_ctx=1024, n_threads=args.threads, n_gpu_layers=args.gpu_layers, chat_format="chatml", repack=args.repack == "on")
        llm.complete([{"role": "user", "content": "Hello."}], max_tokens=2)  # first-call setup, not timed
        prompt = [{"role": "user", "content": f"{_probe_text()}\n\nCount from one to twenty in words, separated by commas."}]
        result = llm.complete(prompt, max_tokens=args.tokens)
    except Exception as exc:  # the parent reads the last stderr line
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    out = {
        "repack": args.repack,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "prefill_tok_s": round(result.prompt_tokens / max(result.prefill_ms / 1000, 1e-6), 1),
        "decode_tok_s": round(max(result.completion_tokens - 1, 0) / max(result.generate_ms / 1000, 1e-6), 1),
    }
    print(json.dumps(out), flush=True)
    llm.close()
    return 0


def _probe_text(words: int = PROBE_PROMPT_WORDS) -> str:
    """A deterministic prompt of ``words`` ordinary words: notes-like text, so prefill is measured
    on full batches as an answer's context is (the speed of a 20-token prompt says little)."""
    vocabulary = ("the garden walk ended near a small harbour where we talked about the trip next "
                  "spring and who would cook dinner on friday after the long week at work").split()
    return " ".join(vocabulary[(i * 7) % len(vocabulary)] for i in range(words))


if __name__ == "__main__":
    sys.exit(_child())

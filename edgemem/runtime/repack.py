"""Which CPU weight layout llama.cpp may use on this machine: the ``cpu_repack`` setting.

llama.cpp can copy weights into "extra" CPU buffer types at load time (repacked layouts for AVX2 /
ARM kernels, and the AMX buffer on Intel Xeon 4th gen and later). On some AMX machines that path
segfaults on the first decode of Q4_K/Q6_K weights (ggml-org/llama.cpp#20824), killing whatever
process loaded the model. ``use_extra_bufts = False`` in the model parameters avoids it.

A crash cannot be caught in the process that has it, so ``auto`` decides in a child: load the model
with the repacked layout, decode a few tokens, and report. A child that dies by a signal (or hangs)
makes the decision "off"; one that answers makes it "on". The decision is remembered beside the
model's verification stamp, keyed by the CPU, the llama.cpp build and the model file, so it is made
once per machine and model (``edgemem setup`` makes it ahead of the daemon's first load).

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
    parts = {**cpu_signature(), "llama_cpp": llama_cpp.__version__, "model": f"{model.name}:{st.st_size}:{st.st_mtime_ns}", "gpu": str(gpu)}
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


def _probe_decision(model: Path, *, threads: int, n_gpu_layers: int, child: list[str] | None) -> Decision:
    first = probe(model, repack=True, threads=threads, n_gpu_layers=n_gpu_layers, child=child)
    if first.ok:
        return Decision("auto", True, "probe answered with repacked weights", first.report)
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
    report = second.report if second.ok else None
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
    """The probe itself: load, decode a few tokens, print a one-line JSON report."""
    parser = argparse.ArgumentParser(prog="python -m edgemem.runtime.repack")
    parser.add_argument("model", type=Path)
    parser.add_argument("--repack", choices=("on", "off"), default="on")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gpu-layers", type=int, default=0)
    parser.add_argument("--tokens", type=int, default=8)
    args = parser.parse_args(argv)
    from edgemem.runtime.llm import LlamaCppLLM

    try:
        llm = LlamaCppLLM(args.model, n_ctx=512, n_threads=args.threads, n_gpu_layers=args.gpu_layers, chat_format="chatml", repack=args.repack == "on")
        prompt = [{"role": "user", "content": "Name three colours of the rainbow, separated by commas."}]
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


if __name__ == "__main__":
    sys.exit(_child())

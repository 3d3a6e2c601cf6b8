"""systemd / launchd units: rendered with the real executable, verified, installed and removed.

``systemd-analyze verify`` (and ``security --offline``) run on the rendered units where the tool
exists; the parse check below runs everywhere. Installing never touches the real user manager:
PATH holds a recording ``systemctl`` stand-in, or none at all.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from edgemem import config
from edgemem.daemon import service

REQUIRED_SERVICE = {
    "PrivateNetwork": "yes",
    "RestrictAddressFamilies": "AF_UNIX",
    "ProtectSystem": "strict",
    "ProtectHome": "read-only",
    "NoNewPrivileges": "yes",
    "PrivateTmp": "yes",
    "LockPersonality": "yes",
    "RestrictRealtime": "yes",
    "SystemCallArchitectures": "native",
    "MemoryDenyWriteExecute": "yes",
    "UMask": "0077",
}
REQUIRED_SOCKET = {"SocketMode": "0600", "DirectoryMode": "0700", "ListenStream": "%t/edgemem/edgemem.sock"}
KNOWN = {
    "Unit": {"Description", "Documentation", "Requires", "After", "PartOf"},
    "Socket": {"ListenStream", "SocketMode", "DirectoryMode", "RemoveOnStop", "Accept"},
    "Install": {"WantedBy"},
    "Service": {
        "Type", "ExecStart", "Restart", "RestartSec", "TimeoutStopSec", "UMask", "Environment", "ReadWritePaths",
        "PrivateNetwork", "RestrictAddressFamilies", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateMounts",
        "PrivateUsers", "ProtectProc", "KeyringMode", "PrivateDevices", "NoNewPrivileges", "CapabilityBoundingSet",
        "RestrictNamespaces", "RestrictRealtime", "RestrictSUIDSGID", "LockPersonality", "MemoryDenyWriteExecute",
        "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock",
        "ProtectHostname", "SystemCallArchitectures", "SystemCallFilter", "SystemCallErrorNumber",
    },
}


def parse_unit(text: str) -> dict[str, list[tuple[str, str]]]:
    """systemd's unit syntax: [Section] headers, Key=Value lines (keys may repeat), # and ; comments."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            assert current not in sections, f"line {number}: section {current} twice"
            sections[current] = []
            continue
        assert current is not None and "=" in line, f"line {number}: not Key=Value inside a section: {line!r}"
        key, value = line.split("=", 1)
        assert key == key.strip() and key.isidentifier(), f"line {number}: bad key {key!r}"
        sections[current].append((key, value.strip()))
    return sections


def check_unit(text: str, required: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
    units = parse_unit(text)
    for section, pairs in units.items():
        assert section in KNOWN, f"unknown section [{section}]"
        unknown = {k for k, _ in pairs} - KNOWN[section]
        assert not unknown, f"unknown keys in [{section}]: {unknown}"
    values = {k: v for pairs in units.values() for k, v in pairs}
    for key, want in required.items():
        assert values.get(key) == want, f"{key}={values.get(key)!r}, want {want!r}"
    return units


def value(units: dict, section: str, key: str) -> str:
    found = [v for k, v in units[section] if k == key]
    assert len(found) == 1, f"{key} appears {len(found)} times"
    return found[0]


def verify(folder: Path, runtime: Path) -> None:
    """systemd-analyze on the rendered pair: exit 0 and not one warning (unknown keys only warn)."""
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    files = [str(folder / name) for name in service.UNITS]
    proc = subprocess.run(["systemd-analyze", "--user", "verify", *files], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and not (proc.stdout + proc.stderr).strip(), proc.stdout + proc.stderr
    proc = subprocess.run(
        ["systemd-analyze", "--user", "security", "--offline=yes", "--no-pager", "--threshold=20", str(folder / "edgemem.service")],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "xdg-runtime"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    return path


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake $HOME (unit folder and LaunchAgents live under it) and settings without EDGEMEM_HOME."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("EDGEMEM_HOME")
    return home


def write(folder: Path, units: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in units.items():
        (folder / name).write_text(text)
    return folder


def test_templates_parse_and_carry_the_hardening() -> None:
    src = service.template_dir()
    check_unit((src / "edgemem.socket").read_text(), REQUIRED_SOCKET)
    units = check_unit((src / "edgemem.service").read_text(), REQUIRED_SERVICE)
    assert value(units, "Service", "ExecStart") == "%h/.local/bin/edgemem serve"
    assert value(units, "Service", "ReadWritePaths").split()[:2] == ["%h/.local/share/edgemem", "%h/.cache/edgemem"]
    with open(src / service.PLIST, "rb") as fh:
        assert plistlib.load(fh)["Label"] == service.LABEL


def test_rendered_units_verify(settings: config.Settings, runtime: Path, tmp_path: Path) -> None:
    exe = service.executable()
    assert Path(exe[0]).is_file() and os.access(exe[0], os.X_OK)
    units = service.render_systemd(settings, exe)
    socket = check_unit(units["edgemem.socket"], {k: v for k, v in REQUIRED_SOCKET.items() if k != "ListenStream"})
    parsed = check_unit(units["edgemem.service"], REQUIRED_SERVICE)
    assert value(parsed, "Service", "ExecStart") == f"{exe[0] if len(exe) == 1 else ' '.join(exe)} serve"
    assert value(socket, "Socket", "ListenStream") == str(settings.socket)  # EDGEMEM_HOME moves the socket
    rw = value(parsed, "Service", "ReadWritePaths").split()
    assert str(settings.data_dir) in rw and str(settings.cache_dir) in rw
    assert value(parsed, "Service", "Environment") == f"EDGEMEM_HOME={settings.home}"
    folder = write(tmp_path / "units", units)
    if shutil.which("systemd-analyze"):
        verify(folder, runtime)


def test_default_paths_keep_the_runtime_specifier(user_home: Path, runtime: Path, tmp_path: Path) -> None:
    settings = config.load(env={"HOME": str(user_home), "XDG_RUNTIME_DIR": str(runtime)})
    units = service.render_systemd(settings, service.executable())
    socket = check_unit(units["edgemem.socket"], REQUIRED_SOCKET)
    assert value(socket, "Socket", "ListenStream") == "%t/edgemem/edgemem.sock"
    assert "Environment" not in dict(parse_unit(units["edgemem.service"])["Service"])
    if shutil.which("systemd-analyze"):
        verify(write(tmp_path / "units", units), runtime)


def test_odd_paths_are_escaped(tmp_path: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "my 100% home"
    monkeypatch.setenv("EDGEMEM_HOME", str(home))
    settings = config.load()
    exe_dir = tmp_path / "bin dir$x"
    exe_dir.mkdir()
    exe = exe_dir / "edgemem"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    units = service.render_systemd(settings, [str(exe)])
    parsed = check_unit(units["edgemem.service"], REQUIRED_SERVICE)
    assert value(parsed, "Service", "ExecStart").startswith('"') and "%%" in value(parsed, "Service", "ReadWritePaths")
    if shutil.which("systemd-analyze"):
        verify(write(tmp_path / "units", units), runtime)


def test_gpu_offload_drops_what_gpu_backends_cannot_live_with(settings: config.Settings) -> None:
    gpu = config.load({"n_gpu_layers": -1})
    cpu_units = parse_unit(service.render_systemd(settings, service.executable())["edgemem.service"])
    gpu_units = parse_unit(service.render_systemd(gpu, service.executable())["edgemem.service"])
    dropped = {k for k, _ in cpu_units["Service"]} - {k for k, _ in gpu_units["Service"]}
    assert dropped == set(service.GPU_INCOMPATIBLE)
    assert dict(gpu_units["Service"])["PrivateNetwork"] == "yes"


def stand_in(bin_dir: Path, name: str, exit_code: int = 0) -> Path:
    """A ``name`` on PATH that records its arguments (one line per call) and exits with ``exit_code``."""
    log = bin_dir / f"{name}.log"
    script = bin_dir / name
    script.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\n' + (f'echo "{name}: no user bus" >&2\n' if exit_code else "") + f"exit {exit_code}\n")
    script.chmod(0o755)
    return log


def test_install_status_uninstall_with_systemctl(user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = stand_in(bin_dir, "systemctl")
    monkeypatch.setenv("PATH", str(bin_dir))
    settings = config.load()
    exe = service.executable()

    result = service.install(settings, exe=exe, system="Linux")
    unit_dir = user_home / ".config" / "systemd" / "user"
    assert result.ok and result.to_run == []
    assert sorted(result.files) == sorted(str(unit_dir / n) for n in service.UNITS)
    assert log.read_text().splitlines() == ["--user daemon-reload", "--user enable --now edgemem.socket"]
    assert stat.S_IMODE((unit_dir / "edgemem.service").stat().st_mode) == 0o644
    assert settings.data_dir.is_dir() and settings.cache_dir.is_dir()  # ReadWritePaths must exist

    state = service.status(settings, system="Linux")
    assert all(state["files"].values()) and state["command"] == service.command_line(exe)
    assert state["state"] is not None

    removed = service.uninstall(system="Linux")
    assert removed.ok and not any((unit_dir / n).exists() for n in service.UNITS)
    calls = log.read_text().splitlines()
    assert calls[-2:] == ["--user disable --now edgemem.socket edgemem.service", "--user daemon-reload"]


def test_install_without_systemctl_or_with_a_failing_one_says_what_to_run(user_home: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    settings = config.load()
    result = service.install(settings, exe=["/opt/edgemem/bin/edgemem"], system="Linux")
    assert result.ok and result.ran == []
    assert result.to_run == ["systemctl --user daemon-reload", "systemctl --user enable --now edgemem.socket"]
    assert service.status(settings, system="Linux")["state"] is None

    failing = tmp_path / "failing-bin"
    failing.mkdir()
    stand_in(failing, "systemctl", exit_code=1)
    monkeypatch.setenv("PATH", str(failing))
    result = service.install(settings, exe=["/opt/edgemem/bin/edgemem"], system="Linux")
    assert not result.ok and "no user bus" in result.error
    assert result.to_run == ["systemctl --user daemon-reload", "systemctl --user enable --now edgemem.socket"]
    assert all(Path(f).exists() for f in result.files)  # the files are there; only enabling is left


def test_launchd_agent_on_macos(user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("EDGEMEM_HOME", str(tmp_path / "eh"))
    settings = config.load()
    exe = ["/Users/ana/.local/bin/edgemem"]
    result = service.install(settings, exe=exe, system="Darwin")
    plist_path = user_home / "Library" / "LaunchAgents" / service.PLIST
    assert result.files == [str(plist_path)]
    assert result.to_run == [f"launchctl bootstrap gui/{os.getuid()} {plist_path}"]
    with open(plist_path, "rb") as fh:
        agent = plistlib.load(fh)
    assert agent["ProgramArguments"] == [*exe, "serve"]
    assert agent["Label"] == service.LABEL and agent["Umask"] == 0o077 and agent["RunAtLoad"] is True
    assert agent["EnvironmentVariables"] == {"EDGEMEM_HOME": str(tmp_path / "eh")}
    assert service.status(settings, system="Darwin")["command"] == f"{exe[0]} serve"
    if shutil.which("plutil"):
        assert subprocess.run(["plutil", "-lint", str(plist_path)], capture_output=True, timeout=60).returncode == 0
    assert service.uninstall(system="Darwin").files == [str(plist_path)] and not plist_path.exists()


def test_executable_is_one_that_runs_this_edgemem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = service.executable()
    assert subprocess.run([*found, "version"], capture_output=True, timeout=120).returncode == 0
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr("sys.argv", ["pytest"])
    fallback = service.executable()
    assert fallback[1:] == ["-m", "edgemem"]
    # The venv's python, not the interpreter its symlink points to (which has no edgemem installed).
    assert subprocess.run([*fallback, "version"], capture_output=True, timeout=120).returncode == 0

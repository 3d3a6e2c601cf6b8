"""``edgemem service install | uninstall | status``: run the daemon under systemd or launchd.

The templates in ``systemd/`` are valid units as shipped (``ExecStart=%h/.local/bin/edgemem serve``);
installing renders them with the path of the edgemem executable actually running and the folders of
the installing user's settings, so a pipx, venv or ``--user`` install all work. Linux gets a user
``edgemem.socket`` (socket activation) and a hardened ``edgemem.service`` in
``~/.config/systemd/user/``; macOS gets a launchd agent in ``~/Library/LaunchAgents/``. Where
``systemctl`` / ``launchctl`` is missing or fails, the commands still to run are returned instead.
"""

from __future__ import annotations

import os
import platform
import plistlib
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from edgemem.config import Settings
from edgemem.errors import ConfigError

UNITS = ("edgemem.socket", "edgemem.service")
PLIST = "com.edgemem.daemon.plist"
LABEL = "com.edgemem.daemon"
# Sandboxing that GPU offload cannot live with: device nodes (/dev/nvidia*, /dev/dri) and JIT code.
GPU_INCOMPATIBLE = ("PrivateDevices", "MemoryDenyWriteExecute")


@dataclass
class Result:
    """What install / uninstall did: files written or removed, commands run, commands left to run.

    A dry run writes and runs nothing: ``files`` and ``to_run`` are what it would write and run, and
    ``units`` holds each file's content."""

    action: str
    platform: str
    files: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    to_run: list[str] = field(default_factory=list)
    error: str | None = None
    dry_run: bool = False
    units: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict:
        return {"action": self.action, "platform": self.platform, "ok": self.ok, "files": self.files,
                "ran": self.ran, "to_run": self.to_run, "error": self.error, "dry_run": self.dry_run,
                "units": self.units}


# -- locations --------------------------------------------------------------------------------------
def template_dir() -> Path:
    """The shipped templates: inside the package in a wheel, ``systemd/`` in a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "systemd", here.parents[1] / "systemd"):
        if (candidate / "edgemem.service").is_file():
            return candidate
    raise ConfigError("the systemd/launchd templates are missing from this installation; reinstall edgemem")


def unit_dir() -> Path:
    """systemd's per-user unit folder ($XDG_CONFIG_HOME/systemd/user)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def agent_dir() -> Path:
    return Path.home() / "Library" / "LaunchAgents"


def executable() -> list[str]:
    """The command that runs this edgemem: the running ``edgemem`` script, else the one on PATH,
    else this Python with ``-m edgemem``."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "edgemem" and argv0.is_file():
        return [str(argv0.resolve())]
    found = shutil.which("edgemem")
    if found:
        return [str(Path(found).resolve())]
    # Not resolved: a venv's python is a symlink to the base interpreter, which lacks edgemem.
    return [os.path.abspath(sys.executable), "-m", "edgemem"]


# -- rendering ---------------------------------------------------------------------------------------
def _escape(word: str, *, command: bool = False) -> str:
    """One word for a systemd setting: % doubled (specifier syntax), $ doubled in a command's
    arguments (variable syntax), quoted if it has blanks or quotes."""
    word = word.replace("%", "%%")
    if command:
        word = word.replace("$", "$$")
    if any(c.isspace() or c in "\"'\\;" for c in word):
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word


def _set(text: str, key: str, value: str | None) -> str:
    """Replace the value of every ``key=`` line (None: drop the line)."""
    out = []
    for line in text.splitlines():
        if line.split("=", 1)[0].strip() == key and "=" in line and not line.lstrip().startswith("#"):
            if value is None:
                continue
            line = f"{key}={value}"
        out.append(line)
    return "\n".join(out) + "\n"


def command_line(exe: Sequence[str]) -> str:
    # systemd expands $VAR in a command's arguments but not in the program path (checked with
    # systemd-analyze verify): only the arguments get $ doubled.
    program, *args = [*exe, "serve"]
    return " ".join([_escape(program), *(_escape(w, command=True) for w in args)])


def _default_socket() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return Path(runtime) / "edgemem" / "edgemem.sock"


def writable_dirs(settings: Settings) -> list[Path]:
    """Folders the daemon writes: the store's, the data (models) and cache folders."""
    dirs = [settings.database.parent, settings.data_dir, settings.cache_dir]
    return list(dict.fromkeys(d.expanduser().absolute() for d in dirs))


def render_systemd(settings: Settings, exe: Sequence[str]) -> dict[str, str]:
    """The two units with this installation's executable, folders and socket path."""
    src = template_dir()
    socket = (src / "edgemem.socket").read_text(encoding="utf-8")
    service = (src / "edgemem.service").read_text(encoding="utf-8")
    if settings.socket.absolute() != _default_socket():
        # One address per line, taken verbatim (no quoting); only specifiers need escaping.
        socket = _set(socket, "ListenStream", str(settings.socket.absolute()).replace("%", "%%"))
    service = _set(service, "ExecStart", command_line(exe))
    optional = [settings.log_dir.expanduser().absolute(), settings.socket.absolute().parent]
    paths = [_escape(str(d)) for d in writable_dirs(settings)] + [_escape(f"-{d}") for d in optional]
    service = _set(service, "ReadWritePaths", " ".join(dict.fromkeys(paths)))
    if settings.n_gpu_layers != 0:
        for key in GPU_INCOMPATIBLE:
            service = _set(service, key, None)
    if settings.home is not None:  # the daemon must see the same EDGEMEM_HOME as the installing shell
        env = _escape(f"EDGEMEM_HOME={settings.home.expanduser().absolute()}")
        service = service.replace("[Service]\n", f"[Service]\nEnvironment={env}\n", 1)
    return {"edgemem.socket": socket, "edgemem.service": service}


def render_launchd(settings: Settings, exe: Sequence[str]) -> bytes:
    with open(template_dir() / PLIST, "rb") as fh:
        plist = plistlib.load(fh)
    plist["ProgramArguments"] = [*exe, "serve"]
    plist["StandardErrorPath"] = str(settings.log_dir.expanduser().absolute() / "daemon.log")
    env = {}
    if settings.home is not None:
        env["EDGEMEM_HOME"] = str(settings.home.expanduser().absolute())
    plist["EnvironmentVariables"] = env
    return plistlib.dumps(plist)


# -- install / uninstall / status --------------------------------------------------------------------
def _run(result: Result, commands: list[list[str]]) -> None:
    """Run commands in order; at the first failure (or without the tool) the rest are left to run."""
    for i, cmd in enumerate(commands):
        if result.error is None and shutil.which(cmd[0]):
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                result.error = f"{' '.join(cmd)}: {exc}"
            else:
                if proc.returncode == 0:
                    result.ran.append(" ".join(cmd))
                    continue
                lines = (proc.stderr or proc.stdout).strip().splitlines()
                result.error = f"{' '.join(cmd)} failed: {lines[-1] if lines else f'exit {proc.returncode}'}"
            result.to_run += [" ".join(c) for c in commands[i:]]
            return
        result.to_run.append(" ".join(cmd))


def _write(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(payload)
    os.chmod(tmp, 0o644)  # unit files hold no secrets; systemd and launchd only need to read them
    os.replace(tmp, path)


def install(settings: Settings, *, exe: Sequence[str] | None = None, system: str | None = None,
            dry_run: bool = False) -> Result:
    """Render and write the units (or the launchd agent) and enable socket activation; with
    ``dry_run``, only render them and list the commands (no folder, file or command touched)."""
    system = system or platform.system()
    exe = list(exe or executable())
    if system not in ("Darwin", "Linux"):
        raise ConfigError(f"`edgemem service` supports Linux (systemd) and macOS (launchd), not {system}")
    if not dry_run:
        for folder in writable_dirs(settings):  # ReadWritePaths= must exist when the service starts
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if system == "Darwin":
        result = Result("install", "launchd", dry_run=dry_run)
        path = agent_dir() / PLIST
        payload = render_launchd(settings, exe)
        domain = f"gui/{os.getuid()}"
        commands = [["launchctl", "bootout", f"{domain}/{LABEL}"]] if _launchd_loaded(domain) else []
        commands.append(["launchctl", "bootstrap", domain, str(path)])
        result.files.append(str(path))
        if dry_run:
            result.units[str(path)] = payload.decode("utf-8")
            result.to_run = [" ".join(cmd) for cmd in commands]
            return result
        _write(path, payload)
        settings.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        _run(result, commands[:-1])
        _run(result, commands[-1:])
        return result
    result = Result("install", "systemd", dry_run=dry_run)
    target = unit_dir()
    commands = [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", "edgemem.socket"]]
    for name, text in render_systemd(settings, exe).items():
        result.files.append(str(target / name))
        if dry_run:
            result.units[str(target / name)] = text
        else:
            _write(target / name, text.encode("utf-8"))
    if dry_run:
        result.to_run = [" ".join(cmd) for cmd in commands]
    else:
        _run(result, commands)
    return result


def uninstall(*, system: str | None = None) -> Result:
    """Stop and disable the daemon, then remove what install wrote."""
    system = system or platform.system()
    if system == "Darwin":
        result = Result("uninstall", "launchd")
        path = agent_dir() / PLIST
        domain = f"gui/{os.getuid()}"
        _run(result, [["launchctl", "bootout", f"{domain}/{LABEL}"]] if _launchd_loaded(domain) else [])
        if path.exists():
            path.unlink()
            result.files.append(str(path))
        return result
    result = Result("uninstall", "systemd")
    target = unit_dir()
    installed = [name for name in UNITS if (target / name).exists()]
    if installed:
        _run(result, [["systemctl", "--user", "disable", "--now", *UNITS]])
    for name in installed:
        (target / name).unlink()
        result.files.append(str(target / name))
    if installed:
        _run(result, [["systemctl", "--user", "daemon-reload"]])
    return result


def status(settings: Settings, *, system: str | None = None) -> dict:
    """Which files are installed, whether they run the current executable, and the manager's view."""
    system = system or platform.system()
    if system == "Darwin":
        current = " ".join([*executable(), "serve"])
        path = agent_dir() / PLIST
        installed_cmd = None
        if path.exists():
            with open(path, "rb") as fh:
                installed_cmd = " ".join(plistlib.load(fh).get("ProgramArguments", []))
        return {"platform": "launchd", "files": {str(path): path.exists()}, "command": installed_cmd,
                "current_command": current, "stale": installed_cmd is not None and installed_cmd != current,
                "loaded": _launchd_loaded(f"gui/{os.getuid()}") if shutil.which("launchctl") else None}
    current = command_line(executable())
    target = unit_dir()
    files = {str(target / name): (target / name).exists() for name in UNITS}
    installed_cmd = None
    service = target / "edgemem.service"
    if service.exists():
        for line in service.read_text(encoding="utf-8").splitlines():
            if line.startswith("ExecStart="):
                installed_cmd = line.split("=", 1)[1]
    state = None
    if shutil.which("systemctl"):
        state = {unit: _query(["systemctl", "--user", "is-active", unit]) for unit in UNITS}
        state["enabled"] = _query(["systemctl", "--user", "is-enabled", "edgemem.socket"])
    return {"platform": "systemd", "files": files, "command": installed_cmd, "current_command": current,
            "stale": installed_cmd is not None and installed_cmd != current, "state": state}


def _query(cmd: list[str]) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0] if lines else f"exit {proc.returncode}"


def _launchd_loaded(domain: str) -> bool:
    if not shutil.which("launchctl"):
        return False
    proc = subprocess.run(["launchctl", "print", f"{domain}/{LABEL}"], capture_output=True, timeout=30, check=False)
    return proc.returncode == 0

"""Settings: defaults < ``config.toml`` < ``EDGEMEM_*`` environment < CLI flags.

One :class:`Settings` is built at the edge (CLI command or daemon start) and passed down. Paths come
from platformdirs; ``EDGEMEM_HOME`` relocates every directory under one folder (tests set it).
Nothing here touches the disk at import time.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from edgemem.errors import ConfigError

APP = "edgemem"
ENV_PREFIX = "EDGEMEM_"


@dataclass(frozen=True)
class Settings:
    home: Path | None = None
    config_dir: Path = field(default_factory=lambda: Path(platformdirs.user_config_dir(APP)))
    data_dir: Path = field(default_factory=lambda: Path(platformdirs.user_data_dir(APP)))
    cache_dir: Path = field(default_factory=lambda: Path(platformdirs.user_cache_dir(APP)))
    log_dir: Path = field(default_factory=lambda: Path(platformdirs.user_log_dir(APP)))
    runtime_dir: Path = field(default_factory=lambda: _default_runtime_dir())
    db_path: Path | None = None  # default: <data_dir>/edgemem.db

    # Model runtime (DESIGN "Models"). n_threads 0 = all cores; n_gpu_layers -1 = offload everything.
    model: str = "qwen2.5-coder-1.5b"
    model_path: Path | None = None  # an explicit GGUF file overrides the manifest
    n_ctx: int = 8192
    n_threads: int = 0
    n_gpu_layers: int = 0
    prompt_cache_mb: int = 256  # RAM for cached prompt-prefix KV states, all bytes counted (0 = off)
    cpu_repack: str = "auto"  # llama.cpp's repacked/AMX CPU weights: auto (probed once) | on | off
    embed_model: str = "all-MiniLM-L6-v2"
    embed_threads: int = 0

    # Limits on input (bad input gets a clear error, never a half-written store).
    max_text_bytes: int = 256 * 1024
    max_file_bytes: int = 16 * 1024 * 1024
    max_frame_bytes: int = 1024 * 1024

    # Read path: ask the model to break the router classifier's near-ties (off: the classifier's best
    # tag). On LoCoMo's tune conversations the model was right on 4 of 9 such questions and the
    # classifier on 5, for ~800 prefilled tokens (10-13 s on a 2-core CPU) each (docs/measurements.md).
    router_model: bool = False
    # Read path: ask the model which of the nearest clusters a question is about when their
    # centroids are close (CLAG §3.4). Off: every cluster within the margin of the best. The call
    # prefills ~500 tokens (3-7 s on a 2-core CPU) for one of five fused pathways.
    cluster_model: bool = False

    # Chat: the user's turns are kept for the session's active context (in memory); stored as
    # memories, which later answers can cite, only when this is on.
    remember_chat: bool = False

    # Write path: the probability the learned profile filter needs before a note without a profile
    # cue reaches the model (None: its fitted default, 0.92; 1: cues only, fewest model calls; lower
    # values compile fuller profiles for more model calls a turn).
    profile_filter: float | None = None

    # Daemon.
    socket_path: Path | None = None  # default: <runtime_dir>/edgemem.sock
    shutdown_timeout: float = 10.0
    log_level: str = "INFO"

    @property
    def database(self) -> Path:
        return self.db_path or self.data_dir / "edgemem.db"

    @property
    def socket(self) -> Path:
        return self.socket_path or self.runtime_dir / "edgemem.sock"

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def threads(self) -> int:
        return self.n_threads or os.cpu_count() or 1

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"


def _default_runtime_dir() -> Path:
    # platformdirs answers /run/user/<uid>/edgemem; where there is no per-user runtime dir
    # (root without a login session, containers) fall back to a private folder under the temp dir.
    if sys.platform.startswith("linux") and not os.environ.get("XDG_RUNTIME_DIR"):
        return Path(f"/tmp/{APP}-{os.getuid()}")
    path = Path(platformdirs.user_runtime_dir(APP))
    if path.parent.is_dir():
        return path
    return Path(f"/tmp/{APP}-{os.getuid()}")


def _home_layout(home: Path) -> dict[str, Path]:
    return {
        "home": home,
        "config_dir": home / "config",
        "data_dir": home / "data",
        "cache_dir": home / "cache",
        "log_dir": home / "log",
        "runtime_dir": home / "run",
    }


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
_HINTS = typing.get_type_hints(Settings)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _coerce(name: str, value: object) -> object:
    hint = _HINTS[name]
    base = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    kind = base[0]
    if value is None or value == "":
        if type(None) in typing.get_args(hint):
            return None
    try:
        if kind is Path:
            return Path(os.path.expanduser(str(value)))
        if kind is bool:
            word = str(value).strip().lower()
            if word not in _TRUE | _FALSE:
                raise ValueError(word)
            return word in _TRUE
        if kind in (int, float, str):
            return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name!r} expects {kind.__name__}, got {value!r}") from None
    return value


def load(overrides: dict[str, object] | None = None, env: dict[str, str] | None = None) -> Settings:
    """Build Settings from defaults, the config file, the environment and CLI overrides."""
    env = dict(os.environ if env is None else env)
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    values: dict[str, object] = {}

    home = overrides.get("home") or env.get(ENV_PREFIX + "HOME")
    if home:
        values.update(_home_layout(Path(os.path.expanduser(str(home)))))

    config_dir = Path(str(overrides.get("config_dir") or env.get(ENV_PREFIX + "CONFIG_DIR") or values.get("config_dir") or Settings().config_dir))
    config_file = config_dir / "config.toml"
    if config_file.is_file():
        try:
            data = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{config_file}: {exc}") from None
        for key, value in data.items():
            if key not in _FIELDS:
                raise ConfigError(f"{config_file}: unknown setting {key!r}")
            values[key] = _coerce(key, value)

    for key in _FIELDS:
        if key == "home":
            continue
        raw = env.get(ENV_PREFIX + key.upper())
        if raw is not None:
            values[key] = _coerce(key, raw)

    for key, value in overrides.items():
        if key not in _FIELDS:
            raise ConfigError(f"unknown setting {key!r}")
        values[key] = _coerce(key, value)
    return Settings(**values)

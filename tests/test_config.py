"""Settings precedence: defaults < config.toml < EDGEMEM_* env < CLI flags; EDGEMEM_HOME relocates."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgemem import config
from edgemem.errors import ConfigError


def test_precedence(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text('n_ctx = 2048\nmodel = "from-file"\nn_threads = 3\n')
    env = {"EDGEMEM_HOME": str(home), "EDGEMEM_MODEL": "from-env", "EDGEMEM_N_THREADS": "5"}
    s = config.load({"n_threads": 7}, env=env)
    assert s.n_ctx == 2048  # file beats default
    assert s.model == "from-env"  # env beats file
    assert s.n_threads == 7  # flag beats env
    assert s.database == home / "data" / "edgemem.db"
    assert s.socket == home / "run" / "edgemem.sock"


def test_defaults_without_home() -> None:
    s = config.load(env={})
    assert s.home is None and s.database.name == "edgemem.db" and s.socket.name == "edgemem.sock"


def test_bad_config_is_a_one_line_error(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text("n_ctx = [\n")
    with pytest.raises(ConfigError):
        config.load(env={"EDGEMEM_HOME": str(home)})
    (home / "config" / "config.toml").write_text("favourite_colour = 'blue'\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        config.load(env={"EDGEMEM_HOME": str(home)})
    with pytest.raises(ConfigError, match="expects int"):
        config.load(env={"EDGEMEM_HOME": str(home / "x"), "EDGEMEM_N_CTX": "lots"})


def test_a_switch_takes_only_yes_or_no_words(tmp_path: Path) -> None:
    home = str(tmp_path / "h")
    assert config.load(env={"EDGEMEM_HOME": home, "EDGEMEM_CLUSTER_MODEL": "on"}).cluster_model is True
    assert config.load(env={"EDGEMEM_HOME": home, "EDGEMEM_CLUSTER_MODEL": "0"}).cluster_model is False
    assert config.load(overrides={"router_model": True}, env={"EDGEMEM_HOME": home}).router_model is True
    with pytest.raises(ConfigError, match="'cluster_model' expects bool, got 'maybe'"):
        config.load(env={"EDGEMEM_HOME": home, "EDGEMEM_CLUSTER_MODEL": "maybe"})

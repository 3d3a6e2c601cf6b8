"""Model manifests, atomic assembly from chunk packages, clear errors for missing or bad files."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from edgemem import config
from edgemem.errors import ModelError
from edgemem.runtime import models


def test_shipped_manifests() -> None:
    found = models.load_manifests()
    assert {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m", "qwen3-1.7b", "qwen3-0.6b",
            "smollm2-1.7b", "llama-3.2-1b", "gemma-3-1b"} <= set(found)
    default = found["qwen2.5-coder-1.5b"]
    assert default.kind == "packages" and len(default.sha256) == 64 and default.chat_format
    for name in ("qwen3-1.7b", "llama-3.2-1b", "gemma-3-1b"):
        assert found[name].source["url"].startswith("https://") and found[name].file.endswith(".gguf")


@pytest.fixture
def chunk_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, Path]:
    """Three fake installed chunk packages on sys.path holding one file split in parts."""
    payload = b"GGUF" + bytes(range(256)) * 40
    site = tmp_path / "site"
    for n, part in enumerate([payload[:3000], payload[3000:7000], payload[7000:]], start=1):
        pkg = site / f"fakechunk_part{n}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / "part01.bin").write_bytes(part)
    monkeypatch.syspath_prepend(str(site))
    return payload, site


def _manifest(sha: str) -> models.Manifest:
    return models.Manifest(
        name="fake", file="fake.gguf", sha256=sha, size=0, chat_format="chatml", context_length=2048,
        source={"kind": "packages", "requirement": "fakechunk-part{n}==1", "module": "fakechunk_part{n}", "parts": 3},
    )


def test_assembly_verifies_and_renames_atomically(tmp_path: Path, chunk_packages) -> None:
    payload, _ = chunk_packages
    dest = tmp_path / "models" / "fake.gguf"
    models.assemble(_manifest(hashlib.sha256(payload).hexdigest()), dest)
    assert dest.read_bytes() == payload
    assert models.is_verified(dest, hashlib.sha256(payload).hexdigest())
    assert not list(dest.parent.glob("*.partial"))


def test_assembly_with_wrong_hash_leaves_nothing(tmp_path: Path, chunk_packages) -> None:
    dest = tmp_path / "models" / "fake.gguf"
    with pytest.raises(ModelError, match="wrong sha256"):
        models.assemble(_manifest("0" * 64), dest)
    assert not dest.exists() and not list(dest.parent.glob("*.partial"))


def test_missing_package_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"pip install 'fakechunk-part1==1'"):
        models.assemble(_manifest("0" * 64), tmp_path / "x.gguf")


def test_tampered_default_names_the_command(settings: config.Settings) -> None:
    manifest = models.get_manifest(settings.model)
    dest = settings.models_dir / manifest.file
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"GGUF not really a model")
    with pytest.raises(ModelError, match="edgemem setup"):
        models.model_file(settings)


def test_missing_model_path_names_the_command(tmp_path: Path) -> None:
    s = config.load({"model_path": tmp_path / "nope.gguf"})
    with pytest.raises(ModelError, match="models add"):
        models.model_file(s)


def test_url_model_not_downloaded_names_pull(settings: config.Settings) -> None:
    with pytest.raises(ModelError, match="models pull qwen3-1.7b"):
        models.model_file(settings, "qwen3-1.7b")


def test_pull_fails_fast_when_offline(settings: config.Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = settings.config_dir / "models"
    folder.mkdir(parents=True)
    (folder / "local.toml").write_text(
        'name = "unreachable"\nfile = "u.gguf"\nsha256 = ""\nchat_format = "chatml"\ncontext_length = 2048\n'
        '[source]\nkind = "url"\nurl = "http://127.0.0.1:9/u.gguf"\n'
    )
    start = time.monotonic()
    with pytest.raises(ModelError, match="cannot download unreachable"):
        models.pull(settings, "unreachable", accept_unverified=True, timeout=3)
    assert time.monotonic() - start < 5
    with pytest.raises(ModelError, match="no pinned sha256"):
        models.pull(settings, "unreachable")


def test_add_registers_a_local_gguf(settings: config.Settings, tmp_path: Path) -> None:
    gguf = tmp_path / "Mine.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 64)
    manifest = models.add(settings, gguf, "mine")
    assert manifest.kind == "file" and models.model_file(settings, "mine")[0] == gguf.resolve()
    (tmp_path / "text.gguf").write_text("hello")
    with pytest.raises(ModelError, match="not a GGUF"):
        models.add(settings, tmp_path / "text.gguf")

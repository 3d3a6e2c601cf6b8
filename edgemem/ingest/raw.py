"""Accept input: store it raw in one transaction and enqueue the job that derives its notes.

The caller is acknowledged only after the commit (synchronous=FULL), so an acknowledged write
survives ``kill -9`` (DESIGN Principle 1). Bad input is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from edgemem.display import size as shown_size
from edgemem.errors import BadInput
from edgemem.store import jobs, raw
from edgemem.store.db import Store, now
from edgemem.text import check_text

NOTE_JOB = "note"
TOO_LONG_HINT = "save it to a file and use `edgemem ingest`"  # a file is chunked into many notes
PDF_HINT = "only text is ingested: convert it first (e.g. `pdftotext FILE.pdf`)"
TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".text", ".rst", ".org"}
CHUNK_CHARS = 900  # a paragraph-sized chunk: ~200 tokens, one note


@dataclass
class Accepted:
    raw_ids: list[int] = field(default_factory=list)
    job_ids: list[int] = field(default_factory=list)
    source_id: int | None = None
    unchanged: bool = False


def event_time_iso(when: datetime | str | None) -> str:
    if when is None:
        return now()
    if isinstance(when, datetime):
        return when.replace(microsecond=0, tzinfo=None).isoformat()
    return when


def accept_turns(
    store: Store,
    turns: list[tuple[str | None, str, str, str | None]],
    *,
    kind: str,
    uri: str,
    title: str | None = None,
    source_meta: dict | None = None,
    priority: int = 10,
) -> Accepted:
    """Store ``(speaker, text, event_time, ext_id)`` turns of one source and enqueue one note job each."""
    out = Accepted()
    with store.transaction() as conn:
        out.source_id = raw.ensure_source(conn, kind, uri, title=title, meta=source_meta)
        for speaker, text, when, ext_id in turns:
            raw_id = raw.append_turn(conn, out.source_id, text, when, speaker=speaker, ext_id=ext_id)
            out.raw_ids.append(raw_id)
            out.job_ids.append(jobs.enqueue(conn, NOTE_JOB, {"raw_id": raw_id}, priority))
    return out


def remember(store: Store, text: str, *, max_bytes: int, speaker: str | None = None,
             when: datetime | str | None = None, session: str | None = None) -> Accepted:
    """A note the user asks to keep, or a chat turn when ``session`` names a conversation."""
    text = check_text(text, max_bytes, hint=TOO_LONG_HINT)
    kind, uri = ("conversation", session) if session else ("note", "notes")
    return accept_turns(store, [(speaker, text, event_time_iso(when), None)], kind=kind, uri=uri)


# -- files --------------------------------------------------------------------------------------
def read_text_file(path: Path, max_bytes: int) -> str:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror}") from None
    if size == 0:
        raise BadInput(f"{path} is empty")
    if size > max_bytes:
        raise BadInput(f"{path} is {shown_size(size)}; the limit is {shown_size(max_bytes)} (setting max_file_bytes)")
    data = path.read_bytes()
    if data.startswith(b"%PDF-"):
        raise BadInput(f"{path} is a PDF; {PDF_HINT}")
    if b"\x00" in data[:8192]:
        raise BadInput(f"{path} looks binary (NUL bytes); only text files are ingested")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not UTF-8 text") from None
    if not text.strip():
        raise BadInput(f"{path} holds only whitespace")
    return text


def chunk_text(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Paragraph-sized chunks: blank-line paragraphs, small ones joined, long ones cut at sentences."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    pieces: list[str] = []
    for para in paragraphs:
        if len(para) <= limit:
            pieces.append(para)
            continue
        sentence_buf = ""
        for sentence in re.split(r"(?<=[.!?])\s+", para):
            if sentence_buf and len(sentence_buf) + len(sentence) + 1 > limit:
                pieces.append(sentence_buf)
                sentence_buf = ""
            while len(sentence) > limit:  # one enormous "sentence": cut it hard
                pieces.append(sentence[:limit])
                sentence = sentence[limit:]
            sentence_buf = f"{sentence_buf} {sentence}".strip()
        if sentence_buf:
            pieces.append(sentence_buf)
    chunks: list[str] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + len(piece) + 2 <= limit // 2:
            chunks[-1] = f"{chunks[-1]}\n\n{piece}"
        else:
            chunks.append(piece)
    return chunks


def file_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def iter_text_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise BadInput(f"{path} does not exist")
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            p = Path(root) / name
            if p.suffix.lower() in TEXT_SUFFIXES and not name.startswith("."):
                found.append(p)
    return found


@dataclass
class Scan:
    """A folder's files: the text files to ingest, and the others with why each is left out."""

    files: list[Path] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {"path", "reason"}
    hidden: int = 0  # dot-files and dot-folders (.git, .DS_Store), left out and not listed one by one


def scan_folder(folder: Path) -> Scan:
    """Every file under ``folder``, sorted: text files to ingest, the rest listed with a reason."""
    out = Scan()
    for root, dirs, files in os.walk(folder):
        out.hidden += sum(d.startswith(".") for d in dirs) + sum(f.startswith(".") for f in files)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(f for f in files if not f.startswith(".")):
            p = Path(root) / name
            suffix = p.suffix.lower()
            if suffix in TEXT_SUFFIXES:
                out.files.append(p)
            elif suffix == ".pdf":
                out.skipped.append({"path": str(p), "reason": f"a PDF; {PDF_HINT}"})
            else:
                out.skipped.append({"path": str(p), "reason": f"not a text file ({suffix or 'no suffix'}); "
                                                              f"edgemem ingests {', '.join(sorted(TEXT_SUFFIXES))}"})
    return out


def skip_reason(exc: BadInput, path: Path) -> str:
    """A refused file's reason without its path (the summary prints the path beside it)."""
    message = exc.message
    for shown in (str(path.expanduser().resolve()), str(path)):
        if message.startswith(shown + " ") or message.startswith(shown + ":"):
            return message[len(shown):].lstrip(": ").removeprefix("is ").strip()
    return message


def ingest_file(store: Store, path: Path, *, max_bytes: int, priority: int = 10) -> Accepted:
    """One source per file, content-hashed: unchanged content is a no-op; changed content replaces
    the file's raw chunks and everything derived from them in the same transaction."""
    from edgemem.store.forget import forget_source

    path = path.expanduser().resolve()
    text = read_text_file(path, max_bytes)
    digest = file_hash(text)
    mtime = path.stat().st_mtime
    when = datetime.fromtimestamp(mtime).replace(microsecond=0).isoformat()
    uri = str(path)
    with store.transaction() as conn:
        existing = raw.get_source(conn, "file", uri)
        if existing and existing.content_hash == digest:
            return Accepted(source_id=existing.id, unchanged=True)
        if existing:
            forget_source(conn, existing.id, keep_source=True)
        turns = [(None, chunk, when, f"{path.name}#{i}") for i, chunk in enumerate(chunk_text(text), start=1)]
        out = accept_turns(store, turns, kind="file", uri=uri, title=path.name, priority=priority)
        raw.set_source_hash(conn, out.source_id, digest, mtime)
    return out

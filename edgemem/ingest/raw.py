"""Accept input: store it raw in one transaction and enqueue the job that derives its notes.

The caller is acknowledged only after the commit (synchronous=FULL), so an acknowledged write
survives ``kill -9`` (DESIGN Principle 1). Bad input is refused before anything is written.
"""

from __future__ import annotations

import bisect
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


# -- chunking -----------------------------------------------------------------------------------
# Section chunking (DESIGN "Write path" 2: "a paragraph-sized chunk of a file"). A Markdown file is
# cut at its headings (#, ##, ###) into sections; a section under the budget stays whole, a longer one
# is cut at paragraph boundaries into pieces near the budget, and tiny neighbouring sections under the
# same parent heading share a chunk. The chunks are exact slices of the file: ``"".join(bodies)`` is the
# file's text byte for byte, so the raw record holds every byte verbatim (Principle 1). The heading
# path ("Guide > Install > Linux") that makes a chunk retrievable on its own is derived from the raw
# chunks (:func:`heading_paths`), so a rebuild recomputes it and the raw record stays the file itself.
#
# The budget is in characters, not tokens: no tokenizer is needed to accept a file, and at ~4.5
# characters per token 2,000 characters is ~450 model tokens. 900-character chunks cut a 2 MB Markdown
# file into 2,520 fragments whose organising took hours; at this budget a 2 MB handbook with a heading
# every ~2.4 KB makes ~1,450 chunks, 2 MB of plain text ~1,150 (a section over the budget always makes
# two pieces, so heading-dense files sit nearer 2 MB / 1,400). The embedder reads a text's first 256
# tokens (~1,100 characters): the heading path and the start of a chunk decide its vector, the sparse
# index sees all of it.
CHUNK_CHARS = 2000  # a chunk's budget (whole section, or a piece of a long one)
MERGE_BELOW = CHUNK_CHARS // 2  # sections smaller than this share a chunk with siblings under the same parent
MIN_CHUNK_CHARS = 200  # a chunk with less text than this joins a neighbour (a heading and one line)
MARKDOWN_SUFFIXES = {".md", ".markdown"}

_HEADING = re.compile(r" {0,3}(#{1,3})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n\s*")  # a blank-line run: a piece may end after it
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_LINE_END = re.compile(r"\n\s*")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Heading:
    start: int  # offset of the heading line in the text
    end: int  # offset after the heading line (its newline included)
    level: int
    path: tuple[str, ...]  # the titles from the top heading down to this one


@dataclass(frozen=True)
class Chunk:
    body: str  # an exact slice of the file
    path: tuple[str, ...] = ()  # heading path, top first

    @property
    def text(self) -> str:
        """What a note holds: the heading path, then the body without surrounding whitespace."""
        return prefixed(self.body, self.path)


def prefixed(body: str, path: tuple[str, ...] | list[str]) -> str:
    return f"{' > '.join(path)}\n\n{body.strip()}" if path else body.strip()


def is_markdown(name: str | os.PathLike) -> bool:
    return Path(name).suffix.lower() in MARKDOWN_SUFFIXES


def headings(text: str) -> list[Heading]:
    """ATX headings of levels 1-3 outside fenced code blocks, each with its path."""
    out: list[Heading] = []
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    pos = 0
    for line in text.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        bare = line.rstrip("\r\n")
        if (m := _FENCE.match(bare)) is not None:
            mark = m.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not bare.strip()[len(mark):].strip():
                fence = None
            continue
        if fence is not None:
            continue
        m = _HEADING.fullmatch(bare)
        if m is None or not m.group(2).strip():
            continue
        level = len(m.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, m.group(2).strip()))
        out.append(Heading(start, pos, level, tuple(title for _, title in stack)))
    return out


def _common_prefix(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    if not paths:
        return ()
    first = paths[0]
    n = len(first)
    for p in paths[1:]:
        n = min(n, len(p))
        for i in range(n):
            if p[i] != first[i]:
                n = i
                break
    return first[:n]


def heading_paths(bodies: list[str], markdown: bool = True) -> list[tuple[str, ...]]:
    """The heading path of each chunk of one file, from its chunks alone (they join into the file).

    A chunk's path is that of its section; for a chunk holding several sections, the path they share
    (sections that are only a heading, like a chapter title above its first section, do not count)."""
    if not markdown:
        return [() for _ in bodies]
    text = "".join(bodies)
    heads = headings(text)
    starts = [h.start for h in heads]
    out: list[tuple[str, ...]] = []
    a = 0
    for body in bodies:
        b = a + len(body)
        p0 = a + len(body) - len(body.lstrip())
        if p0 >= b:
            out.append(out[-1] if out else ())
            a = b
            continue
        j = bisect.bisect_right(starts, p0) - 1  # the section in effect at the chunk's first character
        touched: list[tuple[tuple[str, ...], bool]] = []
        while True:
            content_from = max(p0, heads[j].end) if j >= 0 else p0
            end = min(b, starts[j + 1]) if j + 1 < len(heads) else b
            has_text = content_from < end and not text[content_from:end].isspace()
            touched.append((heads[j].path if j >= 0 else (), has_text))
            j += 1
            if j >= len(heads) or starts[j] >= b:
                break
        with_text = [p for p, has in touched if has]
        out.append(_common_prefix(with_text or [p for p, _ in touched]))
        a = b
    return out


def _cut(text: str, pos: int, end: int, limit: int) -> int:
    """Where the piece starting at ``pos`` ends: at the last paragraph boundary within the budget (the
    last two pieces share what is left evenly, so no piece is a scrap), else at a sentence end, a line
    end, a space, or (one enormous word) hard at the budget."""
    rest = end - pos
    if rest <= limit:
        return end
    target = pos + (rest / 2 if rest <= 2 * limit else limit)
    hi = pos + limit
    lo = pos + limit // 4
    for pattern in (_PARAGRAPH_END, _SENTENCE_END, _LINE_END, _SPACE):
        cuts = [m.end() for m in pattern.finditer(text, lo, hi)]
        if cuts:
            return min(cuts, key=lambda c: (abs(c - target), -c))
    return hi


def _split(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    out = []
    pos = start
    while pos < end:
        cut = _cut(text, pos, end, limit)
        out.append((pos, cut))
        pos = cut
    return out


def chunk_document(text: str, *, markdown: bool = True, limit: int = CHUNK_CHARS) -> list[Chunk]:
    """Section chunks of a file (see the section comment above); ``"".join`` of the bodies is ``text``."""
    if not text:
        return []
    heads = headings(text) if markdown else []
    # Sections: [start, end) spans cut at heading lines; a heading with nothing under it before the
    # next heading (a chapter title) is fused with what follows, so it never stands alone.
    bounds = [h.start for h in heads if h.start > 0]
    if bounds and text[: bounds[0]].isspace():
        bounds = bounds[1:]  # only blank lines before the first heading: they belong to it
    spans = list(zip([0, *bounds], [*bounds, len(text)]))
    by_start = {h.start: h for h in heads}
    sections: list[list] = []  # [start, end, path, has text under its heading]
    for s, e in spans:
        h = by_start.get(s)
        if h is None and s == 0 and heads and text[: heads[0].start].isspace():
            h = heads[0]
        body_from = h.end if h is not None else s
        sections.append([s, e, h.path if h is not None else (), body_from < e and not text[body_from:e].isspace()])
    fused: list[list] = []
    pending_start: int | None = None
    for sec in sections:
        if pending_start is not None:
            sec[0], pending_start = pending_start, None
        if not sec[3] and sec is not sections[-1]:
            pending_start = sec[0]
            continue
        fused.append(sec)
    if not fused[-1][3] and len(fused) > 1:  # a trailing bare heading joins the section before it
        fused[-2][1] = fused.pop()[1]
    # Units: whole sections under the budget, pieces of longer ones.
    units: list[tuple[int, int, tuple[str, ...] | None]] = []  # path None: a full piece, never merged
    for s, e, path, _ in fused:
        if e - s <= limit:
            units.append((s, e, path))
        else:
            pieces = _split(text, s, e, limit)
            units.extend((ps, pe, None) for ps, pe in pieces[:-1])
            units.append((*pieces[-1], path))  # the last piece may share a chunk with small sections after it
    # Small consecutive sections under the same parent heading (siblings and their subsections) share
    # a chunk while it stays within the budget. At the top level only top-level sections do: a
    # one-title document would otherwise be packed across its chapters.
    groups: list[list] = []  # [start, end, parent path of a group of small sections, else None]
    for s, e, path in units:
        small = path is not None and e - s < MERGE_BELOW
        g = groups[-1] if groups else None
        if small and g is not None and (base := g[2]) is not None and e - g[0] <= limit \
                and path[: len(base)] == base and len(path) > len(base) and (base or len(path) == 1):
            g[1] = e
            continue
        groups.append([s, e, path[:-1] if small else None])
    # A chunk with almost no text (a heading and a line) joins a neighbour that has room.
    spans = [[g[0], g[1]] for g in groups]
    i = 0
    while i < len(spans) and len(spans) > 1:
        s, e = spans[i]
        if len(text[s:e].strip()) >= MIN_CHUNK_CHARS:
            i += 1
            continue
        if i > 0 and e - spans[i - 1][0] <= limit:
            spans[i - 1][1] = e
            del spans[i]
        elif i + 1 < len(spans) and spans[i + 1][1] - s <= limit:
            spans[i + 1][0] = s
            del spans[i]
        else:
            i += 1
    bodies = [text[s:e] for s, e in spans]
    return [Chunk(body, path) for body, path in zip(bodies, heading_paths(bodies, markdown), strict=True)]


def chunk_text(text: str, limit: int = CHUNK_CHARS, *, markdown: bool = True) -> list[str]:
    """The chunks' bodies: exact slices of ``text`` that join back into it."""
    return [c.body for c in chunk_document(text, markdown=markdown, limit=limit)]


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
        # The raw record is the file itself, cut into exact slices; each chunk's heading path is derived
        # from them by the worker (heading_paths), so nothing but the file's own bytes is stored.
        bodies = chunk_text(text, markdown=is_markdown(path))
        turns = [(None, body, when, f"{path.name}#{i}") for i, body in enumerate(bodies, start=1)]
        out = accept_turns(store, turns, kind="file", uri=uri, title=path.name, priority=priority)
        raw.set_source_hash(conn, out.source_id, digest, mtime)
    return out

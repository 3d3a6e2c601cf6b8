"""Importers: chat exports (JSON) and LoCoMo conversations → raw turns through the accept path.

DESIGN "Write path" step 1 (Accept): every session becomes one source (kind ``conversation``) and
is stored in one transaction by :func:`edgemem.ingest.raw.accept_turns`, which enqueues one note
job per turn, so imported turns go through exactly the write path the daemon runs. Markdown and
text folders are imported by :func:`edgemem.ingest.raw.ingest_file`; they are not repeated here.

Importing is validate-then-write: a whole file is parsed and checked before anything is stored, so
bad input raises :class:`BadInput` with one line naming the place (``chat.json: session 2, turn 5:
...``) and the store is left untouched.

**Chat JSON**, edgemem's generic chat export::

    {"title": "...", "sessions": [SESSION, ...]}        # or just a list of sessions: [SESSION, ...]
    SESSION = {"id": "s1",                               # optional; default "session-<n>", n from 1
               "started_at": TIME,                       # or "date"; may be left out only when
                                                         #   every turn has its own "time"
               "title": "...",                           # optional
               "turns": [TURN, ...]}                     # at least one
    TURN    = {"speaker": "Ana", "text": "...",          # or "role" / "content" (OpenAI-style)
               "time": TIME,                             # optional
               "id": "..."}                              # optional external id
    TIME    = ISO 8601 ("2023-05-08T13:56:00", an offset is converted to local time),
              LoCoMo's "1:56 pm on 8 May, 2023", or Unix seconds (a number)

A turn without a time is stamped with the session's start plus its 0-based position in seconds, so
turns keep their order and the session keeps its date. A turn's external id (``raw_turns.ext_id``)
is its ``id``, else ``<session id>:<n>`` (n from 1). A session's source uri is ``<name>/<session id>``
where ``name`` defaults to the file's stem.

**LoCoMo** (Maharana et al., ACL 2024; ``shared/data/locomo/README.md``): a list of samples, each
with ``sample_id`` and ``conversation`` holding ``session_<n>`` turn lists and their
``session_<n>_date_time``. A turn's ``blip_caption`` (an image the speaker shared) is part of what
was said: it is stored as ``text + " [shares a photo: <caption>]"``. The ``dia_id`` is the
external id, the source uri is ``<sample_id>/session_<n>``.

Re-importing is safe: a session whose turns are unchanged is skipped; a session that grew (the old
turns are a prefix of the new) gets only its new turns; a session that changed otherwise is
replaced together with everything derived from it, in one transaction.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from edgemem.errors import BadInput
from edgemem.ingest.dates import parse_when
from edgemem.ingest.raw import Accepted, accept_turns
from edgemem.store import raw
from edgemem.store.db import Store
from edgemem.text import check_text

CONVERSATION = "conversation"
_LOCOMO_SESSION = re.compile(r"session_(\d+)")


@dataclass
class ChatTurn:
    speaker: str
    text: str
    when: datetime
    ext_id: str


@dataclass
class ChatSession:
    """One conversation session, ready for :func:`import_sessions` (one source, one transaction)."""

    uri: str
    started_at: datetime
    turns: list[ChatTurn]
    title: str | None = None

    def rows(self) -> list[tuple[str, str, str, str]]:
        """``(speaker, text, event_time, ext_id)`` rows as ``accept_turns`` takes them."""
        return [(t.speaker, t.text, t.when.replace(microsecond=0).isoformat(), t.ext_id) for t in self.turns]

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.rows(), ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)  # uris of new sessions
    extended: list[str] = field(default_factory=list)  # sessions that grew
    replaced: list[str] = field(default_factory=list)  # sessions whose turns changed
    unchanged: list[str] = field(default_factory=list)
    raw_ids: list[int] = field(default_factory=list)
    job_ids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"added": self.added, "extended": self.extended, "replaced": self.replaced,
                "unchanged": self.unchanged, "turns": len(self.raw_ids)}


# -- time -----------------------------------------------------------------------------------------
def to_local(value: object, where: str) -> datetime:
    """A timestamp as a naive local datetime (the store's time format), or BadInput naming ``where``."""
    if isinstance(value, bool):  # bool is an int: refuse it before the number branch
        raise BadInput(f"{where}: expected a timestamp, got {value!r}")
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(value)
        except (OverflowError, OSError, ValueError):
            raise BadInput(f"{where}: {value!r} is not a usable Unix time") from None
    if not isinstance(value, str):
        raise BadInput(f"{where}: expected a timestamp string, got {type(value).__name__}")
    try:
        when = parse_when(value)
    except ValueError as exc:
        raise BadInput(f"{where}: {exc}") from None
    if when.tzinfo is not None:
        when = when.astimezone().replace(tzinfo=None)
    return when


def spaced(start: datetime, n: int) -> datetime:
    """The n-th turn's time (0-based) when only its session's start is known: start + n seconds."""
    return start + timedelta(seconds=n)


# -- files -------------------------------------------------------------------------------------------
def load_json(path: Path, max_bytes: int) -> Any:
    path = Path(path).expanduser()
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror}") from None
    if not path.is_file():
        raise BadInput(f"{path} is not a file")
    if size > max_bytes:
        raise BadInput(f"{path} is {size} bytes; the limit is {max_bytes} (setting max_file_bytes)")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def detect_format(data: Any) -> str:
    """``"locomo"`` or ``"chat"`` for parsed JSON; BadInput when it is neither."""
    if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
        if all("conversation" in x and "sample_id" in x for x in data):
            return "locomo"
        if all("turns" in x for x in data):
            return "chat"
    if isinstance(data, dict) and isinstance(data.get("sessions"), list):
        return "chat"
    raise BadInput("unrecognised JSON: expected a chat export (sessions with turns) or LoCoMo samples")


# -- chat JSON -----------------------------------------------------------------------------------------
def _field(obj: dict, names: tuple[str, ...], where: str, *, required: bool = True) -> Any:
    for name in names:
        if name in obj and obj[name] is not None:
            return obj[name]
    if required:
        raise BadInput(f"{where}: missing {' or '.join(repr(n) for n in names)}")
    return None


def parse_chat(data: Any, *, name: str, max_text_bytes: int) -> list[ChatSession]:
    """Sessions of a chat JSON export (format in the module docstring); BadInput on any defect."""
    if isinstance(data, dict):
        sessions = data.get("sessions")
        if not isinstance(sessions, list):
            raise BadInput(f"{name}: expected a list of sessions or an object with a 'sessions' list")
    elif isinstance(data, list):
        sessions = data
    else:
        raise BadInput(f"{name}: expected a list of sessions or an object with a 'sessions' list")
    if not sessions:
        raise BadInput(f"{name}: no sessions")
    out: list[ChatSession] = []
    seen: set[str] = set()
    for n, session in enumerate(sessions, start=1):
        where = f"{name}: session {n}"
        if not isinstance(session, dict):
            raise BadInput(f"{where}: expected an object, got {type(session).__name__}")
        sid = str(session.get("id") or f"session-{n}")
        if sid in seen:
            raise BadInput(f"{where}: duplicate session id {sid!r}")
        seen.add(sid)
        turns = session.get("turns")
        if not isinstance(turns, list) or not turns:
            raise BadInput(f"{where}: 'turns' must be a non-empty list")
        start_value = _field(session, ("started_at", "date"), where, required=False)
        start = to_local(start_value, where) if start_value is not None else None
        parsed: list[ChatTurn] = []
        for i, turn in enumerate(turns):
            twhere = f"{where}, turn {i + 1}"
            if not isinstance(turn, dict):
                raise BadInput(f"{twhere}: expected an object, got {type(turn).__name__}")
            speaker = _field(turn, ("speaker", "role"), twhere)
            if not isinstance(speaker, str) or not speaker.strip():
                raise BadInput(f"{twhere}: speaker must be a non-empty string")
            text = check_text(_field(turn, ("text", "content"), twhere), max_text_bytes, twhere + " text")
            if turn.get("time") is not None:
                when = to_local(turn["time"], twhere)
            elif start is not None:
                when = spaced(start, i)
            else:
                raise BadInput(f"{twhere}: no 'time', and its session has no 'started_at'")
            ext_id = str(turn["id"]) if turn.get("id") is not None else f"{sid}:{i + 1}"
            parsed.append(ChatTurn(speaker.strip(), text, when, ext_id))
        title = session.get("title")
        out.append(ChatSession(f"{name}/{sid}", start or parsed[0].when, parsed, str(title) if title else None))
    return out


# -- LoCoMo ------------------------------------------------------------------------------------------------
def locomo_text(turn: dict) -> str:
    """What a LoCoMo speaker said, a shared photo's caption included."""
    text = str(turn.get("text") or "").strip()
    caption = str(turn.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def locomo_sessions(sample: Any, *, max_text_bytes: int, where: str = "LoCoMo") -> list[ChatSession]:
    """The sessions of one LoCoMo sample, in session order; BadInput on any defect."""
    if not isinstance(sample, dict):
        raise BadInput(f"{where}: expected a sample object, got {type(sample).__name__}")
    sample_id = sample.get("sample_id")
    if not isinstance(sample_id, str) or not sample_id:
        raise BadInput(f"{where}: missing 'sample_id'")
    where = f"{where} {sample_id}"
    conversation = sample.get("conversation")
    if not isinstance(conversation, dict):
        raise BadInput(f"{where}: missing 'conversation'")
    # Count sessions by the session_<n> lists, not the date keys (the README's advice).
    numbers = sorted(int(m.group(1)) for key, value in conversation.items()
                     if (m := _LOCOMO_SESSION.fullmatch(key)) and isinstance(value, list))
    if not numbers:
        raise BadInput(f"{where}: no session_<n> lists in 'conversation'")
    out: list[ChatSession] = []
    for n in numbers:
        swhere = f"{where} session_{n}"
        date_value = conversation.get(f"session_{n}_date_time")
        if date_value is None:
            raise BadInput(f"{swhere}: missing 'session_{n}_date_time'")
        start = to_local(date_value, swhere)
        turns: list[ChatTurn] = []
        for i, turn in enumerate(conversation[f"session_{n}"]):
            twhere = f"{swhere}, turn {i + 1}"
            if not isinstance(turn, dict):
                raise BadInput(f"{twhere}: expected an object, got {type(turn).__name__}")
            speaker = turn.get("speaker")
            if not isinstance(speaker, str) or not speaker.strip():
                raise BadInput(f"{twhere}: missing 'speaker'")
            dia_id = turn.get("dia_id")
            if not isinstance(dia_id, str) or not dia_id:
                raise BadInput(f"{twhere}: missing 'dia_id'")
            text = check_text(locomo_text(turn), max_text_bytes, f"{twhere} ({dia_id}) text")
            turns.append(ChatTurn(speaker.strip(), text, spaced(start, i), dia_id))
        if turns:
            out.append(ChatSession(f"{sample_id}/session_{n}", start, turns, f"{sample_id} session {n}"))
    if not out:
        raise BadInput(f"{where}: every session is empty")
    return out


def locomo_samples(data: Any, where: str = "LoCoMo") -> list[dict]:
    """The sample objects of a LoCoMo file, checked for the fields every sample has."""
    if not isinstance(data, list) or not data:
        raise BadInput(f"{where}: expected a non-empty list of samples")
    ids: set[str] = set()
    for i, sample in enumerate(data, start=1):
        if not isinstance(sample, dict) or not isinstance(sample.get("sample_id"), str):
            raise BadInput(f"{where}: item {i} is not a LoCoMo sample (no 'sample_id')")
        if not isinstance(sample.get("conversation"), dict):
            raise BadInput(f"{where}: sample {sample['sample_id']} has no 'conversation' object")
        if sample["sample_id"] in ids:
            raise BadInput(f"{where}: duplicate sample_id {sample['sample_id']!r}")
        ids.add(sample["sample_id"])
    return data


# -- storing ----------------------------------------------------------------------------------------------
def import_sessions(store: Store, sessions: Iterable[ChatSession], *, priority: int = 10) -> ImportReport:
    """Store each session as one source in its own transaction (raw turns + one note job per turn)."""
    from edgemem.store.forget import forget_source

    report = ImportReport()
    for session in sessions:
        rows = session.rows()
        digest = session.digest()
        with store.transaction() as conn:
            existing = raw.get_source(conn, CONVERSATION, session.uri)
            old = raw.turns_of_source(conn, existing.id) if existing else []
            if existing and existing.content_hash == digest:
                report.unchanged.append(session.uri)
                continue
            kept = [(t.speaker, t.text, t.ext_id) for t in old]
            if old and kept == [(s, text, e) for s, text, _, e in rows[:len(old)]]:
                rows, bucket = rows[len(old):], report.extended
            elif old:
                forget_source(conn, existing.id, keep_source=True)
                bucket = report.replaced
            else:
                bucket = report.added
            acc: Accepted = accept_turns(store, rows, kind=CONVERSATION, uri=session.uri,
                                         title=session.title, priority=priority)
            raw.set_source_hash(conn, acc.source_id, digest, None)
        bucket.append(session.uri)
        report.raw_ids += acc.raw_ids
        report.job_ids += acc.job_ids
    return report


def import_chat_json(store: Store, path: Path, *, max_file_bytes: int, max_text_bytes: int,
                     name: str | None = None) -> ImportReport:
    """Import a chat JSON export (module docstring); every session is checked before any is stored."""
    path = Path(path).expanduser()
    sessions = parse_chat(load_json(path, max_file_bytes), name=name or path.stem, max_text_bytes=max_text_bytes)
    return import_sessions(store, sessions)


def import_locomo(store: Store, path: Path, *, max_file_bytes: int, max_text_bytes: int,
                  sample_ids: Iterable[str] | None = None) -> ImportReport:
    """Import the conversations of a LoCoMo file (all samples, or those in ``sample_ids``)."""
    path = Path(path).expanduser()
    samples = locomo_samples(load_json(path, max_file_bytes), path.name)
    if sample_ids is not None:
        wanted = list(dict.fromkeys(sample_ids))
        known = {s["sample_id"] for s in samples}
        missing = [w for w in wanted if w not in known]
        if missing:
            raise BadInput(f"{path.name}: no sample {', '.join(missing)}; the file has {', '.join(sorted(known))}")
        samples = [s for s in samples if s["sample_id"] in wanted]
    sessions = [s for sample in samples for s in locomo_sessions(sample, max_text_bytes=max_text_bytes, where=path.name)]
    return import_sessions(store, sessions)


def import_path(store: Store, path: Path, *, max_file_bytes: int, max_text_bytes: int, fmt: str = "auto") -> ImportReport:
    """Import a JSON file as ``fmt`` (``chat``, ``locomo`` or ``auto``: detected from its shape)."""
    path = Path(path).expanduser()
    if fmt not in ("auto", "chat", "locomo"):
        raise BadInput(f"unknown import format {fmt!r}; expected auto, chat or locomo")
    data = load_json(path, max_file_bytes)
    kind = detect_format(data) if fmt == "auto" else fmt
    if kind == "locomo":
        samples = locomo_samples(data, path.name)
        sessions = [s for sample in samples for s in locomo_sessions(sample, max_text_bytes=max_text_bytes, where=path.name)]
    else:
        sessions = parse_chat(data, name=path.stem, max_text_bytes=max_text_bytes)
    return import_sessions(store, sessions)

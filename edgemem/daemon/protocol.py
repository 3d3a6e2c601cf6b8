"""The socket protocol (DESIGN "Socket protocol"): framing, message shapes, methods, error codes.

Newline-delimited JSON, one object per line, UTF-8:

- request  ``{"v": 1, "id": "7", "method": "ask", "params": {"question": "..."}}``
- reply    ``{"id": "7", "result": {...}}`` or ``{"id": "7", "error": {"code": "...", "message": "..."}}``
- stream   zero or more ``{"id": "7", "event": "token", "data": "..."}`` before the reply.
- progress with ``"stream": "progress"`` (ask, chat) the events also say what the daemon is doing,
           in this order: ``{"event": "route", "data": {"tag": "...", "layer": "rules"}}`` (tag
           null for layer "active-context"), ``{"event": "notes", "data": {"found": 12, "packed": 5,
           "tier": 2, "attempt": 0}}``, the ``token`` events, ``{"event": "checking", "data":
           {"attempt": 0}}`` while the validator checks the answer, and, when it rejects it,
           ``{"event": "retry", "data": {"tag": "..."}}`` followed by a second notes/tokens/checking
           round. ``"stream": true`` gets token events only, as before; ``false`` no events.
- cancel   ``{"v": 1, "id": "8", "method": "cancel", "params": {"request": "7"}}`` stops request 7
           of this connection: its generation ends at the next token (a prefill is aborted), the
           model is free at once, the query's trace row records it as cancelled, and request 7 gets
           ``{"id": "7", "error": {"code": "cancelled", ...}}``; the cancel itself gets
           ``{"id": "8", "result": {"cancelled": true}}`` (false: no such request in flight). A client
           that hangs up (closes its socket) cancels all of its requests the same way; a half-close
           (shutdown of its writing side) does not: it still gets its replies.

A frame longer than ``max_frame_bytes`` (newline not counted), a line that is not a JSON object, a
wrong version, an unknown method or bad params each get an error reply; the connection stays open.
Blank lines are ignored. Error codes are the ``code`` of an :class:`EdgememError` subclass, so the
client turns a reply back into the same typed error and the CLI exits with the same code as
``--local`` would. This module does no I/O: :class:`FrameReader` is fed bytes and yields frames.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from edgemem.errors import DaemonUnavailable, EdgememError, ProtocolError

VERSION = 1


# -- errors on the wire ------------------------------------------------------------------------------
class BadFrame(ProtocolError):
    """A line that is not UTF-8 JSON, or not a JSON object."""

    code = "bad_frame"


class FrameTooLarge(ProtocolError):
    """A line longer than the configured ``max_frame_bytes``; it is discarded up to its newline."""

    code = "frame_too_large"


class BadVersion(ProtocolError):
    """A request for a protocol version this daemon does not speak."""

    code = "bad_version"


class UnknownMethod(ProtocolError):
    """A method name this daemon does not know."""

    code = "unknown_method"


class BadParams(ProtocolError):
    """Missing, unknown or mistyped request parameters."""

    code = "bad_params"


class Forbidden(ProtocolError):
    """A peer running as another user: the daemon serves only its owner."""

    code = "forbidden"


class ShuttingDown(DaemonUnavailable):
    """The daemon is stopping and takes no new requests."""

    code = "shutting_down"


class RequestCancelled(EdgememError):
    """The request was cancelled by its client (``cancel``, or Ctrl+C in the CLI)."""

    code = "cancelled"
    exit_code = 130


class InternalError(EdgememError):
    """A bug in the daemon; the request failed, the daemon keeps serving (details in its log)."""

    code = "internal"
    exit_code = 1


class RemoteError(EdgememError):
    """An error reply, carrying the daemon's code and the exit code the CLI uses for it."""

    def __init__(self, code: str, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.code = code
        self.exit_code = exit_code


def _error_classes() -> dict[str, type[EdgememError]]:
    found: dict[str, type[EdgememError]] = {}
    todo: list[type[EdgememError]] = [EdgememError]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.code, cls)
        todo.extend(cls.__subclasses__())
    return found


def remote_error(error: object) -> EdgememError:
    """The typed error for an ``{"code", "message"}`` reply (unknown codes keep exit code 1)."""
    if not isinstance(error, dict):
        return BadFrame(f"the daemon sent a malformed error: {error!r:.200}")
    code = str(error.get("code", "error"))
    message = str(error.get("message", "unknown error"))
    cls = _error_classes().get(code, EdgememError)
    return RemoteError(code, message, cls.exit_code)


# -- methods and their parameters ---------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    types: tuple[type, ...]
    required: bool = False
    default: Any = None


@dataclass(frozen=True)
class Method:
    params: dict[str, Param] = field(default_factory=dict)
    streams: bool = False  # sends "token" events before the reply when params["stream"] is true


_STR = (str,)
_INT = (int,)
_BOOL = (bool,)
_STREAM = (bool, str)  # true, false or PROGRESS
PROGRESS = "progress"

METHODS: dict[str, Method] = {
    # "now": when the question is asked (ISO 8601 date or time; the daemon's clock when absent)
    # "stream": true (token events), false (none) or "progress" (tokens and route/notes/checking/retry)
    "ask": Method({"question": Param(_STR, True), "session": Param(_STR), "now": Param(_STR),
                   "stream": Param(_STREAM, default=True)}, streams=True),
    "chat": Method({"message": Param(_STR, True), "session": Param(_STR), "stream": Param(_STREAM, default=True)}, streams=True),
    "cancel": Method({"request": Param((str, int), True)}),
    "remember": Method({"text": Param(_STR, True), "speaker": Param(_STR), "when": Param(_STR), "session": Param(_STR)}),
    "ingest": Method({"path": Param(_STR, True)}),
    "forget": Method({"note_id": Param(_INT), "source": Param((str, int)), "query": Param(_STR),
                      "confirm": Param(_BOOL, default=False)}),
    "export": Method({"format": Param(_STR, True), "path": Param(_STR, True)}),
    "status": Method(),
    "profile": Method(),
    "search": Method({"query": Param(_STR, True), "k": Param(_INT)}),
    "recent": Method({"limit": Param(_INT, default=20)}),
    "watch.add": Method({"path": Param(_STR, True)}),
    "watch.remove": Method({"path": Param(_STR, True)}),
    "watch.list": Method(),
    "trace": Method({"query_id": Param(_STR, True)}),
    "note": Method({"note_id": Param(_INT, True)}),
    "shutdown": Method(),
}

_PATH_PARAMS = {"ingest", "export", "watch.add", "watch.remove"}  # resolved by the client, against its cwd
_TIME_PARAMS = ("when", "now")  # ISO 8601 strings on the wire, checked here


@dataclass(frozen=True)
class Request:
    id: str | int | None
    method: str
    params: dict[str, Any]

    @property
    def streams(self) -> bool:
        return METHODS[self.method].streams and bool(self.params.get("stream"))

    @property
    def progress(self) -> bool:
        """Stream the stages (route, notes, checking, retry) as well as the tokens."""
        return self.streams and self.params.get("stream") == PROGRESS


def _fail(exc: ProtocolError, request_id: Any) -> ProtocolError:
    exc.request_id = request_id  # type: ignore[attr-defined]  # so the error reply carries the id
    return exc


def _check_params(method: str, params: dict[str, Any], request_id: Any) -> dict[str, Any]:
    spec = METHODS[method].params
    unknown = sorted(set(params) - set(spec))
    if unknown:
        raise _fail(BadParams(f"{method}: unknown parameter(s) {', '.join(unknown)}; it takes {', '.join(spec) or 'none'}"), request_id)
    out: dict[str, Any] = {}
    for name, p in spec.items():
        value = params.get(name)
        if value is None:
            if p.required:
                raise _fail(BadParams(f"{method}: parameter {name!r} is required"), request_id)
            out[name] = p.default
            continue
        # bool is an int in Python; a note id of `true` is a client bug, not note 1
        if not isinstance(value, p.types) or (isinstance(value, bool) and bool not in p.types):
            want = " or ".join(t.__name__ for t in p.types)
            raise _fail(BadParams(f"{method}: parameter {name!r} must be {want}, got {type(value).__name__}"), request_id)
        out[name] = value
    if isinstance(out.get("stream"), str) and out["stream"] != PROGRESS:
        raise _fail(BadParams(f"{method}: 'stream' must be true, false or {PROGRESS!r}, got {out['stream']!r:.40}"), request_id)
    if method in _PATH_PARAMS and not out["path"].startswith("/"):
        raise _fail(BadParams(f"{method}: path must be absolute (the client resolves it against its working folder)"), request_id)
    for name in _TIME_PARAMS:
        if out.get(name) is not None:
            try:
                parse_time(out[name])
            except ValueError:
                raise _fail(BadParams(f"{method}: {name!r} must be an ISO 8601 date or time, got {out[name]!r:.60}"),
                            request_id) from None
    return out


def parse_time(value: str) -> datetime:
    """An ISO 8601 date ("2023-05-20", midnight) or time ("2023-05-20T14:30", offsets allowed)."""
    return datetime.fromisoformat(value)


def decode(frame: bytes) -> Request:
    """Parse one frame into a Request, or raise a ProtocolError (with ``request_id`` when known)."""
    try:
        msg = json.loads(frame.decode("utf-8"))
    except UnicodeDecodeError:
        raise _fail(BadFrame("frame is not UTF-8 text"), None) from None
    except json.JSONDecodeError as exc:
        raise _fail(BadFrame(f"frame is not JSON ({exc.msg} at column {exc.colno})"), None) from None
    except ValueError as exc:  # e.g. an integer literal over Python's digit limit
        raise _fail(BadFrame(f"frame is not usable JSON ({str(exc)[:80]})"), None) from None
    except RecursionError:
        raise _fail(BadFrame("frame nests too deeply"), None) from None
    if not isinstance(msg, dict):
        raise _fail(BadFrame(f"a request is a JSON object, got {type(msg).__name__}"), None)
    request_id = msg.get("id")
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        request_id = None
    if msg.get("v") != VERSION:
        raise _fail(BadVersion(f"protocol version {msg.get('v')!r:.20} is not spoken here; this daemon speaks v{VERSION}"), request_id)
    if "id" in msg and request_id is None and msg["id"] is not None:
        raise _fail(BadFrame("'id' must be a string or an integer"), None)
    method = msg.get("method")
    if not isinstance(method, str):
        raise _fail(BadFrame("a request needs a 'method' string"), request_id)
    if method not in METHODS:
        raise _fail(UnknownMethod(f"unknown method {method!r:.60}; known: {', '.join(METHODS)}"), request_id)
    params = msg.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise _fail(BadParams(f"{method}: 'params' must be an object"), request_id)
    extra = sorted(set(msg) - {"v", "id", "method", "params"})
    if extra:
        raise _fail(BadFrame(f"unknown request field(s) {', '.join(extra)}"), request_id)
    return Request(request_id, method, _check_params(method, params, request_id))


# -- encoding -----------------------------------------------------------------------------------
def _line(obj: dict) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode("utf-8")


def request(request_id: str | int, method: str, params: dict | None = None) -> bytes:
    return _line({"v": VERSION, "id": request_id, "method": method, "params": params or {}})


def result(request_id: Any, value: Any) -> bytes:
    return _line({"id": request_id, "result": value})


def error(request_id: Any, exc: EdgememError) -> bytes:
    return _line({"id": request_id, "error": {"code": exc.code, "message": exc.message}})


def event(request_id: Any, name: str, data: Any) -> bytes:
    return _line({"id": request_id, "event": name, "data": data})


# -- framing ------------------------------------------------------------------------------------
OVERSIZED = object()  # what FrameReader yields in place of a frame over the limit


class FrameReader:
    """Split a byte stream into newline-terminated frames of at most ``max_bytes`` each.

    An oversized frame yields :data:`OVERSIZED` as soon as it is detected; its remaining bytes are
    dropped up to the next newline, so memory stays bounded by ``max_bytes`` whatever the peer sends.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> Iterator[bytes | object]:
        self._buf += data
        while True:
            nl = self._buf.find(b"\n")
            if self._discarding:
                if nl < 0:
                    self._buf.clear()
                    return
                del self._buf[: nl + 1]
                self._discarding = False
                continue
            if nl < 0:
                if len(self._buf) > self.max_bytes:
                    self._buf.clear()
                    self._discarding = True
                    yield OVERSIZED
                return
            frame = bytes(self._buf[:nl])
            del self._buf[: nl + 1]
            if len(frame) > self.max_bytes:
                yield OVERSIZED
            elif frame.strip():
                yield frame

    def close(self) -> Iterator[bytes | object]:
        """At end of input: a last frame sent without its newline still counts."""
        if not self._discarding and self._buf.strip():
            yield from self.feed(b"\n")
        self._buf.clear()


# -- results shared by the daemon and --local -------------------------------------------------------
def answer_result(answer: Any, **extra: Any) -> dict:
    """The wire (and ``--json``) form of an :class:`edgemem.recall.pipeline.Answer`."""
    return {
        "query_id": answer.query_id,
        "answer": answer.text,
        "notes": [note_result(n) for n in answer.notes],
        **extra,
    }


def note_result(note: Any) -> dict:
    """The wire form of a note as answers, ``search`` and ``recent`` cite it."""
    return {"id": note.id, "date": note.event_time, "speaker": note.speaker, "content": note.content}


def notes_result(notes: list[Any], **extra: Any) -> dict:
    """The wire form of ``search`` and ``recent``: the notes, best (or newest) first."""
    return {**extra, "notes": [note_result(n) for n in notes]}

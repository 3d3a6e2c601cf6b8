"""The wire format without a socket: framing limits, request validation, error codes both ways."""

from __future__ import annotations

import json

import pytest

from edgemem.daemon import protocol
from edgemem.daemon.protocol import OVERSIZED, FrameReader
from edgemem.errors import DaemonUnavailable, StoreError


def test_frames_split_on_newlines_across_reads() -> None:
    r = FrameReader(100)
    assert list(r.feed(b'{"a":')) == []
    assert list(r.feed(b'1}\n{"b":2}\n{"c"')) == [b'{"a":1}', b'{"b":2}']
    assert list(r.feed(b":3}\n")) == [b'{"c":3}']


def test_blank_lines_are_ignored_and_a_last_unterminated_frame_counts() -> None:
    r = FrameReader(100)
    assert list(r.feed(b"\n  \r\n{}\n")) == [b"{}"]
    assert list(r.feed(b'{"tail":1}')) == []
    assert list(r.close()) == [b'{"tail":1}']


def test_oversized_frame_reported_once_and_discarded_up_to_its_newline() -> None:
    r = FrameReader(10)
    out = list(r.feed(b"x" * 25))  # detected before its newline arrives
    assert out == [OVERSIZED]
    assert list(r.feed(b"y" * 1000)) == []  # still the same frame: dropped, nothing buffered
    assert len(r._buf) == 0
    assert list(r.feed(b"zz\n{}\n")) == [b"{}"]  # the next frame is intact
    # at exactly the limit a frame passes; one byte over it does not
    assert list(r.feed(b"a" * 10 + b"\n" + b"b" * 11 + b"\n")) == [b"a" * 10, OVERSIZED]


@pytest.mark.parametrize(("line", "code"), [
    (b"\xff\xfe", "bad_frame"),
    (b"{not json", "bad_frame"),
    (b"[1, 2]", "bad_frame"),
    (b"[" * 50000 + b"]" * 50000, "bad_frame"),
    (b"1" * 5000, "bad_frame"),  # over Python's int digit limit
    (b'{"id": "1", "method": "status"}', "bad_version"),
    (b'{"v": 2, "id": "1", "method": "status"}', "bad_version"),
    (b'{"v": 1, "id": "1"}', "bad_frame"),
    (b'{"v": 1, "id": [1], "method": "status"}', "bad_frame"),
    (b'{"v": 1, "id": "1", "method": "status", "extra": 1}', "bad_frame"),
    (b'{"v": 1, "id": "1", "method": "rm -rf"}', "unknown_method"),
    (b'{"v": 1, "id": "1", "method": "ask"}', "bad_params"),
    (b'{"v": 1, "id": "1", "method": "ask", "params": []}', "bad_params"),
    (b'{"v": 1, "id": "1", "method": "ask", "params": {"question": 3}}', "bad_params"),
    (b'{"v": 1, "id": "1", "method": "ask", "params": {"question": "q", "k": 3}}', "bad_params"),
    (b'{"v": 1, "id": "1", "method": "note", "params": {"note_id": true}}', "bad_params"),
    (b'{"v": 1, "id": "1", "method": "ingest", "params": {"path": "relative/notes"}}', "bad_params"),
    (b'{"v": 1, "id": "1", "method": "remember", "params": {"text": "t", "when": "yesterday"}}', "bad_params"),
    (b'{"v": 1, "id": "1", "method": "ask", "params": {"question": "q", "now": "last tuesday"}}', "bad_params"),
    (b'{"v": 1, "id": "1", "method": "ask", "params": {"question": "q", "now": 1687255200}}', "bad_params"),
])
def test_bad_requests_raise_typed_errors(line: bytes, code: str) -> None:
    with pytest.raises(protocol.ProtocolError) as info:
        protocol.decode(line)
    assert info.value.code == code
    assert "\n" not in info.value.message


def test_error_keeps_the_request_id_when_it_was_readable() -> None:
    with pytest.raises(protocol.UnknownMethod) as info:
        protocol.decode(b'{"v": 1, "id": 42, "method": "nope"}')
    reply = json.loads(protocol.error(info.value.request_id, info.value))
    assert reply == {"id": 42, "error": {"code": "unknown_method", "message": info.value.message}}


def test_valid_request_gets_defaults() -> None:
    req = protocol.decode(protocol.request("7", "ask", {"question": "where?"}))
    assert req.id == "7" and req.method == "ask"
    assert req.params == {"question": "where?", "session": None, "now": None, "stream": True}
    assert req.streams
    assert not protocol.decode(protocol.request("8", "ask", {"question": "q", "stream": False})).streams


@pytest.mark.parametrize("now", ["2023-06-20", "2023-06-20T10:00", "2023-06-20T10:00:00+02:00"])
def test_ask_takes_an_iso_reference_time(now: str) -> None:
    req = protocol.decode(protocol.request("9", "ask", {"question": "how many days ago?", "now": now}))
    assert req.params["now"] == now
    assert protocol.parse_time(now).date().isoformat() == "2023-06-20"


def test_remote_errors_map_back_to_exit_codes() -> None:
    store = protocol.remote_error({"code": StoreError.code, "message": "locked"})
    assert (store.code, store.exit_code, store.message) == ("store", StoreError.exit_code, "locked")
    assert protocol.remote_error({"code": "bad_params", "message": "x"}).exit_code == protocol.BadParams.exit_code
    assert protocol.remote_error({"code": "shutting_down", "message": "x"}).exit_code == DaemonUnavailable.exit_code
    assert protocol.remote_error({"code": "from-the-future", "message": "x"}).exit_code == 1

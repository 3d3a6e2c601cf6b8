"""Importers on synthetic files: LoCoMo format (blip captions, session times), chat JSON, bad input."""

import json
from pathlib import Path

import pytest

from edgemem.errors import BadInput
from edgemem.ingest import importers
from edgemem.runtime.fake import HashEmbedder
from edgemem.store import jobs
from edgemem.store import raw as raw_store
from edgemem.store.db import Store

LIMITS = {"max_file_bytes": 1 << 20, "max_text_bytes": 4096}


def locomo_sample(sample_id: str = "conv-x") -> dict:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            # Keys deliberately out of order, and session 10 after 2: sessions are ordered by number.
            "session_10_date_time": "9:05 am on 3 June, 2023",
            "session_10": [{"speaker": "Ben", "dia_id": "D10:1", "text": "Back from Lisbon!"}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I went to the pottery class yesterday."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Look at this!",
                 "blip_caption": "a photo of a red bowl on a table"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "", "blip_caption": "a sunset over the sea"},
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "I adopted a cat named Miso."}],
        },
        "qa": [],
    }


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "store.db", embed_model="hash-embedder", dim=HashEmbedder().dim)
    yield s
    s.close()


def write(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_locomo_sessions_order_times_captions_and_ids():
    sessions = importers.locomo_sessions(locomo_sample(), max_text_bytes=4096)
    assert [s.uri for s in sessions] == ["conv-x/session_1", "conv-x/session_2", "conv-x/session_10"]
    first = sessions[0]
    # Session time "1:56 pm on 8 May, 2023"; turn n is n seconds later, so order survives.
    assert [t.when.isoformat() for t in first.turns] == ["2023-05-08T13:56:00", "2023-05-08T13:56:01", "2023-05-08T13:56:02"]
    assert [t.ext_id for t in first.turns] == ["D1:1", "D1:2", "D1:3"]
    assert first.turns[1].text == "Look at this! [shares a photo: a photo of a red bowl on a table]"
    assert first.turns[2].text == "[shares a photo: a sunset over the sea]"
    assert sessions[2].turns[0].when.isoformat() == "2023-06-03T09:05:00"


def test_import_locomo_one_source_per_session_with_jobs(store, tmp_path):
    path = write(tmp_path / "locomo.json", [locomo_sample("conv-a"), locomo_sample("conv-b")])
    report = importers.import_locomo(store, path, sample_ids=["conv-b"], **LIMITS)
    assert report.added == ["conv-b/session_1", "conv-b/session_2", "conv-b/session_10"]
    conn = store.conn
    sources = raw_store.list_sources(conn, "conversation")
    assert [s.uri for s in sources] == report.added
    turns = raw_store.turns_of_source(conn, sources[0].id)
    assert [(t.speaker, t.ext_id, t.event_time) for t in turns] == [
        ("Ana", "D1:1", "2023-05-08T13:56:00"), ("Ben", "D1:2", "2023-05-08T13:56:01"), ("Ana", "D1:3", "2023-05-08T13:56:02"),
    ]
    assert "[shares a photo: a photo of a red bowl on a table]" in turns[1].text
    assert jobs.counts(conn) == {"pending": 5}  # one note job per turn


def test_reimport_is_idempotent_and_growth_appends(store, tmp_path):
    sample = locomo_sample()
    path = write(tmp_path / "locomo.json", [sample])
    importers.import_locomo(store, path, **LIMITS)
    again = importers.import_locomo(store, path, **LIMITS)
    assert again.added == [] and len(again.unchanged) == 3 and again.raw_ids == []
    sample["conversation"]["session_2"].append({"speaker": "Ben", "dia_id": "D2:2", "text": "Cute name."})
    write(path, [sample])
    grown = importers.import_locomo(store, path, **LIMITS)
    assert grown.extended == ["conv-x/session_2"] and len(grown.raw_ids) == 1
    source = raw_store.get_source(store.conn, "conversation", "conv-x/session_2")
    assert [t.ext_id for t in raw_store.turns_of_source(store.conn, source.id)] == ["D2:1", "D2:2"]
    sample["conversation"]["session_2"][0]["text"] = "I adopted a dog named Miso."
    write(path, [sample])
    changed = importers.import_locomo(store, path, **LIMITS)
    assert changed.replaced == ["conv-x/session_2"]
    source = raw_store.get_source(store.conn, "conversation", "conv-x/session_2")
    texts = [t.text for t in raw_store.turns_of_source(store.conn, source.id)]
    assert texts == ["I adopted a dog named Miso.", "Cute name."]


def test_chat_json_format(store, tmp_path):
    export = {
        "title": "family chat",
        "sessions": [
            {"id": "s1", "started_at": "2024-03-01T18:00:00", "turns": [
                {"speaker": "Ana", "text": "My sister's birthday is 14 March."},
                {"role": "assistant", "content": "Noted."},
                {"speaker": "Ana", "text": "She loves orchids.", "time": "2024-03-01T18:05:30", "id": "msg-9"},
            ]},
            {"date": 1709402400, "turns": [{"speaker": "Ana", "text": "Booked the restaurant."}]},
        ],
    }
    path = write(tmp_path / "family.json", export)
    report = importers.import_path(store, path, **LIMITS)
    assert report.added == ["family/s1", "family/session-2"]
    conn = store.conn
    s1 = raw_store.get_source(conn, "conversation", "family/s1")
    turns = raw_store.turns_of_source(conn, s1.id)
    assert [(t.speaker, t.event_time, t.ext_id) for t in turns] == [
        ("Ana", "2024-03-01T18:00:00", "s1:1"), ("assistant", "2024-03-01T18:00:01", "s1:2"),
        ("Ana", "2024-03-01T18:05:30", "msg-9"),
    ]
    from datetime import datetime

    s2 = raw_store.get_source(conn, "conversation", "family/session-2")
    (only,) = raw_store.turns_of_source(conn, s2.id)
    assert only.event_time == datetime.fromtimestamp(1709402400).isoformat()  # Unix time, local
    # A bare list of sessions is the same format.
    bare = write(tmp_path / "bare.json", export["sessions"])
    assert importers.import_chat_json(store, bare, **LIMITS).added == ["bare/s1", "bare/session-2"]


def test_timezone_offsets_become_local_time():
    from datetime import datetime, timezone

    (session,) = importers.parse_chat(
        [{"started_at": "2024-03-01T18:00:00+00:00", "turns": [{"speaker": "A", "text": "hi"}]}],
        name="tz", max_text_bytes=100)
    expected = datetime(2024, 3, 1, 18, tzinfo=timezone.utc).astimezone().replace(tzinfo=None)
    assert session.turns[0].when == expected


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nope": 1}, "unrecognised JSON"),
        ([{"turns": []}], "session 1: 'turns' must be a non-empty list"),
        ([{"started_at": "2024-01-01", "turns": [{"text": "hi"}]}], "session 1, turn 1: missing 'speaker' or 'role'"),
        ([{"started_at": "2024-01-01", "turns": [{"speaker": "A", "text": "  "}]}], "turn 1 text is empty"),
        ([{"started_at": "yesterday-ish", "turns": [{"speaker": "A", "text": "hi"}]}], "unrecognised timestamp"),
        ([{"turns": [{"speaker": "A", "text": "hi"}]}], "no 'time', and its session has no 'started_at'"),
        ([{"id": "x", "date": "2024-01-01", "turns": [{"speaker": "A", "text": "a"}]},
          {"id": "x", "date": "2024-01-01", "turns": [{"speaker": "A", "text": "b"}]}], "duplicate session id 'x'"),
    ],
)
def test_bad_chat_input_is_refused_and_nothing_stored(store, tmp_path, data, message):
    path = write(tmp_path / "bad.json", data)
    with pytest.raises(BadInput, match=message):
        importers.import_path(store, path, **LIMITS)
    assert raw_store.count(store.conn) == 0


def test_bad_locomo_input_stores_nothing_even_after_good_sessions(store, tmp_path):
    sample = locomo_sample()
    sample["conversation"]["session_10"].append({"speaker": "Ben", "text": "no dia_id here"})
    path = write(tmp_path / "locomo.json", [sample])
    with pytest.raises(BadInput, match=r"conv-x session_10, turn 2: missing 'dia_id'"):
        importers.import_locomo(store, path, **LIMITS)
    assert raw_store.count(store.conn) == 0
    del sample["conversation"]["session_2_date_time"]
    write(path, [sample])
    with pytest.raises(BadInput, match="missing 'session_2_date_time'"):
        importers.import_path(store, path, fmt="locomo", **LIMITS)
    with pytest.raises(BadInput, match="no sample conv-zzz"):
        importers.import_locomo(store, path, sample_ids=["conv-zzz"], **LIMITS)


def test_unreadable_files_are_bad_input(store, tmp_path):
    with pytest.raises(BadInput, match="No such file"):
        importers.import_path(store, tmp_path / "missing.json", **LIMITS)
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    with pytest.raises(BadInput, match="not valid JSON"):
        importers.import_path(store, broken, **LIMITS)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(BadInput, match="not UTF-8"):
        importers.import_path(store, binary, **LIMITS)
    big = write(tmp_path / "big.json", [{"date": "2024-01-01", "turns": [{"speaker": "A", "text": "x" * 5000}]}])
    with pytest.raises(BadInput, match="limit is 4 KiB"):
        importers.import_path(store, big, **LIMITS)
    with pytest.raises(BadInput, match="limit is 10"):
        importers.import_path(store, big, max_file_bytes=10, max_text_bytes=4096)

"""Accepting input: raw stored verbatim with a job, bad input refused with nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgemem.engine import Engine
from edgemem.errors import BadInput
from edgemem.runtime.fake import HashEmbedder, ScriptedLLM
from edgemem.store import jobs, notes, raw


@pytest.fixture
def engine(settings):
    eng = Engine.open(settings, llm=ScriptedLLM(default="ok"), embedder=HashEmbedder(), steps=[])
    yield eng
    eng.close()


def _counts(engine: Engine) -> tuple[int, int, int]:
    conn = engine.store.conn
    return raw.count(conn), sum(jobs.counts(conn).values()), notes.count_active(conn)


def test_remember_stores_raw_verbatim_then_a_note(engine: Engine) -> None:
    text = "  Dentist moved to Thursday 9am.\nBring the X-rays!  "
    result = engine.remember(text, when="2024-03-01T08:30:00", process=True)
    turn = raw.get_turn(engine.store.conn, result["raw_ids"][0])
    assert turn.text == text and turn.event_time == "2024-03-01T08:30:00"
    assert len(result["notes"]) == 1
    assert jobs.counts(engine.store.conn) == {"done": 1}


@pytest.mark.parametrize(
    ("text", "reason"),
    [("", "empty"), ("   \n\t ", "empty"), ("abc\x00def", "NUL"), ("x" * 300_000, "limit is")],
)
def test_bad_text_is_refused_and_nothing_written(engine: Engine, text: str, reason: str) -> None:
    before = _counts(engine)
    with pytest.raises(BadInput, match=reason) as err:
        engine.remember(text)
    assert "\n" not in str(err.value)
    assert _counts(engine) == before


def test_bad_files_are_refused(engine: Engine, tmp_path: Path) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("")
    binary = tmp_path / "photo.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    huge = tmp_path / "huge.txt"
    huge.write_text("word " * 4_000_000)
    before = _counts(engine)
    for path, reason in [(empty, "empty"), (binary, "binary"), (latin, "UTF-8"), (huge, "limit is"),
                         (tmp_path / "missing.md", "does not exist")]:
        with pytest.raises(BadInput, match=reason):
            engine.ingest(path)
    assert _counts(engine) == before


def test_folder_ingest_skips_bad_files_and_reingest_is_a_noop(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Garden\n\nThe tomatoes need water every morning.\n\nThe basil is on the left.")
    (folder / "b.txt").write_text("Call the plumber about the kitchen sink.")
    (folder / "c.txt").write_bytes(b"\x00\x01binary")
    (folder / "ignored.pdf").write_bytes(b"%PDF-1.4")
    report = engine.ingest(folder, process=True)
    assert sorted(Path(a["path"]).name for a in report["added"]) == ["a.md", "b.txt"]
    # Nothing left out silently: the binary .txt and the PDF are listed with why (issue 13).
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert list(reasons) == ["c.txt", "ignored.pdf"]
    assert "binary" in reasons["c.txt"] and "PDF" in reasons["ignored.pdf"] and "pdftotext" in reasons["ignored.pdf"]
    before = _counts(engine)
    again = engine.ingest(folder, process=True)
    assert len(again["unchanged"]) == 2 and not again["added"]
    assert _counts(engine) == before


def test_changed_file_replaces_its_notes(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "todo.md"
    path.write_text("Buy oat milk.")
    engine.ingest(path, process=True)
    path.write_text("Buy almond milk instead.")
    engine.ingest(path, process=True)
    contents = [n.content for n in notes.iter_active(engine.store.conn)]
    assert contents == ["Buy almond milk instead."]
    assert [t.text for t in raw.iter_turns(engine.store.conn)] == ["Buy almond milk instead."]


def test_chunking_keeps_paragraphs_and_bounds_size() -> None:
    from edgemem.ingest.raw import CHUNK_CHARS, chunk_text

    text = "\n\n".join(f"Paragraph {i}. " + "Sentence about things. " * (i * 20) for i in range(1, 5))
    chunks = chunk_text(text)
    assert all(len(c) <= CHUNK_CHARS for c in chunks)
    assert "".join(chunks).replace("\n", "").replace(" ", "") == text.replace("\n", "").replace(" ", "")

"""`rebuild` recomputes derived structures from raw: same notes, raw untouched."""

from __future__ import annotations

from edgemem.engine import Engine
from edgemem.store import notes, raw


def test_rebuild_yields_the_same_notes(settings, embedder) -> None:
    with Engine.open(settings, embedder=embedder, steps=[]) as engine:
        for i, text in enumerate(["I moved to Lisbon last month.", "My bike is a green Brompton.", "Ana loves orchids."]):
            engine.remember(text, speaker="me", when=f"2024-05-0{i + 1}T10:00:00")
        engine.process()
        conn = engine.store.conn
        before = sorted((n.content, n.event_time, tuple(n.dates and [d["label"] for d in n.dates])) for n in notes.iter_active(conn))
        raw_before = [(t.id, t.text) for t in raw.iter_turns(conn)]
        result = engine.rebuild()
        after = sorted((n.content, n.event_time, tuple(n.dates and [d["label"] for d in n.dates])) for n in notes.iter_active(conn))
        assert result["notes"] == 3 and after == before
        assert [(t.id, t.text) for t in raw.iter_turns(conn)] == raw_before
        assert "April 2024" in " ".join(n.content for n in notes.iter_active(conn))  # "last month" resolved again
        hits = notes.knn(conn, embedder.embed(["where do I live?"])[0], 1)
        assert notes.get(conn, hits[0][0]).content.startswith("I moved to Lisbon")

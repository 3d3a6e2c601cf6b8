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


def test_rebuild_with_the_organising_steps_gives_comparable_clusters(settings, embedder) -> None:
    from edgemem.runtime.fake import ScriptedLLM
    from edgemem.store import clusters

    topics = ["I planted tomatoes and basil in the garden", "The quarterly tax return is due",
              "My daughter's violin recital went well", "We booked flights to Lisbon for June"]
    # Every model reply is invalid JSON: each model step takes its deterministic fallback (counted).
    with Engine.open(settings, llm=ScriptedLLM(default="not json"), embedder=embedder) as engine:
        for i in range(120):
            engine.remember(f"{topics[i % 4]} (entry {i}).", speaker="me", when=f"2024-05-{1 + i % 28:02d}T10:{i % 60:02d}:00")
        engine.process()
        conn = engine.store.conn
        before_notes = sorted(n.content for n in notes.iter_active(conn))
        before_clusters = clusters.count(conn)
        result = engine.rebuild()
        after_notes = sorted(n.content for n in notes.iter_active(conn))
        assert after_notes == before_notes and result["raw_turns"] == 120
        assert before_clusters >= 2 and abs(clusters.count(conn) - before_clusters) <= 1
        assert conn.execute("SELECT count(*) FROM notes WHERE status = 'active' AND cluster_id IS NULL").fetchone()[0] == 0
        assert engine.store.integrity_check() == "ok"

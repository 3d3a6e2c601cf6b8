"""Retrieval fusion and the named-speaker preference, on a real store with the real embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgemem.recall import retrieve
from edgemem.recall.retrieve import Hit, bm25, hybrid, prefer_speaker, rrf
from edgemem.store import notes
from edgemem.store.db import Store

TURNS = [
    ("Melanie", "I ran a charity race for mental health last Saturday."),
    ("Caroline", "I went to a charity race for trans rights with my friends."),
    ("Melanie", "My kids loved the pottery workshop, we made bowls."),
    ("Caroline", "I have been painting a sunset over the lake."),
    ("Melanie", "Painting landscapes relaxes me after work."),
    ("Caroline", "The race raised money for the youth shelter."),
]


@pytest.fixture
def store(tmp_path: Path, embedder):
    s = Store(tmp_path / "r.db", embed_model=embedder.name, dim=embedder.dim)
    vectors = embedder.embed([f"{who}: {text}" for who, text in TURNS])
    with s.transaction() as conn:
        for i, ((who, text), vec) in enumerate(zip(TURNS, vectors, strict=True), start=1):
            notes.insert(conn, raw_ids=[], content=text, embedding=vec, event_time=f"2023-05-0{i}T10:00:00", speaker=who)
    yield s
    s.close()


def test_rrf_adds_weighted_reciprocal_ranks() -> None:
    fused = rrf({"a": [1, 2], "b": [2, 3]}, k=60, weights={"b": 0.5})
    assert [h.note_id for h in fused] == [2, 1, 3]
    assert fused[0].score == pytest.approx(1 / 62 + 0.5 / 61)
    assert fused[0].pathways == {"a": 2, "b": 1}


def test_bm25_ranks_the_notes_holding_the_rare_words_first(store) -> None:
    ranked = bm25(store.conn, "pottery bowls", 5)
    assert [i for i, _ in ranked] == [3]
    assert bm25(store.conn, "the and of", 5) == []  # stopwords only: nothing to search


def test_the_named_speaker_s_notes_come_first(store, embedder) -> None:
    question = "Does painting landscapes relax Caroline after work?"
    hits = hybrid(store.conn, question, embedder.embed([question])[0], 6)
    speaker_of = {n.id: n.speaker for n in notes.get_many(store.conn, [h.note_id for h in hits])}
    assert speaker_of[hits[0].note_id] == "Melanie"  # by similarity alone, Melanie's painting note wins
    preferred, who = prefer_speaker(store.conn, question, hits, 3)
    assert who == "Caroline"
    assert len(preferred) == 3 and preferred[0].note_id == 4  # Caroline's painting
    before = {h.note_id: h.score for h in hits}
    for h in preferred:  # only Caroline's scores were raised, by the factor
        factor = retrieve.SPEAKER_BOOST if speaker_of[h.note_id] == "Caroline" else 1.0
        assert h.score == pytest.approx(before[h.note_id] * factor)


def test_no_preference_when_the_question_names_nobody_or_both(store) -> None:
    hits = [Hit(1, 0.03), Hit(2, 0.02), Hit(4, 0.01)]
    for question in ("Who went to a charity race?", "Did Melanie and Caroline both run?"):
        assert prefer_speaker(store.conn, question, hits, 2) == (hits[:2], None)
    assert prefer_speaker(store.conn, "What did Caroline do?", [], 2) == ([], None)

"""MemFly keyword index and Leiden topics on a real store, driven through the worker."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgemem.ingest import topics as it
from edgemem.ingest.raw import accept_turns
from edgemem.ingest.worker import Worker
from edgemem.runtime.fake import HashEmbedder
from edgemem.store import notes, search, stats
from edgemem.store import topics as store_topics
from edgemem.store.db import Store

WHEN = "2024-03-01T10:00:00"
GARDEN = ["garden", "tomato", "soil", "compost", "basil", "watering"]
CARS = ["engine", "brakes", "mechanic", "tyres", "clutch", "garage"]


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "t.db", embed_model="hash-embedder", dim=384) as s:
        yield s


def worker_for(store: Store, params: it.TopicParams) -> Worker:
    worker = Worker(store, None, HashEmbedder().embed, steps=[it.KeywordStep(params)])
    worker.handlers.update(it.extra_handlers(params))
    return worker


def feed(store: Store, worker: Worker, texts: list[str]) -> None:
    accept_turns(store, [(None, t, WHEN, None) for t in texts], kind="conversation", uri="test")
    worker.drain()


def themed(words: list[str], n: int) -> list[str]:
    """n notes each carrying four of the theme's words (a sliding window, so every pair co-occurs)."""
    return [" ".join(words[(i + j) % len(words)] for j in range(4)) for i in range(n)]


def test_leiden_finds_the_two_triangles_and_is_deterministic() -> None:
    terms = list("abcdef")
    weights = {(0, 1): 3.0, (0, 2): 3.0, (1, 2): 3.0, (3, 4): 3.0, (3, 5): 3.0, (4, 5): 3.0, (2, 3): 1.0}
    parts = {tuple(sorted(tuple(c) for c in it.leiden(terms, weights, seed=s))) for s in range(5)}
    assert parts == {((0, 1, 2), (3, 4, 5))}


def test_leiden_on_a_noisy_graph_repeats_itself_for_a_seed() -> None:
    rng = np.random.default_rng(1)
    weights = {(i, j): float(rng.integers(1, 4)) for i in range(30) for j in range(i + 1, 30) if rng.random() < 0.15}
    terms = [f"t{i}" for i in range(30)]
    first = it.leiden(terms, weights, seed=3)
    assert all(it.leiden(terms, weights, seed=3) == first for _ in range(3))
    assert sorted(i for c in first for i in c) == list(range(30))


def test_keyword_step_keeps_df_and_memberships(store) -> None:
    worker = worker_for(store, it.TopicParams(every=50))
    feed(store, worker, ["garden tomato soil", "garden basil", "engine brakes"])
    assert store_topics.df(store.conn) == {"basil": 1, "brakes": 1, "engine": 1, "garden": 2, "soil": 1, "tomato": 1}
    first = store.conn.execute("SELECT id FROM notes ORDER BY id").fetchone()[0]
    assert store_topics.note_terms(store.conn, first) == ["garden", "soil", "tomato"]

    with store.transaction() as conn:  # a merge rewrote the keywords: the index follows
        store_topics.sync_note(conn, first, ["garden", "compost"])
    assert store_topics.df(store.conn, ["garden", "compost", "tomato", "soil"]) == {"garden": 2, "compost": 1, "tomato": 0, "soil": 0}
    assert store_topics.df(store.conn, []) == {}


def test_topics_job_runs_every_n_notes_at_most_once_pending(store) -> None:
    worker = worker_for(store, it.TopicParams(every=4))
    feed(store, worker, themed(GARDEN, 3))
    assert store_topics.all_topics(store.conn) == []
    feed(store, worker, themed(GARDEN, 6)[3:] + themed(CARS, 6))  # 9 more notes in one burst
    kinds = [r[0] for r in store.conn.execute("SELECT kind FROM jobs WHERE kind = 'topics'")]
    assert kinds == ["topics"]  # enqueued at the 4th note, still pending at the 8th: one job
    assert stats.all_stats(store.conn)["topics_rebuilt"] == 1
    assert len(store_topics.all_topics(store.conn)) == 2
    assert store.conn.execute("SELECT value FROM meta WHERE key = 'topics_new_notes'").fetchone()[0] == "0"


def test_rebuild_partitions_co_occurring_keywords_with_centroids(store) -> None:
    feed(store, worker_for(store, it.TopicParams(every=1000)), themed(GARDEN, 8) + themed(CARS, 8) + ["garden lonelyword"])
    with store.transaction() as conn:
        plan = it.rebuild_topics(conn)
    assert plan.vocabulary == 12 and plan.notes == 17  # "lonelyword" is in one note only: not a vertex
    found = {frozenset(store_topics.terms_of(store.conn, t.id)): t for t in store_topics.all_topics(store.conn)}
    assert set(found) == {frozenset(GARDEN), frozenset(CARS)}
    garden = found[frozenset(GARDEN)]
    assert garden.size == 9 and found[frozenset(CARS)].size == 8
    df = store_topics.df(store.conn, GARDEN)
    assert garden.label == " / ".join(sorted(GARDEN, key=lambda t: (-df[t], t))[:3])  # most frequent, then a-z

    emb = HashEmbedder()
    (gv,) = emb.embed(["garden tomato soil compost"])
    assert search.nearest_topics(store.conn, gv, 1)[0][0] == garden.id
    members = notes.vectors(store.conn, [r[0] for r in store.conn.execute(
        "SELECT id FROM notes WHERE content LIKE '%garden%' OR content LIKE '%tomato%' OR content LIKE '%soil%'"
        " OR content LIKE '%compost%' OR content LIKE '%basil%' OR content LIKE '%watering%'")])
    mean = np.mean(list(members.values()), axis=0)
    assert np.allclose(store_topics.centroid(store.conn, garden.id), mean / np.linalg.norm(mean), atol=1e-5)

    before = [(t.label, t.size, store_topics.terms_of(store.conn, t.id)) for t in store_topics.all_topics(store.conn)]
    vecs = [store_topics.centroid(store.conn, t.id) for t in store_topics.all_topics(store.conn)]
    with store.transaction() as conn:
        it.rebuild_topics(conn)
    assert [(t.label, t.size, store_topics.terms_of(store.conn, t.id)) for t in store_topics.all_topics(store.conn)] == before
    again = [store_topics.centroid(store.conn, t.id) for t in store_topics.all_topics(store.conn)]
    assert all(np.array_equal(a, b) for a, b in zip(vecs, again, strict=True))


def test_rebuild_drops_terms_only_inactive_notes_carried(store) -> None:
    feed(store, worker_for(store, it.TopicParams(every=1000)), themed(GARDEN, 6) + ["garden secretword tomato"])
    secret = store.conn.execute("SELECT id FROM notes WHERE content LIKE '%secretword%'").fetchone()[0]
    keeper = store.conn.execute("SELECT id FROM notes ORDER BY id").fetchone()[0]
    assert store_topics.df(store.conn, ["secretword"]) == {"secretword": 1}
    with store.transaction() as conn:
        notes.mark_merged(conn, secret, keeper)
        it.rebuild_topics(conn)
    assert store_topics.df(store.conn, ["secretword"]) == {}
    assert store_topics.note_terms(store.conn, secret) == []
    assert store_topics.df(store.conn, ["garden"])["garden"] == 4

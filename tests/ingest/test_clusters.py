"""CLAG clusters through the real worker and store: cold start, routing cascade, new cluster, split, profiles."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from edgemem.errors import SchemaError
from edgemem.ingest import clusters as ic
from edgemem.ingest.raw import accept_turns
from edgemem.ingest.worker import Worker
from edgemem.runtime.embed import normalise
from edgemem.runtime.fake import ScriptedLLM
from edgemem.runtime.schema import validate
from edgemem.store import clusters, jobs, notes, stats
from edgemem.store.db import Store

DIM = 384
WHEN = "2024-03-01T10:00:00"


class VectorBook:
    """An embedder that returns the vector registered for each text: blobs we control exactly."""

    name = "hash-embedder"
    dim = DIM

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}

    def put(self, text: str, vector: np.ndarray) -> str:
        self.vectors[text] = normalise(np.asarray(vector, dtype=np.float32)[None, :])[0]
        return text

    def embed(self, texts):
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


def blob_texts(book: VectorBook, rng: np.random.Generator, centre: np.ndarray, word: str, n: int, start: int = 0) -> list[str]:
    return [book.put(f"{word} story number {start + i}", centre + 0.3 * rng.standard_normal(DIM) / np.sqrt(DIM)) for i in range(n)]


def feed(store: Store, worker: Worker, texts: list[str]) -> None:
    accept_turns(store, [(None, t, WHEN, None) for t in texts], kind="conversation", uri="test")
    worker.drain()


def make_worker(store: Store, llm, book: VectorBook, params: ic.ClusterParams) -> Worker:
    worker = Worker(store, llm, book.embed, steps=[ic.ClusterStep(params)])
    worker.handlers.update(ic.extra_handlers(params))
    return worker


def replies(choice: int | dict = 1, profile: dict | None = None):
    """Answer K.1 with ``choice`` and K.2 with ``profile`` (a valid one by default)."""
    def answer(messages, schema):
        if "choice" in schema["properties"]:
            return {"choice": choice} if isinstance(choice, int) else choice
        return profile or {"summary": "Stories about one theme.", "tags": ["stories", "theme", "memory"]}
    return answer


def note_cluster(store: Store, text: str) -> int | None:
    row = store.conn.execute("SELECT cluster_id FROM notes WHERE content = ?", (text,)).fetchone()
    return row[0]


def counters(store: Store) -> dict[str, int]:
    return stats.all_stats(store.conn)


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "t.db", embed_model="hash-embedder", dim=DIM) as s:
        yield s


@pytest.fixture
def centres(rng) -> list[np.ndarray]:
    return [unit(rng.standard_normal(DIM)) for _ in range(3)]


def cold_started(store, book, rng, centres, llm, params=None):
    """Store with the three blobs clustered by the cold start; returns (worker, texts per blob)."""
    params = params or ic.ClusterParams(cold_start=30)
    worker = make_worker(store, llm, book, params)
    per_blob = [blob_texts(book, rng, c, w, 10) for c, w in zip(centres, ("alpha", "beta", "gamma"), strict=True)]
    feed(store, worker, [t for trio in zip(*per_blob, strict=True) for t in trio])
    return worker, per_blob


# -- k-means ---------------------------------------------------------------------------------------
def test_kmeans_separates_blobs_and_is_deterministic(rng, centres) -> None:
    x = np.vstack([c + 0.3 * rng.standard_normal((20, DIM)) / np.sqrt(DIM) for c in centres])
    a = ic.kmeans(x, 3, n_init=3, seed=0)
    b = ic.kmeans(x, 3, n_init=3, seed=0)
    assert np.array_equal(a.labels, b.labels) and a.inertia == b.inertia
    groups = {tuple(sorted(set(a.labels[i * 20:(i + 1) * 20]))) for i in range(3)}
    assert groups == {(0,), (1,), (2,)}  # each blob is one cluster, three different labels
    with pytest.raises(ValueError):
        ic.kmeans(x[:2], 3)


def test_kmeans_keeps_the_best_restart(rng) -> None:
    x = rng.standard_normal((60, 8))
    one = ic.kmeans(x, 4, n_init=1, seed=3)
    many = ic.kmeans(x, 4, n_init=8, seed=3)
    assert many.inertia <= one.inertia + 1e-9


# -- cold start ------------------------------------------------------------------------------------
def test_cold_start_buffers_until_n_then_kmeans_assigns_every_note(store, rng, centres) -> None:
    book = VectorBook()
    params = ic.ClusterParams()  # the paper's n = 100, k = 3
    worker = make_worker(store, None, book, params)
    per_blob = [blob_texts(book, rng, c, w, 34) for c, w in zip(centres, ("alpha", "beta", "gamma"), strict=True)]
    stream = [t for trio in zip(*per_blob, strict=True) for t in trio]
    feed(store, worker, stream[:99])
    assert clusters.count(store.conn) == 0
    assert len(clusters.unassigned(store.conn)) == 99
    assert jobs.counts(store.conn) == {"done": 99}

    feed(store, worker, stream[99:100])
    assert clusters.count(store.conn) == 3
    assert clusters.unassigned(store.conn) == []
    found = {frozenset(note_cluster(store, t) for t in texts if t in stream[:100]) for texts in per_blob}
    assert all(len(ids) == 1 for ids in found) and len(found) == 3  # one blob, one cluster
    for c in clusters.all_clusters(store.conn):
        assert c.size == len(clusters.members(store.conn, c.id))
        assert len(c.tags) == 3 and c.summary  # no model: keyword profile, counted as fallback
    got = counters(store)
    assert got["cluster_init"] == 1 and got["cluster_route_cold_start"] == 100
    assert got["cluster_profile_keywords"] == 3 and got["cluster_profile_fallback"] == 3

    feed(store, worker, stream[100:101])  # routed: joins its blob's cluster
    assert note_cluster(store, stream[100]) == note_cluster(store, stream[97])


# -- routing cascade -------------------------------------------------------------------------------
def test_clear_margin_routes_without_the_model(store, rng, centres) -> None:
    book = VectorBook()
    llm = ScriptedLLM(default=replies())
    worker, per_blob = cold_started(store, book, rng, centres, llm)
    calls = len(llm.calls)
    (text,) = blob_texts(book, rng, centres[1], "beta", 1, start=100)
    before = clusters.get(store.conn, note_cluster(store, per_blob[1][0]))
    feed(store, worker, [text])
    assert len(llm.calls) == calls  # no routing prompt
    cid = note_cluster(store, text)
    assert cid == before.id
    after = clusters.get(store.conn, cid)
    assert after.size == before.size + 1 and after.changes == before.changes + 1
    assert counters(store)["cluster_route_margin"] == 1


def test_ambiguous_note_asks_the_model_and_its_choice_is_applied(store, rng, centres) -> None:
    book = VectorBook()
    llm = ScriptedLLM(default=replies(choice=2))
    worker, _ = cold_started(store, book, rng, centres, llm)
    calls = len(llm.calls)
    a, b = (clusters.centroid(store.conn, note_cluster(store, f"{w} story number 0")) for w in ("alpha", "beta"))
    text = book.put("a story between alpha and beta", a + b)
    cands = [(cid, s) for cid, s in clusters.nearest(store.conn, book.vectors[text], 3) if s >= 0.1]
    assert len(cands) >= 2 and cands[0][1] - cands[1][1] < 0.015
    feed(store, worker, [text])

    (call,) = llm.calls[calls:]
    assert call.schema == ic.route_schema(len(cands))
    assert "memory routing assistant" in call.messages[0]["content"]
    assert "a story between alpha and beta" in call.messages[1]["content"]
    assert "1. Summary: Stories about one theme." in call.messages[1]["content"]
    assert note_cluster(store, text) == cands[1][0]  # the model's choice, not the nearest
    got = counters(store)
    assert got["cluster_route_model"] == 1 and got["model_calls_cluster"] == calls + 1


@pytest.mark.parametrize("llm", [None, ScriptedLLM(default=replies(choice=7))], ids=["no-model", "invalid-reply"])
def test_ambiguous_note_falls_back_to_the_nearest_centroid(store, rng, centres, llm) -> None:
    book = VectorBook()
    worker, _ = cold_started(store, book, rng, centres, llm)
    a, b = (clusters.centroid(store.conn, note_cluster(store, f"{w} story number 0")) for w in ("alpha", "beta"))
    text = book.put("another story between alpha and beta", a + 1.001 * b)
    nearest = clusters.nearest(store.conn, book.vectors[text], 1)[0][0]
    feed(store, worker, [text])
    assert note_cluster(store, text) == nearest
    assert counters(store)["cluster_fallback"] == 1
    assert set(jobs.counts(store.conn)) == {"done"}  # nothing failed or parked


def test_note_far_from_every_centroid_opens_a_new_cluster(store, rng, centres) -> None:
    book = VectorBook()
    llm = ScriptedLLM(default=replies())
    worker, _ = cold_started(store, book, rng, centres, llm)
    calls = len(llm.calls)
    lonely = unit(rng.standard_normal(DIM))
    assert max(float(lonely @ c) for c in clusters.centroids(store.conn).values()) < 0.1
    text = book.put("a lonely delta note", lonely)
    feed(store, worker, [text])
    cid = note_cluster(store, text)
    assert clusters.count(store.conn) == 4
    c = clusters.get(store.conn, cid)
    assert c.size == 1 and c.tags and c.summary  # born with a keyword profile
    assert np.allclose(clusters.centroid(store.conn, cid), book.vectors[text], atol=1e-6)
    assert len(llm.calls) == calls
    assert counters(store)["cluster_route_threshold"] == 1 and counters(store)["cluster_new"] == 1


# -- split -----------------------------------------------------------------------------------------
def test_cluster_above_tau_split_is_bisected_by_2_means(store, rng) -> None:
    book = VectorBook()
    params = ic.ClusterParams(cold_start=10, init_clusters=1, tau_split=20)
    worker = make_worker(store, None, book, params)
    base = unit(rng.standard_normal(DIM))
    left, right = (unit(base + unit(rng.standard_normal(DIM))) for _ in range(2))
    lt = blob_texts(book, rng, left, "left", 11)
    rt = blob_texts(book, rng, right, "right", 10)
    feed(store, worker, [t for pair in zip(lt, rt, strict=False) for t in pair] + lt[10:])
    assert clusters.count(store.conn) == 2
    assert counters(store)["cluster_split"] == 1
    groups = {frozenset(note_cluster(store, t) for t in texts) for texts in (lt, rt)}
    assert all(len(g) == 1 for g in groups) and len(groups) == 2
    for c in clusters.all_clusters(store.conn):
        members = clusters.members(store.conn, c.id)
        assert c.size == len(members) <= 20
        mean = np.mean([v for v in notes.vectors(store.conn, members).values()], axis=0)
        assert float(unit(mean) @ clusters.centroid(store.conn, c.id)) > 0.999


# -- profiles --------------------------------------------------------------------------------------
def test_profile_regeneration_is_debounced(store, rng, centres) -> None:
    book = VectorBook()
    llm = ScriptedLLM(default=replies())
    params = ic.ClusterParams(cold_start=10, init_clusters=1)
    worker = make_worker(store, llm, book, params)
    feed(store, worker, blob_texts(book, rng, centres[0], "alpha", 10))
    assert len(llm.calls) == 1  # the initial profile
    (c,) = clusters.all_clusters(store.conn)
    assert (c.summary, c.tags, c.profiled_size, c.changes) == ("Stories about one theme.", ["stories", "theme", "memory"], 10, 0)

    feed(store, worker, blob_texts(book, rng, centres[0], "alpha", 9, start=10))
    assert len(llm.calls) == 1 and clusters.get(store.conn, c.id).changes == 9  # 9 < max(5, 50% of 19)
    feed(store, worker, blob_texts(book, rng, centres[0], "alpha", 1, start=19))
    assert len(llm.calls) == 2
    assert clusters.get(store.conn, c.id).profiled_size == 20
    kinds = [r[0] for r in store.conn.execute("SELECT kind FROM jobs WHERE kind = 'cluster_profile'")]
    assert len(kinds) == 2

    with store.transaction() as conn:  # at most one pending profile job per cluster
        first = clusters.enqueue_once(conn, ic.PROFILE_JOB, {"cluster_id": c.id}, ic.JOB_PRIORITY)
        second = clusters.enqueue_once(conn, ic.PROFILE_JOB, {"cluster_id": c.id}, ic.JOB_PRIORITY)
    assert first is not None and second is None


@pytest.mark.parametrize("bad", [
    {"summary": "Painting and pottery. Also camping trips.", "tags": ["art", "pottery", "camping"]},
    {"summary": "Painting and pottery.", "tags": ["art", "art", "camping"]},
    {"summary": "Painting and pottery.", "tags": ["art", "pottery class", "camping"]},
    {"summary": "Painting and pottery.", "tags": ["art", "pottery"]},
    {"summary": "Painting and pottery.", "tags": ["art", "pottery", "camping"], "extra": 1},
])
def test_invalid_profile_reply_keeps_the_old_profile(store, rng, centres, bad) -> None:
    book = VectorBook()
    llm = ScriptedLLM(default=replies())
    params = ic.ClusterParams(cold_start=10, init_clusters=1, profile_fraction=0.2)  # 5 more notes re-profile
    worker = make_worker(store, llm, book, params)
    feed(store, worker, blob_texts(book, rng, centres[0], "alpha", 10))
    llm.default = replies(profile=bad)
    feed(store, worker, blob_texts(book, rng, centres[0], "alpha", 5, start=10))
    (c,) = clusters.all_clusters(store.conn)
    assert (c.summary, c.tags) == ("Stories about one theme.", ["stories", "theme", "memory"])
    assert c.profiled_size == 15 and c.changes == 0  # the debounce is satisfied; the profile is kept
    got = counters(store)
    assert got["model_calls_cluster"] == 2 and got["cluster_profile_fallback"] == 1 and got["cluster_profile_kept"] == 1


def test_check_profile_accepts_one_sentence_and_three_distinct_words() -> None:
    p = ic.check_profile({"summary": "  Melanie's  pottery, painting and camping with her kids. ",
                          "tags": ["Pottery", "art", "camping"]})
    assert p.summary == "Melanie's pottery, painting and camping with her kids."
    assert p.tags == ["pottery", "art", "camping"]
    with pytest.raises(SchemaError):
        ic.check_profile({"summary": "One. Two!", "tags": ["a", "b", "c"]})


def test_profile_job_recomputes_the_exact_centroid(store, rng, centres) -> None:
    book = VectorBook()
    params = ic.ClusterParams(cold_start=10, init_clusters=1)
    worker = make_worker(store, None, book, params)
    feed(store, worker, blob_texts(book, rng, centres[0], "alpha", 10) + blob_texts(book, rng, centres[0], "alpha", 10, start=10))
    (c,) = clusters.all_clusters(store.conn)
    assert c.profiled_size == 20
    mean = np.mean(list(notes.vectors(store.conn, clusters.members(store.conn, c.id)).values()), axis=0)
    assert np.allclose(clusters.centroid(store.conn, c.id), unit(mean), atol=1e-5)


def test_keyword_profile_takes_the_most_shared_keywords(store, rng, centres) -> None:
    book = VectorBook()
    worker = make_worker(store, None, book, ic.ClusterParams(cold_start=10, init_clusters=1))
    texts = [book.put(f"pottery class with kiln glaze note{i} {w}", centres[0] + 0.01 * rng.standard_normal(DIM))
             for i, w in enumerate(["kids"] * 6 + ["camping"] * 4)]
    feed(store, worker, texts)
    (c,) = clusters.all_clusters(store.conn)
    # class, glaze, kiln, note, pottery are in all ten notes: ties are broken alphabetically
    assert (c.summary, c.tags) == ("Notes about class, glaze and kiln.", ["class", "glaze", "kiln"])


# -- the real model --------------------------------------------------------------------------------
@pytest.mark.model
def test_k1_and_k2_prompts_get_schema_valid_replies_from_a_real_model(small_llm) -> None:
    profiles = [
        clusters.Cluster(i, summary, tags, 30, 30, 0, "", "") for i, (summary, tags) in enumerate([
            ("Melanie paints landscapes and makes pottery with her kids.", ["painting", "pottery", "kids"]),
            ("Caroline's adoption plans and LGBTQ support groups.", ["adoption", "lgbtq", "support"]),
            ("Camping and hiking trips in the summer.", ["camping", "hiking", "summer"]),
        ], start=1)
    ]
    from edgemem.ingest.notes import NoteDraft
    draft = NoteDraft([1], "I finished a new painting of a sunset with my kids yesterday.", "said by Melanie on 8 May 2023",
                      ["painting", "sunset", "kids"], ["Melanie"], [], "Melanie", WHEN)
    reply = small_llm.complete_json(ic._route_messages(draft, profiles), ic.route_schema(3), max_tokens=ic.ROUTE_MAX_TOKENS)
    assert validate(reply.value, ic.route_schema(3)) == reply.value and reply.value["choice"] in (1, 2, 3)

    samples = "\n".join(f"- {s}" for s in [
        "Melanie: I took the kids to a pottery workshop last Friday.",
        "Melanie: Painting helps me relax after work.",
        "Caroline: Your sunset painting is beautiful!",
    ])
    from edgemem import prompts
    messages = [{"role": "system", "content": prompts.render("cluster_profile")},
                {"role": "user", "content": prompts.render("cluster_profile_user", samples=samples)}]
    reply = small_llm.complete_json(messages, ic.PROFILE_SCHEMA, max_tokens=96)
    assert validate(reply.value, ic.PROFILE_SCHEMA) == reply.value and len(reply.value["tags"]) == 3
    # the grammar enforced K.2's form while decoding: one sentence, single-word tags
    props = ic.PROFILE_SCHEMA["properties"]
    assert re.match(props["summary"]["pattern"], reply.value["summary"])
    assert all(re.match(props["tags"]["items"]["pattern"], t) for t in reply.value["tags"])

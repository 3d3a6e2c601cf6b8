"""CLAG localized evolution through the real worker: links and tag rewrites inside the cluster, in ops."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgemem.ingest import clusters as ic
from edgemem.ingest import evolve as ie
from edgemem.ingest import topics as it
from edgemem.ingest.raw import accept_turns
from edgemem.ingest.worker import Worker
from edgemem.runtime.fake import HashEmbedder
from edgemem.store import clusters, links, notes, ops, stats
from edgemem.store.db import Store

WHEN = "2024-03-01T10:00:00"

GARDEN = [f"garden tomato soil watering {w}" for w in ("morning", "hose", "neighbour", "basil", "rain", "compost")]
CARS = [f"engine car brakes mechanic {w}" for w in ("tyres", "oil", "garage", "battery", "clutch", "exhaust")]
POTTERY_GARDEN = "garden tomato soil pottery kiln"
POTTERY_CAR = "engine car brakes pottery kiln"


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "t.db", embed_model="hash-embedder", dim=384) as s:
        yield s


def worker_for(store: Store, steps_before: list | None = None, params: ic.ClusterParams | None = None,
               evolve: ie.EvolveParams | None = None) -> Worker:
    params = params or ic.ClusterParams(cold_start=14, init_clusters=2)
    steps = [*(steps_before or []), ic.ClusterStep(params), it.KeywordStep(), ie.EvolveStep(evolve)]
    worker = Worker(store, None, HashEmbedder().embed, steps=steps)
    worker.handlers.update(ic.extra_handlers(params))
    return worker


def feed(store: Store, worker: Worker, texts: list[str], speaker: str | None = None) -> None:
    accept_turns(store, [(speaker, t, WHEN, None) for t in texts], kind="conversation", uri="test")
    worker.drain()


def note_id(store: Store, text: str) -> int:
    return store.conn.execute("SELECT id FROM notes WHERE content = ? AND status = 'active'", (text,)).fetchone()[0]


def raw_texts(store: Store) -> list[tuple]:
    return [tuple(r) for r in store.conn.execute("SELECT id, text, speaker, event_time FROM raw_turns ORDER BY id")]


def test_new_note_links_and_retags_its_close_neighbours_within_its_cluster(store) -> None:
    worker = worker_for(store)
    feed(store, worker, [*GARDEN, POTTERY_GARDEN, *CARS, POTTERY_CAR])
    garden_pot, car_pot = note_id(store, POTTERY_GARDEN), note_id(store, POTTERY_CAR)
    gc, cc = clusters.note_cluster(store.conn, garden_pot), clusters.note_cluster(store.conn, car_pot)
    assert gc != cc  # two clusters: gardens and cars
    assert all(clusters.note_cluster(store.conn, note_id(store, t)) == gc for t in GARDEN)
    raw_before = raw_texts(store)
    neighbour = notes.get(store.conn, garden_pot)

    new = "garden tomato pottery kiln glaze"
    feed(store, worker, [new])
    nid = note_id(store, new)
    assert clusters.note_cluster(store.conn, nid) == gc
    made = [(lk.src, lk.dst, lk.kind, lk.made_by) for lk in links.of_note(store.conn, nid)]
    # the car note shares the rare keywords too, but lives in another cluster: evolution is local
    assert made == [(nid, garden_pot, "RELATED", "evolve")]

    after = notes.get(store.conn, garden_pot)
    cluster_tags = clusters.get(store.conn, gc).tags
    assert after.tags[:2] == ["kiln", "pottery"] and set(cluster_tags) <= set(after.tags)
    assert (after.content, after.context, after.keywords) == (neighbour.content, neighbour.context, neighbour.keywords)
    assert after.version == neighbour.version + 1
    (evolved,) = ops.of_note(store.conn, garden_pot)
    assert evolved.op == "evolve" and evolved.before == {"tags": neighbour.tags}
    assert evolved.after == {"tags": after.tags, "by_note": nid}
    (linked,) = ops.of_note(store.conn, nid)
    assert linked.op == "link" and linked.after["dst"] == garden_pot
    assert linked.after["shared"] == ["kiln", "pottery", "garden", "tomato"]  # most specific first
    assert raw_texts(store) == raw_before + [raw_texts(store)[-1]]  # raw turns untouched, one appended
    assert notes.get(store.conn, note_id(store, POTTERY_CAR)).tags == []
    got = stats.all_stats(store.conn)
    assert got["evolve_links"] >= 1 and got["evolve_rewrites"] >= 1


def test_common_words_and_speaker_names_do_not_link(store) -> None:
    worker = worker_for(store)
    feed(store, worker, [*GARDEN, *CARS, "garden tomato soil kiln alone"])
    before_links, before_ops = links.count(store.conn), ops.count(store.conn)
    # close to the garden notes (shares garden, tomato, soil, watering) but every shared word is common
    feed(store, worker, ["garden tomato soil watering Caroline"], speaker="Caroline")
    feed(store, worker, ["Caroline garden tomato soil watering"], speaker="Melanie")
    assert links.count(store.conn) == before_links and ops.count(store.conn) == before_ops


def test_during_cold_start_the_buffer_is_the_neighbourhood(store) -> None:
    worker = worker_for(store, params=ic.ClusterParams())  # n = 100: everything below is buffered
    feed(store, worker, [*GARDEN, *CARS, POTTERY_GARDEN])
    feed(store, worker, ["garden tomato pottery kiln glaze"])
    assert clusters.count(store.conn) == 0
    nid = note_id(store, "garden tomato pottery kiln glaze")
    assert [lk.dst for lk in links.of_note(store.conn, nid)] == [note_id(store, POTTERY_GARDEN)]


class MergeInto:
    """A gate stand-in: merges every new note into one existing note (returns that note's id).

    The worker has inserted the new note already; a merge marks it merged, as the gate does."""

    name = "merge"

    def __init__(self, target: int) -> None:
        self.target = target

    def plan(self, ctx, draft):
        target = self.target

        class Plan:
            def apply(self, conn, draft, note_id):
                notes.add_sources(conn, target, draft.raw_ids)
                notes.mark_merged(conn, note_id, target)
                return target

        return Plan()


def test_a_note_merged_into_an_older_one_is_not_evolved_again(store) -> None:
    glaze = "garden tomato pottery kiln glaze"
    # Built without links (link_min 0.99), so the pottery notes have an unlinked close neighbour.
    feed(store, worker_for(store, evolve=ie.EvolveParams(link_min=0.99)), [*GARDEN, POTTERY_GARDEN, *CARS, POTTERY_CAR, glaze])
    target = note_id(store, POTTERY_GARDEN)
    size = clusters.get(store.conn, clusters.note_cluster(store.conn, target)).size
    assert links.count(store.conn) == 0 and ops.count(store.conn) == 0

    feed(store, worker_for(store, steps_before=[MergeInto(target)]), ["garden tomato soil pottery kiln again"])
    assert links.count(store.conn) == 0 and ops.count(store.conn) == 0
    assert clusters.get(store.conn, clusters.note_cluster(store.conn, target)).size == size
    assert store.conn.execute("SELECT count(*) FROM notes WHERE content LIKE '%again%' AND status = 'active'").fetchone()[0] == 0

    # the same text as a note of its own is evolved: it links to both pottery notes of its cluster
    feed(store, worker_for(store), ["garden tomato soil pottery kiln again"])
    nid = note_id(store, "garden tomato soil pottery kiln again")
    assert sorted(lk.dst for lk in links.of_note(store.conn, nid)) == sorted([target, note_id(store, glaze)])

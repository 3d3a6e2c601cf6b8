"""MemFly gated update: decisions, merge/link/supersede effects on a real store, fallbacks, budget floor."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from edgemem.ingest import gate
from edgemem.ingest.gate import CandidateScore, GateStep, PlannedLink, decide
from edgemem.ingest.profile import ProfileStep
from edgemem.ingest.raw import accept_turns
from edgemem.ingest.worker import Worker
from edgemem.runtime.fake import HashEmbedder, ScriptedLLM
from edgemem.store import jobs, links, notes, ops, stats
from edgemem.store.db import Store

HASH = HashEmbedder(384)
DAY1 = "2023-05-08T13:56:00"
DAY2 = "2023-06-20T10:00:00"


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "t.db", embed_model="hash-embedder", dim=384)
    yield s
    s.close()


def feed(store: Store, llm, turns, *, embed=HASH.embed, floor: float = 0.3, uri: str = "chat") -> dict[str, int]:
    """Accept turns durably, run the gate and profile steps, return the counters; every job must succeed."""
    accept_turns(store, [(spk, text, when, None) for spk, text, when in turns], kind="conversation", uri=uri)
    Worker(store, llm, embed, steps=[GateStep(floor=floor), ProfileStep()]).drain()
    assert set(jobs.counts(store.conn)) == {"done"}, jobs.parked(store.conn)
    counters = stats.all_stats(store.conn)
    assert not any(k.startswith("jobs_") for k in counters), counters
    return counters


def scripted(*gate_replies, profile: dict | None = None, n_ctx: int = 4096) -> ScriptedLLM:
    """A scripted model answering gate calls from ``gate_replies`` in order and profile calls with ``profile``."""
    queue = list(gate_replies)

    def reply(messages, schema):
        if "facts" in schema["properties"]:
            return profile or {"facts": []}
        assert queue, "unexpected gate call"
        nxt = queue.pop(0)
        return nxt(messages, schema) if callable(nxt) else nxt

    return ScriptedLLM(default=reply, n_ctx=n_ctx)


def gate_calls(llm: ScriptedLLM) -> list:
    return [c for c in llm.calls if "facts" not in c.schema["properties"]]


def scored(*pairs, relation: str = "SUPPORTS") -> dict:
    return {str(i): {"redundancy": r, "complementarity": c, "relation": relation} for i, (r, c) in enumerate(pairs, start=1)}


def active(store: Store) -> list[notes.Note]:
    return list(notes.iter_active(store.conn))


# -- decide(): the thresholds of MemFly Appendix C ---------------------------------------------------
def test_decide_merge_link_append_at_the_thresholds():
    assert decide([CandidateScore(1, 0.7, 0.0)]).action == "merge"
    assert decide([CandidateScore(1, 0.69, 0.0)]) == gate.Decision("append")
    assert decide([CandidateScore(1, 0.69, 0.5, "RELATED")]) == gate.Decision("link", None, (PlannedLink(1, "RELATED", 0.5),))
    assert decide([CandidateScore(1, 0.3, 0.49)]).action == "append"
    assert decide([], tau_merge=0.7).action == "append"


def test_decide_merges_into_the_most_redundant_and_links_the_rest():
    d = decide([CandidateScore(1, 0.8, 0.1, "SUPPORTS"), CandidateScore(2, 0.9, 0.2), CandidateScore(3, 0.1, 0.6, "RELATED")])
    assert d.action == "merge" and d.target == 2
    assert d.links == (PlannedLink(1, "SUPPORTS", 0.8), PlannedLink(3, "RELATED", 0.6))


def test_decide_conflicts_become_supersedes_by_event_time():
    newer = decide([CandidateScore(5, 0.8, 0.6, "CONFLICTS", newer=True)])
    assert newer == gate.Decision("link", None, (PlannedLink(5, "SUPERSEDES", 0.8, outgoing=True),))
    older = decide([CandidateScore(5, 0.8, 0.6, "CONFLICTS", newer=False)])
    assert older.links == (PlannedLink(5, "SUPERSEDES", 0.8, outgoing=False),)
    tie = decide([CandidateScore(5, 0.8, 0.6, "CONFLICTS", newer=None)])
    assert tie.links == (PlannedLink(5, "CONFLICTS", 0.8),)
    assert decide([CandidateScore(5, 0.4, 0.4, "CONFLICTS")]).action == "append"


def test_decide_does_not_merge_across_speakers():
    d = decide([CandidateScore(1, 0.95, 0.1, "SUPPORTS", mergeable=False)])
    assert d == gate.Decision("link", None, (PlannedLink(1, "SUPPORTS", 0.95),))


# -- the step on a real store -------------------------------------------------------------------------
def test_merge_keeps_both_raw_texts_and_records_the_op(store):
    llm = scripted(scored((0.9, 0.2)))
    counters = feed(store, llm, [
        ("Caroline", "I went to the LGBTQ support group and it was so powerful", DAY1),
        ("Caroline", "The LGBTQ support group I went to was so powerful and inspiring", DAY2),
    ])
    assert counters["model_calls_gate"] == 1 and counters["gate_merge"] == 1
    (survivor,) = active(store)
    raw_ids = [r[0] for r in store.conn.execute("SELECT id FROM raw_turns ORDER BY id")]
    assert survivor.source_turns == raw_ids  # note_sources holds both raw turns
    assert "LGBTQ support group and it was so powerful" in survivor.content
    assert "[20 June 2023] The LGBTQ support group I went to" in survivor.content
    absorbed = [n for n in notes.get_many(store.conn, [survivor.id + 1]) if n.status == "merged"]
    assert absorbed and absorbed[0].merged_into == survivor.id
    (op,) = ops.of_note(store.conn, survivor.id)
    assert op.op == "merge" and op.after["absorbed"] == absorbed[0].id
    assert op.before["content"] == "I went to the LGBTQ support group and it was so powerful"
    assert op.after["sources"] == raw_ids and op.before["sources"] == raw_ids[:1]
    # the survivor is searchable by the absorbed text; the absorbed note is in no index
    assert [i for i, _ in notes.fts(store.conn, "inspiring", 5)] == [survivor.id]
    assert absorbed[0].id not in [i for i, _ in notes.knn(store.conn, HASH.embed(["inspiring"])[0], 5)]


def test_link_and_append(store):
    llm = scripted(scored((0.2, 0.8), relation="RELATED"), scored((0.1, 0.2), (0.2, 0.3)))
    counters = feed(store, llm, [
        ("Melanie", "I took the kids camping at the lake last weekend", DAY1),
        ("Melanie", "The kids loved the lake, we want to go camping again", DAY1),
        ("Melanie", "Camping at the lake with the kids again is the plan", DAY1),
    ])
    assert counters["model_calls_gate"] == 2
    assert counters["gate_link"] == 1 and counters["gate_append"] == 2  # the first note had no neighbour
    first, second, third = active(store)
    assert [(lk.src, lk.dst, lk.kind) for lk in links.of_note(store.conn, second.id)] == [(second.id, first.id, "RELATED")]
    assert links.of_note(store.conn, third.id) == []
    assert links.neighbours(store.conn, [first.id])[first.id] == [(second.id, "RELATED", 0.8)]


def test_newer_conflict_supersedes_older_and_both_are_kept(store):
    llm = scripted(scored((0.5, 0.6), relation="CONFLICTS"))
    feed(store, llm, [
        ("Caroline", "I am in a relationship with Sam and we are happy", DAY1),
        ("Caroline", "I am single now, Sam and I are not together", DAY2),
    ])
    old, new = active(store)
    (link,) = links.of_note(store.conn, old.id)
    assert (link.src, link.dst, link.kind) == (new.id, old.id, "SUPERSEDES")
    assert links.current(store.conn, [old.id, new.id]) == {old.id: new.id, new.id: None}
    assert [o.op for o in ops.of_note(store.conn, new.id)] == ["supersede"]


def test_an_older_fact_processed_later_is_superseded_by_the_stored_newer_one(store):
    llm = scripted(scored((0.5, 0.6), relation="CONFLICTS"))
    feed(store, llm, [("Caroline", "I am single now, Sam and I are not together", DAY2)], uri="later")
    feed(store, llm, [("Caroline", "I am in a relationship with Sam and we are happy", DAY1)], uri="earlier")
    newer, older = active(store)
    (link,) = links.of_note(store.conn, older.id)
    assert (link.src, link.dst, link.kind) == (newer.id, older.id, "SUPERSEDES")
    assert links.current(store.conn, [older.id]) == {older.id: newer.id}


def test_supersede_chain_resolves_to_the_newest(store):
    llm = scripted(*[lambda messages, schema: scored(*[(0.4, 0.6)] * len(schema["required"]), relation="CONFLICTS")] * 2)
    feed(store, llm, [
        ("Jon", "I work at the bank as a teller", "2023-01-01T09:00:00"),
        ("Jon", "I work at the dance studio now, not the bank", "2023-03-01T09:00:00"),
        ("Jon", "I work at the studio and the bank is history, studio owner now", "2023-05-01T09:00:00"),
    ])
    a, b, c = (n.id for n in active(store))
    assert links.current(store.conn, [a, b, c]) == {a: c, b: c, c: None}


def test_one_call_scores_every_candidate_with_handles_mapped_back(store):
    replies = []

    def reply(messages, schema):
        replies.append(messages[-1]["content"])
        n = len(schema["required"])
        return {str(i): {"redundancy": 0.9 if i == 2 else 0.0, "complementarity": 0.0, "relation": "RELATED"} for i in range(1, n + 1)}

    llm = scripted(scored((0.0, 0.0)), scored((0.0, 0.0), (0.0, 0.0)), reply)
    feed(store, llm, [
        ("Gina", "My online clothing store sells dance clothes", DAY1),
        ("Gina", "My online store sells dance shoes and clothes", DAY1),
        ("Gina", "The online store for dance clothes is growing", DAY1),
    ])
    feed(store, llm, [("Gina", "My online dance clothes store is growing fast", DAY2)], uri="next")
    assert len(gate_calls(llm)) == 3 and len(replies) == 1
    prompt = replies[0]
    handles = re.findall(r"^\[(\d)\] \([^)]*\) (.*)$", prompt, flags=re.M)
    assert [h for h, _ in handles] == ["1", "2", "3"]
    shown_second = handles[1][1]
    survivor = next(n for n in active(store) if n.content.startswith(shown_second))
    assert "My online dance clothes store is growing fast" in survivor.content
    assert len(active(store)) == 3
    assert not re.search(r"\bid\b|note_id", prompt)


def test_different_speakers_link_instead_of_merging(store):
    llm = scripted(scored((0.9, 0.1)))
    counters = feed(store, llm, [
        ("Jon", "Thanks Gina your support means a lot", DAY1),
        ("Gina", "Thanks Jon your support means a lot", DAY1),
    ])
    assert counters["gate_link"] == 1 and len(active(store)) == 2


def test_a_repeat_by_the_same_speaker_merges_without_the_model(store):
    llm = scripted()
    counters = feed(store, llm, [("Jon", "Thanks, Gina!", DAY1), ("Jon", "Thanks, Gina!", DAY2)])
    assert gate_calls(llm) == [] and counters["gate_rule"] == 1 and counters["gate_merge"] == 1
    (survivor,) = active(store)
    assert survivor.content == "Thanks, Gina!" and len(survivor.source_turns) == 2


def test_a_merge_target_changed_since_planning_keeps_the_new_note(store):
    """Plan, then the target is rewritten (as evolution would) before the plan applies: no merge."""
    from edgemem.ingest.notes import build
    from edgemem.ingest.worker import WriteContext, settle
    from edgemem.store import raw

    feed(store, scripted(), [("Jon", "Rehearsing the new routine at the studio tonight", DAY1)])
    acc = accept_turns(store, [("Jon", "Rehearsing the new routine at the studio again tonight", DAY2, None)],
                       kind="conversation", uri="late")
    (d,) = build([(raw.get_turn(store.conn, acc.raw_ids[0]), None)], HASH.embed)
    ctx = WriteContext(store, scripted(scored((0.9, 0.0))), HASH.embed)
    plan = GateStep(floor=0.3).plan(ctx, d)
    assert plan.action == "merge"
    (target,) = active(store)
    with store.transaction() as conn:
        notes.update(conn, target.id, context="rewritten by evolution")
    with store.transaction() as conn:
        new_id = settle(conn, d, [plan])
    assert new_id != target.id and ctx.counters["gate_stale_merge"] == 1
    assert len(active(store)) == 2 and notes.get(store.conn, target.id).content == target.content


# -- fallbacks ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [
    "not json at all",
    {"1": {"redundancy": 0.9, "complementarity": 0.1, "relation": "DUPLICATE"}},
    {"1": {"redundancy": 1.5, "complementarity": 0.1, "relation": "SUPPORTS"}},
    {"1": {"redundancy": 0.75, "complementarity": 0.1, "relation": "SUPPORTS"}},  # off the 0.1 grid
    {"2": {"redundancy": 0.9, "complementarity": 0.1, "relation": "SUPPORTS"}},
    {},
])
def test_invalid_reply_appends_and_is_counted(store, bad):
    llm = scripted(bad)
    counters = feed(store, llm, [
        ("Caroline", "I love painting sunsets by the lake", DAY1),
        ("Caroline", "Painting sunsets by the lake is what I love", DAY2),
    ])
    assert len(gate_calls(llm)) == 1 and counters["model_calls_gate"] == 1
    assert counters["gate_fallback"] == 1 and counters["gate_append"] == 2
    assert len(active(store)) == 2 and links.count(store.conn) == 0


def test_no_model_appends_and_is_counted(store):
    counters = feed(store, None, [
        ("Caroline", "I love painting sunsets by the lake", DAY1),
        ("Caroline", "Painting sunsets by the lake is what I love", DAY2),
    ])
    assert counters["gate_fallback"] == 1 and "model_calls_gate" not in counters
    assert len(active(store)) == 2


def test_prompt_too_long_appends_and_is_counted(store):
    llm = scripted(scored((0.9, 0.1)), n_ctx=60)
    counters = feed(store, llm, [
        ("Caroline", "I love painting sunsets by the lake", DAY1),
        ("Caroline", "Painting sunsets by the lake is what I love", DAY2),
    ])
    assert counters["gate_fallback"] == 1 and gate_calls(llm) == [] and len(active(store)) == 2


def test_below_the_floor_no_model_call(store):
    llm = scripted()
    counters = feed(store, llm, [
        ("Jon", "The dance studio opens next month downtown", DAY1),
        ("Jon", "Investors want a business plan by Friday", DAY1),
    ], floor=gate.SIMILARITY_FLOOR)
    assert gate_calls(llm) == [] and counters["gate_skipped"] == 2 and "gate_fallback" not in counters


def test_the_default_floor_on_real_embeddings(tmp_path, embedder):
    """all-MiniLM-L6-v2: a paraphrase clears the default floor and is scored; an unrelated turn is not."""
    s = Store(tmp_path / "real.db", embed_model=embedder.name, dim=embedder.dim)
    try:
        llm = scripted(scored((0.9, 0.1)))
        counters = feed(s, llm, [
            ("Caroline", "Thanks, Melanie! Your kind words mean a lot to me.", DAY1),
            ("Melanie", "I bought a new set of pottery tools for my class.", DAY1),
            ("Caroline", "Thanks, Melanie! Your kind words really mean a lot.", DAY2),
        ], embed=embedder.embed, floor=gate.SIMILARITY_FLOOR)
        assert counters["gate_skipped"] == 2 and counters["model_calls_gate"] == 1
        assert len(gate_calls(llm)) == 1 and gate_calls(llm)[0].schema["required"] == ["1"]  # the pottery turn is below the floor
        assert counters["gate_merge"] == 1
    finally:
        s.close()


@pytest.mark.model
def test_gate_prompt_gives_schema_valid_replies_on_a_real_model(tmp_path, embedder, small_llm):
    s = Store(tmp_path / "model.db", embed_model=embedder.name, dim=embedder.dim)
    try:
        counters = feed(s, small_llm, [
            ("Caroline", "I am in a relationship with Sam and we are very happy together.", DAY1),
            ("Caroline", "I went hiking with Sam last weekend and it was lovely.", DAY1),
            ("Caroline", "I am single now, Sam and I are not together any more.", DAY2),
        ], embed=embedder.embed, floor=0.3)
        assert counters["model_calls_gate"] >= 1
        assert "gate_fallback" not in counters  # the grammar-constrained reply validated
        assert sum(counters.get(f"gate_{a}", 0) for a in ("merge", "link", "append")) == 3
    finally:
        s.close()


def test_a_change_below_the_floor_supersedes_by_rule_without_a_model_call(store, embedder):
    """A changed fact is said in other words (cosine well under the floor): the update rule links it."""
    llm = scripted()  # any gate call fails the test
    counters = feed(store, llm, [
        ("Ana", "I work at the bakery on Main Street, early shifts every day.", DAY1),
        ("Ana", "I quit my job at the bakery, I'm teaching pottery instead.", DAY2),
    ], embed=embedder.embed, floor=0.86)
    assert counters["gate_supersede_rule"] == 1 and not gate_calls(llm)
    old, new = active(store)
    assert links.current(store.conn, [old.id]) == {old.id: new.id}
    (link,) = links.of_note(store.conn, new.id, ["SUPERSEDES"])
    assert (link.kind, link.made_by) == ("SUPERSEDES", "gate:rule")
    assert "supersede" in [o.op for o in ops.of_note(store.conn, new.id)]


def test_a_plan_moving_on_supersedes_step_by_step(store, embedder):
    """researching -> applied -> passed: each step supersedes the one before, the chain ends at the newest."""
    counters = feed(store, scripted(), [
        ("Caroline", "Researching adoption agencies, it's been a dream to have a family.", DAY1),
        ("Caroline", "I applied to adoption agencies this week! A big decision.", DAY2),
        ("Caroline", "I passed the adoption agency interviews last Friday!", "2023-10-22T09:55:00"),
        ("Melanie", "I applied to adoption agencies too, just to see.", "2023-10-23T09:55:00"),
    ], embed=embedder.embed, floor=0.99)
    research, applied, passed, other = active(store)
    assert counters["gate_supersede_rule"] == 2  # passed does not re-link research; Melanie's is her own
    assert links.current(store.conn, [research.id, applied.id, other.id]) == {
        research.id: passed.id, applied.id: passed.id, other.id: None}


def test_change_wording_about_something_else_links_nothing(store, embedder):
    counters = feed(store, scripted(), [
        ("Ana", "The weather was lovely at the lake.", DAY1),
        ("Ana", "I signed up for a pottery class yesterday.", DAY2),
        ("Ana", "I finished another pottery project, want to see?", "2023-07-01T10:00:00"),
    ], embed=embedder.embed, floor=0.99)
    assert "gate_supersede_rule" not in counters
    assert links.count(store.conn, "SUPERSEDES") == 0

"""MemFlow Tier-1 profile: cue filter, extraction, supersede with validity dates, subjects, fallbacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgemem.ingest.gate import GateStep
from edgemem.ingest.profile import ProfileStep, cues, grounded
from edgemem.ingest.raw import accept_turns
from edgemem.ingest.worker import Worker
from edgemem.runtime.fake import HashEmbedder, ScriptedLLM
from edgemem.store import jobs, notes, ops, stats
from edgemem.store import profile as store_profile
from edgemem.store.db import Store

HASH = HashEmbedder(384)
DAY1 = "2023-05-08T13:56:00"
DAY2 = "2023-06-20T10:00:00"
DAY3 = "2023-08-01T18:30:00"


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "t.db", embed_model="hash-embedder", dim=384)
    yield s
    s.close()


def facts(*triples) -> dict:
    return {"facts": [{"kind": k, "key": key, "value": v} for k, key, v in triples]}


def scripted(*profile_replies, gate: dict | None = None, n_ctx: int = 4096) -> ScriptedLLM:
    """Profile calls answered in order; gate calls (if a note has close neighbours) say "unrelated"."""
    queue = list(profile_replies)

    def reply(messages, schema):
        if "facts" not in schema["properties"]:
            return gate or {h: {"redundancy": 0.0, "complementarity": 0.0, "relation": "RELATED"} for h in schema["required"]}
        assert queue, "unexpected profile call"
        return queue.pop(0)

    return ScriptedLLM(default=reply, n_ctx=n_ctx)


def profile_calls(llm: ScriptedLLM) -> list:
    return [c for c in llm.calls if "facts" in c.schema["properties"]]


def feed(store: Store, llm, turns, *, kind: str = "conversation", uri: str = "chat", steps=None) -> dict[str, int]:
    accept_turns(store, [(spk, text, when, None) for spk, text, when in turns], kind=kind, uri=uri)
    Worker(store, llm, HASH.embed, steps=steps if steps is not None else [GateStep(), ProfileStep()]).drain()
    assert set(jobs.counts(store.conn)) == {"done"}, jobs.parked(store.conn)
    counters = stats.all_stats(store.conn)
    assert not any(k.startswith("jobs_") for k in counters), counters
    return counters


# -- the cue filter ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "kind"), [
    ("I love painting landscapes.", "preference"),
    ("My favorite book is Becoming Nicole.", "preference"),
    ("I'm a big fan of pottery.", "preference"),
    ("I'm single now.", "identity"),
    ("I work as a counselor at the youth center.", "identity"),
    ("I moved from my home country, Sweden, four years ago.", "identity"),
    ("It'll be tough as a single parent, but I'm up for it.", "identity"),
    ("Never book meetings before 10am.", "rule"),
    ("Please remind me to water the plants on Sundays.", "rule"),
])
def test_first_person_cues_pass(text, kind):
    assert kind in cues(text)


@pytest.mark.parametrize("text", [
    "Thanks, Melanie! Your kind words mean a lot.",
    "I love that! You did great.",
    "I love how you use art to tell your story.",
    "Wow, what an amazing family pic! How long have you been married?",
    "I 100% agree, Mel.",
    "These figurines remind me of family love.",
    "We went to the beach last weekend with the kids.",
])
def test_small_talk_has_no_cue(text):
    assert cues(text) == []


def test_grounding_needs_a_word_of_the_value_in_the_note():
    assert grounded("single", "I'm single again.")
    assert grounded("loves painting", "Painting is my favorite.")
    assert grounded("32", "I'm 32 now.") and grounded("from the UK", "I grew up in the UK.")
    assert not grounded("loves skiing", "I'm single again.")
    assert not grounded("none", "I love this necklace, it's from my grandma.")  # the key (necklace) grounds nothing
    assert not grounded("33", "I'm 32 now.") and not grounded("yes", "Yes, I love it.")
    # Half the value's words: the prompt's example echoed over a note that shares two of its five.
    assert grounded("no meetings before 10am", "no meetings before 10 on mondays")
    assert not grounded("never book meetings before 10am", "no meetings before 10 on mondays")


# -- extraction and supersede --------------------------------------------------------------------------
def test_a_fact_is_stored_with_its_source_note_and_validity(store):
    llm = scripted(facts(("identity", "relationship_status", "single")))
    counters = feed(store, llm, [("Caroline", "I'm single now and happy about it.", DAY1)])
    assert counters["model_calls_profile"] == 1 and counters["profile_new"] == 1
    (fact,) = store_profile.current(store.conn, "Caroline")
    (note,) = notes.iter_active(store.conn)
    assert (fact.key, fact.value, fact.kind) == ("caroline/identity/relationship_status", "single", "identity")
    assert (fact.valid_from, fact.valid_to, fact.sources) == (DAY1, None, [note.id])
    assert store_profile.current(store.conn, "melanie") == []
    assert [o.op for o in ops.of_note(store.conn, note.id)] == ["profile"]


def test_a_newer_value_supersedes_and_both_are_kept_with_validity_dates(store):
    llm = scripted(
        facts(("identity", "relationship_status", "married")),
        facts(("identity", "relationship_status", "divorced")),
    )
    counters = feed(store, llm, [
        ("Melanie", "I'm married to my college sweetheart.", DAY1),
        ("Melanie", "I'm divorced since spring, a new start.", DAY2),
    ])
    assert counters["profile_superseded"] == 1
    old, new = store_profile.history(store.conn, "melanie/identity/relationship_status")
    assert (old.value, old.valid_from, old.valid_to) == ("married", DAY1, DAY2)
    assert (new.value, new.valid_from, new.valid_to) == ("divorced", DAY2, None)
    assert old.sources != new.sources
    assert [f.value for f in store_profile.current(store.conn, "melanie")] == ["divorced"]
    # the second prompt offered the existing key so the model could reuse it
    assert "identity/relationship_status" in profile_calls(llm)[1].messages[-1]["content"]
    (op,) = [o for o in ops.latest(store.conn, "profile") if o.after["action"] == "superseded"]
    assert op.before["value"] == "married" and op.after["value"] == "divorced"


def test_an_older_value_processed_later_does_not_displace_the_current_one(store):
    llm = scripted(
        facts(("identity", "home_city", "boston")),
        facts(("identity", "home_city", "seattle")),
    )
    feed(store, llm, [("Jon", "I live in Boston these days.", DAY2)], uri="recent")
    counters = feed(store, llm, [("Jon", "I live in Seattle near the water.", DAY1)], uri="old")
    assert counters["profile_historical"] == 1
    old, new = store_profile.history(store.conn, "jon/identity/home_city")
    assert (old.value, old.valid_from, old.valid_to) == ("seattle", DAY1, DAY2)
    assert (new.value, new.valid_to) == ("boston", None)


def test_the_same_value_again_adds_a_source_not_a_row(store):
    llm = scripted(facts(("preference", "pottery", "loves pottery")), facts(("preference", "Pottery", "Loves  pottery")))
    counters = feed(store, llm, [
        ("Melanie", "I'm a big fan of pottery classes.", DAY1),
        ("Melanie", "I really love pottery, it calms me down after work.", DAY3),
    ])
    assert counters["profile_new"] == 1 and counters["profile_same"] == 1
    (fact,) = store_profile.history(store.conn, "melanie/preference/pottery")
    assert fact.valid_to is None and len(fact.sources) == 2


def test_several_preferences_are_current_at_once(store):
    llm = scripted(facts(("preference", "painting", "loves painting"), ("preference", "live_music", "loves live music")))
    feed(store, llm, [("Melanie", "I love painting and I love live music.", DAY1)])
    assert [f.key for f in store_profile.current(store.conn, "melanie")] == [
        "melanie/preference/live_music", "melanie/preference/painting"]


def test_a_note_without_speaker_is_about_the_user_and_rules_are_kept(store):
    llm = scripted(facts(("rule", "meeting_times", "never book meetings before 10am")))
    feed(store, llm, [(None, "Never book meetings before 10am, I'm not a morning person.", DAY1)], kind="note", uri="notes")
    (fact,) = store_profile.current(store.conn, "user")
    assert (fact.key, fact.kind) == ("user/rule/meeting_times", "rule")
    assert store_profile.subjects(store.conn) == ["user"]


def test_no_cue_no_model_call(store):
    llm = scripted()
    counters = feed(store, llm, [("Jon", "Thanks, Gina! See you at the studio.", DAY1)])
    assert profile_calls(llm) == [] and counters["profile_skipped"] == 1
    assert store_profile.current(store.conn) == []


def test_ungrounded_facts_are_dropped_and_counted(store):
    llm = scripted(facts(("identity", "relationship_status", "single"), ("preference", "skiing", "loves skiing")))
    counters = feed(store, llm, [("Caroline", "I'm single now and happy about it.", DAY1)])
    assert counters["profile_dropped_ungrounded"] == 1
    assert [f.key for f in store_profile.current(store.conn)] == ["caroline/identity/relationship_status"]


def test_profile_step_alone_inserts_the_note_it_cites(store):
    llm = scripted(facts(("identity", "job", "counselor")))
    feed(store, llm, [("Caroline", "I work as a counselor now.", DAY1), ("Caroline", "Thanks, Mel!", DAY1)],
         steps=[ProfileStep()])
    assert notes.count_active(store.conn) == 2  # one inserted by the profile step, one by the worker
    (fact,) = store_profile.current(store.conn)
    assert notes.get(store.conn, fact.sources[0]).content == "I work as a counselor now."


def test_after_a_merge_the_fact_cites_the_survivor(store):
    gate_merge = {"1": {"redundancy": 0.9, "complementarity": 0.1, "relation": "SUPPORTS"}}
    llm = scripted(facts(("preference", "pottery", "loves pottery")), facts(("preference", "pottery", "loves pottery")),
                   gate=gate_merge)
    feed(store, llm, [
        ("Melanie", "I'm a big fan of pottery classes.", DAY1),
        ("Melanie", "I'm a big fan of pottery classes, truly.", DAY2),
    ])
    (survivor,) = notes.iter_active(store.conn)
    (fact,) = store_profile.current(store.conn)
    assert fact.sources == [survivor.id] and len(survivor.source_turns) == 2


def test_heal_reopens_the_previous_value_when_the_current_row_is_deleted(store):
    llm = scripted(facts(("identity", "job", "teller")), facts(("identity", "job", "dance teacher")))
    feed(store, llm, [("Jon", "I work as a bank teller.", DAY1), ("Jon", "I work as a dance teacher now.", DAY2)])
    old, new = store_profile.history(store.conn, "jon/identity/job")
    with store.transaction() as conn:
        conn.execute("DELETE FROM profile WHERE id = ?", (new.id,))  # what forget does to a sourceless row
        store_profile.heal(conn, "jon/identity/job")
    (current,) = store_profile.current(store.conn, "jon")
    assert (current.id, current.value, current.valid_to) == (old.id, "teller", None)


# -- fallbacks ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [
    "{not json",
    {"facts": [{"kind": "hobby", "key": "painting", "value": "painting"}]},
    {"facts": [{"kind": "preference", "key": "painting"}]},
    {"facts": [{"kind": "preference", "key": "a", "value": "x"}] * 4},
    {"fact": []},
])
def test_invalid_reply_changes_nothing_and_is_counted(store, bad):
    llm = scripted(bad)
    counters = feed(store, llm, [("Melanie", "I love painting landscapes.", DAY1)])
    assert counters["model_calls_profile"] == 1 and counters["profile_fallback"] == 1
    assert store_profile.current(store.conn) == [] and notes.count_active(store.conn) == 1


def test_no_model_changes_nothing_and_is_counted(store):
    counters = feed(store, None, [("Melanie", "I love painting landscapes.", DAY1)])
    assert counters["profile_fallback"] == 1 and "model_calls_profile" not in counters
    assert store_profile.current(store.conn) == [] and notes.count_active(store.conn) == 1


def test_prompt_too_long_changes_nothing_and_is_counted(store):
    llm = scripted(facts(("preference", "painting", "loves painting")), n_ctx=100)
    counters = feed(store, llm, [("Melanie", "I love painting landscapes. " * 20, DAY1)])
    assert counters["profile_fallback"] == 1 and profile_calls(llm) == []
    assert store_profile.current(store.conn) == []


# -- the store's key scheme ---------------------------------------------------------------------------
def test_key_scheme():
    assert store_profile.make_key("Caroline", "identity", "Relationship Status") == "caroline/identity/relationship_status"
    assert store_profile.subject_of(None) == "user" and store_profile.subject_of("Mary Ann") == "mary_ann"
    with pytest.raises(ValueError):
        store_profile.make_key("caroline", "hobby", "x")


@pytest.mark.model
def test_profile_prompt_gives_schema_valid_replies_on_a_real_model(tmp_path, small_llm):
    s = Store(tmp_path / "model.db", embed_model="hash-embedder", dim=384)
    try:
        counters = feed(s, small_llm, [
            ("Caroline", "I'm single now, and I love painting sunsets by the lake.", DAY1),
            (None, "Never book meetings before 10am.", DAY2),
        ], steps=[ProfileStep()])
        assert counters["model_calls_profile"] == 2
        assert "profile_fallback" not in counters  # the grammar-constrained replies validated
        for fact in store_profile.current(s.conn):
            assert fact.subject in ("caroline", "user") and fact.kind in store_profile.KINDS
    finally:
        s.close()


def test_generic_attribute_names_do_not_supersede_each_other() -> None:
    """The 1.5B model often names the attribute after the kind; such facts must sit side by side."""
    from edgemem.ingest.profile import facts_from_reply

    text = "I'm from Sweden, I love reading books and I'm single now."
    reply = {"facts": [
        {"kind": "identity", "key": "identity", "value": "from Sweden"},
        {"kind": "preference", "key": "preference", "value": "loves reading books"},
        {"kind": "identity", "key": "relationship_status", "value": "single"},
    ]}
    keys = [f.key for f in facts_from_reply(reply, "caroline", text)]
    assert keys == ["caroline/identity/sweden", "caroline/preference/loves_reading_books",
                    "caroline/identity/relationship_status"]


def test_a_fact_said_of_someone_else_is_theirs_and_a_value_written_as_a_key_is_dropped() -> None:
    from edgemem.ingest.profile import facts_from_reply, said_of

    text = "random but important: Dara's coeliac, so gluten free everything when he's eating. I'd eat Thai every night"
    reply = {"facts": [
        {"kind": "identity", "key": "diet", "value": "coeliac"},
        {"kind": "preference", "key": "thai", "value": "eat Thai every night"},
        {"kind": "identity", "key": "home_city", "value": "home_city"},
    ]}
    dropped: list[str] = []
    facts = facts_from_reply(reply, "lena", text, on_drop=dropped.append, speaker="Lena")
    assert [(f.key, f.value) for f in facts] == [("dara/identity/diet", "coeliac"),
                                                 ("lena/preference/thai", "eat Thai every night")]
    assert dropped == ["malformed"]
    assert said_of("big gin fan", "Mum is a big gin fan", "Maya") == "Mum"
    assert said_of("pescatarian", "also I'm pescatarian (no meat, fish is fine)", "Lena") is None
    assert said_of("vegetarian", "Rafael's vegetarian, 8 years now", "Rafael") is None  # the speaker's own


def test_a_bare_word_filed_as_a_fact_is_dropped() -> None:
    from edgemem.ingest.profile import facts_from_reply
    from edgemem.store.profile import fragment

    text = "One thing for when they are here: Kuba is allergic to peanuts. I love socks as presents, and I'm a nurse"
    reply = {"facts": [
        {"kind": "identity", "key": "identity", "value": "Kuba"},  # a name: the value became its own key
        {"kind": "preference", "key": "socks", "value": "socks"},
        {"kind": "identity", "key": "job", "value": "nurse"},  # an attribute named: a fact
    ]}
    dropped: list[str] = []
    facts = facts_from_reply(reply, "halina", text, on_drop=dropped.append, speaker="Halina")
    assert [(f.key, f.value) for f in facts] == [("halina/identity/job", "nurse")]
    assert dropped == ["fragment", "fragment"]
    # a stance or a third word makes it a fact
    assert not fragment("cats", "no cats") and not fragment("lactose_intolerant", "lactose intolerant")
    assert not fragment("true_crime_podcasts", "true crime podcasts") and fragment("pierogi_ruskie", "pierogi ruskie")


def test_a_value_stopped_by_the_length_limit_keeps_its_finished_sentences_or_is_dropped() -> None:
    from edgemem.ingest.profile import MAX_VALUE_CHARS, facts_from_reply

    text = ("rule number one. sundays are not for work. church in the morning, i play drums in the band, then family "
            "dinner. never book me anything work related on a sunday")
    # What the 1.5B model wrote, stopped by the schema's maxLength (a real profile fact).
    cut = "sundays are not for work. church in the morning, i play drums in the band, then family dinner. never book me anything on"
    assert len(cut) == MAX_VALUE_CHARS
    dropped: list[str] = []
    facts = facts_from_reply({"facts": [{"kind": "rule", "key": "sundays", "value": cut}]}, "kwame", text,
                             on_drop=dropped.append, speaker="Kwame")
    assert [f.value for f in facts] == [
        "sundays are not for work. church in the morning, i play drums in the band, then family dinner."]
    long_clause = "never book me anything work related on a sunday or a public holiday or the day after one " * 2
    assert facts_from_reply({"facts": [{"kind": "rule", "key": "x", "value": long_clause[:MAX_VALUE_CHARS]}]},
                            "kwame", long_clause, on_drop=dropped.append) == []
    assert dropped == ["cut"]

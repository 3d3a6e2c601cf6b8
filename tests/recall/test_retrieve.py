"""Retrieval fusion and the final ranking, on a real store with the real embedder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgemem.recall import retrieve, tiers
from edgemem.recall.retrieve import RANK_WEIGHTS, Hit, bm25, fused_rank, hybrid, rrf
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


def store_of(path: Path, embedder, turns: list[tuple[str, str]], month: str) -> Store:
    """Notes of ``turns``, embedded as ingestion embeds a turn ("Speaker: text"), one a day."""
    s = Store(path, embed_model=embedder.name, dim=embedder.dim)
    vectors = embedder.embed([f"{who}: {text}" for who, text in turns])
    with s.transaction() as conn:
        for i, ((who, text), vec) in enumerate(zip(turns, vectors, strict=True), start=1):
            notes.insert(conn, raw_ids=[], content=text, embedding=vec, event_time=f"{month}-0{i}T10:00:00", speaker=who)
    return s


@pytest.fixture
def store(tmp_path: Path, embedder):
    s = store_of(tmp_path / "r.db", embedder, TURNS, "2023-05")
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
    question = "What has Caroline been painting?"
    query = tiers.content_query(question, ["Melanie", "Caroline"])
    vector = embedder.embed([query])[0]
    hits = hybrid(store.conn, query, vector, 6)
    # Without the speaker's weight Melanie's "Painting landscapes relaxes me" scores first.
    plain, _ = fused_rank(store.conn, question, query, vector, hits, 3, weights={**RANK_WEIGHTS, "speaker": 0.0})
    assert plain[0].note_id == 5
    ranked, who = fused_rank(store.conn, question, query, vector, hits, 3)
    assert who == "Caroline"
    assert len(ranked) == 3 and ranked[0].note_id == 4  # Caroline's painting
    gain = {h.note_id: h.score for h in ranked}[4] - {h.note_id: h.score for h in plain}[4]
    assert gain == pytest.approx(RANK_WEIGHTS["speaker"])


def test_the_rank_score_adds_its_terms(store, embedder) -> None:
    """Notes inserted without raw turns have no lines either side: cosine, BM25, speaker and length."""
    question = "Did Caroline go to a charity race?"
    query = tiers.content_query(question, ["Melanie", "Caroline"])
    vector = embedder.embed([query])[0]
    ranked, who = fused_rank(store.conn, question, query, vector, [Hit(2, 0.0), Hit(3, 0.0)], None)
    assert who == "Caroline"
    cos = notes.vectors(store.conn, [2, 3])
    lexical = dict(bm25(store.conn, query, 50))
    assert 3 not in lexical  # the pottery line shares no word with the question
    w = RANK_WEIGHTS
    want = {2: float(cos[2] @ vector) + w["lexical"] * lexical[2] / max(lexical.values()) + w["speaker"]
            + w["length"] * 12 / retrieve.LENGTH_CAP,
            3: float(cos[3] @ vector) + w["length"] * 9 / retrieve.LENGTH_CAP}
    assert [h.note_id for h in ranked] == [2, 3]
    assert {h.note_id: h.score for h in ranked} == pytest.approx(want)


def test_no_speaker_when_the_question_names_nobody_or_both(store) -> None:
    for question in ("Who went to a charity race?", "Did Melanie and Caroline both run?"):
        assert retrieve.named_speaker(store.conn, question, [1, 2, 4])[1] is None
    assert retrieve.named_speaker(store.conn, "What did Caroline do?", [1, 2])[1] == "Caroline"
    assert fused_rank(store.conn, "What did Caroline do?", "What did do?", np.zeros(3), [], 2) == ([], None)


SHORT = [
    ("Jon", "Agreed!"),
    ("Jon", "Thanks!"),
    ("Gina", "Wow, nice spot Jon! Where is it?"),
    ("Jon", "I've been looking at places for my studio. Oh, I went to Paris yesterday, it was lovely!"),
    ("Gina", "I love the bakery near my flat."),
    ("Jon", "What gave you the idea?"),
]


@pytest.fixture
def chat(tmp_path: Path, embedder):
    s = store_of(tmp_path / "c.db", embedder, SHORT, "2023-01")
    yield s
    s.close()


def test_the_content_query_drops_the_speakers_names() -> None:
    speakers = ["Jon", "Gina"]
    assert tiers.content_query("Which cities has Jon visited?", speakers) == "Which cities has visited?"
    assert tiers.content_query("What did Gina's bakery sell, and did jon like it?", speakers) == \
        "What did bakery sell, and did like it?"
    assert tiers.content_query("Jonathan's car?", speakers) == "Jonathan's car?"  # whole names only
    assert tiers.content_query("Jon?", speakers) == "Jon?"  # nothing left to match: the question as asked
    assert tiers.content_query("Where is Ana?", []) == "Where is Ana?"


def test_a_speaker_s_name_does_not_pull_their_short_lines_up(chat, embedder) -> None:
    question = "Which cities has Jon visited?"
    by_name = hybrid(chat.conn, question, embedder.embed([question])[0], 6)
    assert by_name[0].note_id != 4  # with the name in the query a content-free line of Jon's wins
    gathered = tiers.gather(chat.conn, "targeted-extraction", question, embedder.embed)
    assert gathered.retrieved[0] == 4  # the line about Paris
    assert gathered.info["speaker"] == "Jon"  # whom it asks about still counts, in the ranking


MEMORIAL = [
    ("Maria", "How did your kids react when you took them to the military memorial last week?"),
    ("John", "They were awestruck and humbled."),
    ("Maria", "I baked bread for the shelter this morning."),
    ("John", "The kids want to visit a museum next month."),
    ("Maria", "My puppy is learning to sit."),
    ("John", "We went hiking on the coast at the weekend."),
]


@pytest.fixture
def session(tmp_path: Path, embedder):
    from edgemem.ingest.raw import accept_turns
    from edgemem.ingest.worker import Worker

    s = Store(tmp_path / "s.db", embed_model=embedder.name, dim=embedder.dim)
    accept_turns(s, [(who, text, f"2023-05-01T10:0{i}:00", f"D1:{i + 1}") for i, (who, text) in enumerate(MEMORIAL)],
                 kind="conversation", uri="chat/session_1")
    accept_turns(s, [(None, "How did your kids react to the memorial? A question in a file.", "2023-05-02T10:00:00", None),
                     (None, "An unrelated paragraph after it.", "2023-05-02T10:00:00", None)], kind="file", uri="/notes/a.md")
    Worker(s, None, embedder.embed, steps=[]).drain()
    yield s
    s.close()


def test_the_reply_to_a_matching_line_is_raised_with_it(session, embedder) -> None:
    conn = session.conn
    found = notes.get_many(conn, notes.active_ids(conn))

    def note(text: str) -> int:  # a resolved date may follow a phrase ("last week [...]")
        (hit,) = [n.id for n in found if n.content.startswith(text[:30])]
        return hit

    question_line, answer_line, last_line = note(MEMORIAL[0][1]), note(MEMORIAL[1][1]), note(MEMORIAL[-1][1])
    file_line = note("How did your kids react to the memorial? A question in a file.")
    # the next line of the same conversation; none after a session's last line, none for a file chunk
    assert retrieve.next_lines(conn, [question_line, last_line, file_line]) == {question_line: answer_line}

    question = "How did John describe his kids' reaction at the military memorial?"
    query = tiers.content_query(question, ["John", "Maria"])
    plain = hybrid(conn, query, embedder.embed([query])[0], 8)
    ranks = [h.note_id for h in plain]
    assert ranks[0] == question_line and ranks.index(answer_line) > 2  # the answer shares no word with it
    own = {h.note_id: h.score for h in plain}[answer_line]
    raised = retrieve.with_replies(conn, plain)
    top = {h.note_id: h for h in raised}
    assert top[answer_line].score == pytest.approx(max(own, plain[0].score * retrieve.REPLY_FACTOR))
    assert [h.note_id for h in raised].index(answer_line) <= ranks.index(answer_line)
    tied = retrieve.with_replies(conn, plain, factor=1.0)  # at its line's own score: right behind it
    assert [h.note_id for h in tied][:2] == [question_line, answer_line] and tied[1].pathways["reply"] == 1
    assert answer_line in tiers.gather(conn, "targeted-extraction", question, embedder.embed).retrieved[:3]
    # The ranking reads the line before each candidate: the answer scores with the question it replies to.
    assert retrieve.next_lines(conn, [answer_line, question_line, file_line], step=-1) == {answer_line: question_line}
    vector = embedder.embed([query])[0]
    alone, _ = fused_rank(conn, question, query, vector, plain, None, weights={**RANK_WEIGHTS, "before": 0.0})
    told, _ = fused_rank(conn, question, query, vector, plain, None)
    gain = {h.note_id: h.score for h in told}[answer_line] - {h.note_id: h.score for h in alone}[answer_line]
    cos = notes.vectors(conn, [question_line])[question_line]
    assert gain == pytest.approx(RANK_WEIGHTS["before"] * float(cos @ vector))
    assert [h.note_id for h in told].index(answer_line) < [h.note_id for h in alone].index(answer_line)


def test_profile_facts_are_pinned_by_what_is_asked_not_by_its_time_frame(settings, embedder) -> None:
    from edgemem.store import profile as profile_store
    from recall_fakes import remembered

    eng, _, ids = remembered(settings, embedder, [("2025-02-03T09:00:00", "Pepper is my 4 year old whippet.")])
    try:
        with eng.store.transaction() as conn:
            profile_store.upsert(conn, "maya/identity/dog", "4 year old whippet", valid_from="2025-02-03T09:00:00",
                                 note_id=ids["Pepper is my 4 year old whippet."])
        conn = eng.store.conn
        assert tiers.profile_evidence(conn, "How many parkruns have I logged this year?") == []
        assert [e.text for e in tiers.profile_evidence(conn, "How old is my whippet?")] == [
            "maya — dog: 4 year old whippet (identity)"]
    finally:
        eng.close()


def test_a_suggestion_gets_the_profile_facts_closest_to_it_and_no_more(settings, embedder) -> None:
    from edgemem.store import profile as profile_store
    from recall_fakes import remembered

    eng, _, ids = remembered(settings, embedder, [("2025-02-03T09:00:00", "Notes about me.")])
    facts = [("diet", "pescatarian, no meat"), ("allergy", "allergic to penicillin"), ("dentist", "Dr Nolan at Glasnevin"),
             ("car", "drives a Kia Niro"), ("dislikes", "hates coriander"), ("job", "cardiac nurse manager"),
             ("partner_diet", "Dara is coeliac, gluten free"), ("gym", "Bloc Valencia bouldering")]
    try:
        with eng.store.transaction() as conn:
            for key, value in facts:
                profile_store.upsert(conn, f"lena/identity/{key}", value, valid_from="2025-02-03T09:00:00",
                                     note_id=ids["Notes about me."])
        conn = eng.store.conn
        question = "What should I cook for dinner tonight?"
        every = tiers.profile_evidence(conn, question, related=False)
        assert len(every) == len(facts)
        closest = tiers.profile_evidence(conn, question, embed=embedder.embed, related=False, limit=3)
        assert [e.text for e in closest] == [
            "lena — diet: pescatarian, no meat (identity)", "lena — dislikes: hates coriander (identity)",
            "lena — partner diet: Dara is coeliac, gluten free (identity)"]
        # Tier 1 packs the facts sharing a word with the suggestion (none here) and the
        # SUGGESTION_UNSHARED closest others, in the profile's order
        gathered = tiers.gather(conn, "profile-injection", question, embedder.embed)
        assert [e.text for e in gathered.items] == [e.text for e in tiers.profile_evidence(
            conn, question, embed=embedder.embed, related=False, limit=tiers.SUGGESTION_UNSHARED)]
        assert len(gathered.items) == tiers.SUGGESTION_UNSHARED
        # a fact that shares a word with it is packed besides them
        asked = "What should I cook for dinner tonight, something with no meat?"
        texts = [e.text for e in tiers.gather(conn, "profile-injection", asked, embedder.embed).items]
        assert "lena — diet: pescatarian, no meat (identity)" in texts
        assert len(texts) == 1 + tiers.SUGGESTION_UNSHARED
    finally:
        eng.close()


# --- the sentence pathway ---------------------------------------------------------------------------
LONG = [
    ("Maria", "The shelter fundraiser ran late and the kitchen flooded twice. We counted the donations, stacked the"
              " chairs and drove the leftover soup to the church. I sat with a little girl who was all alone because"
              " she missed her mum. Next month we are planning a bake sale and a winter coat drive."),
    ("John", "My little girl started school this week."),
    ("Maria", "Sitting with the kids at the shelter is my favourite part."),
    ("John", "Why did you sit by the window?"),
]


def sentence_store(path: Path, embedder) -> Store:
    """Notes of ``LONG`` as the write path stores them: the note vector and, for a note of several
    sentences, one vector per sentence (``ingest.notes.build``)."""
    from edgemem.ingest.notes import NoteDraft, sentences

    s = Store(path, embed_model=embedder.name, dim=embedder.dim)
    with s.transaction() as conn:
        for i, (who, text) in enumerate(LONG, start=1):
            spans = [f"{who}: {x}" for x in sentences(text)]
            vectors = embedder.embed([f"{who}: {text}", *spans])
            draft = NoteDraft([], text, "", [], [], [], who, f"2023-02-0{i}T10:00:00")
            assert draft.sentence_texts == spans
            notes.insert(conn, raw_ids=[], content=text, embedding=vectors[0], sentences=vectors[1:] if spans else None,
                         event_time=draft.event_time, speaker=who)
    return s


def test_new_content_merging_or_forgetting_drops_a_note_s_sentence_vectors(tmp_path: Path, embedder) -> None:
    store = sentence_store(tmp_path / "s.db", embedder)
    try:
        with store.transaction() as conn:
            notes.update(conn, 1, context="said by Maria")  # the text is unchanged: its sentences stay
            assert list(notes.sentence_vectors(conn, [1])) == [1]
            notes.update(conn, 1, content="The shelter event was busy.")
            assert notes.sentence_vectors(conn, [1]) == {}
        sentence_store(tmp_path / "t.db", embedder).close()
        other = Store(tmp_path / "t.db", embed_model=embedder.name, dim=embedder.dim)
        with other.transaction() as conn:
            notes.mark_merged(conn, 1, 3)
            assert notes.sentence_vectors(conn, [1]) == {}
        other.close()
        third = sentence_store(tmp_path / "u.db", embedder)
        with third.transaction() as conn:
            notes.delete(conn, 1)
            assert conn.execute("SELECT count(*) FROM note_sentences").fetchone()[0] == 0
        third.close()
    finally:
        store.close()


KAI = [
    ("Kai", "rule #1 dont book me anything before 9am. i am useless b4 9 ngl"),
    ("Kai", "liam came 3rd in the open. liam = my climbing buddy, drives a hilux"),
    ("Kai", "liam wants castle hill bouldering this saturday, hes picking me up at 10"),
    ("Kai", "castle hill was unreal, liam sent the big roof problem"),
    ("Kai", "quiet after 10pm on weeknights at the flat"),
    ("Ana", "kai never replies before lunch lol"),
    ("Kai", "and if i ever try to buy anything over $200 make me wait 48 hrs first"),
]


def test_a_proposal_gets_the_stored_rules_that_cover_it_wherever_they_rank(tmp_path: Path, embedder) -> None:
    s = store_of(tmp_path / "k.db", embedder, KAI, "2025-07")
    question = "liam wants to leave for castle hill at 8am this saturday, can I do that?"
    # The 9am rule covers an 8am start; the 10pm one is about quiet, not this.
    assert [h.note_id for h in tiers.governing_rules(s.conn, question, set())] == [1]
    gathered = tiers.gather(s.conn, "constraint-validation", question, embedder.embed)
    assert 1 in [e.note_id for e in gathered.items] and gathered.info["rules_added"] in (0, 1)
    # Whom the question names is no subject a rule shares: what Ana says of Kai rules nothing.
    assert [h.note_id for h in tiers.governing_rules(s.conn, "can kai go out at 8am on saturday?", set())] == [1]
    # A limit on what is proposed, in the unit it is asked in, is one of them.
    assert [h.note_id for h in tiers.governing_rules(s.conn, "a garmin watch for $320, just buy it?", set())] == [7]
    # A question that proposes nothing gets none.
    assert tiers.governing_rules(s.conn, "who is liam?", set()) == []
    s.close()


KWAME = [
    ("Kwame", "rule number two lol. thursday evenings are Kofi's basketball games. i don't miss them"),
    ("Kwame", "the shop is busy, two transmissions this week"),
    ("Kwame", "Kofi's new season: the league moved games to friday evenings. so fridays are sacred now, thursdays are free"),
    ("Kwame", "the new hoist is in, finally"),
]


def test_a_rule_the_scan_adds_comes_with_the_line_that_freed_its_days(tmp_path: Path, embedder) -> None:
    s = store_of(tmp_path / "kw.db", embedder, KWAME, "2025-07")
    # The Thursday rule covers a Thursday dinner; the later line freeing Thursdays comes with it.
    assert [h.note_id for h in tiers.governing_rules(
        s.conn, "My parts supplier invited me to dinner on a Thursday evening in March. Can I go?", set())] == [1, 3]
    # "fridays are sacred now" is a rule about anything on a Friday.
    assert [h.note_id for h in tiers.governing_rules(
        s.conn, "can i do the dealer trade night on a friday evening in february?", set())] == [3]
    s.close()

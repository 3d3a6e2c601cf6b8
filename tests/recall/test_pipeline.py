"""MemFlow Algorithm 1 end to end on a real store and real embeddings, with a scripted model."""

from __future__ import annotations

import pytest

from edgemem.engine import Engine
from edgemem.recall import pipeline
from edgemem.recall.pipeline import ABSTAIN
from edgemem.runtime.fake import ScriptedLLM
from recall_fakes import FixedRouter




@pytest.fixture
def engine(settings, embedder):
    llm = ScriptedLLM()
    eng = Engine.open(settings, llm=llm, embedder=embedder, steps=[])
    for when, text in [
        ("2023-05-08T13:56:00", "I went to the LGBTQ support group yesterday and it was powerful."),
        ("2023-05-25T10:00:00", "I finally signed up for the pottery class today."),
        ("2023-06-02T09:00:00", "My gym locker code is 4512, don't forget it."),
        ("2023-06-03T09:00:00", "We adopted a cat named Oscar last week."),
    ]:
        eng.remember(text, speaker="Caroline", when=when)
    eng.process()
    yield eng, llm
    eng.close()


def run(eng, llm, question, tag, **kw):
    return pipeline.run(eng.store.conn, question, llm=llm, embed=eng.runtime.embed, router=FixedRouter(tag), **kw)


def test_active_context_answers_without_retrieval_or_model(engine) -> None:
    eng, llm = engine
    out = run(eng, llm, "What is my gym locker code?", "targeted-extraction",
              recent=["I'll be late today.", "My gym locker code is 4512."])
    assert out.text == "My gym locker code is 4512."
    assert out.trace["route_layer"] == "active-context" and not llm.calls


def test_short_grounded_answer_passes_and_cites_its_note(engine) -> None:
    eng, llm = engine
    llm.enqueue("4512")
    streamed: list[str] = []
    out = run(eng, llm, "What is my gym locker code?", "targeted-extraction", on_token=streamed.append)
    assert out.text == "4512" and "".join(streamed) == "4512"
    trace = out.trace
    assert trace["route_tag"] == "targeted-extraction" and trace["tier"] == 2
    assert trace["stages"]["validate0"]["stage"] == "short_answer"
    assert 0 < trace["packed_tokens"] <= trace["stages"]["answer0"]["prompt_tokens"]
    cited = [n for n in out.note_ids]
    assert cited and any("4512" in c for c in (eng.note(i)["content"] for i in cited))
    # Evidence reached the model with its date and speaker.
    prompt = llm.calls[0].messages[-1]["content"]
    assert "(2 June 2023, Caroline) My gym locker code is 4512" in prompt


def test_escalation_then_calibrated_abstention(engine) -> None:
    eng, llm = engine
    llm.enqueue("ESCALATE_REQUIRED", "Her grandmother comes from a small village near Porto in Portugal.", '"no"')
    streamed: list[str] = []
    resets: list[bool] = []
    out = run(eng, llm, "What country is Melanie's grandma from?", "targeted-extraction",
              on_token=streamed.append, on_reset=lambda: resets.append(True))
    assert out.text == ABSTAIN and out.note_ids == []
    assert out.trace["escalated_to"] == "conflict-resolution"  # Table 11: targeted-extraction -> conflict-resolution
    assert out.trace["stages"]["validate0"]["stage"] == "hard_failure"
    assert out.trace["stages"]["validate1"]["stage"] == "judge"
    assert "ESCALATE" not in "".join(streamed)  # the escalation signal never reaches the user
    assert resets == [True] and "".join(streamed).endswith(ABSTAIN)
    assert len(llm.calls) == 3


def test_a_fact_answer_is_given_without_the_questions_words_after_its_retry_too(engine) -> None:
    eng, llm = engine
    llm.enqueue("ESCALATE_REQUIRED", "Caroline signed up for the pottery class.", '"yes"')
    streamed: list[str] = []
    out = run(eng, llm, "What did Caroline sign up for?", "targeted-extraction", on_token=streamed.append)
    assert out.trace["stages"]["validate1"]["grounded"]
    assert out.text == "Pottery class."  # the reply's answer is the fact
    assert "".join(streamed).endswith("Caroline signed up for the pottery class.")  # the stream, the model's sentence
    assert out.note_ids and all("pottery" in eng.note(i)["content"] for i in out.note_ids)


def test_a_date_asked_and_only_a_month_told_says_the_date_is_not_in_the_notes(engine) -> None:
    eng, llm = engine
    eng.remember("The pottery show is in September, no date fixed yet.", speaker="Caroline", when="2023-06-04T09:00:00")
    eng.process()
    llm.enqueue("September 2023")
    out = run(eng, llm, "What date is the pottery show?", "targeted-extraction")
    assert out.text == "The exact date is not mentioned in your notes (they say: September 2023)."
    assert any("pottery show" in eng.note(i)["content"] for i in out.note_ids)
    llm.enqueue("September 2023")
    assert run(eng, llm, "When is the pottery show?", "targeted-extraction").text == "September 2023"  # no date asked


def test_profile_injection_without_profile_escalates_without_a_model_call(engine) -> None:
    eng, llm = engine
    llm.enqueue("You adopted a cat named Oscar.")
    out = run(eng, llm, "What pet would I like a toy for?", "profile-injection")
    assert out.trace["tier"] == 1 and out.trace["escalated_to"] == "targeted-extraction"
    assert "answer0" not in out.trace["stages"] and out.text == "You adopted a cat named Oscar."
    # Tier 1 ranked nothing: the ranking the answer came from is the escalation's (what recall@k scores)
    assert out.trace["used"] and set(out.trace["used"]) <= set(out.trace["retrieved"])


def test_a_suggestion_no_answer_passed_is_the_models_own_from_the_users_lines(engine) -> None:
    eng, llm = engine
    llm.enqueue("ESCALATE_REQUIRED", "Book a pottery evening: you signed up for the class.")
    streamed: list[str] = []
    out = run(eng, llm, "Plan me a nice evening.", "profile-injection", on_token=streamed.append)
    # both attempts failed the validator; a suggestion is never "not found" while there are lines
    assert out.text == "Book a pottery evening: you signed up for the class." and "".join(streamed).endswith(out.text)
    assert out.trace["verdict"] == "suggested" and out.trace["stages"]["suggest"]["completion_tokens"] > 0
    assert [eng.note(i)["content"][:20] for i in out.note_ids] == ["I finally signed up "]
    assert "Request: Plan me a nice evening." in llm.calls[-1].messages[-1]["content"] and len(llm.calls) == 2
    # another route keeps its calibrated abstention
    llm.enqueue("ESCALATE_REQUIRED", "ESCALATE_REQUIRED")
    assert run(eng, llm, "What is my locker colour?", "targeted-extraction").text == ABSTAIN


def test_a_weekday_no_answer_gave_is_the_events_stored_day(engine) -> None:
    eng, llm = engine
    llm.enqueue("ESCALATE_REQUIRED", "ESCALATE_REQUIRED")
    # two things named (the group, the centre): Tier 3 dates no single event; the model finds no day
    out = run(eng, llm, "What day of the week was Caroline's support group at the LGBTQ centre?", "temporal-reasoning")
    assert out.text == "A Sunday (7 May 2023)" and out.trace["verdict"] == "computed" and len(llm.calls) == 2
    assert [eng.note(i)["content"][:20] for i in out.note_ids] == ["I went to the LGBTQ "]


def test_temporal_tool_round_is_executed_in_code(engine) -> None:
    eng, llm = engine
    llm.enqueue("Event A: 2023-05-07. Event B: 2023-05-25.\nTOOL: days_between | 2023-05-07 | 2023-05-25", "18 days")
    # (Asked as "how many days after …" the stored dates answer it with no model: see the next test.)
    out = run(eng, llm, "Caroline signed up for the pottery class after the support group: how many days later?",
              "temporal-reasoning")
    assert out.text == "18 days"
    assert out.trace["stages"]["answer0"]["tool_calls"][0].startswith("days_between(2023-05-07, 2023-05-25) -> 18 days")
    assert "TOOL_RESULT: 18 days" in llm.calls[1].messages[-1]["content"]
    # Tier-3 temporal preprocessing resolved "yesterday" and sorted by date before the model saw it.
    assert "yesterday [7 May 2023]" in llm.calls[0].messages[-1]["content"]


def test_days_between_two_events_are_counted_from_their_stored_dates_without_the_model(engine) -> None:
    eng, llm = engine
    out = run(eng, llm, "How many days passed between the support group and the pottery class signup?", "temporal-reasoning")
    assert out.text == "18 days: the support group 7 May 2023, the pottery class signup 25 May 2023"
    assert out.trace["verdict"] == "computed" and not llm.calls
    assert [eng.note(i)["content"][:20] for i in out.note_ids] == ["I went to the LGBTQ ", "I finally signed up "]


def test_engine_ask_records_a_trace_for_why(engine) -> None:
    eng, llm = engine
    llm.default = "4512"  # the router may consult the model too; an invalid routing reply falls back
    answer = eng.ask("What is my gym locker code?")
    trace = eng.why(answer.query_id)
    assert trace["answer"] == answer.text and trace["data"]["system"] == "edgemem"
    assert trace["route_tag"] in {"targeted-extraction", "profile-injection", "conflict-resolution"}
    assert trace["route_layer"] in {"rules", "classifier", "model", "fallback"}


def test_the_router_asks_the_model_only_when_the_setting_says_so(settings, embedder) -> None:
    """router_model (off by default): a near-tie takes the classifier's best tag without a model call."""
    import dataclasses

    assert settings.router_model is False
    for on in (False, True):
        eng = Engine.open(dataclasses.replace(settings, router_model=on), llm=ScriptedLLM(), embedder=embedder, steps=[])
        try:
            assert (eng.router.llm is not None) is on
        finally:
            eng.close()


@pytest.mark.parametrize("on", [False, True])
def test_cluster_choice_asks_the_model_only_with_cluster_model(engine, monkeypatch, on) -> None:
    """cluster_model (off by default): the Tier-3 cluster choice gets the model only when asked to."""
    from edgemem.config import Settings
    from edgemem.recall import retrieve

    assert Settings().cluster_model is False
    given: list[object] = []
    real = retrieve.select_clusters
    monkeypatch.setattr(retrieve, "select_clusters", lambda conn, q, v, llm: (given.append(llm), real(conn, q, v, None))[1])
    eng, llm = engine
    llm.enqueue("7 May 2023")
    run(eng, llm, "When did Caroline go to the support group?", "temporal-reasoning", cluster_model=on)
    assert given and all((g is llm) if on else (g is None) for g in given)


def test_a_state_question_gets_the_readings_tier_3_computed(settings, embedder) -> None:
    llm = ScriptedLLM()
    eng = Engine.open(settings, llm=llm, embedder=embedder, steps=[])
    try:
        ids = {}
        for when, text in [
            ("2025-10-02T19:30:00", "stood on the scales, 102 kilos. target's 95"),
            ("2025-12-15T20:41:00", "and I'm 97 kilos"),
            ("2026-05-19T20:20:00", "93 kilos"),
            ("2026-05-20T09:00:00", "Josh's training moved to Wednesdays."),
        ]:
            ids[text] = eng.remember(text, speaker="Tom", when=when, process=True)["notes"][0]
        out = run(eng, llm, "How has my weight changed?", "state-tracking")
        assert out.text == ("From 102 kg (2 October 2025) to 93 kg (19 May 2026): 102 kg (2 October 2025) → "
                            "97 kg (15 December 2025) → 93 kg (19 May 2026)")
        assert out.trace["verdict"] == "computed" and not out.trace["escalated"] and not llm.calls
        assert out.note_ids == [ids[t] for t in list(ids)[:3]]  # the notes each reading comes from
        # A superlative asks for one reading: the model answers; when it gives up, the readings.
        llm.enqueue("ESCALATE_REQUIRED", "ESCALATE_REQUIRED")
        out = run(eng, llm, "What was my lowest weight?", "state-tracking")
        assert len(llm.calls) == 2 and out.trace["verdict"] == "computed" and out.trace["escalated"]
        assert out.text.startswith("From 102 kg (2 October 2025) to 93 kg (19 May 2026)")
    finally:
        eng.close()


def test_an_overview_question_gets_the_dated_lines_about_its_subject_without_a_model_call(settings, embedder) -> None:
    llm = ScriptedLLM()
    eng = Engine.open(settings, llm=llm, embedder=embedder, steps=[])
    try:
        ids = {}
        for when, text in [
            ("2025-10-28T20:00:00", "Josh broke his wrist at football, can't surf with a cast."),
            ("2025-11-02T19:00:00", "Sue's book club meets at ours now."),
            ("2026-04-21T19:00:00", "Josh's team won the Weston tournament!"),
        ]:
            ids[text] = eng.remember(text, speaker="Tom", when=when, process=True)["notes"][0]
        streamed: list[str] = []
        out = run(eng, llm, "Summarise what's been going on with Josh.", "broad-summarization", on_token=streamed.append)
        assert out.text == ("What your notes say about Josh, oldest first:\n"
                            "- 28 October 2025: Josh broke his wrist at football, can't surf with a cast.\n"
                            "- 21 April 2026: Josh's team won the Weston tournament!")
        assert "".join(streamed) == out.text and not llm.calls
        assert out.trace["verdict"] == "computed" and out.note_ids == [ids[t] for t in list(ids)[::2]]
    finally:
        eng.close()

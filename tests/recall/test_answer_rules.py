"""Constraint-validation verdicts decided in code from the stored rules (DESIGN Principle 2), on a
real store with real embeddings; the scripted model has no replies, so any model call would fail."""

from __future__ import annotations

import pytest

from edgemem.recall import pipeline
from edgemem.recall import preprocess
from edgemem.recall.answer import rule_verdict
from edgemem.recall.rules import replaced_rules
from edgemem.recall.evidence import Evidence
from edgemem.recall.validator import validate
from edgemem.runtime.fake import ScriptedLLM
from recall_fakes import FixedRouter, remembered




@pytest.fixture
def engine(settings, embedder):
    eng, llm, ids = remembered(settings, embedder, [
        ("2024-05-02T09:00:00", "Never schedule meetings on Fridays."),
        ("2024-05-03T09:00:00", "I'm allergic to peanuts."),
        ("2024-05-04T09:00:00", "Don't book calls before 10am."),
        ("2024-05-05T09:00:00", "We met Ana for lunch on Friday and talked about her new job."),
        ("2024-05-06T09:00:00", "The team meeting moved to the big room."),
    ])
    yield eng, llm, ids
    eng.close()


def ask(eng, llm, question, tag="constraint-validation"):
    return pipeline.run(eng.store.conn, question, llm=llm, embed=eng.runtime.embed, router=FixedRouter(tag))


def test_a_proposal_against_a_stored_rule_is_answered_no_citing_only_the_rule(engine) -> None:
    eng, llm, ids = engine
    out = ask(eng, llm, "Can we meet on Friday?")
    assert out.text == "No — Never schedule meetings on Fridays."
    assert out.note_ids == [ids["Never schedule meetings on Fridays."]]
    assert out.trace["stages"]["validate0"]["stage"] == "rule_verdict"
    assert out.trace["cite_reason"] == "rule" and not llm.calls  # decided in code, accepted without a judge


def test_another_day_or_time_is_not_ruled_out(engine) -> None:
    eng, llm, ids = engine
    out = ask(eng, llm, "Can we meet on Thursday?")
    assert out.text == 'Yes — nothing in your rules rules it out (closest: "Never schedule meetings on Fridays.")'
    assert out.note_ids == [ids["Never schedule meetings on Fridays."]] and not llm.calls
    out = ask(eng, llm, "Can we have a call at 9am on Tuesday?")
    assert out.text == "No — Don't book calls before 10am."
    assert out.note_ids == [ids["Don't book calls before 10am."]]


def test_the_verdict_holds_after_escalation_to_another_tag(engine) -> None:
    eng, llm, ids = engine
    out = ask(eng, llm, "Is it ok to order the pad thai with peanuts?", tag="targeted-extraction")
    assert out.text == "No — I'm allergic to peanuts." and out.note_ids == [ids["I'm allergic to peanuts."]]


def test_no_rule_about_the_proposal_leaves_it_to_the_model(engine) -> None:
    eng, llm, _ = engine
    llm.enqueue('{"forbids": false}', "Yes — no rule in your notes is about sushi.", '"yes"')
    out = ask(eng, llm, "Can I eat sushi tonight?")
    assert out.text == "Yes — no rule in your notes is about sushi."
    # asked first whether the one rule with no day or time (peanuts) forbids sushi
    assert llm.calls[0].messages[-1]["content"] == "Rule: I'm allergic to peanuts.\nProposal: Can I eat sushi tonight?\n"
    assert len(llm.calls) == 3 and out.trace["stages"]["validate0"]["judge"] == "ran (shared prefix)"


RULES = [
    Evidence(-1_000_007, "user — rule: never schedule meetings on Fridays (rule)", "2024-06-01", kind="profile"),
    Evidence(5, "Rule: never schedule meetings on Fridays.", "2024-06-01T10:00:00", score=0.8),
    Evidence(8, "I only drink decaf coffee.", "2024-06-01T10:00:00", score=0.5),
    Evidence(9, "We went to the park on Friday.", "2024-06-01T10:00:00", score=0.5),
]


def test_rule_verdicts_by_polarity_and_overlap() -> None:
    v = rule_verdict("Can we meet on Friday?", RULES)
    assert v.text == "No — Rule: never schedule meetings on Fridays." and [e.note_id for e in v.rules] == [5, -1_000_007]
    assert rule_verdict("Can I drink decaf coffee?", RULES).text == "Yes — I only drink decaf coffee."
    assert rule_verdict("Can I drink regular coffee?", RULES).text == "No — I only drink decaf coffee."
    assert rule_verdict("Can we go to the park on Friday?", RULES) is None  # a statement, not a rule
    assert rule_verdict("Can I eat meat?", [Evidence(1, "Never eat meat on Fridays.", "")]) is None  # it depends
    assert rule_verdict("What are my rules about meetings?", RULES) is None  # not a proposal


def test_a_told_event_is_no_rule_and_its_resolved_date_no_rules_day() -> None:
    # "only now" and "only a week" are no limiting rules, and "[week of 20 October 2025]" is when
    # something happened: the allergy decides, not the story with a date in it.
    told = [Evidence(1, "We came back from Taipei with Noriko three weeks ago [week of 20 October 2025] and I have "
                        "only now found time to write. Annoying, but only a week.", "2025-11-10T09:00:00", speaker="Aiko"),
            Evidence(2, "I have a severe buckwheat allergy, so no soba for me.", "2025-05-11T09:00:00", speaker="Aiko")]
    v = rule_verdict("Noriko is back in August and wants to take me to a juwari soba place, is that ok?", told)
    assert v.text == "No — I have a severe buckwheat allergy, so no soba for me."
    assert rule_verdict("Can Noriko and I go to the cinema on Saturday?", told[:1]) is None


def test_of_two_rules_that_cover_a_proposal_the_one_about_it_in_the_users_words_is_quoted() -> None:
    said = [
        Evidence(6, "Understood — amlodipine 5 mg each morning, and a penicillin allergy.", "2026-01-12T19:15:00",
                 speaker="Assistant"),
        Evidence(39, "I chose the midday flight deliberately — I never take flights that leave before nine in the morning.",
                 "2026-03-03T10:00:00", speaker="Halina"),
    ]
    v = rule_verdict("Marta found a cheap flight back from Cork for me at 6:15 in the morning. Shall I take it?", said)
    assert v.text == "No — I chose the midday flight deliberately — I never take flights that leave before nine in the morning."


def test_the_validator_accepts_a_verdict_only_with_the_rule_verbatim() -> None:
    context = "(2 May 2024) Never schedule meetings on Fridays."
    assert validate("Can we meet on Friday?", "No — Never schedule meetings on Fridays.", context, None).stage == "rule_verdict"
    judge = ScriptedLLM(['"no"'])
    made_up = validate("Can we meet on Friday?", "No — Fridays are reserved for deep focus work and planning.", context, judge)
    assert (made_up.stage, made_up.grounded, len(judge.calls)) == ("judge", False, 1)


@pytest.mark.parametrize("question, proposal", [
    ("Can we meet on Friday?", True),
    ("Is a 9am stand-up on a Thursday OK for me?", True),
    ("Is it ok to order the pad thai with peanuts?", True),
    ("Is a wine-tasting tour a good idea for Lisbon?", True),
    ("Kwame wants the sync on Friday at 7:30pm. OK with me?", True),
    ("Tariq asked for a design review this Friday at 3pm, is that ok?", True),
    ("Sam wants a 9:30 call on Monday, can I take it?", True),  # told first, asked in the last clause
    ("The cheapest fare is the overnight one — should I book it?", True),
    ("A steakhouse for the team dinner, good idea?", True),
    ("What time is the 9:30 train, and can I still catch it?", False),
    ("Is Sam on day shifts?", False),  # a fact asked yes/no, not a proposal
    ("Do I like jazz?", False),
    ("What should I bring to Ana's birthday?", False),
    ("could you suggest a film for tonight?", False),  # a request to the assistant, naming no day or time
    ("Could you book me a table on Friday at 8?", True),  # a request that names what rules govern
    ("there's a jacket on sale for $320, just buy it?", True),  # a bare verb of doing, asked
    ("did you get it?", False),
    ("Mia wants a call at 6:30 in the morning on weekdays. Does that work?", True),
    ("How does the booking system work?", False),
])
def test_a_proposal_asks_whether_to_do_something(question, proposal):
    from edgemem.recall.answer import is_proposal

    assert is_proposal(question) is proposal


def test_only_a_proposal_is_asked_for_a_yes_no_verdict() -> None:
    from edgemem.recall.answer import system_prompt

    assert system_prompt("constraint-validation", "Can we meet on Friday?").startswith(
        "You answer a question that proposes something")
    assert '"Yes — "' in system_prompt("constraint-validation", "Is it ok to order pizza tonight?")
    wh = system_prompt("constraint-validation", "What does Melanie do to keep herself busy during her pottery break?")
    assert '"Yes — "' not in wh and wh.startswith("You answer a question about a rule")
    told_first = "The US team wants a call at 9am on Tuesday. Can I take it?"
    assert system_prompt("constraint-validation", told_first).startswith("You answer a question that proposes something")


def test_a_suggestion_is_not_offered_the_escalation_word() -> None:
    from edgemem.recall.answer import system_prompt

    assert "ESCALATE_REQUIRED" not in system_prompt("profile-injection", "What should I get Mum for her birthday?")
    assert "ESCALATE_REQUIRED" in system_prompt("targeted-extraction", "Who is Mochi's vet?")


def test_a_wh_question_loses_a_verdict_opening_the_model_put_on_it(settings, embedder) -> None:
    from edgemem.recall import answer as answer_agent

    ev = [Evidence(1, "During my pottery break I read a book and paint.", "2023-08-01T10:00:00")]
    llm = ScriptedLLM(["Yes — she reads a book and paints."])
    drafted = answer_agent.answer(llm, "constraint-validation",
                                  "What does Melanie do to keep herself busy during her pottery break?",
                                  "(1 August 2023) During my pottery break I read a book and paint.", ev)
    assert drafted.text == "She reads a book and paints."
    assert answer_agent.without_verdict("Can I eat peanuts?", "No — I'm allergic to peanuts.") == \
        "No — I'm allergic to peanuts."
    assert answer_agent.without_verdict("Who won?", "No — nobody") == "Nobody"


def test_a_suggestion_for_someone_else_keeps_their_facts_not_the_askers() -> None:
    from edgemem.recall.answer import profile_for

    facts = [
        Evidence(-1_000_001, "maya — dog: 4 year old whippet (identity)", "2025-02-03", kind="profile"),
        Evidence(-1_000_002, "maya — diet: pescatarian (identity)", "2025-02-03", kind="profile"),
        Evidence(-1_000_003, "mum — likes: gin and gardening (preference)", "2025-02-22", kind="profile"),
        Evidence(-1_000_004, "maya — birthday gifts: never gift cards (rule)", "2025-02-22", kind="profile"),
    ]
    kept = [e.note_id for e in profile_for("What should I get Mum for her birthday?", facts)]
    assert kept == [-1_000_003, -1_000_004]  # Mum's facts, and the asker's rules and preferences
    assert len(profile_for("What should I cook for dinner tonight?", facts)) == 4  # for the asker: all
    facts.append(Evidence(-1_000_005, "maya — gift budget: about 50 pounds a gift (identity)", "2025-02-22", kind="profile"))
    assert [e.note_id for e in profile_for("What gift should I buy for Ana?", facts)] == [-1_000_003, -1_000_004, -1_000_005]
    assert len(profile_for("Plan me a nice Saturday morning.", facts)) == 5  # a day is not a person
    facts.append(Evidence(-1_000_006, "oisín — loves: lego and minecraft (preference)", "2025-07-01", kind="profile"))
    assert [e.note_id for e in profile_for("What's a good present for Oisín?", facts)] == [
        -1_000_003, -1_000_004, -1_000_006]  # a name in any script is someone else


def test_the_notes_beside_a_suggestion_are_the_users_own_lines_in_rank_order() -> None:
    from edgemem.recall.answer import PROFILE_NOTES, profile_notes

    ranked = [Evidence(1, "Noted: Diego's 30th is 23 August; gift budget €150.", "2025-07-02", "Assistant", score=0.9),
              Evidence(2, "he's into specialty coffee and gravel biking, for Diego ideas later", "2025-07-02", "Rafael",
                       score=0.2),
              Evidence(3, "got Diego a grinder and beans, €138", "2025-08-12", "Rafael", score=0.5),
              Evidence(4, "the flat has a terrace", "2025-07-25", "Rafael", score=0.8)]  # shares no word
    assert [e.note_id for e in profile_notes(ranked, "Any ideas for Diego?")] == [2, 3]
    assert PROFILE_NOTES == 5


def test_a_day_of_the_week_question_answered_with_a_date_gets_its_weekday_in_code() -> None:
    from edgemem.recall import answer as answer_agent

    ev = [Evidence(1, "Nina's wedding is in Seville, 13 September [13 September 2025]", "2025-02-03T10:00:00")]
    context = "(3 February 2025, Maya) Nina's wedding is in Seville, 13 September [13 September 2025]"
    streamed: list[str] = []
    drafted = answer_agent.answer(ScriptedLLM(["13 September"]), "temporal-reasoning",
                                  "What day of the week is Nina's wedding on?", context, ev, on_token=streamed.append)
    assert drafted.text == "13 September (a Saturday)"
    assert "".join(streamed) == "13 September (a Saturday)"
    # a weekday already given, two dates, or no weekday asked: left as the model wrote it
    assert answer_agent.weekday_of("What day of the week is it?", "Saturday, 13 September", ev, context) == ""
    assert answer_agent.weekday_of("What day of the week is it?", "2 June 2026 or 3 June 2026", [], "") == ""
    assert answer_agent.weekday_of("When is Nina's wedding?", "13 September", ev, context) == ""
    assert answer_agent.weekday_of("What day of the week is Mum's 80th?", "June 2, 2026", [], "") == " (a Tuesday)"
    assert answer_agent.weekday_of("What day of the week is it?", "3 September", ev, context) == ""  # not 13


def test_a_bare_hour_after_before_or_after_is_a_clock_time_in_a_rule() -> None:
    ev = [Evidence(1, "new thing for me: no meetings before 9.", "2025-10-01T09:00:00")]
    context = "(1 October 2025) new thing for me: no meetings before 9."
    early = rule_verdict("Can we do the planning meeting on Tuesday at 8am?", ev, context)
    assert early is not None and early.text == "No — new thing for me: no meetings before 9."
    late = rule_verdict("Can we do the planning meeting on Tuesday at 5pm?", ev, context)
    assert late is not None and late.decision == "yes"  # 5pm is not before 9am


def test_an_idiom_or_someone_elses_dislike_is_no_rule() -> None:
    ev = [Evidence(1, "I'm dropping Portuguese classes for now, no time with the move", "2026-04-08T09:00:00"),
          Evidence(2, "got Sam a new pair of running shoes for his birthday, he'll pretend to hate it", "2026-04-09T09:00:00")]
    context = "\n".join(f"(8 April 2026, Priya) {e.text}" for e in ev)
    assert rule_verdict("Kwame wants to move the team sync to Friday. OK with me?", ev, context) is None
    assert rule_verdict("Leah wants a birthday brunch on Sunday. Can I?", ev, context) is None


def test_a_superseded_rule_decides_nothing() -> None:
    old = Evidence(1, "hard rule: no work calls after 6pm.", "2026-01-11T09:00:00", stale=True, superseded_by=2)
    context = "(11 January 2026, Priya) hard rule: no work calls after 6pm."
    assert rule_verdict("A client asked for a 6:30pm call on Thursday. Can I take it?", [old], context) is None


def _said(*lines: tuple[int, str, str, str]) -> tuple[list[Evidence], str]:
    """Evidence (id, ISO time, speaker, text) and the packed context that shows it."""
    items = [Evidence(i, text, when, speaker=who) for i, when, who, text in lines]
    return items, "\n".join(e.line() for e in items)


def test_a_rule_said_again_later_replaces_the_old_one() -> None:
    ev, context = _said(
        (1, "2026-01-11T10:05:00", "Priya", "hard rule: no work calls after 6pm. I burned out in 2024"),
        (2, "2026-01-11T10:05:01", "Assistant", "Understood: no work calls after 6 pm."),
        (3, "2026-05-05T20:20:00", "Priya", "Maplewave has people in Vancouver, so I'll take calls until 7pm now, but nothing after 7"),
        (4, "2026-05-05T20:20:01", "Assistant", "Updated: work calls until 7 pm, none after."),
    )
    assert sorted(replaced_rules(ev)) == [(1, "hard rule: no work calls after 6pm."), (2, "Understood: no work calls after 6 pm.")]
    assert rule_verdict("A client asked for a 6:30pm call on Thursday. Fine?", ev, context).text == (
        'Yes — nothing in your rules rules it out (closest: "Maplewave has people in Vancouver, so I\'ll take calls '
        'until 7pm now, but nothing after 7")')
    # the permission's "until 7pm" bounds the other side: after 7 is what the rule forbids
    assert rule_verdict("Can I take a call on Friday at 7:30pm?", ev, context).text == (
        "No — Maplewave has people in Vancouver, so I'll take calls until 7pm now, but nothing after 7")
    assert rule_verdict("Can I take a call on Friday at 7:30pm?", ev[3:], context).text == (
        "No — Updated: work calls until 7 pm, none after.")


def test_rules_bounding_time_on_other_sides_both_hold_and_a_start_month_is_no_scope() -> None:
    ev, context = _said(
        (1, "2025-05-06T21:30:00", "Jonas", "so: no meetings after 4pm on Wednesdays. I pick Mila up from school at 4:30"),
        (2, "2025-09-09T21:05:00", "Jonas", "new thing for me: no meetings before 9. I cycle in"),
        (3, "2025-10-07T20:30:00", "Jonas", "so from November it's no meetings after 4 on Tuesdays. Wednesdays are normal again"),
        (4, "2025-10-07T20:30:01", "Assistant", "Updated: from November, no meetings after 4 pm on Tuesdays; Wednesdays free for meetings."),
    )
    assert sorted(replaced_rules(ev)) == [(1, "so: no meetings after 4pm on Wednesdays.")]
    assert rule_verdict("My boss wants the planning meeting on Tuesday 6 January at 5pm. Can I do that?", ev, context).text == (
        "No — so from November it's no meetings after 4 on Tuesdays.")
    assert rule_verdict("Can we have the meeting at 8am on Monday?", ev, context).text == (
        "No — new thing for me: no meetings before 9.")
    assert rule_verdict("Can we have the meeting on Wednesday 14 January at 5pm?", ev, context).decision == "yes"


def test_a_rule_whose_reason_moved_decides_nothing_and_the_move_is_kept_beside_it() -> None:
    ev, context = _said(
        (1, "2025-02-03T19:20:00", "Maya", "and Wednesday evenings are pottery, so don't put anything after 6 on a Wednesday"),
        (2, "2025-05-02T20:15:00", "Maya", "The team meeting moved to the big room."),
        (3, "2025-07-22T19:45:00", "Maya", "pottery changes from September: it moves to Tuesday evenings. Wednesdays will be free then"),
    )
    asked = "Could I join a Wednesday 7pm book club starting in December?"
    assert rule_verdict(asked, ev[:2], context).text == (
        "No — and Wednesday evenings are pottery, so don't put anything after 6 on a Wednesday")  # "anything": any proposal
    assert rule_verdict(asked, ev, context).text == (
        'Yes — the rule against it changed on 22 July 2025: "pottery changes from September: it moves to Tuesday evenings."')
    # The new evenings: no rule says, but the weekly pottery takes Tuesday evenings, and 7pm is one.
    assert rule_verdict("Could I join a Tuesday 7pm book club?", ev, context).text == (
        'No — it clashes with "pottery changes from September: it moves to Tuesday evenings."')
    assert rule_verdict("Could I join a Tuesday 8am book club?", ev, context) is None
    prepared = preprocess.rules(asked, ev)
    # the line that is no rule stays as a fact beside the rules (one of the best-ranked few)
    assert [(e.note_id, e.stale) for e in prepared.evidence] == [(1, True), (2, False), (3, False)]
    assert prepared.dropped == []
    assert prepared.evidence[0].line().endswith("(outdated as of 22 July 2025)")


def test_the_best_ranked_lines_without_rule_language_stay_beside_the_rules() -> None:
    rule = Evidence(1, "i'm badly allergic to cats.", "2025-01-10T20:00:00", speaker="Margaux", score=0.2)
    facts = [Evidence(10 + i, f"line {i} about the week", f"2025-02-{i + 1:02d}T20:00:00", speaker="Margaux",
                      score=0.9 - i / 100) for i in range(preprocess.RULE_FACTS + 2)]
    prepared = preprocess.rules("Should I look after Pistache for a week?", [rule, *facts])
    kept = {e.note_id for e in prepared.evidence}
    assert kept == {1} | {10 + i for i in range(preprocess.RULE_FACTS)}  # the rule, however ranked, and the best facts
    assert sorted(prepared.dropped) == [10 + preprocess.RULE_FACTS, 11 + preprocess.RULE_FACTS]


def test_a_rule_about_anything_governs_by_its_day_and_time() -> None:
    ev, context = _said((1, "2026-01-11T10:05:00", "Priya", "Sunday mornings are my long runs, so nothing before noon on Sundays"))
    assert rule_verdict("Can I do a 9am Sunday brunch with the team?", ev, context).text == (
        "No — Sunday mornings are my long runs, so nothing before noon on Sundays")
    # outside its day and time it rules nothing in: other rules may be about brunches in other words
    assert rule_verdict("Can I do a 1pm Sunday brunch with the team?", ev, context) is None
    assert rule_verdict("Can I do a 9am Saturday brunch with the team?", ev, context) is None
    # a time asked with no am or pm has its working-day reading: 9:30 in the morning, 2 in the afternoon
    assert rule_verdict("Can I do a Sunday brunch at 9:30?", ev, context).decision == "no"
    assert rule_verdict("Can I do a Sunday brunch at 2?", ev, context) is None


def test_a_rule_about_anything_in_a_stretch_no_calendar_places_covers_only_proposals_naming_it() -> None:
    ev, context = _said((1, "2025-06-14T20:40:00", "Oskar", "Rule one: never book me anything on my first day ashore."))
    # a day, a time and a video call say nothing of whether he has just come ashore: the rule decides nothing
    assert rule_verdict("Sigrid wants to video call on Wednesday the 2nd of September at 7 in the evening. Does that work?",
                        ev, context) is None
    assert rule_verdict("Can I order the moules frites at Arild's party?", ev, context) is None
    # a proposal that names the stretch is covered by it
    assert rule_verdict("Can Arild come round for dinner the day I come ashore?", ev, context).text == (
        "No — Rule one: never book me anything on my first day ashore.")
    # a relative clause comments on the rule, it forbids nothing: this allergy says nothing of work
    ev, context = _said((3, "2025-03-04T20:00:00", "Lena", "also I'm allergic to penicillin, which comes up more "
                                                         "than you'd think in my line of work haha"))
    assert rule_verdict("I've a free Saturday after a normal work week, can I book a 9am yoga class?", ev, context) is None
    assert rule_verdict("The GP wants to give me penicillin, is that ok?", ev, context).decision == "no"
    # a stretch the calendar reads is no such stretch: a Sunday rule still covers any Sunday proposal
    ev, context = _said((2, "2025-05-18T20:00:00", "Kwame", "never book me anything work related on a sunday"))
    assert rule_verdict("Can I see a customer on Sunday at 10?", ev, context).decision == "no"


def forbids_when(marker: str, rules_out: str = "what it names"):
    """A scripted applicability check: the rule forbids the proposal exactly when the rule contains
    ``marker``; asked what such a rule rules out, it names ``rules_out``."""
    def reply(messages, schema):
        if "rules_out" in schema["properties"]:
            rule = messages[-1]["content"].split("Sentence:", 1)[1].split("\nProposal:", 1)[0]
            return {"rules_out": rules_out if marker in rule else "nothing", "proposed": "it", "forbids": marker in rule}
        rule = messages[-1]["content"].split("Rule:", 1)[1].split("\nProposal:", 1)[0]
        return {"forbids": marker in rule}
    return reply


def _rules_asked(llm) -> list[str]:
    """The first line of each applicability question the scripted model was asked."""
    return [c.messages[-1]["content"].splitlines()[0] for c in llm.calls if c.messages[-1]["content"].startswith("Rule:")]


def test_a_rule_about_the_proposal_under_another_name_is_asked_of_the_model_for_its_day_and_time_only() -> None:
    from edgemem.recall.answer import Drafted, covered_verdict

    ev, context = _said(
        (1, "2025-05-02T20:15:00", "Maya", "for the new job I want to protect focus: no meetings on Friday afternoons."),
        (2, "2025-05-03T10:00:00", "Maya", "no calls before 10am."),
        (3, "2025-05-04T10:00:00", "Maya", "I never eat meat."),
    )
    asked = "Tariq asked for a design review this Friday at 3pm, is that ok?"
    assert rule_verdict(asked, ev, context) is None  # no shared word: not decided in code
    llm = ScriptedLLM(default=forbids_when("meetings"))
    spent = Drafted(text="")
    out = covered_verdict(llm, asked, ev, context, spent=spent)
    assert out is spent and out.text == "No — for the new job I want to protect focus: no meetings on Friday afternoons."
    assert out.rule is not None and [e.note_id for e in out.rule.rules] == [1]
    # asked about the two rules whose days and times fit (Friday; no time bound), never the 10am one;
    # after its "true", what the rule rules out
    assert [c.messages[-1]["content"].splitlines()[0] for c in llm.calls] == [
        "Rule: for the new job I want to protect focus: no meetings on Friday afternoons.",
        "Sentence: for the new job I want to protect focus: no meetings on Friday afternoons."]
    llm = ScriptedLLM(default=forbids_when("nothing"))
    assert covered_verdict(llm, asked, ev, context) is None
    assert _rules_asked(llm) == [
        "Rule: for the new job I want to protect focus: no meetings on Friday afternoons.", "Rule: I never eat meat."]
    # a "true" for a sentence that, asked what it rules out, rules out nothing decides nothing
    llm = ScriptedLLM(default=forbids_when("meetings", rules_out="nothing"))
    assert covered_verdict(llm, asked, ev, context) is None
    assert len(llm.calls) == 3 and _rules_asked(llm) == [
        "Rule: for the new job I want to protect focus: no meetings on Friday afternoons.", "Rule: I never eat meat."]
    # another day, a rule shared by word (decided in code), or no proposal: no model call
    asked_about = {}
    for question in ("Tariq asked for a design review this Thursday at 3pm, is that ok?", "Can we meet on Friday?",
                     "When is the design review?"):
        llm = ScriptedLLM(default=forbids_when("never"))
        out = covered_verdict(llm, question, ev, context)
        asked_about[question] = (_rules_asked(llm), out and out.text)
    assert asked_about == {
        "Tariq asked for a design review this Thursday at 3pm, is that ok?": (["Rule: I never eat meat."], "No — I never eat meat."),
        "Can we meet on Friday?": (["Rule: I never eat meat."], "No — I never eat meat."),  # the meetings rule: code's
        "When is the design review?": ([], None),
    }


@pytest.mark.model
def test_the_applicability_check_gets_schema_valid_replies_from_a_real_model(small_llm) -> None:
    from edgemem.recall.answer import Drafted, covered_verdict

    ev, context = _said((1, "2025-09-09T21:05:00", "Jonas", "new thing for me: no meetings before 9."))
    spent = Drafted(text="")
    out = covered_verdict(small_llm, "Can we do a quick sync at 8:30 tomorrow?", ev, context, spent=spent)
    assert spent.prompt_tokens > 0 and spent.completion_tokens > 0  # the check ran and its reply parsed
    assert out is None or out.text == "No — new thing for me: no meetings before 9."


def test_a_rule_about_someone_governs_what_it_names_not_everything_for_them() -> None:
    ev, context = _said((1, "2025-05-06T21:30:00", "Jonas", "important: Mila has a peanut allergy. a serious one"))
    assert rule_verdict("Is a peanut butter sandwich OK for Mila's lunch?", ev, context).text == (
        "No — important: Mila has a peanut allergy.")  # "allergy" is rule language, "OK for" a proposal
    assert rule_verdict("Is pasta OK for Mila's lunch?", ev, context) is None  # her name alone is no match


def test_times_asked_with_minutes_and_no_am_or_pm_and_ranges() -> None:
    from edgemem.recall.rules import _asked_times

    assert _asked_times("Sam wants a 9:30 call on Monday") == [570]
    assert _asked_times("a club on Tuesdays 7:15 to 8:30pm") == [1230, 1155]  # the start takes the end's pm
    assert _asked_times("not before 9:30") == []  # a bound, not a time proposed


def test_a_proposal_told_first_is_decided_by_the_rule() -> None:
    ev, context = _said((1, "2025-06-09T10:00:00", "Ruth", "ground rules: no calls before 10am, I'm useless early"))
    assert rule_verdict("Sam wants a 9:30 call on Monday, can I take it?", ev, context).text == (
        "No — ground rules: no calls before 10am, I'm useless early")


def test_a_rule_about_anything_on_school_nights_covers_what_reaches_into_its_hours() -> None:
    ev, context = _said((1, "2025-04-01T19:00:00", "Ruth",
                         "reminder he has swimming till 6, and nothing after 8pm on school nights for him, he's exhausted otherwise"))
    assert rule_verdict("there's a chess club on Wednesdays 7:30 to 8:45pm, can he join?", ev, context).text == (
        "No — reminder he has swimming till 6, and nothing after 8pm on school nights for him, he's exhausted otherwise")
    assert rule_verdict("there's a chess club on Fridays 7:30 to 8:45pm, can he join?", ev, context) is None  # no school night
    assert rule_verdict("there's a chess club on Wednesdays 6:00 to 7:30pm, can he join?", ev, context) is None  # ends before 8


def test_a_rule_said_to_be_allowed_now_is_lifted_and_what_still_holds_decides() -> None:
    ev, context = _said(
        (1, "2025-09-01T09:00:00", "Ruth", "new job: no meetings before 10 on mondays, I do the rotas first thing"),
        (2, "2025-11-12T09:00:00", "Ruth", "the monday thing is relaxed btw, so meetings from 9 on mondays are fine now. still nothing before 9"),
    )
    assert rule_verdict("can I move the team meeting to 9:30 on Mondays?", ev, context).text == (
        'Yes — the rule against it changed on 12 November 2025: '
        '"the monday thing is relaxed btw, so meetings from 9 on mondays are fine now."')
    assert rule_verdict("Can I do an 8:30 catch-up on Monday?", ev, context).text == (
        "No — the monday thing is relaxed btw, so meetings from 9 on mondays are fine now. still nothing before 9")


def test_a_person_named_is_no_subject_but_a_brand_is() -> None:
    ev, context = _said(
        (1, "2025-03-22T10:00:00", "Ruth", "Dara and I said €200 for the gift, don't let me go over"),
        (2, "2025-05-22T10:00:00", "Ruth", "we swore never ryanair again after last year"),
    )
    assert rule_verdict("could Dara and I do Westport on Friday?", ev, context) is None
    assert rule_verdict("Sam found cheap Ryanair flights to Bordeaux, should I book them?", ev, context).text == (
        "No — we swore never ryanair again after last year")


def test_a_clause_beside_a_rule_is_no_reason_for_it_and_a_state_not_yet_is_no_rule() -> None:
    from edgemem.recall.rules import _polarity

    ev, _ = _said(
        (1, "2025-06-09T10:00:00", "Ruth", "my partner Noor eats everything but she's allergic to shellfish, so that's the thing to watch"),
        (2, "2025-10-16T10:00:00", "Ruth", "Lisbon moved: Noor's team has a launch that week, so we're doing 13-16 november instead"),
    )
    assert replaced_rules(ev) == {}
    assert _polarity("the orthodontist said wait a year, no braces yet, relief") is None


def test_always_after_a_form_of_be_describes_someone_and_is_no_rule() -> None:
    from edgemem.recall.rules import _polarity

    assert _polarity("book club hated it, I loved it, I'm always the odd one out") is None
    assert _polarity("she's always late") is None and _polarity("I'm always here for you, Mel!") is None
    assert _polarity("I always take the train to work") == "only"
    assert _polarity("always book me an aisle seat") == "only"
    ev, _ = _said((1, "2025-06-03T10:00:00", "Ruth", "book club hated it, I loved it, I'm always the odd one out"))
    assert rule_verdict("I've a free Saturday, can I book a 9am yoga class?", ev) is None


def test_of_two_lifted_rules_the_one_about_the_thing_asked_is_quoted() -> None:
    ev, context = _said(
        (1, "2025-08-01T09:00:00", "Ruth", "monday mornings are the gym, so don't put anything before 11 on mondays"),
        (2, "2025-09-01T09:00:00", "Ruth", "new job: no meetings before 10 on mondays, I do the rotas first thing"),
        (3, "2025-10-01T09:00:00", "Ruth", "the gym moved to tuesday mornings now"),
        (4, "2025-11-12T09:00:00", "Ruth", "the monday thing is relaxed btw, so meetings from 9 on mondays are fine now"),
    )
    assert rule_verdict("can I move the team meeting to 9:30 on Mondays?", ev, context).text == (
        'Yes — the rule against it changed on 12 November 2025: '
        '"the monday thing is relaxed btw, so meetings from 9 on mondays are fine now"')


def test_a_name_with_letters_beyond_ascii_is_a_name() -> None:
    ev, context = _said((1, "2025-05-06T21:30:00", "Ruth", "important: Oisín has a peanut allergy, a serious one"))
    assert rule_verdict("Is pasta OK for Oisín's lunch?", ev, context) is None
    assert rule_verdict("Is a peanut butter sandwich OK for Oisín's lunch?", ev, context).text == (
        "No — important: Oisín has a peanut allergy, a serious one")


def test_an_idiom_or_a_limit_on_one_day_is_no_rule() -> None:
    told = [Evidence(1, "at the clinic for a blood test, nothing serious, don't worry.", "2025-10-02T09:00:00", "Rosa"),
            Evidence(2, "Ines can't come on Sunday that day because of her own doctor.", "2025-10-03T09:00:00", "Rosa"),
            Evidence(3, "Sunday mornings are for mass, no appointments before 1pm on Sundays.", "2025-09-01T09:00:00",
                     "Rosa")]
    assert rule_verdict("Can I book a clinic appointment for Sunday at 4pm?", told[:2]) is None
    # a rule that starts today is a rule
    sugar = [Evidence(4, "from today, no more sugar in my tea.", "2025-10-03T09:00:00", "Rosa")]
    assert rule_verdict("Can I have sugar in my tea?", sugar).text == "No — from today, no more sugar in my tea."
    assert rule_verdict("Can I book a clinic appointment for Sunday at 11am?", told).text == (
        "No — Sunday mornings are for mass, no appointments before 1pm on Sundays.")


def test_a_rule_naming_the_time_asked_decides_before_one_sharing_only_a_name() -> None:
    told = [Evidence(1, "(theo = my climbing buddy, drives a van and never lets me forget it)", "2025-08-02T10:00:00",
                     "Kai"),
            Evidence(2, "weekends still nothing before 9, that's sacred", "2025-12-15T10:00:00", "Kai")]
    assert rule_verdict("theo wants to leave at 8am this saturday, can I do that?", told).text == (
        "No — weekends still nothing before 9, that's sacred")


def test_above_an_amount_a_rule_that_makes_one_wait_bounds_buying_straight_away() -> None:
    told = [Evidence(1, "if i ever try to buy anything over $200 make me wait 48 hrs first. impulse control lol",
                     "2025-07-20T10:00:00", "Kai")]
    assert rule_verdict("there's a watch on sale for $320, just buy it?", told).text == (
        'No — $320 is over the limit: "if i ever try to buy anything over $200 make me wait 48 hrs first."')
    assert rule_verdict("a $150 jacket on sale, just buy it?", told).text == (
        'Yes — $150 is within the limit: "if i ever try to buy anything over $200 make me wait 48 hrs first."')


def test_a_rule_said_of_someone_else_or_sharing_only_the_asking_rules_nothing() -> None:
    camila = Evidence(1, "Noted — Camila (19, studying nutrition) works mornings only from October.", "",
                      speaker="Assistant")
    calls = Evidence(2, "I never take calls before 8am, that's baking time.", "", speaker="Graciela")
    lucia = "Lucía wants to video call at 6:30 in the morning my time on weekdays, so Tomás is awake. Does that work?"
    # Camila's mornings are hers; 6:30 "in the morning" is before 8am, so the baking rule decides.
    assert rule_verdict(lucia, [camila, calls]).text == "No — I never take calls before 8am, that's baking time."
    assert rule_verdict(lucia, [camila]) is None
    # Asked about her, her hours are the rule.
    assert rule_verdict("Can Camila cover the Saturday afternoon shift?", [camila]).text.startswith("No — Noted — Camila")
    # "asked" frames a proposal: it shares nothing with what she asked for.
    asked = Evidence(3, "She asked to work only mornings from October because of exams.", "", speaker="Graciela")
    assert rule_verdict("a customer just asked for a birthday cake for this Saturday, should I accept?", [asked]) is None


def test_a_limit_is_quoted_as_it_was_set_not_as_a_later_line_applied_it() -> None:
    ev, context = _said(
        (1, "2025-07-14T23:20:00", "Kai", "and if i ever try to buy anything over $200 make me wait 48 hrs first."),
        (2, "2025-07-14T23:20:01", "Assistant", "Deal: anything over $200 gets a 48-hour wait before you buy it."),
        (3, "2025-08-27T16:10:00", "Assistant", "Under the $200 line, so no wait needed — enjoy the shoes ($189)."),
    )
    assert rule_verdict("theres a garmin watch on sale for $320 rn, just buy it?", ev, context).text == (
        'No — $320 is over the limit: "and if i ever try to buy anything over $200 make me wait 48 hrs first."')
    # A new value is the limit from then on.
    later, context = _said(*[(e.note_id, e.event_time, e.speaker, e.text) for e in ev],
                           (4, "2025-09-01T10:00:00", "Kai", "ok new rule, anything over $300 make me wait"))
    assert rule_verdict("theres a garmin watch on sale for $320 rn, just buy it?", later, context).text == (
        'No — $320 is over the limit: "ok new rule, anything over $300 make me wait"')


def test_a_rule_under_a_condition_the_proposal_does_not_meet_rules_nothing() -> None:
    ev, context = _said(
        (1, "2025-03-01T10:00:00", "Lena", "Got it — the day after a night shift, nothing before 3pm."),
        (2, "2025-11-12T19:45:00", "Assistant", "Updated: Monday meetings are fine from 9am now; still nothing before 9."),
    )
    assert rule_verdict("Bernadette wants a quick 8:30 catch-up next Monday, can I say yes?", ev, context).text == (
        "No — Updated: Monday meetings are fine from 9am now; still nothing before 9.")
    # Asked under the condition, the rule holds.
    assert rule_verdict("The day after my night shift, can I do a 10am call?", ev[:1], context).text == (
        "No — Got it — the day after a night shift, nothing before 3pm.")


def test_a_rule_told_of_someone_by_pronoun_is_theirs_unless_it_is_the_askers() -> None:
    hers = Evidence(1, "She asked to work only mornings from October because of exams, so I need cover.", "",
                    speaker="Graciela")
    mine = Evidence(2, "They say I can't lift heavy things for a week after the operation.", "", speaker="Graciela")
    assert rule_verdict("Can I do a morning market stall on Saturday?", [hers]) is None
    assert rule_verdict("Can I lift the heavy flour sacks this week?", [mine]).text == (
        "No — They say I can't lift heavy things for a week after the operation.")


def test_anything_of_a_kind_on_a_day_rules_that_day_and_a_count_is_no_rule() -> None:
    ev, context = _said(
        (1, "2025-05-18T22:15:00", "Kwame", "rule number one. sundays are not for work. church in the morning, "
                                           "then family dinner. never book me anything work related on a sunday"),
        (2, "2025-09-13T21:40:00", "Ines", "the day after a night shift do NOT put anything before 3pm."),
        (3, "2025-12-08T18:45:00", "Ines", "only 2 nights a month after that instead of like 6 or 7."),
    )
    assert rule_verdict("A customer wants to drop his truck off Sunday morning so I can take a quick look. "
                        "Should I say yes?", ev[:1], context).text == (
        "No — never book me anything work related on a sunday")
    # "only 2 nights a month" says how many; it neither rules the coffee out nor replaces the rule.
    assert rule_verdict("Nadia suggested coffee at 11am the morning after one of my night shifts. Can I say yes?",
                        ev[1:], context).text == "No — the day after a night shift do NOT put anything before 3pm."
    assert replaced_rules(ev[1:]) == {}


def test_a_profile_copy_cut_mid_clause_is_no_rule() -> None:
    cut = Evidence(-1, "kwame — sundays are not for work. never book me anything on (rule)", "2025-05-18T22:15:00",
                   kind="profile")
    assert rule_verdict("My parts supplier invited me to dinner on a Thursday evening in March. Can I go?", [cut]) is None


def test_a_stretch_of_the_week_kept_free_is_a_rule_until_a_line_frees_it() -> None:
    ev, context = _said(
        (1, "2025-05-18T22:15:00", "Kwame", "rule number two lol. thursday evenings are Kofi's basketball games. "
                                           "i don't miss them"),
        (2, "2025-09-09T21:30:00", "Kwame", "Kofi's new season: the league moved games to friday evenings. so fridays "
                                           "are sacred now, thursdays are free"),
    )
    thursday = "My parts supplier invited me to dinner on a Thursday evening in March. Can I go?"
    # The pronoun's rule is read with the day the sentence before names.
    assert rule_verdict(thursday, ev[:1], context).text == (
        "No — thursday evenings are Kofi's basketball games. i don't miss them")
    assert rule_verdict(thursday, ev, context).text == (
        'Yes — the rule against it changed on 9 September 2025: "so fridays are sacred now, thursdays are free"')
    # A short rule about anything on a day is quoted with the sentence before it: its reason.
    assert rule_verdict("can i do the dealer trade night on a friday evening in february?", ev, context).text == (
        "No — Kofi's new season: the league moved games to friday evenings. so fridays are sacred now, "
        "thursdays are free")
    choir, context = _said(
        (3, "2025-09-13T21:40:00", "Ines", "tuesday evenings are choir. please keep tuesdays free, it's my sanity"),
    )
    assert rule_verdict("A friend asked me to dinner on a Tuesday evening in May. Can I go?", choir, context).decision == "no"


def test_a_short_rule_about_a_day_is_quoted_with_the_reason_beside_it() -> None:
    ev, context = _said((1, "2026-02-01T20:00:00", "Bart", "Thursdays are sacred. Swimming with Lily from 6 to 7, "
                                                          "then tea at my mum's."))
    proposal = "Can we do the quarterly review on Thursday at 5pm?"
    assert rule_verdict(proposal, ev, context).text == (
        "No — Thursdays are sacred. Swimming with Lily from 6 to 7, then tea at my mum's.")
    # only as the context shows it: a pack that cut the note to its rule quotes the rule alone
    assert rule_verdict(proposal, ev, "(1 February 2026, Bart) Thursdays are sacred.").text == (
        "No — Thursdays are sacred.")
    # a rule that names what it forbids is its own reason
    named, context = _said((2, "2026-02-01T20:00:00", "Bart", "No meetings on Thursdays. Swimming with Lily."))
    assert rule_verdict("Can we have a meeting on Thursday at 5pm?", named, context).text == (
        "No — No meetings on Thursdays.")


def test_a_part_of_the_day_bounds_a_rule_about_a_weekday() -> None:
    ev, context = _said((1, "2025-09-05T21:40:00", "Graciela", "Sunday mornings are sacred: I take Papá to mass."),
                        (2, "2025-11-12T20:00:00", "Graciela", "but now I have to weigh him every morning"))
    assert rule_verdict("Can I book the podiatrist for Sunday at 10am?", ev, context).decision == "no"
    assert rule_verdict("Can I book the podiatrist for Sunday at 4pm?", ev, context) is None
    # "now I have to … every morning" speaks of no Sunday: it replaces nothing.
    assert replaced_rules(ev) == {}


def test_a_negation_rules_what_it_governs_not_every_word_beside_it() -> None:
    ev, context = _said(
        (1, "2026-04-14T20:00:00", "Shona", "honestly i feel fine now, ill do the M6 to the lakes no bother"),
        (2, "2026-08-20T21:00:00", "Margaux", "and i did: sam, a friend of théo, works at a bike shop, non-smoker, no cat."),
        (3, "2025-11-02T09:00:00", "Kai", "(liam = my climbing buddy, drives a hilux and never lets me forget it)"),
    )
    # "no bother", "no cat", "never lets me forget it": what the negation governs is not what is asked
    assert rule_verdict("Can I take the M6 up to the Lakes?", ev[:1], context) is None
    assert rule_verdict("If Sam moves out, could I take his room?", ev[1:2], context) is None
    assert rule_verdict("liam wants to go climbing on Saturday at 10, can I?", ev[2:], context) is None
    # what it governs is: the cat, the thing after "never"
    assert rule_verdict("Can I adopt a cat?", ev[1:2], context).decision == "no"
    # a sentence that says it states a rule is about all it names; a rule that holds under a condition
    # is about the condition too
    ev, context = _said(
        (4, "2026-01-05T10:00:00", "Graciela", "My rule for custom cakes: at least one week's notice, and never more than three tiers."),
        (5, "2025-09-13T21:40:00", "Ines", "the day after a night shift do NOT put anything before 3pm."),
    )
    assert rule_verdict("A customer wants a custom cake for tomorrow, should I accept?", ev[:1], context).decision == "no"
    assert rule_verdict("Can I have coffee at 11am the morning after a night shift?", ev[1:], context).decision == "no"


def test_the_users_own_rule_is_asked_before_a_line_telling_what_someone_else_did() -> None:
    from dataclasses import replace

    from edgemem.recall.answer import covered_verdict

    ev, context = _said(
        (1, "2025-06-14T10:00:00", "Oskar", "He brought prawns for lunch, which I can't touch."),
        (2, "2025-06-14T10:01:00", "Oskar", "I am allergic to all shellfish since I was a boy."),
    )
    ev = [replace(ev[0], score=0.9), replace(ev[1], score=0.5)]  # retrieval ranked the prawns line first
    asked = "Arild wants to take me for moules frites on Bryggen before his party. can I order that?"
    llm = ScriptedLLM(default=forbids_when("I"))  # the model says both forbid it: the first asked is quoted
    assert covered_verdict(llm, asked, ev, context).text == "No — I am allergic to all shellfish since I was a boy."
    assert _rules_asked(llm)[0] == "Rule: I am allergic to all shellfish since I was a boy."


@pytest.mark.parametrize(("question", "routed", "proposal"), [
    ("the GP wants to put me on amoxicillin for this chest infection, anything I should flag?", True, True),
    ("The lab wants to do a dinner on a Wednesday evening. Am I free?", True, True),
    ("Is a 2023 Toyota Sienna at $38,500 within what I set for the new van?", True, True),
    ("the GP wants to put me on amoxicillin for this chest infection, anything I should flag?", False, False),
    ("What's my rule about Fridays?", True, False),  # asks for the rule itself
    ("I'm off to Lisbon on Friday. What should I pack?", True, False),
    ("Can we meet on Friday?", False, True),  # a proposal in its own words, whatever the route
])
def test_the_constraint_route_makes_any_question_but_a_wh_question_a_proposal(question, routed, proposal) -> None:
    from edgemem.recall.rules import proposes

    assert proposes(question, "constraint-validation" if routed else "targeted-extraction") is proposal


def test_a_proposal_only_the_route_makes_is_asked_for_a_verdict_and_judged_against_the_rules() -> None:
    from edgemem.recall.answer import system_prompt

    told = [Evidence(1, "also I'm pescatarian and allergic to penicillin, it comes up a lot at work", "2025-03-04T10:00:00",
                     speaker="Lena")]
    asked = "the GP wants to put me on amoxicillin for this chest infection, anything I should flag?"
    assert system_prompt("constraint-validation", asked).startswith("You answer a question that proposes something")
    assert not system_prompt("targeted-extraction", asked).startswith("You answer a question that proposes something")
    # no shared word: code decides nothing, the model is asked whether the rule covers it
    assert rule_verdict(asked, told, proposal=True) is None
    llm = ScriptedLLM(default=forbids_when("penicillin", rules_out="penicillin"))
    from edgemem.recall.answer import covered_verdict
    out = covered_verdict(llm, asked, told, "\n".join(e.line() for e in told), proposal=True)
    assert out is not None and out.text == "No — also I'm pescatarian and allergic to penicillin, it comes up a lot at work"
    assert covered_verdict(ScriptedLLM(default=forbids_when("penicillin")), asked, told,
                           "\n".join(e.line() for e in told)) is None  # not a proposal in its own words


def test_an_amount_asked_in_no_proposals_words_is_decided_by_its_limit_not_a_rule_sharing_a_word() -> None:
    told = [Evidence(1, "Hull caulked and primed. Your engine limit is 60 000 kroner all in.", "2025-09-09T10:00:00",
                     speaker="Assistant"),
            Evidence(2, "I said 60 000 and not a krone more, well. New limit for the engine is 85 000, and that is final.",
                     "2025-11-02T10:00:00", speaker="Oskar"),
            Evidence(3, "I can't work in an engine room like this so I'm off sick until the 20th of February.",
                     "2026-01-27T10:00:00", speaker="Oskar")]
    asked = "The invoice for the Beta and the installation came to 83 400 kroner. Is that inside my engine budget?"
    expected = 'Yes — 83,400 kr is within the limit: "New limit for the engine is 85 000, and that is final."'
    assert rule_verdict(asked, told).text == expected
    # the constraint route makes it a proposal; the prohibition sharing "engine" still does not decide it
    assert rule_verdict(asked, told, proposal=True).text == expected


def test_a_rule_the_second_reply_names_but_judges_not_to_forbid_the_proposal_decides_nothing() -> None:
    from edgemem.recall.answer import covered_verdict

    ev, context = _said((1, "2025-05-04T10:00:00", "Rafael", "new rule btw: no more overnight flights."))
    asked = "Diego wants to come over on Saturday 14 March, can we host him?"

    def named_not_forbidden(messages, schema):
        if "rules_out" in schema["properties"]:
            return {"rules_out": "overnight flights", "proposed": "hosting Diego", "forbids": False}
        return {"forbids": True}

    llm = ScriptedLLM(default=named_not_forbidden)
    assert covered_verdict(llm, asked, ev, context) is None
    assert len(llm.calls) == 2  # asked, then asked to name both: the second's "false" stands
    llm = ScriptedLLM(default=forbids_when("overnight", rules_out="overnight flights"))
    assert covered_verdict(llm, asked, ev, context).text == "No — new rule btw: no more overnight flights."


def test_a_date_the_notes_resolved_from_a_relative_phrase_is_answered_as_it_was_told_too() -> None:
    from edgemem.recall.answer import as_told

    said = [Evidence(1, "I went to a LGBTQ support group last Friday [8 July 2022]. So powerful!", "2022-07-10T13:00:00",
                     speaker="Caroline", dates=[{"phrase": "last Friday", "start": "2022-07-08", "end": "2022-07-08",
                                                 "granularity": "day", "approximate": False, "label": "8 July 2022"}]),
            Evidence(2, "painted a sunset last week [week of 27 June 2022]", "2022-07-10T13:01:00", speaker="Melanie",
                     dates=[{"phrase": "last week", "start": "2022-06-27", "end": "2022-07-03", "granularity": "week",
                             "approximate": False, "label": "week of 27 June 2022"}]),
            Evidence(3, "my birthday was on 2 July 2022", "2022-07-10T13:02:00", speaker="Melanie",
                     dates=[{"phrase": "2 July 2022", "start": "2022-07-02", "end": "2022-07-02", "granularity": "day",
                             "approximate": False, "label": "2 July 2022"}]),
            Evidence(4, "we got the keys yesterday [9 July 2022]", "2022-07-10T13:03:00", speaker="Melanie",
                     dates=[{"phrase": "yesterday", "start": "2022-07-09", "end": "2022-07-09", "granularity": "day",
                             "approximate": False, "label": "9 July 2022"}]),
            Evidence(5, "the kiln broke three days ago [7 July 2022]", "2022-07-10T13:04:00", speaker="Melanie",
                     dates=[{"phrase": "three days ago", "start": "2022-07-07", "end": "2022-07-07",
                             "granularity": "day", "approximate": False, "label": "7 July 2022"}])]
    assert as_told("When did Caroline go to the support group?", "8 July 2022", said) == (
        " (the Friday before 10 July 2022)")
    assert as_told("When did Melanie paint a sunset?", "27 June 2022", said) == " (the week before 10 July 2022)"
    assert as_told("When is Melanie's birthday?", "2 July 2022", said) == ""  # told as a date: nothing to add
    assert as_told("What did Caroline do on 8 July 2022?", "a support group on 8 July 2022", said) == ""  # no when
    assert as_told("When did they meet?", "8 July 2022 or 27 June 2022", said) == ""  # two dates: which one?
    assert as_told("When did Caroline go?", "8 July 2022 (the Friday before 10 July 2022)", said) == ""  # already
    # A phrase naming its day exactly leaves no reading to show.
    assert as_told("When did Melanie get the keys?", "9 July 2022", said) == ""
    assert as_told("When did the kiln break?", "7 July 2022", said) == ""
    # A week told: its first day is no answer, the week is.
    from edgemem.recall.answer import told_instead
    assert told_instead("When did Melanie paint a sunset?", "27 June 2022", said) == "The week before 10 July 2022"
    assert told_instead("When did Melanie paint a sunset?", "She painted it on 27 June 2022.", said) == (
        "The week before 10 July 2022")
    assert told_instead("When did Caroline go to the support group?", "8 July 2022", said) is None  # a day told
    assert told_instead("What did Melanie paint on 27 June 2022?", "a sunset on 27 June 2022", said) is None  # no when


def test_the_day_a_line_was_said_is_no_answer_when_the_line_dates_its_event_earlier() -> None:
    from edgemem.recall.answer import said_not_told

    week = {"phrase": "Last week", "start": "2023-02-27", "end": "2023-03-05", "granularity": "week", "approximate": False}
    tues = {"phrase": "last Tues", "start": "2023-07-18", "end": "2023-07-18", "granularity": "day", "approximate": False}
    lines = [Evidence(1, "Hey John! Last week [week of 27 February 2023], my grandma passed away. It's been hard.",
                      "2023-03-06T10:00:00", speaker="Maria", dates=[week]),
             Evidence(2, "I'm so sorry, Maria.", "2023-03-06T10:01:00", speaker="John"),
             Evidence(3, "I joined a new activist group last Tues [18 July 2023]!", "2023-07-20T10:00:00",
                      speaker="Caroline", dates=[tues])]
    assert said_not_told("When did Maria's grandmother pass away?", "6 March 2023", lines) == "The week before 6 March 2023"
    assert said_not_told("When did Caroline join an activist group?", "20 July 2023", lines) == (
        "18 July 2023 (the Tuesday before 20 July 2023)")
    assert said_not_told("When did Caroline join an activist group?", "18 July 2023", lines) is None  # the event's day
    assert said_not_told("What did Caroline join?", "20 July 2023", lines) is None  # no when-question
    assert said_not_told("When did Caroline adopt a dog?", "20 July 2023", lines[2:]) is None  # the line is not about it
    month = {"phrase": "last month", "start": "2023-03-01", "end": "2023-03-31", "granularity": "month", "approximate": False}
    convention = Evidence(4, "I went to a convention with colleagues last month [March 2023].", "2023-04-18T10:00:00",
                          speaker="John", dates=[month])
    assert said_not_told("When did John go to a convention?", "18 April 2023", [convention]) == "March 2023"


def test_a_bare_no_to_a_proposal_quotes_the_closest_rule_shown() -> None:
    from edgemem.recall import answer as answer_agent

    ev, context = _said(
        (1, "2025-03-02T20:15:00", "Shona", "the GP surgery moved to Elm Road."),
        (2, "2025-04-03T10:00:00", "Shona", "never book me anything on a friday."),
        (3, "2025-05-04T10:00:00", "Shona", "im allergic to penicillin, came out in hives as a kid."),
    )
    ev[1].score, ev[2].score = 0.3, 0.6  # retrieval ranked the allergy higher
    asked = "The GP wants to put me on amoxicillin for a chest infection. Is that ok?"
    assert rule_verdict(asked, ev, context) is None  # no word shared with a rule: the model answers
    drafted = answer_agent.answer(ScriptedLLM(default="No — this is not ok."), "constraint-validation", asked, context, ev)
    # the verdict without its reason gets the rule the context shows; the question's words and rank pick it
    assert drafted.text == "No — im allergic to penicillin, came out in hives as a kid."
    # it cites the rule, and the validator takes the rule as the verdict's (no "about something else")
    assert [e.note_id for e in drafted.rule.rules] == [3] and drafted.rule.decision == "no"
    assert validate(asked, drafted.text, context, None, ruled=True).grounded
    assert answer_agent.with_rule(asked, "No.", ev, context).text == drafted.text
    # a reason of the model's own, a yes, an answer with no verdict, or a rule not shown: as written
    for text in ("No — amoxicillin is a penicillin and you're allergic.", "Yes — that is fine.", "Take it with food.",
                 "Nobody said so."):
        assert answer_agent.with_rule(asked, text, ev, context) is None
    assert answer_agent.with_rule(asked, "No, not ok.", ev, "(3 March 2025, Shona) the GP surgery moved") is None
    # on another route, or to no proposal, the model's words stand
    other = answer_agent.answer(ScriptedLLM(default="No — this is not ok."), "targeted-extraction", asked, context, ev)
    assert other.text == "No — this is not ok."


def test_a_weekday_nothing_answered_is_read_off_the_events_stored_day() -> None:
    from edgemem.recall import answer as answer_agent

    interview = Evidence(1, "Callum's interview at Trafford College is on wednesday [4 February 2026]", "2026-01-30T19:00:00",
                         speaker="Shona", dates=[{"phrase": "wednesday", "start": "2026-02-04", "end": "2026-02-04",
                                                  "granularity": "day", "approximate": False, "label": "4 February 2026"}])
    trip = Evidence(2, "the Lakes trip is sometime in July [July 2026]", "2026-01-30T19:05:00", speaker="Shona",
                    dates=[{"phrase": "July", "start": "2026-07-01", "end": "2026-07-31", "granularity": "month",
                            "approximate": False, "label": "July 2026"}])
    ev = [interview, trip]
    asked = "What day of the week was Callum's interview at Trafford College?"
    assert answer_agent.weekday_told(asked, ev) == ("A Wednesday (4 February 2026)", [1])
    assert answer_agent.weekday_told("what weekday is Callum's interview on?", ev) == ("A Wednesday (4 February 2026)", [1])
    # a month is no day; an event one shared word places (Callum's, not his graduation); no weekday asked
    assert answer_agent.weekday_told("What day of the week is the Lakes trip?", ev) is None
    assert answer_agent.weekday_told("What day of the week is Callum's graduation ceremony?", ev) is None
    assert answer_agent.weekday_told("When was Callum's interview at Trafford College?", ev) is None
    # a profile fact's day cites no note of its own: not answered from
    fact = Evidence(-1000001, "shona — Callum's college interview at Trafford: 4 February 2026", "2026-01-30T19:00:00",
                    kind="profile", dates=interview.dates)
    assert answer_agent.weekday_told(asked, [fact]) is None


def test_a_weekly_night_moved_off_in_the_assistants_echo_and_an_evening_hour_against_nights() -> None:
    ev, context = _said(
        (1, "2025-09-02T23:47:00", "Brodie", "and tues nights r futsal, 7pm at annerley indoor courts"),
        (2, "2025-09-02T23:47:01", "Assistant", "Tuesday nights are futsal at 7 at Annerley."),
        # Only the echo of the move was retrieved: it moves futsal off Tuesdays ("wed nights" is a day).
        (3, "2025-11-01T18:05:01", "Assistant", "Noted: from January futsal moves to wed nights, so Tuesdays free up."),
    )
    asked = "hutchy's got tix to a gig on a tuesday night next month, can i go?"
    assert rule_verdict(asked, ev[:2], context).text == (
        'No — it clashes with "and tues nights r futsal, 7pm at annerley indoor courts"')
    assert rule_verdict(asked, ev, context) is None  # no rule, no clash: the model decides with the move in view
    # A night with no hours written takes the evening: "thursday at 7" for a trivia night is 7 pm.
    later, context = _said((4, "2026-05-31T22:02:00", "Brodie", "its thurs nights now for futsal, winter season"))
    assert rule_verdict("pub trivia night thursday at 7, can i make it?", later, context).text == (
        'No — it clashes with "its thurs nights now for futsal, winter season"')
    assert rule_verdict("coffee thursday at 7 in the morning, can i make it?", later, context) is None


def test_the_assistants_echo_of_a_commitment_the_same_day_does_not_move_it() -> None:
    ev, context = _said(
        (1, "2026-02-05T20:00:00", "Nomvula", "MBA year 2 timetable is out: classes are now TUESDAY and THURSDAY "
                                             "evenings 5:30 to 8:30, not monday and wednesday"),
        (2, "2026-02-05T20:00:01", "Assistant", "Monday and Wednesday evenings are no longer MBA nights."),
    )
    assert rule_verdict("can i book the dentist for 6pm on thursday 24 september?", ev, context).text.startswith(
        'No — it clashes with "MBA year 2 timetable is out')


def test_a_no_quotes_the_rule_about_the_day_asked_before_one_sharing_more_words() -> None:
    from edgemem.recall import answer as answer_agent

    ev, context = _said(
        (1, "2026-01-10T20:00:00", "Aiko", "fridays are for swimming and admin, so no client calls on fridays."),
        (2, "2026-02-12T20:00:00", "Assistant", "So no Tokyo trip in March, a video call instead, and Mr Endo respects your rules."),
    )
    ev[0].score, ev[1].score = 0.3, 0.6  # retrieval ranked the trip line higher
    asked = "Mr Endo asked for a quick video call this Friday at 3 pm. Does that work?"
    # The trip line shares "Mr Endo" and "video call" and names a month; the Friday rule names the day asked.
    assert answer_agent.with_rule(asked, "No.", ev, context).text == (
        "No — fridays are for swimming and admin, so no client calls on fridays.")
    assert rule_verdict(asked, ev, context).text == "No — fridays are for swimming and admin, so no client calls on fridays."


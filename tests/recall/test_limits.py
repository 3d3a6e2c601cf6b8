"""Verdicts decided in code beyond days and times: quantity limits (the newest limit on the same
thing, by arithmetic) and clashes with stored plans on the days a proposal names."""

from __future__ import annotations

import pytest

from edgemem.recall import pipeline
from edgemem.recall.answer import rule_verdict
from datetime import date, datetime

from edgemem.engine import question_days
from edgemem.recall.evidence import Evidence
from edgemem.recall.limits import amounts, asked_amount, limits
from edgemem.recall.validator import validate
from recall_fakes import FixedRouter, remembered


@pytest.mark.parametrize("sentence, expected", [
    ("and I don't take jobs more than 30 miles from Bristol", [("30 miles", True)]),
    ("Jobs within 30 miles of Bristol only.", [("30 miles", True)]),
    ("happy to go up to 40 miles now, not 30", [("40 miles", True)]),
    ("so eating out max £250 a month", [("£250", True)]),
    ("budget for the night, £200", [("£200", True)]),
    ("party budget 200 euro", [("€200", True)]),
    ("Van budget: up to £18k.", [("£18,000", True)]),
    ("at least 8 hours of sleep on a weeknight", [("8 hours", False)]),
    ("I ran more than 30 miles this week", []),  # "more than" said plainly is a fact, not a rule
    ("Noted: the naust goes up to 1 500 kroner a month from January.", []),  # a price going up, no bound
    ("found a van, 48k miles, £16,500 from a dealer", []),  # prices and readings without a bound
    ("the call is at 9 am on 3 March 2026", []),  # times and dates are not amounts
    # A unit spelt with letters outside ASCII, and a currency written as a word, are read.
    ("my small-pleasures allowance is 400 złoty instead of 300", [("400 zł", True)]),
    ("no more than 5000 yen on souvenirs", [("¥5,000", True)]),
    ("keep it under 12 km/h on the towpath", [("12 km/h", True)]),
])
def test_limits_read_the_bound_before_an_amount(sentence, expected) -> None:
    assert [(lim.amount.show(), lim.upper) for lim in limits(sentence)] == expected


def test_a_currency_word_is_one_unit_however_it_is_written() -> None:
    assert [(a.value, a.unit, a.show()) for a in amounts("350 zł on tickets, 300 złoty a month, 20 zloty, 9 PLN")] == [
        (350.0, "zł", "350 zł"), (300.0, "zł", "300 zł"), (20.0, "zł", "20 zł"), (9.0, "zł", "9 zł")]
    assert [(a.value, a.unit) for a in amounts("a 3-night stay, 12 kroner")] == [(3.0, "night"), (12.0, "kr")]


def test_thousands_grouped_by_spaces_are_one_number() -> None:
    # "83 400 kroner" is eighty-three thousand four hundred, as Norwegian, French or South African write it
    assert [(a.value, a.unit) for a in amounts("the invoice came to 83 400 kroner, the limit is 85 000 kroner")] == [
        (83400.0, "kr"), (85000.0, "kr")]
    assert [(a.value, a.unit) for a in amounts("€1 250 for the flights")] == [(1250.0, "€")]
    # the rand's letter is a sign before a number ("R1,300", "R2 000"), not in a word or a code
    assert [(a.value, a.unit, a.show()) for a in amounts("a R1,300 dinner, my limit is R2 000")] == [
        (1300.0, "R", "R1,300"), (2000.0, "R", "R2,000")]
    assert amounts("R2D2 and the R-value") == []
    # a group that is not three digits long, or a decimal after it, is no thousands group
    assert [(a.value, a.unit) for a in amounts("3 40 minutes")] == [(40.0, "minute")]
    assert [(a.value, a.unit) for a in amounts("2 1.5 litre bottles")] == [(1.5, "litre")]


POCKET = [
    Evidence(27, "And one financial rule I have set myself: 300 złoty a month for small pleasures. Books, concert "
                 "tickets, that kind of thing.", "2026-02-04T10:00:00", "Halina"),
    Evidence(71, "From this month my small-pleasures allowance is 400 złoty instead of 300.", "2026-04-16T10:00:00",
             "Halina"),
]


def test_a_proposal_asked_after_a_dash_is_checked_against_the_newest_limit_in_its_currency() -> None:
    quote = '"From this month my small-pleasures allowance is 400 złoty instead of 300."'
    asked = "I'd like to spend {} on concert tickets next month — does that fit my small-pleasures budget?"
    assert rule_verdict(asked.format("350 zł"), POCKET).text == f"Yes — 350 zł is within the limit: {quote}"
    assert rule_verdict(asked.format("450 złoty"), POCKET).text == f"No — 450 zł is over the limit: {quote}"


def test_the_asked_amount_adds_what_is_already_spent() -> None:
    assert [a.show() for a in amounts("a 40-mile drive, then 3 nights for £45")] == ["40 miles", "3 nights", "£45"]
    assert asked_amount("I've spent £270 eating out. Does a £45 dinner still fit?", "£")[0] == 315
    assert asked_amount("Is a £45 dinner ok? The last one was £60.", "£")[0] == 60  # no "spent": the last named
    assert asked_amount("Can I drive 35 miles?", "£") is None


TOM = [
    Evidence(1, "and I don't take jobs more than 30 miles from Bristol. not worth the diesel", "2025-09-09T20:10:00", "Tom"),
    Evidence(2, "Van budget: up to £18,000.", "2025-09-09T20:11:00", "Assistant"),
    Evidence(3, "budget for the night, £200", "2026-02-10T21:30:00", "Tom"),
    Evidence(4, "with the new van's mileage I'm happy to go up to 40 miles now, not 30", "2026-03-17T20:00:00", "Tom"),
    Evidence(5, "Never book work on Sundays.", "2025-09-09T20:12:00", "Tom"),
]


def test_the_newest_limit_on_the_same_thing_decides() -> None:
    assert rule_verdict("There's a job in Swindon, about 40 miles. Can I take it?", TOM).text == (
        'Yes — 40 miles is within the limit: "with the new van\'s mileage I\'m happy to go up to 40 miles now, not 30"')
    assert rule_verdict("Can I take a job 45 miles out?", TOM).text == (
        'No — 45 miles is over the limit: "with the new van\'s mileage I\'m happy to go up to 40 miles now, not 30"')
    # Within the distance but on a Sunday: the other rule still says no.
    assert rule_verdict("Can I book a job 35 miles out on Sunday?", TOM).text == "No — Never book work on Sundays."
    # Two money limits and nothing shared with the question: no verdict from either.
    assert rule_verdict("Is a £240 dinner OK for the anniversary?", TOM) is None
    assert rule_verdict("Is a £240 dinner OK for the anniversary?", TOM[2:3]).text == (
        'No — £240 is over the limit: "budget for the night, £200"')
    # A question that names no amount is left to the day and time rules.
    assert rule_verdict("Can I book a job on Sunday?", TOM).text == "No — Never book work on Sundays."


def test_a_limit_verdict_quotes_its_rule_so_the_validator_accepts_it() -> None:
    verdict = rule_verdict("Does a £45 dinner still fit my eating-out budget? I've spent £270 eating out.", [
        Evidence(1, "saving for a deposit, so eating out max £250 a month.", "2025-02-22T09:05:00", "Maya"),
        Evidence(2, "Updated: eating-out budget is now £300 a month.", "2025-06-14T12:30:00", "Assistant"),
        Evidence(3, "Gift budget about £150 from the John Lewis list.", "2025-07-22T19:45:00", "Assistant"),
    ])
    assert verdict.text == 'No — £45 + £270 = £315 is over the limit: "Updated: eating-out budget is now £300 a month."'
    context = "(14 June 2025, Assistant) Updated: eating-out budget is now £300 a month."
    assert validate("q", verdict.text, context, None).stage == "rule_verdict"


def test_a_limit_asked_in_a_word_or_two_after_the_amount_is_told() -> None:
    ev = [Evidence(1, "wedding gift budget for Theo, $250", "2026-08-01T10:00:00", "Sam")]
    context = ev[0].line()
    assert rule_verdict("Theo's registry has a $320 stand mixer. Within my budget?", ev, context).text == (
        'No — $320 is over the limit: "wedding gift budget for Theo, $250"')
    assert rule_verdict("The registry has a $200 toaster for Theo. Within budget?", ev, context).decision == "yes"
    assert rule_verdict("Theo's registry has a $320 stand mixer.", ev, context) is None  # told, not asked


def test_what_was_already_bought_counts_when_the_question_adds_to_it() -> None:
    ev = [Evidence(1, "Christmas presents for Mila, max 250 euro total", "2025-12-02T20:10:00", "Jonas"),
          Evidence(2, "bought the harness, 75 euro, and LEGO, 60", "2025-12-22T19:55:00", "Jonas"),
          Evidence(3, "paid 40 euro for the train", "2025-12-23T19:55:00", "Jonas"),
          Evidence(4, "Katrin bought the LEGO advent calendar, 30 euro", "2025-12-23T19:55:00", "Katrin")]
    context = "\n".join(e.line() for e in ev)
    asked = "Mila wants a €180 LEGO set on top of what I already bought. Is that within the Christmas budget?"
    verdict = rule_verdict(asked, ev, context)
    # the bare 60 closing the list is in euros; the train names nothing asked; Katrin's purchase is hers
    assert verdict.text == 'No — €75 + €60 + €180 = €315 is over the limit: "Christmas presents for Mila, max 250 euro total"'
    assert [e.note_id for e in verdict.rules] == [1, 2]
    assert rule_verdict(asked.replace(" on top of what I already bought", ""), ev, context).text == (
        'Yes — €180 is within the limit: "Christmas presents for Mila, max 250 euro total"')


def test_a_limit_is_answered_from_a_real_store_with_no_model_call(settings, embedder) -> None:
    eng, llm, ids = remembered(settings, embedder, [
        ("2025-09-09T20:10:00", "I don't take jobs more than 30 miles from Bristol."),
        ("2026-03-17T20:00:00", "With the new van I'm happy to take jobs up to 40 miles now."),
        ("2026-03-18T09:00:00", "Picked up cable and sockets from the wholesaler."),
    ])
    try:
        out = pipeline.run(eng.store.conn, "Can I take a job in Swindon, about 40 miles away?", llm=llm,
                           embed=eng.runtime.embed, router=FixedRouter("constraint-validation"))
        assert out.text == 'Yes — 40 miles is within the limit: "With the new van I\'m happy to take jobs up to 40 miles now."'
        assert out.note_ids == [ids["With the new van I'm happy to take jobs up to 40 miles now."]]
        assert llm.calls == []
    finally:
        eng.close()


def test_a_limit_verdict_sharing_no_word_with_the_question_is_kept(settings, embedder) -> None:
    """A verdict made in code compares amounts: "£240" and "£200" share no word, and the validator's
    check that a model-written verdict's rule names something asked must not refuse it."""
    eng, llm, ids = remembered(settings, embedder, [
        ("2026-02-01T20:00:00", "Anniversary budget for the night, £200."),
        ("2026-02-02T09:00:00", "Picked up cable and sockets from the wholesaler."),
    ])
    try:
        out = pipeline.run(eng.store.conn, "Is a £240 meal OK?", llm=llm,
                           embed=eng.runtime.embed, router=FixedRouter("constraint-validation"))
        assert out.text.startswith("No — £240 is over the limit")
        assert out.trace["stages"]["validate0"]["stage"] == "rule_verdict"
        assert out.note_ids == [ids["Anniversary budget for the night, £200."]] and llm.calls == []
    finally:
        eng.close()


def test_a_question_about_the_limit_itself_is_answered_with_the_newest_one() -> None:
    assert rule_verdict("Do I still only take jobs within 30 miles?", TOM).text == (
        'No — the newest limit is 40 miles: "with the new van\'s mileage I\'m happy to go up to 40 miles now, not 30"')
    assert rule_verdict("Can I take jobs up to 40 miles away now?", TOM).text == (
        'Yes — "with the new van\'s mileage I\'m happy to go up to 40 miles now, not 30"')


def span(start: str, end: str, label: str) -> dict:
    return {"phrase": "x", "start": start, "end": end, "granularity": "day", "approximate": False, "label": label}


PLANS = [
    Evidence(1, "Noted: Dublin, 23 to 28 December [23–28 December 2025].", "2025-10-21T19:00:00", "Assistant",
             dates=[span("2025-12-23", "2025-12-28", "23–28 December 2025")]),
    Evidence(2, "Updated: Dublin from 21 to 27 December [21–27 December 2025].", "2025-11-14T21:00:00", "Assistant",
             dates=[span("2025-12-21", "2025-12-27", "21–27 December 2025")]),
    Evidence(3, "I'm feeding Hannah's cat Mochi 5 to 9 March [5–9 March 2025].", "2025-02-22T09:00:00", "Maya",
             dates=[span("2025-03-05", "2025-03-09", "5–9 March 2025")]),
    Evidence(4, "Pocket Budgets went live in December [December 2025].", "2025-11-14T21:00:00", "Maya",
             dates=[{**span("2025-12-01", "2025-12-31", "December 2025"), "granularity": "month"}]),
]


def test_a_proposal_on_days_a_plan_takes_is_a_clash_quoting_the_newest_plan() -> None:
    asked = question_days("Hannah asked if I can feed Mochi from 22 to 26 December. Can I?", datetime(2025, 11, 15, 9))
    assert asked == [(date(2025, 12, 22), date(2025, 12, 26))]
    verdict = rule_verdict("Hannah asked if I can feed Mochi from 22 to 26 December. Can I?", PLANS, asked_days=asked)
    assert verdict.text == ('No — it clashes with your plans for 21–27 December 2025: '
                            '"Updated: Dublin from 21 to 27 December [21–27 December 2025]."')
    assert [e.note_id for e in verdict.rules] == [2]
    context = "(14 November 2025, Assistant) Updated: Dublin from 21 to 27 December [21–27 December 2025]."
    assert validate("q", verdict.text, context, None).stage == "rule_verdict"
    # Free days, a month-long span, and a note about the proposal itself are no clash.
    assert rule_verdict("Can I feed Mochi on 10 December?", PLANS, asked_days=[(date(2025, 12, 10),) * 2]) is None
    assert rule_verdict("Can I feed Mochi from 5 to 9 March?", PLANS, asked_days=[(date(2026, 3, 5), date(2026, 3, 9))]) is None
    assert rule_verdict("Can I feed Mochi from 5 to 9 March?", PLANS[2:3],
                        asked_days=[(date(2025, 3, 5), date(2025, 3, 9))]) is None
    # Not a proposal: no verdict, whatever the days.
    assert rule_verdict("What am I doing from 22 to 26 December?", PLANS, asked_days=asked) is None


def test_the_engine_resolves_the_question_days_and_answers_a_clash_with_no_model_call(settings, embedder) -> None:
    eng, llm, ids = remembered(settings, embedder, [
        ("2026-04-21T20:00:00", "Dave's doing his stag in Cardiff on 27 June."),
        ("2026-04-22T20:00:00", "Finished the rewire at the Patels' house."),
    ])
    try:
        out = eng.ask("A customer in Newport wants me on Saturday 27 June. Can I do it?", now=datetime(2026, 5, 20, 9))
        assert out.text == ('No — it clashes with your plans for 27 June 2026: '
                            '"Dave\'s doing his stag in Cardiff on 27 June [27 June 2026]."')
        assert [n.id for n in out.notes] == [ids["Dave's doing his stag in Cardiff on 27 June."]]
        assert llm.calls == []
    finally:
        eng.close()


def test_the_window_a_question_asks_about() -> None:
    now = datetime(2026, 3, 4, 9)
    assert question_days("How many parkruns did I do in 2025?", now) == [(date(2025, 1, 1), date(2025, 12, 31))]
    # "since" runs to the day asked; a bound ("before", "until") names no days to keep.
    assert question_days("How many books have I read since November?", now) == [(date(2025, 11, 1), date(2026, 3, 4))]
    assert question_days("What did I book before Friday?", now) == []


ENGINE = [
    Evidence(37, "The engine news is bad. My limit for the engine is 60 000 kroner, all in, and not a krone more.",
             "2025-09-09T20:00:00", "Oskar"),
    Evidence(55, "With installation kit it comes to 82 000. New limit for the engine is 85 000, and that is final.",
             "2025-11-02T20:00:00", "Oskar"),
    Evidence(74, "Noted: the naust goes up to 1 500 kroner a month from January.", "2025-12-20T21:50:00", "Assistant"),
]


def test_a_limit_written_without_its_unit_is_in_the_unit_of_a_limit_on_the_same_thing() -> None:
    # 85 000 is kroner because the engine's earlier limit was; the naust's rent, which shares only the
    # word "kroner" with the question, is no limit on the engine (it was quoted: "No — over the limit").
    asked = "Bergen Marin's invoice for the engine finally came to 83 400 kroner. Is that inside my engine budget?"
    assert rule_verdict(asked, ENGINE).text == (
        'Yes — 83,400 kr is within the limit: "New limit for the engine is 85 000, and that is final."')
    assert rule_verdict(asked.replace("83 400", "86 000"), ENGINE).text.startswith("No — 86,000 kr is over the limit")


SHOULDER = [
    Evidence(89, "Rules from her and the physio: no lifting over 10 kilo and no skiing until the physio clears me.",
             "2026-02-08T20:00:00", "Oskar"),
    Evidence(101, "Lifting is still max 10 kilo until he sees me again in the middle of April.", "2026-03-20T20:00:00", "Oskar"),
]
DISCHARGED = Evidence(119, "Physio finished. Lars discharged me, no more limits, I can lift what I like again.",
                      "2026-05-10T20:00:00", "Oskar")


def test_a_limit_a_later_line_lifts_no_longer_decides() -> None:
    asked = "Emil wants a hand carrying 25 kilo cement bags next time I'm ashore. Is that ok with my shoulder?"
    # Two limits on the same thing (lifting), neither sharing a word with the question: their history decides.
    assert rule_verdict(asked, SHOULDER).text == (
        'No — 25 kilos is over the limit: "Rules from her and the physio: no lifting over 10 kilo and no skiing until '
        'the physio clears me."')
    assert rule_verdict(asked, [*SHOULDER, DISCHARGED]).text == (
        'Yes — the limit no longer holds: "Lars discharged me, no more limits, I can lift what I like again."')


def test_a_question_with_an_amount_is_given_the_lines_that_lift_a_limit(settings, embedder) -> None:
    from edgemem.recall import tiers

    eng, _, ids = remembered(settings, embedder, [(e.event_time, e.text) for e in [*SHOULDER, DISCHARGED]]
                             + [("2026-05-11T20:00:00", "Dinner with Emil on Friday, no more wine for me though.")])
    try:
        added = tiers.governing_rules(eng.store.conn, "Is 25 kilo ok with my shoulder?", set())
    finally:
        eng.close()
    # the discharge, the one line lifting a limit (retrieval, led by "kilo" and "shoulder", may miss it)
    assert [h.note_id for h in added] == [ids[DISCHARGED.text]]


def test_a_proposal_in_the_hours_of_a_weekly_commitment_clashes_with_it_as_it_stands_now() -> None:
    week = [
        Evidence(3, "ok the non-negotiables. MBA classes are mon and wed evenings 6 to 9 so NO meetings.",
                 "2025-07-06T20:00:00", "Nomvula"),
        Evidence(83, "big schedule change: classes are now TUESDAY and THURSDAY evenings 5:30 to 8:30, not mon/wed anymore.",
                 "2026-02-05T12:40:00", "Nomvula"),
        Evidence(90, "Dara has pottery on Friday evenings 6 to 8.", "2026-02-06T12:40:00", "Nomvula"),
    ]
    clash = 'No — it clashes with "big schedule change: classes are now TUESDAY and THURSDAY evenings 5:30 to 8:30, not mon/wed anymore."'
    assert rule_verdict("can i book the dentist for 6pm on thursday 24 september?", week).text == clash
    # outside its hours, on a day it moved off, or in someone else's week: no clash
    assert rule_verdict("can i book the dentist for 9pm on thursday 24 september?", week) is None
    assert rule_verdict("can i book the dentist for 7pm on monday 21 september?", week) is None
    assert rule_verdict("can i book the dentist for 7pm on friday 25 september?", week) is None
    freed = [Evidence(1, "tuesday evenings are choir.", "2025-09-01T20:00:00", "Ines"),
             Evidence(2, "so wednesday evenings are the sacred ones, tuesdays are free again", "2026-01-10T20:00:00", "Ines")]
    assert rule_verdict("Can I go to a dinner on a Tuesday evening in May?", freed).decision == "yes"

"""Quantity limits: amounts and bounds read from rule sentences, and verdicts from the newest limit."""

from __future__ import annotations

import pytest

from edgemem.recall import pipeline
from edgemem.recall.answer import rule_verdict
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
    ("found a van, 48k miles, £16,500 from a dealer", []),  # prices and readings without a bound
    ("the call is at 9 am on 3 March 2026", []),  # times and dates are not amounts
])
def test_limits_read_the_bound_before_an_amount(sentence, expected) -> None:
    assert [(lim.amount.show(), lim.upper) for lim in limits(sentence)] == expected


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

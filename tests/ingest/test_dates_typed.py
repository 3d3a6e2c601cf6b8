"""Dates as people type them: texting spellings, British relatives, numbers, named days."""

from __future__ import annotations

from datetime import datetime

import pytest

from edgemem.ingest.dates import resolve_dates


def spans(text: str, when: datetime) -> list[tuple[str, str, str]]:
    return [(d.phrase, d.start.isoformat(), d.end.isoformat()) for d in resolve_dates(text, when)]


WED = datetime(2026, 3, 11, 10, 0)  # Wednesday 11 March 2026


@pytest.mark.parametrize("text, when, expected", [
    ("gym 2moro 7am then brunch", WED, [("2moro", "2026-03-12", "2026-03-12")]),
    ("tonite was fun", WED, [("tonite", "2026-03-11", "2026-03-11")]),
    ("interview went ok yday i think", WED, [("yday", "2026-03-10", "2026-03-10")]),
    ("dentist day after tmrw ugh", WED, [("day after tmrw", "2026-03-13", "2026-03-13")]),
    ("After tomorrow I go to doctor", WED, [("After tomorrow", "2026-03-13", "2026-03-13")]),
    ("ran the 10k this morn", WED, [("this morn", "2026-03-11", "2026-03-11")]),
    ("nxt wk is mad busy", WED, [("nxt wk", "2026-03-16", "2026-03-22")]),
    ("lets do it again nxt fri", WED, [("nxt fri", "2026-03-13", "2026-03-13")]),
    ("the dr wants me back in 2 wks", WED, [("in 2 wks", "2026-03-25", "2026-03-25")]),
    ("pls transfer ur half of the rent by weds", datetime(2026, 3, 9, 9), [("weds", "2026-03-11", "2026-03-11")]),
    ("dinner booked for sat tho", WED, [("sat", "2026-03-14", "2026-03-14")]),
    ("party at jess's sat nite, u in?", WED, [("sat", "2026-03-14", "2026-03-14")]),
    # Neither "on" nor a tense: the nearest such day, one gone by counting twice as far.
    ("Week ahead: bins Monday, then the boiler.", datetime(2026, 3, 13, 9), [("Monday", "2026-03-16", "2026-03-16")]),
    ("fishing Sunday. had a 5lb trout!", datetime(2026, 3, 17, 9), [("Sunday", "2026-03-15", "2026-03-15")]),
    ("We're off to Cornwall a week on Friday", WED, [("a week on Friday", "2026-03-20", "2026-03-20")]),
    ("Fancy the cinema Friday week?", WED, [("Friday week", "2026-03-20", "2026-03-20")]),
    ("Off to Tenerife the Saturday after next", WED, [("the Saturday after next", "2026-03-21", "2026-03-21")]),
    ("viewing is a week today at 11", WED, [("a week today", "2026-03-18", "2026-03-18")]),
    ("Fancy a pint in a fortnight?", WED, [("in a fortnight", "2026-03-25", "2026-03-25")]),
    ("Please note that payment was received on 21/06/2025.", WED, [("21/06/2025", "2025-06-21", "2025-06-21")]),
    ("Our lease is up 9/30 so we gotta find a place.", WED, [("9/30", "2026-09-30", "2026-09-30")]),
    # Either number may be the month: the reading nearer the day it was said.
    ("I paid the water bill on 3/2", WED, [("3/2", "2026-03-02", "2026-03-02")]),
    ("I paid the water bill on 3/2", datetime(2026, 2, 10, 9), [("3/2", "2026-02-03", "2026-02-03")]),
    ("Car's due for an oil change, booked Jiffy Lube for 10/4", datetime(2025, 9, 29, 8),
     [("10/4", "2025-10-04", "2025-10-04")]),
    ("We're driving up for Memorial Day weekend.", WED, [("Memorial Day weekend", "2026-05-23", "2026-05-25")]),
    ("The spring bank holiday is when we go", WED, [("spring bank holiday", "2026-05-25", "2026-05-25")]),
    ("pancake day 2day!", datetime(2026, 2, 17, 9), [("pancake day", "2026-02-17", "2026-02-17"),
                                                   ("2day", "2026-02-17", "2026-02-17")]),
    ("finn's up for the game on the 21st, staying sat night", datetime(2026, 2, 1, 9),
     [("the 21st", "2026-02-21", "2026-02-21"), ("sat", "2026-02-21", "2026-02-21")]),
    # A proposal asks about days ahead, whatever the nearest such day: said on a Friday.
    ("cant do mon, how abt tues or weds?", datetime(2027, 5, 14, 9),
     [("mon", "2027-05-17", "2027-05-17"), ("tues", "2027-05-18", "2027-05-18"), ("weds", "2027-05-19", "2027-05-19")]),
    # What a day is, said in the present, is today's or the coming one; the question after the comma
    # has its own tense. "Bianchi's on Saturday" is whose place, not a "be".
    ("Mother's Day is Sunday, did you order the flowers?", datetime(2027, 5, 7, 15), [("Sunday", "2027-05-09", "2027-05-09")]),
    ("it's friday!!", datetime(2026, 3, 13, 9), [("friday", "2026-03-13", "2026-03-13")]),
    ("took Sue to Bianchi's on Saturday for the anniversary", WED, [("Saturday", "2026-03-07", "2026-03-07")]),
    # A comma splice starts a clause: the past before it is not the date's tense.
    ("had to cancel the boiler service, I'm in Manchester for work Thursday", datetime(2025, 10, 1, 8),
     [("Thursday", "2025-10-02", "2025-10-02")]),
    # Ranges: numbers joined by a dash, named days from one to the other.
    ("Spring break is 3/22-3/26, we're going to Florida.", datetime(2027, 3, 18, 19),
     [("3/22-3/26", "2027-03-22", "2027-03-26")]),
    ("The Christmas closure runs from Christmas Eve until New Year's Day.", datetime(2026, 11, 25, 10),
     [("Christmas Eve until New Year's Day", "2026-12-24", "2027-01-01")]),
    ("Pattersons extending by two days, back on the 17th now", datetime(2026, 8, 12, 18), [("the 17th", "2026-08-17", "2026-08-17")]),
    ("Before two days I have paid the electricity bill.", datetime(2026, 1, 8, 9), [("Before two days", "2026-01-06", "2026-01-06")]),
])
def test_a_typed_date_is_read(text: str, when: datetime, expected: list) -> None:
    assert spans(text, when) == expected


@pytest.mark.parametrize("text", [
    "we sat down and talked", "the sun was out", "open 24/7 and 1/2 price", "rent went up to 1.8m",
    "my Friday class is full", "Ben's with me Monday, Tuesday and Friday", "football tues and thurs till 7",
    "got her a valentines card", "c'mon then", "Saturday at 5k pace", "we had to leave before two days were up",
    "score was 2-3/4 in the end",
])
def test_what_only_looks_like_a_date_is_not_one(text: str) -> None:
    assert spans(text, WED) == []


def test_the_following_weekday_is_counted_from_the_day_told_before_it() -> None:
    assert spans("Flying out Thursday 9/18, back the following Wednesday.", datetime(2025, 8, 30, 9)) == [
        ("9/18", "2025-09-18", "2025-09-18"), ("the following Wednesday", "2025-09-24", "2025-09-24")]
    assert spans("Communion on Sunday the 24th of May. I will go by train on the Friday before", datetime(2026, 4, 16, 9)) == [
        ("Sunday the 24th of May", "2026-05-24", "2026-05-24"), ("the Friday before", "2026-05-22", "2026-05-22")]


def test_a_lowercase_month_framed_and_ending_its_sentence_is_the_month() -> None:
    assert spans("how many parkruns did I run in may?", datetime(2025, 6, 10, 9)) == [("may", "2025-05-01", "2025-05-31")]
    assert spans("i may go, in may be", datetime(2025, 6, 10, 9)) == []


def test_a_weekday_a_plan_is_moved_to_lies_ahead_whatever_the_verb() -> None:
    assert spans("moved jordan to sat, same time", datetime(2026, 5, 14, 9)) == [("sat", "2026-05-16", "2026-05-16")]
    assert spans("rebooked it for Tuesday", datetime(2026, 5, 14, 9)) == [("Tuesday", "2026-05-19", "2026-05-19")]
    # Not the end of a stretch of weekdays: "open Tuesday to Sunday" names no day.
    assert spans("the shop is open Tuesday to Sunday", datetime(2026, 5, 14, 9)) == []

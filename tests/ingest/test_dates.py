"""Date resolution against the event time (DESIGN.md Principle 6), with exact expected values."""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, timedelta, timezone

import pytest

from edgemem.ingest.dates import ResolvedDate, annotate, parse_when, resolve_dates

MON_8_MAY_2023 = datetime(2023, 5, 8, 13, 56)


def only(text: str, when: datetime) -> ResolvedDate:
    found = resolve_dates(text, when)
    assert len(found) == 1, found
    return found[0]


def test_locomo_support_group_yesterday():
    when = parse_when("1:56 pm on 8 May, 2023")
    found = only("I went to a LGBTQ support group yesterday", when)
    assert found == ResolvedDate("yesterday", date(2023, 5, 7), date(2023, 5, 7), "day", False)
    assert found.label() == "7 May 2023"


# (text, event time, phrase, start, end, granularity, label)
EXACT = [
    # Day words, across month and year boundaries.
    ("It rained yesterday.", datetime(2024, 1, 1, 9), "yesterday", date(2023, 12, 31), date(2023, 12, 31), "day", "31 December 2023"),
    ("We fly tomorrow!", datetime(2023, 12, 31, 20), "tomorrow", date(2024, 1, 1), date(2024, 1, 1), "day", "1 January 2024"),
    ("Last night was amazing", datetime(2023, 3, 1, 8), "Last night", date(2023, 2, 28), date(2023, 2, 28), "day", "28 February 2023"),
    ("I called her this morning", MON_8_MAY_2023, "this morning", date(2023, 5, 8), date(2023, 5, 8), "day", "8 May 2023"),
    ("what did you do today", MON_8_MAY_2023, "today", date(2023, 5, 8), date(2023, 5, 8), "day", "8 May 2023"),
    ("the day before yesterday", datetime(2024, 3, 1), "the day before yesterday", date(2024, 2, 28), date(2024, 2, 28), "day", "28 February 2024"),
    # Months and years.
    ("last month was hard", datetime(2024, 1, 15), "last month", date(2023, 12, 1), date(2023, 12, 31), "month", "December 2023"),
    ("we go camping next month", datetime(2023, 12, 20), "next month", date(2024, 1, 1), date(2024, 1, 31), "month", "January 2024"),
    ("a conference this month", datetime(2023, 2, 10), "this month", date(2023, 2, 1), date(2023, 2, 28), "month", "February 2023"),
    ("a book I read last year", datetime(2023, 7, 12), "last year", date(2022, 1, 1), date(2022, 12, 31), "year", "2022"),
    ("maybe next year", datetime(2023, 12, 31), "next year", date(2024, 1, 1), date(2024, 12, 31), "year", "2024"),
    # Weeks run Monday to Sunday.
    ("my school event last week", datetime(2023, 6, 9), "last week", date(2023, 5, 29), date(2023, 6, 4), "week", "week of 29 May 2023"),
    ("last week was busy", datetime(2024, 1, 1), "last week", date(2023, 12, 25), date(2023, 12, 31), "week", "week of 25 December 2023"),
    ("Guess what I did this week?", datetime(2023, 8, 23), "this week", date(2023, 8, 21), date(2023, 8, 27), "week", "week of 21 August 2023"),
    ("the week before last", MON_8_MAY_2023, "the week before last", date(2023, 4, 24), date(2023, 4, 30), "week", "week of 24 April 2023"),
    # Weekdays: the most recent one strictly before the event date (see the module docstring).
    ("Last Friday at dance class", datetime(2023, 7, 23), "Last Friday", date(2023, 7, 21), date(2023, 7, 21), "day", "21 July 2023"),
    ("Last Fri I took my kids out", datetime(2023, 7, 15), "Last Fri", date(2023, 7, 14), date(2023, 7, 14), "day", "14 July 2023"),
    ("We spoke last Friday", datetime(2023, 7, 14), "last Friday", date(2023, 7, 7), date(2023, 7, 7), "day", "7 July 2023"),
    ("I joined a group last Tues.", datetime(2023, 7, 20), "last Tues", date(2023, 7, 18), date(2023, 7, 18), "day", "18 July 2023"),
    ("Next Friday works", datetime(2023, 1, 20), "Next Friday", date(2023, 1, 27), date(2023, 1, 27), "day", "27 January 2023"),
    ("I saw her on Friday", MON_8_MAY_2023, "Friday", date(2023, 5, 5), date(2023, 5, 5), "day", "5 May 2023"),
    ("I'll see you on Friday", MON_8_MAY_2023, "Friday", date(2023, 5, 12), date(2023, 5, 12), "day", "12 May 2023"),
    # Weekends are Saturday and Sunday.
    ("Last weekend I joined a program", datetime(2023, 7, 17), "Last weekend", date(2023, 7, 15), date(2023, 7, 16), "day", "weekend of 15 July 2023"),
    ("last weekend was quiet", datetime(2023, 7, 16), "last weekend", date(2023, 7, 8), date(2023, 7, 9), "day", "weekend of 8 July 2023"),
    ("any plans this weekend?", datetime(2023, 7, 12), "this weekend", date(2023, 7, 15), date(2023, 7, 16), "day", "weekend of 15 July 2023"),
    ("the roadtrip this past weekend", datetime(2023, 10, 20), "this past weekend", date(2023, 10, 14), date(2023, 10, 15), "day", "weekend of 14 October 2023"),
    ("camping two weekends ago", datetime(2023, 7, 17), "two weekends ago", date(2023, 7, 8), date(2023, 7, 9), "day", "weekend of 8 July 2023"),
    # Counts, in digits and in words.
    ("a conference two days ago", datetime(2023, 7, 12), "two days ago", date(2023, 7, 10), date(2023, 7, 10), "day", "10 July 2023"),
    ("three days ago", datetime(2024, 3, 2), "three days ago", date(2024, 2, 28), date(2024, 2, 28), "day", "28 February 2024"),
    ("I met him two weeks ago", MON_8_MAY_2023, "two weeks ago", date(2023, 4, 24), date(2023, 4, 30), "week", "week of 24 April 2023"),
    ("she moved 2 months ago", datetime(2024, 1, 31), "2 months ago", date(2023, 11, 1), date(2023, 11, 30), "month", "November 2023"),
    ("for my 18th birthday ten years ago", datetime(2023, 6, 27), "ten years ago", date(2013, 1, 1), date(2013, 12, 31), "year", "2013"),
    ("the results come in 3 days", datetime(2023, 12, 30), "in 3 days", date(2024, 1, 2), date(2024, 1, 2), "day", "2 January 2024"),
    ("over the past two weeks", datetime(2023, 4, 3), "the past two weeks", date(2023, 3, 20), date(2023, 4, 3), "day", "20 March to 3 April 2023"),
    # Absolute dates.
    ("It was on 7 May 2023.", datetime(2023, 6, 1), "7 May 2023", date(2023, 5, 7), date(2023, 5, 7), "day", "7 May 2023"),
    ("born on May 7th, 1990", datetime(2023, 6, 1), "May 7th, 1990", date(1990, 5, 7), date(1990, 5, 7), "day", "7 May 1990"),
    ("We met on May 7th", datetime(2023, 6, 10), "May 7th", date(2023, 5, 7), date(2023, 5, 7), "day", "7 May 2023"),
    ("I'll fly out on May 7th", datetime(2023, 6, 10), "May 7th", date(2024, 5, 7), date(2024, 5, 7), "day", "7 May 2024"),
    # A present progressive is a plan, its "be" without an apostrophe as chats write it; the past
    # before "n" (and) is another clause's.
    ("ok folake called me in n im getting promoted from 1 april", datetime(2026, 3, 9), "1 april", date(2026, 4, 1),
     date(2026, 4, 1), "day", "1 April 2026"),
    ("she moved house, shes starting at the new school on 2 may", datetime(2026, 3, 9), "2 may", date(2026, 5, 2),
     date(2026, 5, 2), "day", "2 May 2026"),
    ("the party on the 4th of July was loud", datetime(2023, 3, 1), "the 4th of July", date(2022, 7, 4), date(2022, 7, 4), "day", "4 July 2022"),
    ("We went to Rome in June", MON_8_MAY_2023, "June", date(2022, 6, 1), date(2022, 6, 30), "month", "June 2022"),
    ("I'm going to Rome in June", MON_8_MAY_2023, "June", date(2023, 6, 1), date(2023, 6, 30), "month", "June 2023"),
    ("It snowed in March", MON_8_MAY_2023, "March", date(2023, 3, 1), date(2023, 3, 31), "month", "March 2023"),
    ("Last December was cold", datetime(2024, 1, 5), "Last December", date(2023, 12, 1), date(2023, 12, 31), "month", "December 2023"),
    ("since June, 2023", datetime(2023, 9, 1), "June, 2023", date(2023, 6, 1), date(2023, 6, 30), "month", "June 2023"),
    ("We adopted in 2022", MON_8_MAY_2023, "2022", date(2022, 1, 1), date(2022, 12, 31), "year", "2022"),
    ("see the log of 2023-05-01", MON_8_MAY_2023, "2023-05-01", date(2023, 5, 1), date(2023, 5, 1), "day", "1 May 2023"),
]


@pytest.mark.parametrize("text, when, phrase, start, end, granularity, label", EXACT)
def test_resolves_exactly(text, when, phrase, start, end, granularity, label):
    found = only(text, when)
    assert (found.phrase, found.start, found.end, found.granularity) == (phrase, start, end, granularity)
    assert found.approximate is False
    assert found.label() == label


# Vague phrases: a point estimate or a span, flagged approximate, labelled "around ...".
VAGUE = [
    ("a couple of days ago", MON_8_MAY_2023, date(2023, 5, 6), date(2023, 5, 6), "around 6 May 2023"),
    ("a few days ago", MON_8_MAY_2023, date(2023, 5, 5), date(2023, 5, 5), "around 5 May 2023"),
    ("a pride parade a few weeks ago", datetime(2023, 7, 15), date(2023, 6, 19), date(2023, 6, 25), "around week of 19 June 2023"),
    ("the tattoo a few years ago", datetime(2023, 2, 8), date(2020, 1, 1), date(2020, 12, 31), "around 2020"),
    ("guitar about five years ago", datetime(2023, 8, 28), date(2018, 1, 1), date(2018, 12, 31), "around 2018"),
    ("someone drawing the other day", datetime(2023, 8, 25), date(2023, 8, 18), date(2023, 8, 24), "around 18 to 24 August 2023"),
    ("recently I had a setback", datetime(2023, 10, 13), date(2023, 9, 13), date(2023, 10, 13), "around September to October 2023"),
    ("the week before", MON_8_MAY_2023, date(2023, 5, 1), date(2023, 5, 7), "around week of 1 May 2023"),
    ("back around 2019, I think", MON_8_MAY_2023, date(2019, 1, 1), date(2019, 12, 31), "around 2019"),
]


@pytest.mark.parametrize("text, when, start, end, label", VAGUE)
def test_vague_phrases_are_approximate(text, when, start, end, label):
    found = only(text, when)
    assert (found.start, found.end, found.approximate) == (start, end, True)
    assert found.label() == label


@pytest.mark.parametrize(
    "text",
    [
        "I may go to the gym",
        "This may take a while",
        "May I ask you something?",
        "we march on",
        "March on, friends!",
        "my second child was born",
        "the sun was out and we sat in the park",
        "We had fun",  # dateparser reads "we" as Wednesday
        "I do yoga on Fridays",
        "my Friday class is fun",  # no tense: which Friday is unknowable
        "around 2000 people came",
        "we finished it in two weeks",  # a duration, not a date
        "I've known these friends for 4 years",
        "June said hi",
        "right now I'm busy",
    ],
)
def test_no_false_positives(text):
    assert resolve_dates(text, MON_8_MAY_2023) == []


def test_several_phrases_in_reading_order():
    found = resolve_dates("Last week I ran, and yesterday I swam; next Friday I rest.", MON_8_MAY_2023)
    assert [(f.phrase, f.label()) for f in found] == [
        ("Last week", "week of 1 May 2023"),
        ("yesterday", "7 May 2023"),
        ("next Friday", "12 May 2023"),
    ]


def test_longest_match_wins():
    assert [f.phrase for f in resolve_dates("on 8 May, 2023 and in May 2022", datetime(2024, 1, 1))] == [
        "8 May, 2023",
        "May 2022",
    ]


def test_event_time_with_time_zone_uses_its_local_date():
    when = datetime(2024, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=2)))
    assert only("yesterday", when).start == date(2023, 12, 31)


def test_resolved_date_is_frozen():
    found = only("yesterday", MON_8_MAY_2023)
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.start = date(2000, 1, 1)  # type: ignore[misc]


@pytest.mark.parametrize(
    "resolved, label",
    [
        (ResolvedDate("x", date(2023, 12, 1), date(2024, 1, 31), "month", False), "December 2023 to January 2024"),
        (ResolvedDate("x", date(2019, 1, 1), date(2021, 12, 31), "year", True), "around 2019 to 2021"),
        (ResolvedDate("x", date(2023, 12, 30), date(2024, 1, 2), "day", False), "30 December 2023 to 2 January 2024"),
        (ResolvedDate("x", date(2023, 4, 30), date(2023, 5, 2), "day", False), "30 April to 2 May 2023"),
    ],
)
def test_span_labels(resolved, label):
    assert resolved.label() == label


def test_annotate_adds_labels_after_relative_phrases():
    text = "I went there yesterday. Last week was busy, and in June I'm going on holiday."
    assert annotate(text, MON_8_MAY_2023) == (
        "I went there yesterday [7 May 2023]. Last week [week of 1 May 2023] was busy, "
        "and in June [June 2023] I'm going on holiday."
    )


def test_annotate_leaves_absolute_dates_and_is_idempotent():
    text = "On 7 May 2023 we met; a few days ago we met again."
    once = annotate(text, MON_8_MAY_2023)
    assert once == "On 7 May 2023 we met; a few days ago [around 5 May 2023] we met again."
    assert annotate(once, MON_8_MAY_2023) == once


def test_annotate_without_dates_returns_text_unchanged():
    assert annotate("Nothing to see here.", MON_8_MAY_2023) == "Nothing to see here."


@pytest.mark.parametrize(
    "value, expected",
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9)),
        ("12:30 pm on 1 Jan, 2024", datetime(2024, 1, 1, 12, 30)),
        (" 2023-05-08T13:56:00 ", datetime(2023, 5, 8, 13, 56)),
        ("2023-05-08", datetime(2023, 5, 8)),
        ("2023-05-08T13:56:00Z", datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)),
    ],
)
def test_parse_when(value, expected):
    assert parse_when(value) == expected


@pytest.mark.parametrize("value", ["yesterday", "", "13:56 pm on 8 May, 2023", "1:56 pm on 31 June, 2023", "1:56 pm on 8 Smarch, 2023"])
def test_parse_when_rejects_with_one_line(value):
    with pytest.raises(ValueError) as caught:
        parse_when(value)
    message = str(caught.value)
    assert "\n" not in message and repr(value) in message

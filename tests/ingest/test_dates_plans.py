"""Tense- and plan-aware resolution of dates without a year, ranges, ordinals and durations
(DESIGN.md Principle 6), with exact expected values. See the conventions in edgemem.ingest.dates."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from edgemem.ingest.dates import ResolvedDate, annotate, resolve_dates

MON_19_JAN_2026 = datetime(2026, 1, 19, 10, 0)
SAT_30_MAY_2026 = datetime(2026, 5, 30, 9, 0)
WED_15_JUL_2026 = datetime(2026, 7, 15, 9, 0)


def spans(text: str, when: datetime) -> list[tuple[str, date, date, str]]:
    return [(d.phrase, d.start, d.end, d.label()) for d in resolve_dates(text, when)]


# (text, event time, [(phrase, start, end, label)])
CASES = [
    # The target of an arrangement lies ahead, even after a past-tense verb.
    ("I booked flights for 16 September", MON_19_JAN_2026,
     [("16 September", date(2026, 9, 16), date(2026, 9, 16), "16 September 2026")]),
    ("We moved the party to 26 September", MON_19_JAN_2026,
     [("26 September", date(2026, 9, 26), date(2026, 9, 26), "26 September 2026")]),
    ("I went to Lisbon on 16 September", MON_19_JAN_2026,
     [("16 September", date(2025, 9, 16), date(2025, 9, 16), "16 September 2025")]),
    ("The dentist moved me to the 16th", datetime(2026, 3, 2, 9, 0),
     [("the 16th", date(2026, 3, 16), date(2026, 3, 16), "16 March 2026")]),
    # Future / plan: the coming occurrence. Past: the one gone.
    ("My sister is getting married in Porto on 20 June", MON_19_JAN_2026,
     [("20 June", date(2026, 6, 20), date(2026, 6, 20), "20 June 2026")]),
    ("My sister got married in Porto on 20 June", MON_19_JAN_2026,
     [("20 June", date(2025, 6, 20), date(2025, 6, 20), "20 June 2025")]),
    ("I'm flying to Lisbon on 2 May", MON_19_JAN_2026,
     [("2 May", date(2026, 5, 2), date(2026, 5, 2), "2 May 2026")]),
    ("The party is held on 3 March", MON_19_JAN_2026,  # "is held": a participle, not a past tense
     [("3 March", date(2026, 3, 3), date(2026, 3, 3), "3 March 2026")]),
    ("I will see them on 10 January", MON_19_JAN_2026,  # future tense: next year's
     [("10 January", date(2027, 1, 10), date(2027, 1, 10), "10 January 2027")]),
    # No tense at all: the nearest occurrence, ties ahead; one more than a week back counts double.
    ("Leaving 18 June, back 22 June", SAT_30_MAY_2026,
     [("18 June", date(2026, 6, 18), date(2026, 6, 18), "18 June 2026"),
      ("22 June", date(2026, 6, 22), date(2026, 6, 22), "22 June 2026")]),
    ("The wedding is on 20 June", WED_15_JUL_2026,  # mid-July: the June just gone
     [("20 June", date(2026, 6, 20), date(2026, 6, 20), "20 June 2026")]),
    ("The wedding is on 20 June", MON_19_JAN_2026,
     [("20 June", date(2026, 6, 20), date(2026, 6, 20), "20 June 2026")]),
    ("The market is in April", MON_19_JAN_2026,
     [("April", date(2026, 4, 1), date(2026, 4, 30), "April 2026")]),
    ("The market is in August", MON_19_JAN_2026,  # the August that ended 141 days ago counts 282
     [("August", date(2026, 8, 1), date(2026, 8, 31), "August 2026")]),
    ("The market was in August", MON_19_JAN_2026,  # past tense: the one gone
     [("August", date(2025, 8, 1), date(2025, 8, 31), "August 2025")]),
    ("big news, my sister is getting married!! Seville, 13 September", datetime(2025, 2, 3, 19, 20),
     [("13 September", date(2025, 9, 13), date(2025, 9, 13), "13 September 2025")]),
    ("The fair is on 20 November", datetime(2026, 12, 10, 9, 0),  # 20 days back (40) beats 345 ahead
     [("20 November", date(2026, 11, 20), date(2026, 11, 20), "20 November 2026")]),
    ("parkrun on Saturday: 28:31!", datetime(2025, 3, 18, 19, 0),  # within a week: the nearest
     [("Saturday", date(2025, 3, 15), date(2025, 3, 15), "15 March 2025")]),
    ("Birthday dinner on 1 July", datetime(2026, 1, 1),  # 181 days back, 181 ahead: a tie goes ahead
     [("1 July", date(2026, 7, 1), date(2026, 7, 1), "1 July 2026")]),
    ("I have felt better since March", MON_19_JAN_2026,  # "since": a start already passed
     [("March", date(2025, 3, 1), date(2025, 3, 31), "March 2025")]),
    # Weekdays in a plan.
    ("dentist on Thursday", MON_19_JAN_2026,
     [("Thursday", date(2026, 1, 22), date(2026, 1, 22), "22 January 2026")]),
    ("I had the dentist on Thursday", MON_19_JAN_2026,
     [("Thursday", date(2026, 1, 15), date(2026, 1, 15), "15 January 2026")]),
    # A clock time after the weekday, no tense: an appointment, the next such day (today while its
    # time is still ahead), "on" or not; not a result after a colon, not something that recurs.
    ("dentist on Monday at 8am, cleaning", datetime(2026, 3, 12, 21, 40),  # Thursday: not 9 March
     [("Monday", date(2026, 3, 16), date(2026, 3, 16), "16 March 2026")]),
    ("dentist Thursday at 10", datetime(2025, 11, 4, 21, 40),
     [("Thursday", date(2025, 11, 6), date(2025, 11, 6), "6 November 2025")]),
    ("standup Monday at 10", datetime(2026, 3, 16, 8, 0),
     [("Monday", date(2026, 3, 16), date(2026, 3, 16), "16 March 2026")]),
    ("standup Monday at 10", datetime(2026, 3, 16, 11, 0),
     [("Monday", date(2026, 3, 23), date(2026, 3, 23), "23 March 2026")]),
    ("call Friday 3pm", datetime(2026, 12, 30, 11, 0),  # across the year boundary
     [("Friday", date(2027, 1, 1), date(2027, 1, 1), "1 January 2027")]),
    ("lunch with Sam Friday at noon", MON_19_JAN_2026,
     [("Friday", date(2026, 1, 23), date(2026, 1, 23), "23 January 2026")]),
    ("the dentist on Monday at 8am was fine", datetime(2026, 3, 12, 21, 40),  # past tense: gone
     [("Monday", date(2026, 3, 9), date(2026, 3, 9), "9 March 2026")]),
    ("no more Friday 5 pm syncs", MON_19_JAN_2026, []),
    ("Saturday at 5k pace", MON_19_JAN_2026, []),
    # Ranges: one span.
    ("We are going 18 to 22 June", MON_19_JAN_2026,
     [("18 to 22 June", date(2026, 6, 18), date(2026, 6, 22), "18–22 June 2026")]),
    ("We went 18 to 22 June", MON_19_JAN_2026,
     [("18 to 22 June", date(2025, 6, 18), date(2025, 6, 22), "18–22 June 2025")]),
    ("Porto trip 18-22 June", MON_19_JAN_2026,
     [("18-22 June", date(2026, 6, 18), date(2026, 6, 22), "18–22 June 2026")]),
    ("Staying from 18 June to 22 June", MON_19_JAN_2026,
     [("18 June to 22 June", date(2026, 6, 18), date(2026, 6, 22), "18–22 June 2026")]),
    ("Conference June 18–22", MON_19_JAN_2026,
     [("June 18–22", date(2026, 6, 18), date(2026, 6, 22), "18–22 June 2026")]),
    ("Visiting between 3 and 5 March", MON_19_JAN_2026,
     [("3 and 5 March", date(2026, 3, 3), date(2026, 3, 5), "3–5 March 2026")]),
    ("Away 30 June to 2 July", MON_19_JAN_2026,
     [("30 June to 2 July", date(2026, 6, 30), date(2026, 7, 2), "30 June–2 July 2026")]),
    ("We were away from 30 December to 2 January", MON_19_JAN_2026,  # across the year boundary
     [("30 December to 2 January", date(2025, 12, 30), date(2026, 1, 2), "30 December 2025–2 January 2026")]),
    ("We're off 30 December to 2 January", datetime(2025, 11, 19),
     [("30 December to 2 January", date(2025, 12, 30), date(2026, 1, 2), "30 December 2025–2 January 2026")]),
    ("Booked 18–22 June 2027", MON_19_JAN_2026,
     [("18–22 June 2027", date(2027, 6, 18), date(2027, 6, 22), "18–22 June 2027")]),
    # A day of the month alone.
    ("Dentist on the 14th", datetime(2026, 1, 5),
     [("the 14th", date(2026, 1, 14), date(2026, 1, 14), "14 January 2026")]),
    ("Dentist on the 3rd", datetime(2026, 1, 28),  # nearest: 3 February, not 3 January
     [("the 3rd", date(2026, 2, 3), date(2026, 2, 3), "3 February 2026")]),
    ("I saw the dentist on the 14th", datetime(2026, 2, 2),
     [("the 14th", date(2026, 1, 14), date(2026, 1, 14), "14 January 2026")]),
    ("I'll be there from the 14th to the 18th", datetime(2026, 3, 10),
     [("the 14th to the 18th", date(2026, 3, 14), date(2026, 3, 18), "14–18 March 2026")]),
    # Durations ahead.
    ("The results come in six months", MON_19_JAN_2026,
     [("in six months", date(2026, 7, 1), date(2026, 7, 31), "July 2026")]),
    ("I start the new job in 3 weeks", datetime(2026, 1, 7),
     [("in 3 weeks", date(2026, 1, 28), date(2026, 1, 28), "28 January 2026")]),
    ("The visa arrives in 10 days", datetime(2025, 12, 28),
     [("in 10 days", date(2026, 1, 7), date(2026, 1, 7), "7 January 2026")]),
    ("I'm off for two weeks from Monday", datetime(2026, 1, 22),
     [("two weeks from Monday", date(2026, 1, 26), date(2026, 2, 8), "26 January–8 February 2026")]),
    ("The results come two weeks from Monday", datetime(2026, 1, 22),
     [("two weeks from Monday", date(2026, 2, 9), date(2026, 2, 9), "9 February 2026")]),
]


@pytest.mark.parametrize("text, when, expected", CASES)
def test_plans_ranges_and_durations(text, when, expected):
    assert spans(text, when) == expected


@pytest.mark.parametrize(
    "text",
    [
        "on the 14th floor",
        "my 18th birthday",
        "the 20th century",
        "my Friday class is fun",
        "I do yoga on Fridays",
        "we finished it in two weeks",
        "scored 2-1 in the final",
    ],
)
def test_still_no_false_positives(text):
    assert resolve_dates(text, MON_19_JAN_2026) == []


def test_on_18_june_and_22_june_are_two_dates():
    assert [d.label() for d in resolve_dates("I fly on 18 June and 22 June", MON_19_JAN_2026)] == [
        "18 June 2026", "22 June 2026",
    ]


def test_annotate_writes_ranges_with_a_dash():
    assert annotate("We are going 18 to 22 June", MON_19_JAN_2026) == (
        "We are going 18 to 22 June [18–22 June 2026]"
    )
    text = "My sister is getting married in Porto on 20 June. Dentist on Thursday."
    once = annotate(text, MON_19_JAN_2026)
    assert once == (
        "My sister is getting married in Porto on 20 June [20 June 2026]. "
        "Dentist on Thursday [22 January 2026]."
    )
    assert annotate(once, MON_19_JAN_2026) == once


def test_a_range_keeps_its_span_in_iso_form():
    found = resolve_dates("We are going 18 to 22 June", MON_19_JAN_2026)[0]
    assert found == ResolvedDate("18 to 22 June", date(2026, 6, 18), date(2026, 6, 22), "day", False, True)
    assert found.iso() == ("2026-06-18", "2026-06-22")


# A weekday written with the date says which year: "Booked: out Thursday 11 September" is a past
# verb, and the plain-date reading would file the flight a year back. 11 September 2025 is a Thursday.
TUE_18_MAR_2025 = datetime(2025, 3, 18, 18, 40)


@pytest.mark.parametrize("text, when, expected", [
    ("Booked: out Thursday 11 September, back Tuesday 16 September.", TUE_18_MAR_2025,
     [("Thursday 11 September", date(2025, 9, 11)), ("Tuesday 16 September", date(2025, 9, 16))]),
    ("Filling booked for Monday 4 August at 11", TUE_18_MAR_2025,
     [("Monday 4 August", date(2025, 8, 4))]),
    ("The meeting was on Wed, Sept 17", datetime(2025, 10, 1, 9, 0),
     [("Wed, Sept 17", date(2025, 9, 17))]),
    # Past tense, and the weekday fits only the occurrence before the event date.
    ("I went to the dentist on Friday 21 March", datetime(2026, 1, 5, 9, 0),
     [("Friday 21 March", date(2025, 3, 21))]),
    # A plan: the coming occurrence, which is a Monday.
    ("Dinner on Monday 3 March", datetime(2025, 2, 10, 9, 0),
     [("Monday 3 March", date(2025, 3, 3))]),
])
def test_a_weekday_picks_the_year(text, when, expected):
    assert [(d.phrase, d.start) for d in resolve_dates(text, when)] == expected


def test_a_weekday_that_fits_no_nearby_year_falls_back_to_the_plain_date():
    # 29 February is a Thursday in 2024 and a Tuesday in 2028, never a Sunday from 2022 to 2030: the
    # plain reading decides (681 days back, counted double, against 780 ahead).
    got = resolve_dates("Party on Sunday 29 February", datetime(2026, 1, 10, 9, 0))
    assert [(d.phrase, d.start) for d in got] == [("Sunday 29 February", date(2028, 2, 29))]


@pytest.mark.parametrize("text, when, expected", [
    # Said in November: "the 27th" alone would be 27 November; the sentence's month is December.
    ("so now flying out 21 December and back on the 27th", datetime(2025, 11, 14, 21, 0),
     "so now flying out 21 December [21 December 2025] and back on the 27th [27 December 2025]"),
    # The day has passed in the written month: the next month.
    ("away from 28 March until the 2nd", datetime(2026, 1, 10, 9, 0),
     "away from 28 March [28 March 2026] until the 2nd [2 April 2026]"),
    # Another sentence: the month is not carried over.
    ("Out 21 December. Back on the 27th.", datetime(2025, 11, 14, 21, 0),
     "Out 21 December [21 December 2025]. Back on the 27th [27 November 2025]."),
])
def test_a_day_of_the_month_takes_the_month_written_before_it(text, when, expected):
    assert annotate(text, when) == expected


def test_a_label_before_a_colon_is_not_the_tense_of_the_plan_after_it() -> None:
    said = datetime(2025, 10, 21, 9, 0)
    assert annotate("Noted: Dublin, 23 to 28 December.", said) == "Noted: Dublin, 23 to 28 December [23–28 December 2025]."
    said = datetime(2025, 2, 22, 9, 0)
    assert annotate("Saved: Mum's birthday is 9 March.", said) == "Saved: Mum's birthday is 9 March [9 March 2025]."
    # Without the colon the verb is the sentence's tense: the March just gone (said in September; said
    # in February, a year back, it yields to the coming one: see the test of days most of a year back).
    said = datetime(2025, 9, 1, 9, 0)
    assert annotate("I saved the date, 9 March.", said) == "I saved the date, 9 March [9 March 2025]."


def test_a_past_day_of_the_month_does_not_take_a_later_month() -> None:
    said = datetime(2025, 2, 22, 9, 0)
    text = "the booster is moved to 4 March, they had a staff thing on the 27th"
    assert annotate(text, said) == ("the booster is moved to 4 March [4 March 2025], they had a staff thing on the "
                                    "27th [27 January 2025]")


def test_a_weekday_with_a_plural_part_of_day_is_every_week() -> None:
    said = datetime(2025, 7, 22, 9, 0)
    assert resolve_dates("From September: pottery on Tuesday evenings, Wednesday evenings free.", said) == []
    assert resolve_dates("no meetings on Friday afternoons", said) == []
    assert [d.start for d in resolve_dates("the dentist is on Friday afternoon", said)] == [date(2025, 7, 25)]


def test_can_or_might_before_a_date_is_a_plan_even_after_a_past_verb() -> None:
    said = datetime(2025, 11, 15, 9, 0)
    assert annotate("Hannah asked if I can feed Mochi from 22 to 26 December.", said) == (
        "Hannah asked if I can feed Mochi from 22 to 26 December [22–26 December 2025].")
    assert annotate("I might see Mum on 3 December.", said) == "I might see Mum on 3 December [3 December 2025]."
    # "can't" is no plan, and the past verb next to the date still decides.
    assert annotate("I can't believe we met on 3 November.", said) == (
        "I can't believe we met on 3 November [3 November 2025].")


@pytest.mark.parametrize("text, when, expected", [
    # The month whose 17th is a Tuesday, not the Tuesday before a past-tense "cancelled".
    ("the GP cancelled my review, I'm in on Tuesday the 17th now, 10:20", datetime(2026, 2, 10, 20, 0),
     "the GP cancelled my review, I'm in on Tuesday the 17th [17 February 2026] now, 10:20"),
    ("Mila's party is on Saturday the 15th, 8 kids", datetime(2025, 10, 28, 20, 0),
     "Mila's party is on Saturday the 15th [15 November 2025], 8 kids"),
])
def test_a_weekday_with_a_day_of_the_month_is_the_month_where_they_agree(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    # A fixed-day holiday is placed like a date without a year: ahead for a plan, behind when told.
    ("Christmas: Karen and her lot are coming to ours, 24th to the 27th", datetime(2025, 11, 20, 18, 50),
     "Christmas [25 December 2025]: Karen and her lot are coming to ours, 24th to the 27th [24–27 December 2025]"),
    ("We spent Christmas at my mum's.", datetime(2026, 1, 9, 12, 0),
     "We spent Christmas [25 December 2025] at my mum's."),
    ("Halloween party next door, can't wait", datetime(2025, 11, 20, 9, 0),
     "Halloween [31 October 2026] party next door, can't wait"),
    ("We're seeing friends on New Year's Eve", datetime(2025, 12, 2, 9, 0),
     "We're seeing friends on New Year's Eve [31 December 2025]"),
    # "for" a holiday after a past verb that arranges nothing: the one just gone, not next year's;
    # a gift bought for it, said weeks before, is still the coming one.
    ("took mei to burleigh for valentines, she surfed again", datetime(2026, 2, 22, 20, 30),
     "took mei to burleigh for valentines [14 February 2026], she surfed again"),
    ("bought Mum a scarf for Christmas", datetime(2025, 11, 20, 9, 0),
     "bought Mum a scarf for Christmas [25 December 2025]"),
    # Two ordinals make a range of days, in the month the tense gives them.
    ("The kids are at their gran's 3rd to the 5th.", datetime(2026, 2, 20, 9, 0),
     "The kids are at their gran's 3rd to the 5th [3–5 March 2026]."),
])
def test_holidays_and_ordinal_ranges(text, when, expected):
    assert annotate(text, when) == expected


def test_a_day_of_this_next_or_last_month_is_that_day() -> None:
    said = datetime(2025, 8, 3, 22, 5)
    assert annotate("I have entered the Uchinada swim on the 31st of this month.", said) == (
        "I have entered the Uchinada swim on the 31st of this month [31 August 2025].")
    assert annotate("the party is on the 15th of next month", said) == "the party is on the 15th of next month [15 September 2025]"
    assert annotate("we met on the 3rd of last month", said) == "we met on the 3rd of last month [3 July 2025]"
    # September has no 31st: the month alone is what can be said.
    assert annotate("on the 31st of next month", said) == "on the 31st of next month [September 2025]"


def test_a_date_after_a_verb_of_arranging_lies_ahead() -> None:
    said = datetime(2025, 10, 28, 19, 0)
    assert annotate("had to cancel Cornwall. rebooked the same place for Easter instead, 4 to 11 April", said) == (
        "had to cancel Cornwall. rebooked the same place for Easter [5 April 2026] instead, 4 to 11 April [4–11 April 2026]")
    # another past verb after the arranging one: the date is what happened
    assert annotate("I booked the cottage and we stayed 4 to 11 April", said) == (
        "I booked the cottage and we stayed 4 to 11 April [4–11 April 2025]")


@pytest.mark.parametrize("text, when, expected", [
    # A month typed lower-case next to a day number is a date; "may" only when nothing verb-like follows.
    ("swim meet 14th aug, relay 2 sept", datetime(2025, 7, 1, 9, 0),
     "swim meet 14th aug [14 August 2025], relay 2 sept [2 September 2025]"),
    ("5k on 4th may 27:40!!", datetime(2025, 5, 9, 20, 0), "5k on 4th may [4 May 2025] 27:40!!"),
    ("the offsite is 9 march now", datetime(2026, 1, 12, 9, 0), "the offsite is 9 march [9 March 2026] now"),
    ("I think 3 may be enough", datetime(2026, 1, 12, 9, 0), "I think 3 may be enough"),
    # "the 14th" alone is a day when what follows is no noun: "the 3rd floor" stays a floor.
    ("swims: did the 2nd (41:10) and the 9th too. missed the 16th cos of work", datetime(2025, 11, 20, 18, 0),
     "swims: did the 2nd [2 November 2025] (41:10) and the 9th [9 November 2025] too. "
     "missed the 16th [16 November 2025] cos of work"),
    ("her office is on the 3rd floor", datetime(2025, 11, 20, 18, 0), "her office is on the 3rd floor"),
    # A weekday with a bare ordinal: the month whose day it is.
    ("back saturday 13th", datetime(2025, 9, 1, 9, 0), "back saturday 13th [13 September 2025]"),
])
def test_days_as_people_type_them(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    # A day alone takes the month that puts it nearest the date named before it, and passes it on.
    ("moved: home Thursday 18 Sept now instead of the 17th", datetime(2025, 8, 1, 9, 0),
     "moved: home Thursday 18 Sept [18 September 2025] now instead of the 17th [17 September 2025]"),
    ("christmas: driving down on the 22nd, back the 28th", datetime(2025, 11, 10, 9, 0),
     "christmas [25 December 2025]: driving down on the 22nd [22 December 2025], back the 28th [28 December 2025]"),
    ("Porto 2–5 October for Ana's 40th on the 3rd", datetime(2025, 8, 10, 9, 0),
     "Porto 2–5 October [2–5 October 2025] for Ana's 40th on the 3rd [3 October 2025]"),
])
def test_a_day_alone_takes_the_nearest_month_of_the_date_before_it(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    # A relative day capitalised inside a sentence is a title: no date, and no tense for its sentence.
    ("loved Tomorrow, and Tomorrow, and Tomorrow in feb", datetime(2025, 4, 15, 9, 0),
     "loved Tomorrow, and Tomorrow, and Tomorrow in feb [February 2025]"),
    ("Tomorrow I fly", datetime(2025, 4, 15, 9, 0), "Tomorrow [16 April 2025] I fly"),
    ('she said "Today works"', datetime(2025, 4, 15, 9, 0), 'she said "Today [15 April 2025] works"'),
    # A lower-case abbreviation is a month when a word frames it as a time.
    ("started couch to 5k in jan", datetime(2025, 3, 4, 9, 0), "started couch to 5k in jan [January 2025]"),
])
def test_titles_and_framed_abbreviations(text, when, expected):
    assert annotate(text, when) == expected


def test_a_remark_after_a_spaced_dash_gives_no_tense_to_the_date_before_it() -> None:
    said = datetime(2026, 1, 7, 21, 0)
    assert annotate("Padel final in Bilbao on 21 March — booked.", said) == (
        "Padel final in Bilbao on 21 March [21 March 2026] — booked.")
    assert annotate("Noted — the viewing is 9 February.", said) == "Noted — the viewing is 9 February [9 February 2026]."


def test_an_arrangement_or_an_adjective_is_no_past_tense() -> None:
    said = datetime(2025, 12, 12, 20, 0)
    assert annotate("Lyon offsite 19–21 January, train booked.", said) == (
        "Lyon offsite 19–21 January [19–21 January 2026], train booked.")
    assert annotate("a paid pilot with Ordo, 3–14 February", said) == (
        "a paid pilot with Ordo, 3–14 February [3–14 February 2026]")


def test_days_after_a_month_are_in_it_and_a_wish_for_a_thing_is_ahead() -> None:
    said = datetime(2025, 7, 1, 13, 0)
    assert annotate("Ciarán's doing a course in Cork in august, 11th to 15th, a cpd thing", said) == (
        "Ciarán's doing a course in Cork in august [August 2025], 11th to 15th [11–15 August 2025], a cpd thing")
    said = datetime(2025, 10, 16, 9, 0)
    assert annotate("call went well yesterday, they want a 2 week paid pilot in november", said) == (
        "call went well yesterday [15 October 2025], they want a 2 week paid pilot in november [November 2025]")


@pytest.mark.parametrize("text, expected", [
    # The present progressive with a date is an arrangement: it lies ahead.
    ("I'm doing the Dublin half in september", "I'm doing the Dublin half in september [September 2026]"),
    ("we're running it in September", "we're running it in September [September 2026]"),
    # A nearer past marker still wins, and "nothing" / "morning" are no verbs.
    ("I'm still sore from the race I ran in September", "I'm still sore from the race I ran in September [September 2025]"),
    ("there's nothing on in September, it was quiet", "there's nothing on in September [September 2025], it was quiet"),
])
def test_the_present_progressive_reads_a_month_ahead(text, expected):
    assert annotate(text, datetime(2026, 1, 14, 20, 0)) == expected


@pytest.mark.parametrize("text, expected", [
    # "is now" states the plan after the change the past verb made: the nearest occurrence.
    ("the trip moved, the school shifted it, it's now 16 to 20 october",
     "the trip moved, the school shifted it, it's now 16 to 20 october [16–20 October 2025]"),
    ("they changed it, the party is now on 12 October", "they changed it, the party is now on 12 October [12 October 2025]"),
])
def test_is_now_reads_a_changed_plan_at_its_nearest_date(text, expected):
    assert annotate(text, datetime(2025, 10, 2, 20, 0)) == expected
    # Without "now" the nearest past verb still reads the date as gone by (said in April: October is
    # nearer ahead, the verb puts it back).
    assert annotate("the school shifted it to the spring, we went 16 to 20 october", datetime(2025, 4, 2, 20, 0)) == (
        "the school shifted it to the spring, we went 16 to 20 october [16–20 October 2024]")


@pytest.mark.parametrize("text, expected", [
    # A day alone in the sentence after a range of days that holds it is in the range's month ...
    ("we're in Porto 12-16 march. the wedding itself is on the 14th",
     "we're in Porto 12-16 march [12–16 March 2026]. the wedding itself is on the 14th [14 March 2026]"),
    # ... but not when the range does not hold it (the nearest 25th, in this month).
    ("we're in Porto 12-16 march. the dentist is on the 25th",
     "we're in Porto 12-16 march [12–16 March 2026]. the dentist is on the 25th [25 February 2026]"),
])
def test_a_day_inside_the_range_before_it_takes_its_month(text, expected):
    assert annotate(text, datetime(2026, 2, 10, 9, 0)) == expected


def test_an_emoji_ends_the_sentence_whose_tense_a_date_takes() -> None:
    # Without the emoji as a boundary "dropped" made "the 24th" last month's.
    said = datetime(2026, 2, 18, 20, 0)
    assert annotate("dropped my phone again 😩 new one arrives on the 24th", said) == (
        "dropped my phone again 😩 new one arrives on the 24th [24 February 2026]")
    # The clause before it keeps its own tense.
    assert annotate("dropped it on the 16th 😩 new one arrives soon", said) == (
        "dropped it on the 16th [16 February 2026] 😩 new one arrives soon")


@pytest.mark.parametrize("text, expected", [
    # After "this", "next" or "last" a weekday's abbreviation is one, capitalised or not.
    ("last one this wed, then freedom", "last one this wed [12 November 2025], then freedom"),
    ("interview next tues at 10", "interview next tues [11 November 2025] at 10"),
    ("the last sun of summer was nice", "the last sun of summer was nice"),
    ("we sat outside", "we sat outside"),
])
def test_a_texted_weekday_after_this_next_or_last(text, expected):
    assert annotate(text, datetime(2025, 11, 9, 22, 0)) == expected


@pytest.mark.parametrize("text, expected", [
    # A trip's legs as participles take no tense from the buying before them: the coming February.
    ("I bought the ticket today, leaving 12 February and coming back 5 March, 1,480 dollars.",
     "I bought the ticket today [19 October 2025], leaving 12 February [12 February 2026] and coming back "
     "5 March [5 March 2026], 1,480 dollars."),
    # Told as a past plan ("were leaving"), the past verb still dates it.
    ("we were leaving on the 3rd of May", "we were leaving on the 3rd of May [3 May 2025]"),
    # A verb of its own before a gerund is a past event, not a leg: "went hiking" keeps the past.
    ("we went hiking on 5 June, loved it", "we went hiking on 5 June [5 June 2025], loved it"),
])
def test_a_trips_legs_take_no_tense_from_the_verb_before_them(text, expected):
    assert annotate(text, datetime(2025, 10, 19, 20, 0)) == expected


@pytest.mark.parametrize("said, text, expected", [
    # An acknowledgement opening the sentence is no past: the concert lies ahead.
    ((2025, 10, 2), "Noted, winter concert at Église Saint-Bruno on 22 November.",
     "Noted, winter concert at Église Saint-Bruno on 22 November [22 November 2025]."),
    ((2026, 1, 14), "Noted the new address and the 28 February move.",
     "Noted the new address and the 28 February [28 February 2026] move."),
    # "now it's" states the plan as it stands after the change the past verbs tell.
    ((2026, 2, 6), "the move got pushed. the removal company messed up so now it's 7 march",
     "the move got pushed. the removal company messed up so now it's 7 march [7 March 2026]"),
    # "left" before a side is no verb.
    ((2025, 9, 24), "He says left eye first, probably in January.",
     "He says left eye first, probably in January [January 2026]."),
    # "done" is a past: the left eye's day has gone by, whatever is scheduled next.
    ((2026, 2, 9), "left eye done on 27 January, and the right eye is scheduled for Tuesday 17 March.",
     "left eye done on 27 January [27 January 2026], and the right eye is scheduled for Tuesday 17 March "
     "[17 March 2026]."),
])
def test_words_that_look_past_but_date_nothing(said, text, expected):
    assert annotate(text, datetime(*said, 20, 0)) == expected


def test_a_clause_after_so_or_but_keeps_its_tense_to_itself() -> None:
    # The party is ahead ("is throwing"); "moved" belongs to the clause after ", so", and the flight
    # it moved "to the 12th" is the party's month, ahead too.
    said = datetime(2025, 11, 4, 20, 0)
    assert annotate("my brother is throwing Ma a party on january 10th in Kumasi, so we moved our return "
                    "flight to the 12th", said) == (
        "my brother is throwing Ma a party on january 10th [10 January 2026] in Kumasi, so we moved our return "
        "flight to the 12th [12 January 2026]")
    # The past of a date's own clause still dates it.
    assert annotate("I went there on Friday, but it rained", said) == (
        "I went there on Friday [31 October 2025], but it rained")


@pytest.mark.parametrize("text", [
    "haven't been back in 4 years. Ma is going to cry",
    "first time in ten years we all met",
    "she hasn't called in 3 weeks",
])
def test_in_so_many_years_after_a_negated_perfect_is_how_long_not_when(text):
    assert annotate(text, datetime(2025, 9, 9, 20, 0)) == text


def test_have_got_is_a_present_have() -> None:
    said = datetime(2025, 7, 8, 20, 40)
    assert annotate("Kofi's got basketball camp at the U, 28 july to 1 august", said) == (
        "Kofi's got basketball camp at the U, 28 july to 1 august [28 July–1 August 2025]")
    assert annotate("I've got the dentist on the 9th", said) == "I've got the dentist on the 9th [9 July 2025]"
    assert annotate("I got a ticket on Friday", said) == "I got a ticket on Friday [4 July 2025]"


@pytest.mark.parametrize("text, expected", [
    ("fourth of july Desmond took me and Kofi to the Twins",
     "fourth of july [4 July 2025] Desmond took me and Kofi to the Twins"),
    ("St Patricks Day parade with the kids", "St Patricks Day [17 March 2025] parade with the kids"),
    ("St. Andrew’s Day dinner at Mairi's", "St. Andrew’s Day [30 November 2025] dinner at Mairi's"),
    ("bonfire night at the park", "bonfire night [5 November 2025] at the park"),
])
def test_holidays_on_a_fixed_day_are_dated_written_any_way(text, expected):
    assert annotate(text, datetime(2025, 7, 8, 20, 40)) == expected


@pytest.mark.parametrize("year, day", [
    (2000, date(2000, 4, 23)), (2019, date(2019, 4, 21)), (2024, date(2024, 3, 31)), (2025, date(2025, 4, 20)),
    (2026, date(2026, 4, 5)), (2027, date(2027, 3, 28)), (2038, date(2038, 4, 25)), (2285, date(2285, 3, 22)),
])
def test_easter_sunday_by_the_computus(year, day):
    from edgemem.text import easter_sunday
    assert easter_sunday(year) == day  # 22 March and 25 April are its earliest and latest days


@pytest.mark.parametrize("text, when, expected", [
    # Told after it: the feast just gone; planned before it: the coming one.
    ("Marta telephoned on Easter Monday: they are engaged!", datetime(2026, 4, 16, 10, 0),
     "Marta telephoned on Easter Monday [6 April 2026]: they are engaged!"),
    ("I will finish the quilt by Easter", datetime(2026, 12, 1, 10, 0),
     "I will finish the quilt by Easter [28 March 2027]"),
    ("they arrive on Good Friday", datetime(2026, 3, 20, 10, 0), "they arrive on Good Friday [3 April 2026]"),
    ("thanksgiving: Efua is driving up from Chicago", datetime(2025, 11, 4, 9, 0),
     "thanksgiving [27 November 2025]: Efua is driving up from Chicago"),
    # A span of days, and weekdays listed right after it, are its days, not the coming weekend.
    ("we are going the weekend after Easter, Saturday and Sunday. The coach is at 7.", datetime(2026, 2, 4, 10, 0),
     "we are going the weekend after Easter [weekend of 11 April 2026], Saturday [11 April 2026] and Sunday [12 April 2026]."
     " The coach is at 7."),
    # A weekday that "was" a feast is the feast's day.
    ("went tue 7th (monday was easter monday so he moved it)", datetime(2026, 4, 26, 10, 0),
     "went tue 7th [7 April 2026] (monday [6 April 2026] was easter monday [6 April 2026] so he moved it)"),
    # What is done every year names no day, nor does a feast's "the".
    ("Thanksgiving's always special for us.", datetime(2023, 8, 21, 10, 0), "Thanksgiving's always special for us."),
    ("Any favorite Christmas traditions?", datetime(2023, 8, 21, 10, 0), "Any favorite Christmas traditions?"),
    ("the Easter holidays were long", datetime(2026, 5, 1, 10, 0), "the Easter holidays were long"),
])
def test_movable_feasts(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    # A weekday abbreviation before a day number is a day in lowercase too ("thu 12th"): the weekday
    # must fit the day, and a subject or an article before it makes it a word ("we sat 12th").
    ("physio update: went thu 12th, mon 16th, then mon 23rd got cancelled", datetime(2026, 4, 1, 19, 0),
     "physio update: went thu 12th [12 March 2026], mon 16th [16 March 2026], then mon 23rd [23 March 2026] got cancelled"),
    ("we sat 12th in the league", datetime(2026, 4, 1, 19, 0), "we sat 12th in the league"),
    # What is due lies ahead, whatever the clause's verb says.
    ("now they sent a design task, due fri 20th", datetime(2026, 3, 9, 19, 0),
     "now they sent a design task, due fri 20th [20 March 2026]"),
    ("Lucía is due on 20 February", datetime(2025, 9, 5, 19, 0), "Lucía is due on 20 February [20 February 2026]"),
])
def test_numbered_weekday_abbreviations_and_what_is_due(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    ("moving day will be the last saturday of april, ill get movers", datetime(2026, 3, 9, 19, 0),
     "moving day will be the last saturday of april [25 April 2026], ill get movers"),
    ("we met on the first sunday of june", datetime(2026, 7, 10, 9, 0), "we met on the first sunday of june [7 June 2026]"),
    ("the last friday of june is payday", datetime(2026, 1, 5, 9, 0), "the last friday of june [26 June 2026] is payday"),
])
def test_the_nth_weekday_of_a_month(text, when, expected):
    assert annotate(text, when) == expected
    said = datetime(2025, 12, 1, 9, 0)
    assert [(d.start, d.end) for d in resolve_dates("the second Tuesday in March 2026 is the AGM", said)] == [
        (date(2026, 3, 10), date(2026, 3, 10))]


@pytest.mark.parametrize("text, expected", [
    ("The Zakopane trip is three weeks from tomorrow, the coach leaves at seven",
     "The Zakopane trip is three weeks from tomorrow [11 April 2026], the coach leaves at seven"),
    ("two weeks from today we fly", "two weeks from today [3 April 2026] we fly"),
    ("the trip is three weeks from now", "the trip is three weeks from now [10 April 2026]"),
])
def test_a_count_of_days_or_weeks_from_today_or_tomorrow(text, expected):
    assert annotate(text, datetime(2026, 3, 20, 19, 0)) == expected


@pytest.mark.parametrize("text, expected", [
    ("tundes wedding still 12 dec. bachelors is the thursday before, in lagos this time",
     "tundes wedding still 12 dec [12 December 2026]. bachelors is the thursday before [10 December 2026], in lagos this time"),
    ("the wedding is on 12 December and the brunch is the Sunday after",
     "the wedding is on 12 December [12 December 2026] and the brunch is the Sunday after [13 December 2026]"),
    ("the party is the Friday after the exams", "the party is the Friday after the exams"),  # no day to count from
])
def test_the_weekday_before_or_after_the_day_just_dated(text, expected):
    assert annotate(text, datetime(2026, 11, 19, 19, 0)) == expected


@pytest.mark.parametrize("text, when, expected", [
    # An infinitive after a past verb names an event ahead: said 4 June, this June, not last.
    ("and we got asked to play the street festival on june 21, outdoor stage", datetime(2026, 6, 4, 20, 0),
     "and we got asked to play the street festival on june 21 [21 June 2026], outdoor stage"),
    # A timetable's present beats a past verb further off: said 2 April, this May.
    ("she got the grant money, the new job starts may 11, 20h a week", datetime(2026, 4, 2, 21, 0),
     "she got the grant money, the new job starts may 11 [11 May 2026], 20h a week"),
    ("the contract ends 31 December and they won't renew", datetime(2025, 9, 21, 9, 0),
     "the contract ends 31 December [31 December 2025] and they won't renew"),
    # The past verb nearest the date still decides.
    ("the course started 3 march and I loved it", datetime(2026, 3, 20, 9, 0),
     "the course started 3 march [3 March 2026] and I loved it"),
    ("we went to the cinema on 3 december", datetime(2026, 3, 20, 9, 0),
     "we went to the cinema on 3 december [3 December 2025]"),
])
def test_an_untensed_infinitive_or_timetable_present_takes_the_nearest_occurrence(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    # A past verb, but the day written without its year is weeks ahead, not most of a year back.
    ("trafford emailed, callums got an interview on the 4th feb!!", datetime(2026, 1, 21, 5, 0),
     "trafford emailed, callums got an interview on the 4th feb [4 February 2026]!!"),
    ("Christmas in Seville with your mum, 22–27 December, Noor included.", datetime(2025, 11, 20, 9, 0),
     "Christmas [25 December 2025] in Seville with your mum, 22–27 December [22–27 December 2025], Noor included."),
    # Months back and months ahead: the past verb decides.
    ("My sister got married in Porto on 20 June", datetime(2026, 1, 19, 10, 0),
     "My sister got married in Porto on 20 June [20 June 2025]"),
    # A whole month is no day: last May may well be meant.
    ("we went to Spain in May", datetime(2026, 4, 2, 9, 0), "we went to Spain in May [May 2025]"),
])
def test_a_past_day_most_of_a_year_back_yields_to_the_same_day_weeks_ahead(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    # A subject and a present verb right before the day is a timetable, told ahead, though a past
    # verb opens the sentence or the day is the nearest one gone (said on Saturday 14 June 2025).
    ("I came ashore on Wednesday this week and I go back aboard on the 25th.", datetime(2025, 6, 14, 12, 0),
     "I came ashore on Wednesday [11 June 2025] this week [week of 9 June 2025] and I go back aboard on the 25th "
     "[25 June 2025]."),
    ("Updated: you fly down on Friday, Thabo joins on the 24th.", datetime(2025, 12, 14, 12, 0),
     "Updated: you fly down on Friday [19 December 2025], Thabo joins on the 24th [24 December 2025]."),
    # A day that recurs is a habit; a question, a condition or a verb of hearing places nothing.
    ("he calls every Sunday night, more or less", datetime(2025, 9, 5, 12, 0), "he calls every Sunday night, more or less"),
    ("did i tell you about the 5th of april one?", datetime(2025, 5, 8, 12, 0),
     "did i tell you about the 5th of april [5 April 2025] one?"),
    ("I hear Ana moved on Friday", datetime(2025, 6, 14, 12, 0), "I hear Ana moved on Friday [13 June 2025]"),
    # A sentence moving a plan leaves its weekday to the plan's week: no coming Thursday is read into it.
    ("our return flight got pushed a day later, so we fly home Thursday now.", datetime(2025, 9, 10, 19, 45),
     "our return flight got pushed a day later, so we fly home Thursday now."),
    # An entry is made for a day still ahead.
    ("entered golden gate 30k on 1 august - longest ever", datetime(2026, 5, 16, 12, 0),
     "entered golden gate 30k on 1 august [1 August 2026] - longest ever"),
])
def test_a_present_verb_of_doing_right_before_a_day_is_a_plan(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    # A day counted from the date written right after it.
    ("she lands on the friday a week before christmas and stays till 3 jan", datetime(2026, 9, 13, 12, 0),
     "she lands on the friday a week before christmas [18 December 2026] and stays till 3 jan [3 January 2027]"),
    ("the day before christmas", datetime(2026, 9, 13, 12, 0), "the day before christmas [24 December 2026]"),
    ("two days before christmas", datetime(2026, 9, 13, 12, 0), "two days before christmas [23 December 2026]"),
    # Strictly after: 14 November 2026 is itself a Saturday. Easter 2027 is 28 March.
    ("the saturday after 14 november", datetime(2026, 9, 13, 12, 0), "the saturday after 14 november [21 November 2026]"),
    ("the Friday after Easter", datetime(2026, 9, 13, 12, 0), "the Friday after Easter [2 April 2027]"),
    # Counted from the day told before it, as before.
    ("tundes wedding still 12 dec. bachelors is the thursday before", datetime(2026, 9, 13, 12, 0),
     "tundes wedding still 12 dec [12 December 2026]. bachelors is the thursday before [10 December 2026]"),
])
def test_a_day_counted_from_the_date_after_it_is_that_day(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    # A day alone a sentence after a coming dated day, a few days from it, is in that day's month.
    ("mama turns 60 on sat 27 june!! party at her church hall. i'm flying down on the 26th and back the 28th",
     datetime(2026, 5, 16, 12, 0),
     "mama turns 60 on sat 27 june [27 June 2026]!! party at her church hall. i'm flying down on the 26th "
     "[26 June 2026] and back the 28th [28 June 2026]"),
    # Not after a day gone by, nor a day put in the past by it.
    ("parkrun: 3rd may 32:20!!! did i tell you about the 5th of april one? anyway the 3rd was the good one",
     datetime(2025, 5, 8, 12, 0),
     "parkrun: 3rd may [3 May 2025] 32:20!!! did i tell you about the 5th of april [5 April 2025] one? anyway the 3rd "
     "[3 May 2025] was the good one"),
])
def test_a_day_alone_beside_a_coming_dated_day_takes_its_month(text, when, expected):
    assert annotate(text, when) == expected


@pytest.mark.parametrize("text, when, expected", [
    # "As planned" looks back at the plan from the day it happened: the past verb dates it.
    ("I went to Tokyo on 22 January as planned.", datetime(2026, 2, 12, 18, 40),
     "I went to Tokyo on 22 January [22 January 2026] as planned."),
    ("The move is on 3 March as planned.", datetime(2026, 2, 12, 18, 40),
     "The move is on 3 March [3 March 2026] as planned."),
    # Two days in a row sharing their month are one stretch; two days apart, or each with its month, are not.
    ("the Tokyo trip on 9 and 10 October was productive", datetime(2025, 11, 11, 21, 20),
     "the Tokyo trip on 9 and 10 October [9–10 October 2025] was productive"),
    ("On October 9 and 10 I was in Tokyo.", datetime(2025, 11, 11, 21, 20),
     "On October 9 and 10 [9–10 October 2025] I was in Tokyo."),
    ("I will be away on 3 and 10 December.", datetime(2025, 11, 11, 21, 20),
     "I will be away on 3 and 10 December [10 December 2025]."),
])
def test_as_planned_is_no_future_and_two_days_in_a_row_are_a_stretch(text, when, expected):
    assert annotate(text, when) == expected

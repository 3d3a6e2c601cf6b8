"""Date tools take their operands from the notes' stored dates; counting counts distinct events.

DESIGN Principle 2 (date maths and counting are code) and Principle 6 (time is data)."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from edgemem.ingest.dates import annotate, resolve_dates
from edgemem.recall.evidence import Evidence
from edgemem.recall.preprocess import temporal
from edgemem.recall.tools import (
    count_occurrences,
    describe_days,
    execute,
    format_events,
    ground,
    ground_operands,
    parse_date,
    parse_span,
    parse_tool_call,
)


def note(note_id: int, text: str, when: str, session: str, speaker: str = "me") -> Evidence:
    """A note as ingestion stores it: annotated content and the resolved dates."""
    said = datetime.fromisoformat(when)
    dates = [
        {"phrase": d.phrase, "start": d.start.isoformat(), "end": d.end.isoformat(),
         "granularity": d.granularity, "approximate": d.approximate, "label": d.label()}
        for d in resolve_dates(text, said)
    ]
    return Evidence(note_id, annotate(text, said), when, speaker=speaker, session=session, dates=dates)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("18–22 June 2026", date(2026, 6, 18), date(2026, 6, 22)),
        ("[18–22 June 2026]", date(2026, 6, 18), date(2026, 6, 22)),
        ("30 June–2 July 2026", date(2026, 6, 30), date(2026, 7, 2)),
        ("30 December 2025–2 January 2026", date(2025, 12, 30), date(2026, 1, 2)),
        ("20 March to 3 April 2023", date(2023, 3, 20), date(2023, 4, 3)),
        ("around 18 to 24 August 2023", date(2023, 8, 18), date(2023, 8, 24)),
        ("week of 29 May 2023", date(2023, 5, 29), date(2023, 6, 4)),
        ("weekend of 15 July 2023", date(2023, 7, 15), date(2023, 7, 16)),
        ("18-22 June 2026", date(2026, 6, 18), date(2026, 6, 22)),
        ("2 May 2026", date(2026, 5, 2), date(2026, 5, 2)),
    ],
)
def test_every_label_ingestion_writes_reads_back(text: str, start: date, end: date) -> None:
    assert parse_span(text) == (start, end)
    assert parse_date(text) == start


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (date(2026, 1, 14), date(2026, 5, 2), "108 days"),
        (date(2025, 12, 20), date(2026, 1, 5), "16 days"),  # across a year boundary
        (date(2024, 2, 28), date(2024, 3, 1), "2 days"),  # 29 February 2024
        (date(2023, 2, 28), date(2023, 3, 1), "1 day"),
        (date(2026, 5, 2), date(2026, 1, 14), "108 days"),  # a duration, whichever first
    ],
)
def test_days_between_exact(first: date, second: date, expected: str) -> None:
    assert describe_days(first, second) == expected


# The user's history: the dentist said in January, the flight planned in January for May.
HISTORY = [
    note(1, "Dentist on the 14th, I'm dreading it.", "2026-01-05T09:00:00", "s1"),
    note(2, "I'm flying to Lisbon on 2 May!", "2026-01-19T20:00:00", "s2"),
    note(3, "Lunch with Ana today.", "2026-02-10T13:00:00", "s3"),
]
QUESTION = "How many days passed between my dentist appointment and my flight to Lisbon?"


def test_notes_store_the_plan_dates() -> None:
    assert HISTORY[0].dates[0]["label"] == "14 January 2026"
    assert HISTORY[1].dates[0]["label"] == "2 May 2026"
    assert HISTORY[1].text == "I'm flying to Lisbon on 2 May [2 May 2026]!"


def test_ground_reads_the_stored_date_of_the_best_matching_note() -> None:
    found = ground("my flight to Lisbon", HISTORY)
    assert found is not None and (found.start, found.label, found.note_id) == (date(2026, 5, 2), "2 May 2026", 2)
    written = ground("my dentist appointment (14 January 2026", HISTORY)  # the question wrote it
    assert written is not None and (written.start, written.note_id) == (date(2026, 1, 14), None)
    assert ground("today", HISTORY) is None  # a date word names no event


def test_my_thing_is_grounded_on_my_line_not_someone_elses() -> None:
    hair = [note(2, "gemma's hair appt is on Tuesday", "2025-05-11T15:00:00", "s2"),
            note(1, "hair appt on Saturday 11am", "2025-05-05T09:00:00", "s1")]
    mine = ground("my hair appointment", hair)
    assert mine is not None and (mine.start, mine.note_id) == (date(2025, 5, 10), 1)
    hers = ground("gemma's hair appointment", hair)
    assert hers is not None and (hers.start, hers.note_id) == (date(2025, 5, 13), 2)


@pytest.mark.parametrize(
    "reply",
    [
        "TOOL: days_between(14 January 2026, 2 May 2026)",  # right
        "TOOL: days_between(8 May 2025, 14 January 2026)",  # dates that are in no note
        "TOOL: days_between(5 January 2026, 19 January 2026)",  # the days said, not the event days
        "TOOL: days_between(dentist appointment, flight to Lisbon)",  # events, not dates
    ],
)
def test_date_tool_operands_come_from_the_notes(reply: str) -> None:
    call = parse_tool_call(reply)
    assert call is not None
    assert execute(call, HISTORY, QUESTION) == "108 days between 14 January 2026 and 2 May 2026"


def test_question_that_writes_the_dates() -> None:
    question = "How many days passed between my dentist appointment (14 January 2026) and my flight to Lisbon (2 May 2026)?"
    call = parse_tool_call("TOOL: days_between(2025-05-08, 2026-01-14)")
    assert call is not None
    assert execute(call, [], question) == "108 days between 14 January 2026 and 2 May 2026"
    assert temporal(question, HISTORY).facts[2] == "14 January 2026 → 2 May 2026: 108 days"


def test_without_a_question_an_operand_missing_from_the_evidence_is_looked_up() -> None:
    days = ground_operands(["2026-01-14", "flight to Lisbon"], HISTORY)
    assert days == [date(2026, 1, 14), date(2026, 5, 2)]
    # A day the evidence states is kept; with no evidence at all the model's days stand.
    assert ground_operands(["2026-02-10", "2026-01-14"], HISTORY) == [date(2026, 2, 10), date(2026, 1, 14)]
    assert ground_operands(["2023-05-07", "2023-05-25"], []) == [date(2023, 5, 7), date(2023, 5, 25)]


def test_across_a_year_boundary_and_a_leap_day() -> None:
    party = note(4, "The office party is on 20 December.", "2025-12-01T10:00:00", "a")
    trip = note(5, "Back to work on 5 January, sadly.", "2025-12-21T10:00:00", "b")
    question = "How many days between the office party and going back to work?"
    call = parse_tool_call("TOOL: days_between(1 December 2025, 21 December 2025)")
    assert call is not None
    assert execute(call, [party, trip], question) == "16 days between 20 December 2025 and 5 January 2026"
    assert temporal(question, [party, trip]).facts[2] == "20 December 2025 → 5 January 2026: 16 days"
    leap_a = note(6, "Moving boxes arrive on 28 February.", "2024-02-01T10:00:00", "c")
    leap_b = note(7, "The van comes on 1 March.", "2024-02-01T11:00:00", "c")
    call = parse_tool_call("TOOL: days_between(moving boxes, the van)")
    assert call is not None
    assert execute(call, [leap_a, leap_b], "How many days between the moving boxes and the van?") == (
        "2 days between 28 February 2024 and 1 March 2024"
    )


def test_a_note_with_two_dates_gives_the_one_next_to_the_event() -> None:
    both = note(8, "Leaving 18 June, back 22 June. Dentist on the 14th.", "2026-05-30T10:00:00", "d")
    assert ground("the dentist", [both]).start == date(2026, 6, 14)  # type: ignore[union-attr]
    assert ground("back home", [both]).start == date(2026, 6, 22)  # type: ignore[union-attr]


def test_a_range_event_is_measured_from_its_first_day() -> None:
    trip = note(9, "We are going to Porto 18 to 22 June.", "2026-01-19T10:00:00", "e")
    dentist = note(10, "Dentist on the 14th.", "2026-01-05T10:00:00", "f")
    call = parse_tool_call("TOOL: days_between(x, y)")
    assert call is not None
    assert execute(call, [trip, dentist], "How many days between the dentist and the Porto trip?") == (
        "155 days between 14 January 2026 and 18 June 2026"
    )


# --- counting distinct events across sessions ---------------------------------------------------

BOOKS = [
    note(1, "I finished Dune, what a book.", "2026-03-03T10:00:00", "s1"),
    note(2, "As I said, I finished Dune last week.", "2026-03-10T10:00:00", "s2"),
    note(3, "I finished Circe today, loved it.", "2026-03-20T10:00:00", "s3"),
    note(4, "Finally finished Piranesi on Sunday.", "2026-04-06T10:00:00", "s4"),
    note(5, "Dune was great, I finished it so fast.", "2026-04-10T10:00:00", "s5"),
]


def test_repeats_of_one_event_count_once() -> None:
    found = count_occurrences("finished", BOOKS)
    assert (found.mentions, len(found.note_ids), found.sessions) == (5, 5, 5)
    assert [(e.name, e.start, e.note_ids) for e in found.events] == [
        ("Dune", date(2026, 3, 3), (1, 2, 5)),
        ("Circe", date(2026, 3, 20), (3,)),
        ("Piranesi", date(2026, 4, 5), (4,)),
    ]
    assert format_events(found) == "3 — Dune (3 March 2026), Circe (20 March 2026), Piranesi (5 April 2026)"
    call = parse_tool_call("TOOL: count_occurrences(finished)")
    assert call is not None
    assert execute(call, BOOKS) == (
        "number of finished: 3 (distinct events, a repeat counts once) — Dune (3 March 2026), Circe (20 March 2026), "
        "Piranesi (5 April 2026); 'finished' is mentioned 5 times in 5 notes from 5 sessions"
    )


def test_a_line_that_says_it_did_not_happen_is_no_event() -> None:
    runs = [
        note(1, "parkrun done!! 29:05 this morning", "2025-02-22T09:00:00", "s1"),
        note(2, "no parkrun this week, too tired", "2025-02-28T09:00:00", "s2"),
        note(3, "skipped parkrun, the course was flooded", "2025-03-08T09:00:00", "s3"),
        note(4, "parkrun was cancelled for the ice", "2025-03-15T09:00:00", "s4"),
        note(5, "parkrun on Saturday: 28:31!", "2025-03-18T09:00:00", "s5"),
    ]
    found = count_occurrences("parkrun", runs)
    assert (found.mentions, found.note_ids, found.negated) == (2, (1, 5), 3)
    assert found.describe_events() == (
        "number of parkrun: 2 (distinct events, a repeat counts once) — parkrun done (22 February 2025), "
        "parkrun on Saturday: 28:31 (15 March 2025); 'parkrun' is mentioned 2 times in 2 notes from 2 sessions; "
        "3 mentions said it did not happen"
    )
    assert count_occurrences("parkrun", runs[1:2]).describe_events() == "'parkrun': no event; 1 mention said it did not happen"


def test_two_books_on_one_day_are_two_events() -> None:
    same_day = [
        note(1, "I finished Dune today.", "2026-03-03T10:00:00", "s1"),
        note(2, "And I finished Circe today too.", "2026-03-03T21:00:00", "s1"),
    ]
    assert format_events(count_occurrences("finished", same_day)) == "2 — Dune (3 March 2026), Circe (3 March 2026)"


def test_runs_on_different_days_count_separately_and_a_retelling_once() -> None:
    runs = [
        note(11, "I ran a 5K today!", "2026-03-01T10:00:00", "a"),  # Sunday 1 March
        note(13, "As I told you, I ran a 5K on Sunday.", "2026-03-03T10:00:00", "c"),  # the same run
        note(12, "Another 5K this morning, felt great.", "2026-03-08T10:00:00", "b"),
        note(14, "I ran a 5K", "2026-03-15T10:00:00", "d"),  # a new day, nothing ties it to an earlier run
    ]
    found = count_occurrences("5K", runs)
    assert [(e.start, e.note_ids) for e in found.events] == [
        (date(2026, 3, 1), (11, 13)),
        (date(2026, 3, 8), (12,)),
        (date(2026, 3, 15), (14,)),
    ]
    assert format_events(found) == (
        "3 — I ran a 5K today (1 March 2026), Another 5K this morning, felt great (8 March 2026), "
        "I ran a 5K (15 March 2026)"
    )


def test_format_events_of_nothing() -> None:
    assert format_events(count_occurrences("sailing", BOOKS)) == "0"
    assert count_occurrences("sailing", BOOKS).describe_events() == "'sailing' is not mentioned in the notes"


def test_ground_places_an_event_by_its_rarest_word_and_reads_words_with_digits() -> None:
    notes = [
        note(1, "Mum's in Rosewood House, I try to see her Thursdays", "2025-09-09T19:00:00", "s1"),
        note(2, "saw Mum Thursday. her 80th is 2 June, the home's doing a party for her", "2026-05-19T20:00:00", "s2"),
        note(3, "saw Mum on Thursday, she beat me at rummy", "2025-10-28T19:00:00", "s3"),
    ]
    found = ground("Mum's 80th", notes)
    assert (found.note_id, found.label) == (2, "2 June 2026")


def test_a_plan_told_again_while_still_ahead_dates_it_from_the_later_telling() -> None:
    possible = note(1, "A possible Tokyo trip for Kontor, 8–12 September.", "2025-07-25T10:00:00", "s1", "Assistant")
    confirmed = note(2, "tokyo confirmed: out on sunday 7 sept, land the 8th, back saturday 13th",
                     "2025-08-12T10:00:00", "s2")
    keys = note(3, "got the keys monday, movers came today", "2025-09-03T10:00:00", "s3")
    assert ground("I fly to Tokyo", [possible, confirmed]).start == date(2025, 9, 7)
    facts = temporal("how many days after getting the keys did I fly to Tokyo?", [possible, confirmed, keys]).facts
    assert facts[:3] == ["getting the keys: 1 September 2025", "I fly to Tokyo: 7 September 2025",
                         "1 September 2025 → 7 September 2025: 6 days"]
    # Days that do not overlap are another trip: the first one keeps its dates.
    april = note(4, "tokyo again: a joint session, 20-24 april", "2026-02-10T10:00:00", "s4")
    assert ground("the Tokyo trip", [possible, april]).start == date(2025, 9, 8)


def test_an_ordinal_birthday_is_told_as_the_age_turned() -> None:
    lines = [
        note(1, "bits. callum turned 16 yesterday!! took him n ellie to nandos", "2025-12-29T10:48:00", "s5", "Shona"),
        note(2, "Happy birthday to Callum! Sounds like a well-chosen present.", "2025-12-29T10:49:00", "s5", "Assistant"),
        note(3, "we're back! landed monday. Ma's party on saturday was unreal, she danced for 3 hours at 75", "2026-01-14T19:10:00",
             "s9", "Kwame"),
    ]
    found = ground("Callum's 16th birthday", lines)
    assert (found.start, found.note_id) == (date(2025, 12, 28), 1)
    # The date is the one written nearest the age: the party on Saturday, not the landing on Monday.
    assert ground("Ma's 75th", lines).start == date(2026, 1, 10)


def test_an_op_is_an_operation() -> None:
    lines = [note(1, "mum rang about the allotment on the 12th", "2026-01-20T09:05:00", "s6", "Shona"),
             note(2, "mums op went fine on the 14th!! colours are so bright now", "2026-01-20T09:00:00", "s6", "Shona")]
    assert ground("mum's cataract operation", lines).start == date(2026, 1, 14)



def test_a_date_is_placed_where_its_annotation_stands_not_at_an_earlier_word_like_its_phrase() -> None:
    # The stored "Monday" is the one annotated at the end; placed at "Mondays", next to "Work", it
    # was the date nearest the event's words and took the stretch's place.
    line = note(1, "Work: Mondays are handover days now. my first shift back is 2nd of March to 16th of March, "
                   "then on Monday I see the boss.", "2026-02-08T10:00:00", "s1")
    other = note(2, "first shift back after the flu was rough", "2025-11-20T10:00:00", "s0")
    assert [d["phrase"] for d in line.dates] == ["2nd of March to 16th of March", "Monday"]
    assert ground("the start of my first shift back at work", [line, other]).start == date(2026, 3, 2)

"""The answer agent's bounded tools (MemFlow §3.2, B.2): parsing TOOL: lines, date math, counting."""

from __future__ import annotations

from datetime import date

import pytest

from edgemem.recall.evidence import Evidence
from edgemem.recall.tools import (
    ERROR_PREFIX,
    MAX_TOOL_ROUNDS,
    ToolCall,
    count_occurrences,
    days_between,
    execute,
    months_between,
    parse_date,
    parse_tool_call,
    weeks_between,
)


def test_at_most_three_tool_rounds() -> None:
    assert MAX_TOOL_ROUNDS == 3  # Algorithm 1, line 9


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7 May 2023", date(2023, 5, 7)),
        ("7th May, 2023", date(2023, 5, 7)),
        ("7 of May 2023", date(2023, 5, 7)),
        ("May 7, 2023", date(2023, 5, 7)),
        ("May 7th 2023", date(2023, 5, 7)),
        ("Sept. 5, 2023", date(2023, 9, 5)),
        ("2023-05-07", date(2023, 5, 7)),
        ("2023/5/7", date(2023, 5, 7)),
        ("2023-05-07T13:56:00", date(2023, 5, 7)),
        ("around 7 May 2023", date(2023, 5, 7)),  # an ingestion label for a vague phrase
        ("week of 29 May 2023", date(2023, 5, 29)),  # a week label: its first day
        ("Sunday, 7 May 2023", date(2023, 5, 7)),
        ("'2023-05-07'", date(2023, 5, 7)),
        ("[7 May 2023]", date(2023, 5, 7)),
        ("29 Feb 2024", date(2024, 2, 29)),
    ],
)
def test_parse_date_reads_the_forms_notes_use(text: str, expected: date) -> None:
    assert parse_date(text) == expected


@pytest.mark.parametrize("text", ["32 May 2023", "29 Feb 2023", "2023-13-01", "Smarch 3, 2023", "yesterday", "May 2023", ""])
def test_parse_date_refuses_what_is_not_one_day(text: str) -> None:
    with pytest.raises(ValueError, match="as a date"):
        parse_date(text)


def test_date_math_across_month_and_year_boundaries() -> None:
    assert days_between(date(2023, 12, 28), date(2024, 1, 3)) == 6
    assert days_between(date(2024, 1, 3), date(2023, 12, 28)) == 6  # a duration, whichever first
    assert days_between(date(2024, 1, 31), date(2024, 3, 1)) == 30  # 2024 is a leap year
    assert days_between(date(2023, 1, 31), date(2023, 3, 1)) == 29
    assert months_between(date(2024, 1, 31), date(2024, 3, 1)) == (1, 1)  # to 29 Feb, then a day
    assert months_between(date(2024, 2, 1), date(2024, 3, 1)) == (1, 0)
    assert months_between(date(2023, 12, 28), date(2024, 1, 3)) == (0, 6)
    assert months_between(date(2022, 11, 15), date(2024, 1, 20)) == (14, 5)
    assert weeks_between(date(2023, 5, 7), date(2023, 5, 25)) == (2, 4)
    assert weeks_between(date(2023, 12, 28), date(2024, 1, 3)) == (0, 6)


@pytest.mark.parametrize(
    ("reply", "name", "args"),
    [
        ("TOOL: days_between(7 May 2023, 25 May 2023)", "days_between", ("7 May 2023", "25 May 2023")),
        ("TOOL: days_between | 2023-05-07 | 2023-05-25", "days_between", ("2023-05-07", "2023-05-25")),
        ("TOOL: months_between(May 7, 2023, May 25, 2023)", "months_between", ("May 7, 2023", "May 25, 2023")),
        ('TOOL: weeks_between("May 7, 2023", "May 25, 2023")', "weeks_between", ("May 7, 2023", "May 25, 2023")),
        ("TOOL: days_between(date1=2023-05-07, date2=2023-05-25)", "days_between", ("2023-05-07", "2023-05-25")),
        ("**TOOL:** Days_Between(2023-05-07, 2023-05-25).", "days_between", ("2023-05-07", "2023-05-25")),
        ("TOOL: count_occurrences | camping", "count_occurrences", ("camping",)),
        ("TOOL: count_occurrences('pottery class')", "count_occurrences", ("pottery class",)),
        (
            "Event A date: 2023-05-07 (from 'yesterday')\nEvent B date: 2023-05-25\n"
            "TOOL: days_between | 2023-05-07 | 2023-05-25\nTOOL: weeks_between | 2023-05-07 | 2023-05-25",
            "days_between",
            ("2023-05-07", "2023-05-25"),
        ),
    ],
)
def test_parse_tool_call_forms(reply: str, name: str, args: tuple[str, ...]) -> None:
    call = parse_tool_call(reply)
    assert call is not None
    assert (call.name, call.args) == (name, args)


def test_a_reply_without_a_tool_line_is_final() -> None:
    assert parse_tool_call("Caroline adopted the puppy 18 days before the trip.") is None
    assert parse_tool_call("TOOL_RESULT: 18 days between 7 May 2023 and 25 May 2023") is None
    assert parse_tool_call("I used the tool: it said 18 days.") is None  # not a TOOL: line


def test_execute_date_tools() -> None:
    def run(line: str) -> str:
        call = parse_tool_call(line)
        assert call is not None
        return execute(call)

    assert run("TOOL: days_between(28 Dec 2023, 3 Jan 2024)") == "6 days between 28 December 2023 and 3 January 2024"
    assert run("TOOL: days_between(2024-03-01, 2024-01-31)") == "30 days between 31 January 2024 and 1 March 2024"
    assert run("TOOL: months_between(31 Jan 2024, 1 Mar 2024)") == (
        "1 month and 1 day (30 days) between 31 January 2024 and 1 March 2024"
    )
    assert run("TOOL: months_between | 2024-02-01 | 2024-03-01") == (
        "1 month (29 days) between 1 February 2024 and 1 March 2024"
    )
    assert run("TOOL: weeks_between(May 7, 2023, May 25, 2023)") == (
        "2 weeks and 4 days (18 days) between 7 May 2023 and 25 May 2023"
    )
    assert run("TOOL: weeks_between(1 May 2023, 8 May 2023)") == "1 week (7 days) between 1 May 2023 and 8 May 2023"
    assert run("TOOL: days_between(7 May 2023, 8 May 2023)") == "1 day between 7 May 2023 and 8 May 2023"


def _note(note_id: int, text: str, session: str, day: str = "2023-05-08T10:00:00") -> Evidence:
    return Evidence(note_id, text, day, speaker="Melanie", session=session)


CAMPING = [
    _note(1, "We went camping at the lake.", "s1"),
    _note(2, "Camping again! Camping with the kids is the best.", "s2"),
    _note(3, "I bought a new camp chair.", "s2"),  # 'camp' is another word
    _note(4, "My pottery class was fun; two more pottery classes next week.", "s3"),
    _note(5, "Melanie's campings are legendary.", "s3"),
]


def test_count_occurrences_counts_words_not_substrings() -> None:
    found = count_occurrences("camping", CAMPING)
    assert (found.mentions, found.note_ids, found.sessions) == (4, (1, 2, 5), 3)
    assert found.describe() == "'camping' is mentioned 4 times in 3 notes from 3 sessions"
    assert count_occurrences("pottery class", CAMPING).mentions == 2  # singular and plural
    # A word not written as a plural may be a verb: "camp" is camping too, "camping" is not "camp".
    assert count_occurrences("CAMP", CAMPING).note_ids == (1, 2, 3)
    assert count_occurrences("sailing", CAMPING).describe() == "'sailing' is not mentioned in the notes"
    assert count_occurrences("lake", ["the lake", "no"]).note_ids == (0,)  # plain strings: by index


def test_counting_the_users_own_events_leaves_out_someone_elses() -> None:
    said = [Evidence(1, "migraine again, lights off", "2026-05-03T20:00:00", "me"),
            Evidence(2, "bf has a migraine lol it's contagious", "2026-05-20T20:00:00", "me"),
            Evidence(3, "My wife had a migraine at work, I picked her up", "2026-05-21T20:00:00", "me"),
            Evidence(4, "Jo had a migraine too, poor Jo", "2026-05-22T20:00:00", "me"),
            Evidence(5, "migraine at work, sent home early", "2026-05-25T20:00:00", "me")]
    assert len(count_occurrences("migraines", said).events) == 5  # whose, asked of no one in particular
    # "I picked her up" says "I" before nothing: the sentence is still the wife's migraine.
    assert [e.note_ids for e in count_occurrences("migraines", said, only_own=True).events] == [(1,), (5,)]
    flooded = [Evidence(1, "Basement flooded overnight, ugh", "2025-03-14T08:00:00", "me"),
               Evidence(2, "Neighbor's basement flooded, ours fine thanks to the pump", "2025-06-15T08:00:00", "me")]
    # A sentence opening on the neighbour is theirs.
    assert len(count_occurrences("basement", flooded).events) == 2
    assert len(count_occurrences("basement", flooded, only_own=True).events) == 1
    # Another's possessive right before the thing counts only when the user's own thing is asked of:
    # "Kieran's wedding" is one the user goes to, "Em's lido pass" is not the user's.
    weddings = [Evidence(1, "Kieran's wedding is 18th July in Devon", "2026-02-02T08:00:00", "me")]
    assert len(count_occurrences("wedding", weddings, only_own=True).events) == 1
    passes = [Evidence(1, "lido pass renewed", "2026-05-02T08:00:00", "me"),
              Evidence(2, "finally got Em's lido pass sorted", "2026-06-21T08:00:00", "me")]
    assert len(count_occurrences("lido pass", passes, only_own=True).events) == 2
    assert len(count_occurrences("lido pass", passes, only_own=True, owned=True).events) == 1


def test_execute_count_occurrences_over_the_packed_evidence() -> None:
    call = parse_tool_call("TOOL: count_occurrences | camping")
    assert call is not None
    # The tool counts distinct events first (a repeat of one event counts once), then the mentions.
    assert execute(call, CAMPING) == (
        "number of camping: 3 (distinct events, a repeat counts once) — We went camping at the lake (8 May 2023), "
        "Camping again (8 May 2023), Melanie's campings are legendary (8 May 2023); "
        "'camping' is mentioned 4 times in 3 notes from 3 sessions"
    )
    assert execute(call, CAMPING[:1]) == (
        "number of camping: 1 (distinct events, a repeat counts once) — We went camping at the lake (8 May 2023); "
        "'camping' is mentioned 1 time in 1 note from 1 session"
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (ToolCall("", (), "TOOL:"), "error: no tool named; use one of days_between, weeks_between, months_between, count_occurrences"),
        (ToolCall("rm", ("-rf",), "TOOL: rm(-rf)"), "error: unknown tool 'rm'; use one of days_between, weeks_between, months_between, count_occurrences"),
        (ToolCall("days_between", ("7 May 2023",), ""), "error: days_between takes 2 arguments (date1, date2), got 1"),
        (ToolCall("count_occurrences", (), ""), "error: count_occurrences takes 1 argument (term), got 0"),
        (ToolCall("days_between", ("32 May 2023", "1 June 2023"), ""), "error: cannot read '32 May 2023' as a date; write it like 7 May 2023 or 2023-05-07"),
        (ToolCall("count_occurrences", ("''",), ""), "error: count_occurrences needs a word or phrase to count"),
    ],
)
def test_bad_calls_return_an_error_string(call: ToolCall, message: str) -> None:
    assert execute(call, CAMPING) == message


@pytest.mark.parametrize(
    ("reply", "fails"),
    [
        ("TOOL:", True), ("TOOL: (", True), ("TOOL: )(", True), ("TOOL: days_between(", True),
        ("TOOL: days_between)", True), ("TOOL: | | |", True), ("TOOL: days_between(,,,)", True),
        ("TOOL: 123(4)", True), ("TOOL: days_between(May, 2023)", True),
        ("TOOL: count_occurrences(())", True), ("TOOL: months_between(0000-00-00, 9999-99-99)", True),
        ('TOOL: days_between("unterminated, 2023-05-07)', True),
        ("TOOL: days_between(1 May 0001, 31 Dec 9999)", False),  # absurd but computable
        ("TOOL: count_occurrences(" + "x" * 5000 + ")", False),
    ],
)
def test_garbage_never_raises_into_the_pipeline(reply: str, fails: bool) -> None:
    call = parse_tool_call(reply)
    assert call is not None
    result = execute(call, CAMPING)
    assert isinstance(result, str) and result
    assert result.startswith(ERROR_PREFIX) == fails, result


def test_tools_are_offered_only_to_questions_that_ask_for_a_number() -> None:
    from edgemem.recall.answer import answer, system_prompt
    from edgemem.recall.tools import tools_for
    from edgemem.runtime.fake import ScriptedLLM

    assert tools_for("broad-summarization", "How many books have I finished this year?") == ("count_occurrences",)
    assert tools_for("broad-summarization", "Give me a rundown of everything around Nina's wedding.") == ()
    assert tools_for("temporal-reasoning", "How long did the rewire take?") == (
        "days_between", "weeks_between", "months_between")
    assert tools_for("temporal-reasoning", "When is my sister's wedding?") == ()
    assert tools_for("targeted-extraction", "How many cats do I have?") == ()
    assert "count_occurrences" not in system_prompt("broad-summarization", "What's happening in December?")
    assert "count_occurrences" in system_prompt("broad-summarization", "How many parkruns have I done?")
    # A call the question gives no use for is not executed: its line is dropped, no second round.
    llm = ScriptedLLM(["TOOL: count_occurrences | December"])
    drafted = answer(llm, "broad-summarization", "What's happening in December?", "(1 Dec 2025) Christmas in Dublin",
                     [Evidence(1, "Christmas in Dublin", "2025-12-01")])
    assert drafted.tool_calls == [] and len(llm.calls) == 1 and drafted.text == ""


def test_count_occurrences_knows_verb_forms_and_what_each_event_numbers() -> None:
    visits = [_note(1, "saw Mum on Thursday, she beat me at rummy", "s1"), _note(2, "popped in to see Mum", "s2"),
              _note(3, "Mum's seen the doctor", "s3"), _note(4, "visited Mum", "s4")]
    assert count_occurrences("see", visits).note_ids == (1, 2, 3)
    assert count_occurrences("visit", visits).note_ids == (4,)
    assert count_occurrences("books", [_note(1, "BOOKED the flights", "s1")]).mentions == 0  # a plural is a noun
    trout = [_note(1, "fishing yesterday, but two trout", "s1"), _note(2, "Chew, three trout!", "s2"),
             _note(3, "had a 4lb rainbow trout", "s3"), _note(4, "no trout today", "s4")]
    assert [e.quantity for e in count_occurrences("trout", trout).events] == [2, 3, 1]
    # A day of the month next to the counted word is a date, not how many: "19 to 21 june, surfed".
    surfs = [_note(1, "byron was mint 19 to 21 june, surfed the pass both mornings", "s1"),
             _note(2, "did 3 surfs at noosa on march 4", "s2"), _note(3, "surfed aug 30 with hutchy", "s3")]
    assert [e.quantity for e in count_occurrences("surf", surfs).events] == [None, 3, None]
    # "how many times did I go climbing?" is told "climbed tonight"; a noun in -ing stays itself
    # ("morning" is no "morn").
    climbs = [_note(1, "climbed tonight, sent the purple V4", "s1"), _note(2, "climbing again tomorrow?", "s2"),
              _note(3, "swam 40 lengths", "s3"), _note(4, "a long morn", "s4")]
    assert count_occurrences("climbing", climbs).note_ids == (1, 2)
    assert count_occurrences("swimming", climbs).note_ids == (3,)
    assert count_occurrences("morning", climbs).mentions == 0
    # A call, a lesson, a session happens again and again: the same name on another day is another one.
    calls = [_note(1, "Weekly call with the Tokyo team completed.", "s1", day="2026-05-05T10:00:00"),
             _note(2, "Weekly call with the Tokyo team completed.", "s2", day="2026-05-19T10:00:00"),
             _note(3, "Call with the Sydney team completed.", "s3", day="2026-05-27T10:00:00")]
    assert len(count_occurrences("calls", calls).events) == 3


def test_a_date_tool_drops_an_argument_that_is_no_date() -> None:
    call = parse_tool_call("TOOL: days_between | 11 September 2025 | 16 September 2025 | RESULT: 5")
    assert execute(call) == "5 days between 11 September 2025 and 16 September 2025"
    three = parse_tool_call("TOOL: days_between | 1 May 2025 | 11 September 2025 | 16 September 2025")
    assert execute(three).startswith(ERROR_PREFIX)  # three dates: which two is not for code to guess


def _told(note_id: int, text: str, when: str) -> Evidence:
    """A line as the write path stores it: its dates resolved and annotated."""
    from datetime import datetime

    from edgemem.ingest.dates import annotate, resolve_dates

    said = datetime.fromisoformat(when)
    dates = [{"phrase": d.phrase, "start": d.start.isoformat(), "end": d.end.isoformat(), "granularity": d.granularity,
              "approximate": d.approximate, "label": d.label()} for d in resolve_dates(text, said)]
    return Evidence(note_id, annotate(text, said), when, speaker="Lena", session=f"s{note_id}", dates=dates)


SWIMS = [
    _told(1, "started lessons in feb, week 4 now. goal is the Kilkee sea swim by easter", "2025-03-04T21:00:00"),
    _told(2, "first sea swim this morning, 12 minutes, freezing", "2025-03-22T11:00:00"),
    _told(3, "sea swims: did the 29th (14 min) and the 5th (15 min). missed the 12th cos of work", "2025-04-15T14:00:00"),
    _told(4, "sea swim 3rd may, 18 min! did i tell you about the 5th of april one? 15 min", "2025-05-08T20:00:00"),
    _told(5, "no sea swims in lanzarote obvs but I did the Forty Foot on the 26th", "2025-07-30T21:00:00"),
    _told(6, "sea swim 16th aug, 20 min!! and the 23rd too, 19 min", "2025-08-28T16:00:00"),
    _told(7, "first sea swim of 2026 on the 10th, brutal", "2026-01-14T21:00:00"),
]


def test_counting_reads_each_day_a_line_gives_and_keeps_plans_apart() -> None:
    """One event a day a line dates ("did the 29th and the 5th"; "and the 23rd too" in the next
    sentence); "missed the 12th" is none; the same day told twice is one; "no X but I did Y on the
    26th" is one; a goal with no day is planned, not done; the question's year selects."""
    found = count_occurrences("swims", SWIMS, [(date(2025, 1, 1), date(2025, 12, 31))])
    assert [e.start for e in found.events] == [
        date(2025, 3, 22), date(2025, 3, 29), date(2025, 4, 5), date(2025, 5, 3), date(2025, 7, 26),
        date(2025, 8, 16), date(2025, 8, 23)]
    assert [e.name for e in found.planned] == ["Kilkee"]
    assert found.describe_events().startswith(
        "number of swims: 7 (distinct events, on the days asked, a repeat counts once) — ")
    # The goal's only date is its deadline (Easter), no day a swim was done on.
    assert "; planned, not counted: Kilkee (20 April 2025);" in found.describe_events()
    everything = count_occurrences("swims", SWIMS)
    assert len(everything.events) == 8 and everything.events[-1].start == date(2026, 1, 10)


def test_the_first_or_last_of_a_kind_of_event_is_grounded_on_the_events_counted() -> None:
    from edgemem.recall.preprocess import temporal
    from edgemem.recall.tools import ground

    assert ground("my last sea swim of 2025", SWIMS).start == date(2025, 8, 23)
    assert ground("my first sea swim", SWIMS).start == date(2025, 3, 22)  # the goal said before it is no swim
    prepared = temporal("How many days were there between my last sea swim of 2025 and my first one of 2026?", SWIMS)
    assert prepared.direct == ("140 days: my last sea swim of 2025 23 August 2025, my first sea swim of 2026 "
                               "10 January 2026", [6, 7])


def test_the_second_of_someones_events_is_grounded_on_the_line_that_says_so_or_on_the_count() -> None:
    from edgemem.recall.preprocess import temporal
    from edgemem.recall.tools import ground

    ops = [
        _told(1, "Mum has cataracts in both eyes; the doctor wants to operate this autumn.", "2025-06-25T20:10:00"),
        _told(2, "Her left-eye operation is confirmed: Tuesday 9 September.", "2025-08-03T22:05:00"),
        _told(3, "The left-eye operation on 9 September went well.", "2025-09-20T07:45:00"),
        _told(4, "Her second operation is on 2 December; I will stay two nights.", "2025-11-11T21:20:00"),
    ]
    # No line says "first cataract operation": the first of the operations counted, by its kind's last word.
    assert ground("my mother's first cataract operation", ops).start == date(2025, 9, 9)
    # A line that says "second operation" dates the second one.
    assert ground("mum's second eye operation", ops).start == date(2025, 12, 2)
    prepared = temporal("How many days were there between my mother's first cataract operation and her second one?", ops)
    assert prepared.direct == ("84 days: my mother's first cataract operation 9 September 2025, her second cataract "
                               "operation 2 December 2025", [2, 4])


def test_a_date_the_line_says_did_not_happen_is_not_the_events() -> None:
    from edgemem.recall.tools import ground

    kitchen = [
        _told(1, "We signed with Maeda. Work starts on Monday 19 January for about three weeks.", "2025-12-28T20:50:00"),
        _told(2, "The kitchen did not start on 19 January in the end: the tiles were delayed, so Maeda's team "
                 "started on Monday 2 February.", "2026-02-12T18:40:00"),
    ]
    assert ground("the builders finally starting on the kitchen", kitchen).start == date(2026, 2, 2)
    # A line with no other date keeps the one it has.
    assert ground("the kitchen starting", kitchen[1:]).start == date(2026, 2, 2)
    assert ground("the kitchen starting", [_told(3, "The kitchen did not start on 19 January.",
                                                 "2026-02-12T18:40:00")]).start == date(2026, 1, 19)


def test_counting_days_listed_with_one_called_off_and_a_plan_in_another_sentence() -> None:
    """"then mon 23rd got cancelled" is no session; "monday was easter monday so seun moved it" is
    none either; a sentence that is mostly days goes on with the list ("went thu 2nd, then tue 7th");
    "can play from 1 may", a plan in a sentence of its own, does not make the line a plan; "twice a
    week" is how often, not how many."""
    sessions = [
        _told(1, "physio twice a week at stride with seun, first one is thursday 12 march", "2026-03-09T19:00:00"),
        _told(2, "physio update: went thu 12th, mon 16th, thu 19th, then mon 23rd got cancelled (seun was sick), "
                 "went thu 26th n mon 30th. ankle is way better", "2026-04-01T19:00:00"),
        _told(3, "physio done!! went thu 2nd, then tue 7th (monday was easter monday so seun moved it), n last one "
                 "mon 13th. seun discharged me, can play from 1 may", "2026-04-26T19:00:00"),
    ]
    found = count_occurrences("physio", sessions)
    assert [e.start for e in found.events] == [
        date(2026, 3, 12), date(2026, 3, 16), date(2026, 3, 19), date(2026, 3, 26),
        date(2026, 3, 30), date(2026, 4, 2), date(2026, 4, 7), date(2026, 4, 13)]
    assert all(e.quantity is None for e in found.events)


def test_an_event_the_user_says_they_did_not_go_to_is_not_counted() -> None:
    weddings = [
        _told(1, "went to enugu for chiamakas trad wedding on the 16th, spent 40k on aso-oke", "2026-05-29T19:00:00"),
        _told(2, "amaka went to her colleague zainabs wedding last sat in abuja, i didnt go bc of a work deadline",
              "2026-10-03T19:00:00"),
    ]
    found = count_occurrences("weddings", weddings)
    assert [e.start for e in found.events] == [date(2026, 5, 16)]

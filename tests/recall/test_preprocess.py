"""Tier-3 deterministic preprocessing (MemFlow A.2): exact outputs for each tag's step."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime

import pytest

from edgemem.ingest.dates import annotate, resolve_dates
from edgemem.recall.evidence import Evidence, jaccard, terms
from edgemem.recall.preprocess import (
    _shift_phrase,
    _weekday_event,
    ABOUT_COSINE,
    anchors,
    chronological,
    digest,
    diversify,
    map_sessions,
    prepare,
    recency,
    redated,
    rules,
    temporal,
    timeline,
)
from edgemem.recall.tools import count_occurrences, ground


def day(start: str, label: str, end: str | None = None, granularity: str = "day", approximate: bool = False) -> dict:
    return {"phrase": "x", "start": start, "end": end or start, "granularity": granularity,
            "approximate": approximate, "label": label}


def ev(note_id: int, text: str, when: str, speaker: str | None = "Caroline", **kw) -> Evidence:
    return Evidence(note_id, text, when, speaker, **kw)


def ids(items: list[Evidence]) -> list[int]:
    return [e.note_id for e in items]


def test_evidence_header_terms_and_jaccard() -> None:
    assert Evidence(1, "x", "2023-05-08T13:56:00", "Caroline").header() == "(8 May 2023, Caroline)"
    assert Evidence(1, "x", "2023-05-08").header() == "(8 May 2023)"
    assert Evidence(-1, "7 May 2023 → 25 May 2023: 18 days", "", kind="summary").header() == "(computed)"
    # Possessives and inflections meet; date annotations and stopwords do not count.
    assert terms("Caroline's adoption [7 May 2023] of two puppies") == {"carolin", "adopt", "puppi"}
    assert terms("Caroline adopted a puppy") == {"carolin", "adopt", "puppi"}
    # Texting shorthand stands for its word: a question may say "birthday" of a line that said "bday".
    assert terms("amaka's bday dinner, xmas appt in 2 wks") == terms("Amaka's birthday dinner, Christmas appointment in 2 weeks")
    assert jaccard({"a", "b"}, {"b", "c"}) == 1 / 3
    assert jaccard(set(), set()) == 0.0


# --- temporal-reasoning -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How many days passed between Caroline's adoption and Melanie's camping trip?",
         ["Caroline's adoption", "Melanie's camping trip"]),
        ("Did Caroline go to the support group before she painted the sunrise?",
         ["Caroline go to the support group", "she painted the sunrise"]),
        ("Which came first, the wedding or the move?", ["the wedding", "the move"]),
        ("Did the wedding or the move happen first?", ["the wedding", "the move"]),
        ("How many weeks after the wedding did they move?", ["the wedding", "they move"]),
        ("When did Melanie paint a sunrise?", ["When did Melanie paint a sunrise?"]),
        ("How long was it from my job interview to actually starting the job?",
         ["my job interview", "actually starting the job"]),
        ("how old was Noa when we moved to Leeds?", ["Noa was born", "we moved to Leeds"]),
        # a pronoun in the second stands for the first's name
        ("how long did it take from sending Acme my quote to them signing?", ["sending Acme my quote", "Acme signing"]),
        # a second question after the events is no part of the last one
        ("Which happened first, my ski fall at Voss or the new engine arriving, and how far apart were they?",
         ["my ski fall at Voss", "the new engine arriving"]),
        ("When did I go to Paris, and who came with me?", ["When did I go to Paris, and who came with me?"]),
    ],
)
def test_anchors_split_dual_anchor_questions(question: str, expected: list[str]) -> None:
    assert anchors(question) == expected


WEDDING = ev(1, "Our wedding was on 28 December 2023, a small party.", "2023-12-29T18:00:00",
             dates=[day("2023-12-28", "28 December 2023")])
DINNER = ev(2, "Dinner with my parents tonight.", "2023-12-30T19:00:00")
MOVE = ev(3, "We moved into the new house yesterday [3 January 2024].", "2024-01-04T09:00:00",
          dates=[day("2024-01-03", "3 January 2024")])
COURSE = ev(4, "Last month [December 2023] I started a pottery course.", "2024-01-05T09:00:00",
            dates=[day("2023-12-01", "December 2023", end="2023-12-31", granularity="month")])


def test_chronological_sorts_by_resolved_date_then_time_said() -> None:
    # The course resolves to 1 December (said last); the dinner has no date and sorts by when said.
    assert ids(chronological([MOVE, DINNER, COURSE, WEDDING])) == [4, 1, 2, 3]


def test_temporal_date_math_across_a_year_boundary() -> None:
    prepared = temporal("How many days passed between the wedding and the move into the new house?",
                        [MOVE, DINNER, COURSE, WEDDING])
    assert ids(prepared.evidence) == [4, 1, 2, 3]
    assert prepared.facts == [
        "the wedding: 28 December 2023",
        "the move into the new house: 3 January 2024",
        "28 December 2023 → 3 January 2024: 6 days",
        "the wedding came first, 6 days before the move into the new house",
    ]


def test_temporal_how_old_counts_from_the_birth() -> None:
    born = ev(1, "Noa was born on Sunday the 1st [1 February 2026], 3.1 kilos", "2026-02-09T10:00:00", "Gloria",
              dates=[day("2026-02-01", "1 February 2026")])
    moved = ev(2, "we moved to Leeds on the 5th [5 February 2026]", "2026-02-09T10:05:00", "Gloria",
               dates=[day("2026-02-05", "5 February 2026")])
    assert temporal("How old was Noa when we moved to Leeds?", [born, moved]).facts[:3] == [
        "Noa was born: 1 February 2026", "we moved to Leeds: 5 February 2026", "1 February 2026 → 5 February 2026: 4 days"]


def test_temporal_months_and_weeks_follow_the_question() -> None:
    offer = ev(5, "I accepted the job offer today.", "2024-01-31T10:00:00", dates=[day("2024-01-31", "31 January 2024")])
    start = ev(6, "My first day at the new job is 1 March 2024.", "2024-02-10T10:00:00", dates=[day("2024-03-01", "1 March 2024")])
    months = temporal("How many months between the job offer and the first day at the new job?", [start, offer])
    assert months.facts[2] == "31 January 2024 → 1 March 2024: 1 month and 1 day (30 days)"
    weeks = temporal("How many weeks between the job offer and the first day at the new job?", [start, offer])
    assert weeks.facts[2] == "31 January 2024 → 1 March 2024: 4 weeks and 2 days (30 days)"


def test_temporal_order_question_names_the_first_event_even_when_asked_in_reverse() -> None:
    puppy = ev(7, "I adopted a puppy yesterday [7 May 2023].", "2023-05-08T13:56:00", dates=[day("2023-05-07", "7 May 2023")])
    camping = ev(8, "We went camping at the lake last weekend.", "2023-05-29T10:00:00", "Melanie",
                 dates=[day("2023-05-27", "weekend of 27 May 2023", end="2023-05-28")])
    prepared = temporal("Did Melanie go camping before Caroline adopted the puppy?", [camping, puppy])
    assert prepared.facts == [
        "Melanie go camping: weekend of 27 May 2023",
        "Caroline adopted the puppy: 7 May 2023",
        "7 May 2023 → weekend of 27 May 2023: about 20 days",  # a weekend is a span: "about"
        "Caroline adopted the puppy came first, about 20 days before Melanie go camping",
    ]


def test_temporal_how_long_ago_against_a_reference_date() -> None:
    puppy = ev(7, "I adopted a puppy yesterday [7 May 2023].", "2023-05-08T13:56:00", dates=[day("2023-05-07", "7 May 2023")])
    question = "How long ago did Caroline adopt the puppy?"
    assert temporal(question, [puppy], reference=date(2024, 1, 3)).facts == [
        "7 May 2023 → 3 January 2024 (reference date): 7 months and 27 days (241 days)"
    ]
    assert temporal(question, [puppy]).facts == []  # no reference day, no guess


def test_temporal_how_many_days_until_counts_from_the_reference_date() -> None:
    report = ev(7, "final research report is due on the 30th of october [30 October 2026]", "2026-07-13T20:15:00",
                dates=[day("2026-10-30", "30 October 2026")])
    prepared = temporal("how many days have i got left until my research report is due?", [report],
                        reference=date(2026, 9, 13))
    assert prepared.facts == ["13 September 2026 (reference date) → 30 October 2026: 47 days"]
    assert prepared.direct == ("47 days: from 13 September 2026 to 30 October 2026", [7])
    # an event already past is no countdown; without a reference day there is no guess
    assert temporal("how many days until my research report is due?", [report], reference=date(2026, 11, 2)).direct is None
    assert temporal("how many days until my research report is due?", [report]).facts == []


def test_temporal_adds_no_date_math_to_event_questions() -> None:
    race = ev(9, "I ran the charity race on Saturday.", "2023-05-22T10:00:00")
    after = ev(10, "After the race Caroline went to the support group.", "2023-05-22T12:00:00")
    assert temporal("What did Caroline do after the race?", [after, race]).facts == []


# --- conflict-resolution ------------------------------------------------------------------------

BLUE = ev(10, "My favourite colour is blue.", "2023-05-01T10:00:00")
GREEN = ev(11, "My favourite colour is green now.", "2023-06-01T10:00:00")
RED = ev(12, "My favourite colour is red.", "2023-06-02T10:00:00", "Melanie")  # another person
NURSE = ev(13, "I work as a nurse at the hospital.", "2023-05-15T10:00:00")
TEACHER = ev(14, "I quit and became a teacher.", "2023-07-01T10:00:00")


def test_recency_filter_marks_the_older_statement_stale() -> None:
    prepared = recency("What is Caroline's favourite colour?", [GREEN, NURSE, RED, BLUE, TEACHER],
                       supersedes={13: 14})
    assert ids(prepared.evidence) == [10, 13, 11, 12, 14]  # time said, newest last
    stale = {e.note_id: (e.stale, e.superseded_by) for e in prepared.evidence}
    assert stale == {10: (True, 11), 13: (True, 14), 11: (False, None), 12: (False, None), 14: (False, None)}
    lines = [e.line() for e in prepared.evidence]
    assert lines[0] == "(1 May 2023, Caroline) My favourite colour is blue. (outdated as of 1 June 2023)"
    assert lines[1] == "(15 May 2023, Caroline) I work as a nurse at the hospital. (outdated as of 1 July 2023)"
    assert lines[2] == "(1 June 2023, Caroline) My favourite colour is green now."
    assert prepared.facts == [
        "Latest on what is asked: (1 June 2023, Caroline) My favourite colour is green now.",  # not Melanie's red
        "Most recent about favourite, colour: (1 June 2023, Caroline); outdated: 1 May 2023",
        "Most recent: (1 July 2023, Caroline); outdated: 15 May 2023",
    ]


def test_recency_filter_follows_supersedes_over_time_order() -> None:
    # The gate recorded that the older-dated note supersedes the newer one (an import, say).
    prepared = recency("favourite colour?", [BLUE, GREEN], supersedes={11: 10})
    current = [e.note_id for e in prepared.evidence if not e.stale]
    assert current == [10]
    assert prepared.evidence[1].line() == (
        "(1 June 2023, Caroline) My favourite colour is green now. (outdated as of 1 May 2023)"
    )


def test_recency_filter_marks_a_note_superseded_outside_the_evidence() -> None:
    prepared = recency("colour?", [RED], supersedes={12: 99})
    (only,) = prepared.evidence
    assert (only.stale, only.superseded_by, only.line()) == (
        True, 99, "(2 June 2023, Melanie) My favourite colour is red. (outdated)"
    )
    assert prepared.facts == []  # an outdated statement is never the latest


def test_recency_filter_reads_superseded_by_on_the_evidence() -> None:
    older = ev(13, NURSE.text, NURSE.event_time, superseded_by=14)
    prepared = recency("job?", [TEACHER, older])
    assert [(e.note_id, e.stale) for e in prepared.evidence] == [(13, True), (14, False)]


# --- broad-summarization ------------------------------------------------------------------------


def s(note_id: int, session: str, score: float, when: str) -> Evidence:
    return ev(note_id, f"note {note_id} about camping", when, "Melanie", session=session, score=score)


SESSIONS = [
    s(1, "A", 0.90, "2023-05-01T10:00:00"), s(2, "A", 0.80, "2023-05-01T10:01:00"),
    s(3, "A", 0.70, "2023-05-01T10:02:00"), s(4, "A", 0.60, "2023-05-01T10:03:00"),
    s(5, "B", 0.85, "2023-06-01T10:00:00"), s(6, "B", 0.50, "2023-06-01T10:01:00"),
    s(7, "C", 0.40, "2023-04-01T10:00:00"),
]


def test_session_diversity_round_robin_order() -> None:
    assert ids(diversify("camping?", SESSIONS, per_session=2).evidence) == [1, 5, 7, 2, 6]
    assert diversify("camping?", SESSIONS, per_session=2).dropped == [3, 4]
    assert ids(diversify("camping?", SESSIONS).evidence) == [1, 5, 7, 2, 6, 3, 4]
    assert ids(diversify("camping?", SESSIONS, limit=4).evidence) == [1, 5, 7, 2]


def test_session_diversity_without_session_keys_uses_the_day() -> None:
    a = ev(1, "x", "2023-05-01T10:00:00", score=0.9)
    b = ev(2, "y", "2023-05-01T11:00:00", score=0.8)
    c = ev(3, "z", "2023-05-02T10:00:00", score=0.1)
    assert ids(diversify("?", [a, b, c], per_session=1).evidence) == [1, 3]


def test_map_sessions_groups_per_session_in_time_order() -> None:
    groups = map_sessions(SESSIONS, chunk=2)
    assert [(g.session, g.first, ids(g.items)) for g in groups] == [
        ("C", "1 April 2023", [7]),
        ("A", "1 May 2023", [1, 2]),
        ("A", "1 May 2023", [3, 4]),
        ("B", "1 June 2023", [5, 6]),
    ]


def test_counting_questions_get_counts_of_their_content_words() -> None:
    evidence = [
        ev(1, "We went camping at the lake.", "2023-05-01T10:00:00", "Melanie", session="A"),
        ev(2, "Camping again with the kids!", "2023-06-01T10:00:00", "Melanie", session="B"),
        ev(3, "Melanie told me about camping.", "2023-06-02T10:00:00", "Caroline", session="C"),
    ]
    prepared = diversify("How many times did Melanie go camping?", evidence)
    # 'Melanie' is a speaker, so only 'camping' is counted: distinct events first, then the mentions.
    assert prepared.facts == [
        "number of camping: 3 (distinct events, a repeat counts once) — We went camping at the lake (1 May 2023),"
        " Camping again with the kids (1 June 2023), Melanie told me about camping (2 June 2023);"
        " 'camping' is mentioned 3 times in 3 notes from 3 sessions"]
    assert diversify("What does Melanie like about camping?", evidence).facts == []


# --- constraint-validation ----------------------------------------------------------------------

NEVER = ev(20, "I never drink coffee after 6 pm.", "2023-05-01T10:00:00", "user")
ALWAYS = ev(21, "I always drink coffee after 6 pm now, it helps me study.", "2023-06-01T10:00:00", "user")
HIKE = ev(22, "We went hiking on Saturday.", "2023-05-20T10:00:00", "user")
ADDRESS = ev(23, "You must not share my address with anyone.", "2023-05-10T10:00:00", "user")


def test_modal_filter_keeps_rules_and_the_newest_rule_wins() -> None:
    prepared = rules("What are my rules about coffee?", [ALWAYS, HIKE, NEVER, ADDRESS])
    assert ids(prepared.evidence) == [20, 23, 22, 21]  # in time order; the lines that are no rule stay beside (RULE_FACTS)
    assert prepared.dropped == []
    assert [e.note_id for e in prepared.evidence if e.stale] == [20]
    assert prepared.evidence[0].line() == (
        "(1 May 2023, user) I never drink coffee after 6 pm. (outdated as of 1 June 2023)"
    )
    assert prepared.facts == []


@pytest.mark.parametrize(
    "text",
    ["Always lock the door.", "Never text while driving.", "You must call first.", "Kids must not swim alone.",
     "Don't wake me before 8.", "Pets are not allowed upstairs.", "Only decaf after lunch.",
     "You should water them weekly.", "I prefer tea.", "House rule: shoes off."],
)
def test_modal_filter_language(text: str) -> None:
    assert ids(rules("?", [ev(1, text, "2023-05-01T10:00:00")]).evidence) == [1]


def test_a_newer_limit_on_the_same_thing_outdates_the_older_amounts() -> None:
    older = ev(1, "money thing. saving for a deposit, so eating out max £250 a month. hold me to it",
               "2025-02-22T10:00:00", speaker="Maya")
    echo = ev(2, "I will: eating out capped at £250 a month.", "2025-02-22T10:01:00", speaker="Assistant")
    gym = ev(3, "and the gym is max £40 a month", "2025-03-01T10:00:00", speaker="Maya")
    newer = ev(4, "Updated: eating-out budget is now £300 a month.", "2025-06-14T10:00:00", speaker="Assistant")
    pleasures = ev(5, "One financial rule I have set myself: 300 złoty a month for small pleasures.",
                   "2026-02-04T10:00:00", speaker="Halina")
    raised = ev(6, "From this month my small-pleasures allowance is 400 złoty instead of 300.",
                "2026-04-16T10:00:00", speaker="Halina")
    prepared = rules("How much am I allowed to spend on eating out?", [older, echo, gym, newer, pleasures, raised])
    assert {e.note_id: e.superseded_by for e in prepared.evidence if e.stale} == {1: 4, 2: 4, 5: 6}
    assert prepared.evidence[0].line() == (
        "(22 February 2025, Maya) money thing. saving for a deposit, so eating out max £250 a month. hold me to it"
        " (outdated as of 14 June 2025)")


def test_modal_filter_without_rules_keeps_the_evidence_and_says_so() -> None:
    prepared = rules("What is my rule about hiking?", [HIKE])
    assert ids(prepared.evidence) == [22]
    assert prepared.facts == ["No always/never rule or policy language was found in the retrieved notes."]


# --- state-tracking -----------------------------------------------------------------------------

RESEARCH = ev(30, "I'm researching adoption agencies. It is a big step.", "2023-05-08T10:00:00")
APPLIED = ev(31, "I applied to adopt a child last week [week of 3 July 2023]! So nervous.", "2023-07-15T10:00:00",
             dates=[day("2023-07-03", "week of 3 July 2023", end="2023-07-09", granularity="week")])
MELANIE = ev(32, "Adoption is a beautiful thing.", "2023-06-01T10:00:00", "Melanie")
SUNRISE = ev(33, "I painted a sunrise.", "2023-06-10T10:00:00")
HOME = ev(34, "The adoption went through. We finally brought our daughter home.", "2023-10-01T10:00:00")


def test_state_timeline_keeps_the_tracked_subject_in_time_order() -> None:
    prepared = timeline("How has Caroline's view on adoption changed over time?", [HOME, SUNRISE, APPLIED, MELANIE, RESEARCH])
    assert ids(prepared.evidence) == [30, 31, 34]
    assert prepared.dropped == [33, 32]
    assert prepared.facts == [
        "state on 8 May 2023 (Caroline): I'm researching adoption agencies.",
        "state on week of 3 July 2023 (Caroline): I applied to adopt a child last week [week of 3 July 2023]!",
        "state on 1 October 2023 (Caroline): The adoption went through.",
    ]


def test_state_timeline_with_an_explicit_entity() -> None:
    prepared = timeline("How did it change?", [HOME, MELANIE, RESEARCH], entity="Melanie")
    assert ids(prepared.evidence) == [32]
    assert prepared.facts == ["state on 1 June 2023 (Melanie): Adoption is a beautiful thing."]


def test_state_timeline_keeps_everything_when_nothing_matches() -> None:
    prepared = timeline("How has Caroline's running changed?", [SUNRISE, HOME])
    assert ids(prepared.evidence) == [33, 34]
    assert prepared.dropped == []


# --- dispatch -----------------------------------------------------------------------------------


def test_prepare_dispatches_and_passes_other_tags_through() -> None:
    evidence = [HOME, RESEARCH]
    assert ids(prepare("targeted-extraction", "q", evidence).evidence) == [34, 30]
    prepared = prepare("state-tracking", "How has Caroline's view on adoption changed?", evidence)
    items = prepared.items()
    assert [(e.note_id, e.kind) for e in items] == [(-1, "summary"), (-2, "summary"), (30, "raw"), (34, "raw")]
    assert items[0].line() == "(computed) state on 8 May 2023 (Caroline): I'm researching adoption agencies."
    with_supersedes = prepare("conflict-resolution", "colour?", [BLUE, GREEN], supersedes={11: 10})
    assert [e.note_id for e in with_supersedes.evidence if e.stale] == [11]


def test_a_counting_state_question_gets_the_distinct_events_first() -> None:
    runs = [
        Evidence(1, "parkrun done!! 29:05 this morning", "2025-02-22T09:00:00", speaker="Maya", session="s1"),
        Evidence(2, "parkrun on Saturday: 28:31!", "2025-03-18T09:00:00", speaker="Maya", session="s2"),
        Evidence(3, "Nice, that is a PB.", "2025-03-18T09:01:00", speaker="Assistant", session="s2"),
        Evidence(4, "parkrun this morning 27:35", "2025-08-16T09:00:00", speaker="Maya", session="s3"),
    ]
    prepared = timeline("How many parkruns have I done this year?", runs)
    assert prepared.facts[0].startswith("number of parkruns: 3 (distinct events, a repeat counts once) — ")
    assert all(f.startswith("state on ") for f in prepared.facts[1:])
    # A question that does not count gets the measured values instead, then the timeline.
    changed = timeline("How has my parkrun time changed?", runs).facts
    assert changed[0] == ("parkrun, each value in the notes, oldest first: "
                          "29:05 (22 February 2025) → 28:31 (18 March 2025) → 27:35 (16 August 2025)")
    assert all(f.startswith("state on ") for f in changed[1:])


def test_a_trend_reads_values_with_units_and_bare_numbers_by_the_topic() -> None:
    tom = [
        ev(1, "had a shock today. GP says I've got type 2 diabetes. HbA1c was 58", "2025-09-09T20:00:00", "Tom"),
        ev(2, "I'll keep track of it: HbA1c 58 today.", "2025-09-09T20:01:00", "Assistant"),
        ev(3, "stood on the scales, 102 kilos. target's 95", "2025-10-02T19:30:00", "Tom"),
        ev(4, "bloods back. HbA1c 52, Janet's chuffed", "2025-12-15T20:40:00", "Tom"),
        ev(5, "and I'm 97 kilos", "2025-12-15T20:41:00", "Tom"),
        ev(6, "94kg. past my target! Parkrun on 3 March 2026 at 9:00 am", "2026-03-17T20:00:00", "Tom"),
        ev(7, "bloods again: HbA1c 47.", "2026-03-17T20:01:00", "Tom"),
    ]
    # No note says "weight": the values with one unit, from any note, the assistant's echo once.
    assert timeline("How has my weight changed?", tom).facts[0] == (
        "weight, each value in the notes, oldest first: 102 kg (2 October 2025) → 97 kg (15 December 2025) → "
        "94 kg (17 March 2026)")
    # A month is when, not what is tracked; a bare number counts next to the topic's word only.
    assert timeline("What's my HbA1c done since September?", tom).facts[0] == (
        "HbA1c, each value in the notes, oldest first: 58 (9 September 2025) → 52 (15 December 2025) → "
        "47 (17 March 2026)")
    # One reading, or the same value each time, is no trend.
    assert not timeline("How has my HbA1c changed?", tom[:2]).facts[0].startswith("HbA1c, each value")
    assert all("each value" not in f for f in timeline("How many times did I see the GP?", tom).facts)
    # A bare number some words after the topic's, the first after it in its sentence, is a reading too.
    pressure = [
        ev(1, "I had my blood pressure taken at the pharmacy, 152 over 94.", "2025-06-14T20:00:00", "Oskar"),
        ev(2, "Home blood pressure average for the last two weeks is 141 over 89.", "2025-11-02T11:30:00", "Oskar"),
        ev(3, "Blood pressure at home, average of two weeks: 134 over 85.", "2026-03-22T19:20:00", "Oskar"),
    ]
    assert timeline("How has my blood pressure changed?", pressure).facts[0] == (
        "blood pressure, each value in the notes, oldest first: 152 (14 June 2025) → 141 (2 November 2025) → "
        "134 (22 March 2026)")


def test_recency_quotes_the_latest_statement_on_what_is_asked() -> None:
    old = ev(1, "my number if you ever need it for forms: 07700 900118", "2025-02-03T09:00:00", "Maya")
    walk = ev(2, "walked Pepper by the canal", "2025-06-10T09:00:00", "Maya")
    new = ev(3, "also new number, the old one's cancelled: 07700 900412", "2025-06-14T09:00:00", "Maya")
    later = ev(4, "parkrun this morning, 27:35", "2025-08-16T09:00:00", "Maya")
    prepared = recency("What's my phone number these days?", [old, walk, new, later])
    assert prepared.facts[0] == ("Latest on what is asked: (14 June 2025, Maya) also new number, the old one's "
                                 "cancelled: 07700 900412")
    assert recency("What is my favourite tea?", [walk, later]).facts == []


def test_temporal_gives_the_length_of_a_range_and_the_weekday_of_a_day() -> None:
    exams = ev(1, "Ella's GCSEs run from 11 May to 19 June [11 May–19 June 2026]", "2026-03-01T10:00:00", "Tom",
               dates=[{"start": "2026-05-11", "end": "2026-06-19", "label": "11 May–19 June 2026"}])
    party = ev(2, "Mum's 80th is on 2 June [2 June 2026] at Rosewood", "2026-03-01T10:05:00", "Tom",
               dates=[{"start": "2026-06-02", "end": "2026-06-02", "label": "2 June 2026"}])
    assert temporal("How long do Ella's GCSEs last, first exam to last?", [exams, party]).facts == [
        "11 May–19 June 2026, first day to last: 5 weeks and 4 days (39 days), 40 days counting both ends"]
    assert temporal("How many weeks do Ella's GCSEs last?", [exams]).facts == [
        "11 May–19 June 2026, first day to last: 5 weeks and 4 days (39 days), 40 days counting both ends"]
    stay = ev(3, "Mila is with me 23 to 27 December [23–27 December 2025]", "2025-11-20T10:00:00", "Jonas",
              dates=[{"start": "2025-12-23", "end": "2025-12-27", "label": "23–27 December 2025"}])
    assert temporal("How many days is Mila with me over Christmas?", [stay]).direct[0] == (
        "5 days counting both ends (4 nights) (23–27 December 2025)")
    assert temporal("How many nights is Mila with me over Christmas?", [stay]).direct[0] == (
        "4 nights (23–27 December 2025)")
    assert temporal("What day of the week is Mum's 80th?", [exams, party]).facts == ["2 June 2026 is a Tuesday"]
    assert temporal("When is Mum's 80th?", [exams, party]).facts == []


def test_a_count_for_someone_named_counts_only_their_lines() -> None:
    runs = [
        Evidence(1, "parkrun done!! 29:05 this morning", "2025-02-22T09:00:00", speaker="Maya", session="s1"),
        Evidence(2, "parkrun on Saturday: 28:31!", "2025-03-18T09:00:00", speaker="Maya", session="s2"),
        Evidence(3, "Hannah and I want a weekend in the Lakes", "2025-03-18T09:05:00", speaker="Maya", session="s2"),
        Evidence(4, "did parkrun with Priya, she got 31:10", "2025-04-05T09:00:00", speaker="Maya", session="s3"),
    ]
    assert timeline("How many parkruns has Hannah done this year?", runs).facts[0] == (
        "number of parkruns for Hannah: none found — the notes that mention parkruns are not about Hannah")
    assert timeline("How many parkruns has Priya done?", runs).facts[0].startswith(
        "number of parkruns: 1 (distinct events, a repeat counts once) — ")
    assert timeline("How many parkruns have I done?", runs).facts[0].startswith("number of parkruns: 3 ")
    trips = [Evidence(1, "back from Seville, what a week", "2025-09-19T09:00:00", speaker="Maya", session="s1"),
             Evidence(2, "Seville again in May!", "2026-05-20T09:00:00", speaker="Maya", session="s2")]
    assert timeline("How many times have I been to Seville?", trips).facts[0].startswith("number of seville: 2 ")
    # the window it is counted over names no thing counted ("since" was counted, none about Seville)
    running = Evidence(3, "been running since March, knees ok", "2026-05-21T09:00:00", speaker="Maya", session="s3")
    since = timeline("How many times have I been to Seville since I started chatting with you?", [*trips, running])
    assert since.facts[0].startswith("number of seville: 2 ") and not since.unheld
    led = timeline("Since I started chatting with you, how many times have I been to Seville?", [*trips, running])
    assert led.facts[0].startswith("number of seville: 2 ") and not led.unheld


def _josh() -> list[Evidence]:
    return [
        Evidence(1, "family for your records: wife Sue, kids Ella who's 15 and Josh who's 12", "2025-09-09T19:00:00",
                 speaker="Tom", score=0.2),
        Evidence(2, "Sue, Ella and Josh. Noted.", "2025-09-09T19:01:00", speaker="Assistant", score=0.9),
        Evidence(3, "had to cancel Cornwall. Josh broke his wrist at football on the 18th [18 October 2025], "
                    "can't surf with a cast. got most of the money back", "2025-10-28T20:00:00", speaker="Tom",
                 score=0.5, dates=[day("2025-10-18", "18 October 2025")]),
        Evidence(4, "saw Mum on Thursday, she beat me at rummy twice", "2025-10-28T20:05:00", speaker="Tom", score=0.8),
        Evidence(5, "Josh has a tournament in Weston on Sunday 10 May [10 May 2026]. I'll be there obviously",
                 "2026-04-21T19:00:00", speaker="Tom", score=0.4, dates=[day("2026-05-10", "10 May 2026")]),
        Evidence(6, "Josh has a tournament in Weston on Sunday 10 May [10 May 2026]. I'll be there obviously",
                 "2026-04-21T19:02:00", speaker="Tom", score=0.3, dates=[day("2026-05-10", "10 May 2026")]),
    ]


def test_an_overview_question_is_answered_by_the_dated_lines_about_its_subject() -> None:
    # Lines about Josh, in the order told; the assistant's echo, the line about Mum and the repeat left out.
    text, cited = digest("Summarise what's been going on with Josh.", _josh())
    assert text == (
        "What your notes say about Josh, oldest first:\n"
        "- 9 September 2025: family for your records: wife Sue, kids Ella who's 15 and Josh who's 12\n"
        "- 28 October 2025: Josh broke his wrist at football on the 18th [18 October 2025], can't surf with a cast. "
        "got most of the money back\n"
        "- 21 April 2026: Josh has a tournament in Weston on Sunday 10 May [10 May 2026]. I'll be there obviously")
    assert cited == [1, 3, 5]
    # The question's own dates select by resolved date (a month reads as the month); with no line
    # about the subject in them ("the family"), everything dated there.
    bloods = Evidence(7, "next bloods with Janet are in May [May 2026]", "2026-04-21T19:05:00", speaker="Tom",
                      dates=[day("2026-05-01", "May 2026", end="2026-05-31", granularity="month")])
    text, cited = digest("What has the family got on in May?", [*_josh(), bloods], [(date(2026, 5, 1), date(2026, 5, 31))])
    assert text == ("What your notes say about May 2026, oldest first:\n"
                    "- 21 April 2026: Josh has a tournament in Weston on Sunday 10 May [10 May 2026]. I'll be there obviously\n"
                    "- 21 April 2026: next bloods with Janet are in May [May 2026]")
    assert cited == [5, 7]


def test_an_overview_takes_lines_about_its_subject_in_other_words_by_their_vectors() -> None:
    lines = [
        Evidence(1, "tweaked my knee bouldering, physio is Laura on tuesdays", "2025-11-03T19:00:00", speaker="Rafael"),
        Evidence(2, "vegetarian 8 years now", "2025-06-09T19:00:00", speaker="Rafael"),
        Evidence(3, "bought a sofa bed for the spare room, €340", "2025-10-16T19:00:00", speaker="Rafael"),
    ]
    question = "what have I told you about my fitness and health?"
    assert digest(question, lines) is None  # no line holds "fitness" or "health"
    close = {1: 0.41, 2: ABOUT_COSINE, 3: 0.08}
    text, cited = digest(question, lines, similar=close)
    assert text == ("What your notes say about fitness health, oldest first:\n"
                    "- 9 June 2025: vegetarian 8 years now\n"
                    "- 3 November 2025: tweaked my knee bouldering, physio is Laura on tuesdays")
    assert cited == [2, 1]


def _ankle_saga() -> tuple[Evidence, list[Evidence], list[Evidence]]:
    """A physio line that never says "ankle", two that do, and ABOUT_TOP + 5 invoices about nothing."""
    from edgemem.recall.preprocess import ABOUT_TOP

    physio = Evidence(1, "physio at stride with seun, mondays n thursdays", "2026-03-09T19:00:00", speaker="Chidi")
    ankle = [Evidence(2, "sprained my ankle at football", "2026-03-08T19:00:00", speaker="Chidi"),
             Evidence(3, "ankle is way better", "2026-04-01T19:00:00", speaker="Chidi")]
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa " \
            "quebec romeo sierra tango".split()
    others = [Evidence(10 + i, f"sent the {w} invoice", "2026-02-01T09:00:00", speaker="Chidi")
              for i, w in enumerate(words[:ABOUT_TOP + 5])]
    return physio, ankle, others


def _ankle_cosines(others: list[Evidence]) -> dict[int, float]:
    """Small cosines, as in a store whose scale is low: the physio line below ABOUT_COSINE, among the
    closest; the invoices 0.000 to 0.019, the five farthest outside the closest ABOUT_TOP."""
    return {1: 0.15, 2: 0.2, 3: 0.18} | {e.note_id: 0.001 * i for i, e in enumerate(others)}


def test_an_overview_takes_the_closest_lines_whatever_the_scale_of_the_cosines() -> None:
    physio, ankle, others = _ankle_saga()
    question = "recap the whole ankle saga for me"
    # Cosines in this store are small: the physio line is below ABOUT_COSINE but among the closest
    # ABOUT_TOP; the five farthest invoices are not.
    close = _ankle_cosines(others)
    text, cited = digest(question, [physio, *ankle, *others], similar=close)
    assert 1 in cited and "physio at stride" in text
    assert not set(cited) & {e.note_id for e in others[:5]}
    # With no more lines than ABOUT_TOP the rank says nothing: the cosine alone decides.
    text, cited = digest(question, [physio, *ankle], similar={1: 0.15, 2: 0.2, 3: 0.18})
    assert cited == [2, 3]


def test_an_overview_digest_is_left_to_the_model_for_lists_counts_and_thin_evidence() -> None:
    assert digest("Which tournaments has Josh played?", _josh()) is None  # names the kind of item: a list
    assert digest("What sports does Josh play?", _josh()) is None
    assert digest("How many times has Josh been to Weston?", _josh()) is None  # a count
    assert digest("What's been going on with Ella's mocks?", _josh()[:2]) is None  # one line about the subject
    assert digest("Tell me everything.", _josh()) is None  # no subject at all


def test_a_count_of_things_adds_up_the_numbers_each_event_gives_and_skips_the_assistants_echo() -> None:
    trips = [
        Evidence(1, "fishing Sunday [26 October 2025], Chew again, had a 4lb rainbow trout", "2025-10-28T20:00:00",
                 speaker="Tom", session="s1", dates=[day("2025-10-26", "26 October 2025")]),
        Evidence(2, "fishing yesterday [11 January 2026], freezing, but two trout", "2026-01-12T20:00:00",
                 speaker="Tom", session="s2", dates=[day("2026-01-11", "11 January 2026")]),
        Evidence(3, "Two trout, worth it.", "2026-01-12T20:01:00", speaker="Assistant", session="s2"),
        Evidence(4, "fishing with Dave on Sunday [8 February 2026], Chew, three trout", "2026-02-10T20:00:00",
                 speaker="Tom", session="s3", dates=[day("2026-02-08", "8 February 2026")]),
    ]
    prepared = timeline("How many trout have I had in total?", trips)
    facts = prepared.facts
    assert facts[0] == ("total trout: 6 — 1 (26 October 2025) + 2 (11 January 2026) + 3 (8 February 2026)")
    assert prepared.direct == ("6 trout in total: 1 (26 October 2025) + 2 (11 January 2026) + 3 (8 February 2026)",
                               [1, 2, 4])
    assert timeline("How many days after the first trip was the last?", trips).direct is None  # date maths
    assert facts[1].startswith("number of trout: 3 (distinct events")
    assert timeline("How many times have I been fishing?", trips).facts[0].startswith("number of fishing: 3 ")
    # A price or a year before the word is not how many: "a $40 parking ticket" is one ticket.
    tickets = [Evidence(5, "got a $40 parking ticket outside the library today", "2025-07-14T10:00:00", speaker="Kai",
                        session="s1"),
               Evidence(6, "another parking ticket, $60 this time", "2025-11-04T10:00:00", speaker="Kai", session="s2"),
               Evidence(7, "sold my 2004 mazda ute", "2025-11-25T10:00:00", speaker="Kai", session="s3")]
    assert timeline("How many parking tickets have I had?", tickets).direct is None
    assert timeline("How many parking tickets have I had?", tickets).facts[0].startswith("number of tickets: 2 ")
    # The ticket is the thing counted ("ticket #2" says no parking), and "that ticket" is one told before.
    more = tickets + [Evidence(8, "ticket #3 btw. $40 outside the bike shop", "2025-11-20T10:00:00", speaker="Kai",
                               session="s4"),
                      Evidence(9, "still havent paid that ticket from outside the bike shop", "2025-11-28T10:00:00",
                               speaker="Kai", session="s5")]
    assert timeline("How many parking tickets have I had?", more).facts[0].startswith("number of tickets: 3 ")
    # A trip is only the unit: "how many fishing trips" counts the fishing.
    assert timeline("How many fishing trips have I done?", trips).facts[0].startswith("number of fishing: 3 ")
    assert timeline("How many mazda utes have I sold?", tickets).direct is None


def test_a_count_finds_the_irregular_past_of_the_question_verb() -> None:
    visits = [Evidence(i, text, when, speaker="Tom", session=f"s{i}", dates=[day(on, label)])
              for i, (text, when, on, label) in enumerate([
                  ("popped in to see Mum yesterday [1 October 2025]", "2025-10-02T19:00:00", "2025-10-01", "1 October 2025"),
                  ("saw Mum on Thursday [23 October 2025], she beat me at rummy", "2025-10-28T19:00:00", "2025-10-23",
                   "23 October 2025"),
                  ("Mum's 80th is on 2 June [2 June 2026]", "2026-03-01T19:00:00", "2026-06-02", "2 June 2026"),
                  ("saw Mum Thursday [5 February 2026], cough's gone", "2026-02-10T19:00:00", "2026-02-05",
                   "5 February 2026"),
              ], start=1)]
    facts = timeline("How many times have I been to see Mum?", visits).facts
    assert facts[0].startswith("number of see: 3 (distinct events")


def test_when_a_plan_is_asked_the_older_statement_of_a_changed_plan_is_outdated() -> None:
    review = [
        Evidence(1, "GP review for the diabetes on Tuesday 3 February [3 February 2026], 8:40", "2026-01-12T20:00:00",
                 speaker="Tom", dates=[day("2026-02-03", "3 February 2026")]),
        Evidence(2, "the GP cancelled my review, I'm in on Tuesday 17 February [17 February 2026] now, 10:20",
                 "2026-02-10T20:00:00", speaker="Tom", dates=[day("2026-02-17", "17 February 2026")]),
    ]
    asked = temporal("When is my GP diabetes review?", review).evidence
    assert [(e.note_id, e.stale) for e in asked] == [(1, True), (2, False)]
    assert asked[0].line().endswith("(outdated as of 10 February 2026)")
    # "When did …" asks about what happened, and a plan moved before it happened did not happen then
    assert [e.stale for e in temporal("When did I have the GP review?", review).evidence] == [True, False]
    # two reviews reported after the fact are two events: nothing is outdated
    told = [Evidence(1, "had the GP review on Tuesday [3 February 2026]", "2026-02-04T20:00:00", speaker="Tom",
                     dates=[day("2026-02-03", "3 February 2026")]),
            Evidence(2, "another GP review now, on Tuesday [17 February 2026]", "2026-02-18T20:00:00", speaker="Tom",
                     dates=[day("2026-02-17", "17 February 2026")])]
    assert [e.stale for e in temporal("When did I have the GP review?", told).evidence] == [False, False]


def test_an_overview_with_no_line_tying_the_name_to_the_topic_is_left_to_the_model() -> None:
    lines = [Evidence(1, "I started my transition three years ago", "2023-06-09T10:00:00", speaker="Caroline"),
             Evidence(2, "my transition changed how my friends see me", "2023-07-09T10:00:00", speaker="Caroline"),
             Evidence(3, "Melanie here, painting again", "2023-07-10T10:00:00", speaker="Melanie"),
             Evidence(4, "Melanie: took the kids camping", "2023-07-12T10:00:00", speaker="Melanie")]
    assert digest("What are some changes Melanie has faced during her transition?", lines) is None
    assert digest("What are some changes Caroline has faced during her transition?", lines) is not None


def test_a_place_the_askers_topic_is_at_needs_no_line_tying_it_to_the_topic() -> None:
    lines = [Evidence(1, "i work at spoke & chain in sydenham. wed arvo 1-5 and sat 9-3", "2025-08-27T21:00:00", speaker="Kai"),
             Evidence(2, "dropping wednesdays at spoke & chain from october, just saturdays", "2025-09-18T21:00:00",
                      speaker="Kai"),
             Evidence(3, "quit spoke & chain, last shift was saturday", "2025-11-26T21:00:00", speaker="Kai"),
             Evidence(4, "lucía and íñigo are coming in july", "2025-11-27T21:00:00", speaker="Kai")]
    found = digest("How did my hours at Spoke & Chain change over time?", lines)
    assert found is not None and found[1] == [1, 2, 3]
    # A name that owns the topic ("Íñigo's career") is no place: no line ties them, so no overview.
    assert digest("Summarise Íñigo's career for me", lines) is None


def test_a_count_takes_how_often_a_line_says_it_happened_and_only_the_named_persons_lines() -> None:
    sessions = [
        Evidence(1, "bouldering Sunday, first V4 since the knee", "2025-07-15T21:00:00", speaker="Jonas", session="s1"),
        Evidence(2, "bouldering twice last week [week of 1 September 2025], Tuesday and Saturday", "2025-09-09T21:00:00",
                 speaker="Jonas", session="s2",
                 dates=[{"start": "2025-09-01", "end": "2025-09-07", "label": "week of 1 September 2025"}]),
        Evidence(3, "Birte came bouldering with us on Saturday [20 December 2025]", "2025-12-22T20:00:00",
                 speaker="Jonas", session="s3", dates=[day("2025-12-20", "20 December 2025")]),
    ]
    assert timeline("How many bouldering sessions have I had?", sessions).direct == (
        "4 bouldering in total: 1 (15 July 2025) + 2 (week of 1 September 2025) + 1 (20 December 2025)", [1, 2, 3])
    # Birte's own count is one line, with no number above one in it: no total to give
    assert timeline("How many bouldering sessions has Birte done?", sessions).direct is None
    assert timeline("How many bouldering sessions has Birte done?", sessions).unheld is None  # line 3 names her


def test_a_count_for_someone_no_line_is_about_is_unheld_and_the_pipeline_abstains(settings, embedder) -> None:
    from edgemem.recall import pipeline
    from recall_fakes import FixedRouter, remembered

    lines = [
        Evidence(1, "parkrun done, 29:05 this morning", "2025-03-01T10:00:00", speaker="Maya"),
        Evidence(2, "parkrun again, 28:40", "2025-03-08T10:00:00", speaker="Maya"),
        Evidence(3, "Hannah's got a new car", "2025-03-09T10:00:00", speaker="Maya"),
    ]
    unheld = timeline("How many parkruns has Hannah done?", lines)
    assert unheld.unheld == "number of parkruns for Hannah: none found — the notes that mention parkruns are not about Hannah"
    assert unheld.direct is None and unheld.computed is None
    assert timeline("How many parkruns have I done?", lines).unheld is None

    eng, llm, _ = remembered(settings, embedder, [
        ("2025-03-01T10:00:00", "parkrun done, 29:05 this morning"),
        ("2025-03-08T10:00:00", "parkrun again, 28:40"),
        ("2025-03-09T10:00:00", "Hannah's got a new car"),
    ])
    try:  # the scripted model has no replies: a model call would fail the test
        out = pipeline.run(eng.store.conn, "How many parkruns has Hannah done?", llm=llm, embed=eng.runtime.embed,
                           router=FixedRouter("state-tracking"))
    finally:
        eng.close()
    assert out.text == pipeline.ABSTAIN and not llm.calls
    assert out.trace["unheld"] and out.trace["verdict"] == "abstain" and out.trace["escalated"] is False


def test_a_compound_thing_is_counted_as_a_phrase_and_someone_elses_count_is_unheld() -> None:
    lines = [
        Evidence(1, "I volunteer at the Daily Bread food bank, did a shift yesterday", "2026-01-11T10:00:00", speaker="Priya"),
        Evidence(2, "food bank shift on Tuesday, sorted about 400 cans", "2026-01-29T20:00:00", speaker="Priya"),
        Evidence(3, "the vet wants Chai on diet food", "2026-02-19T19:00:00", speaker="Priya"),
        Evidence(4, "food bank on Saturday, it was packed", "2026-02-21T19:00:00", speaker="Priya"),
        Evidence(5, "Sam's switching to day shifts from March", "2026-02-19T19:15:00", speaker="Priya"),
    ]
    own = timeline("How many food bank shifts have I done this year?", lines)
    assert own.facts[0].startswith("number of food bank: 3 (distinct events")  # not the cat's diet food
    sams = timeline("How many food bank shifts has Sam done?", lines)
    assert sams.unheld == "number of food bank for Sam: none found — the notes that mention food bank are not about Sam"


def test_a_value_told_just_before_the_topic_is_a_reading() -> None:
    runs = [
        Evidence(1, "long run on Sunday [1 February 2026]: 12K", "2026-02-03T20:00:00", speaker="Priya"),
        Evidence(2, "32K on Sunday [16 August 2026]! longest run ever", "2026-08-18T22:00:00", speaker="Priya"),
        Evidence(3, "easy 10K on Sunday, first run since the race", "2026-08-25T20:00:00", speaker="Priya"),
        Evidence(4, "Paid 40 for the shoes. The run club meets on Thursdays", "2026-08-26T20:00:00", speaker="Priya"),
    ]
    facts = timeline("What's the longest run I've done so far?", runs).facts
    # "32K" comes before its topic's sentence, which gives no value; "Paid 40" is before one that does not either,
    # but 40 has no unit and is not next to the topic's words. A reading told after a date is of that day
    # (12K on Sunday 1 February); one told before it, of the day said.
    assert facts[0] == "longest run, each value in the notes, oldest first: 12 k (1 February 2026) → 32 k (18 August 2026) → 10 k (25 August 2026)"


def test_a_goal_is_read_on_the_day_it_was_set_and_a_hyphenated_value_counts() -> None:
    goal = [
        Evidence(1, "big goal: the half marathon on 3 May [3 May 2026]. want to finish under 2:10", "2026-01-11T10:00:00",
                 speaker="Priya", dates=[day("2026-05-03", "3 May 2026")]),
        Evidence(2, "I'm changing my half goal to sub-2:00", "2026-04-08T18:55:00", speaker="Priya"),
        Evidence(3, "ran the half on Sunday [3 May 2026]!!! 1:58:40", "2026-05-05T20:20:00", speaker="Priya",
                 dates=[day("2026-05-03", "3 May 2026")]),
    ]
    facts = timeline("How did my half marathon goal change?", goal).facts
    assert facts[0] == ("half marathon goal, each value in the notes, oldest first: "
                        "2:10 (11 January 2026) → 2:00 (8 April 2026) → 1:58:40 (3 May 2026)")


def _on(start: str, end: str | None = None) -> dict:
    return {"start": start, "end": end or start, "granularity": "day", "label": start}


def test_a_plan_told_again_with_other_dates_outdates_the_first_telling() -> None:
    booked = ev(1, "booked Lisbon! leaving Wednesday Sept 16 [16 September 2026], back Sept 24 [24 September 2026]",
                "2026-02-19T19:15:00", "Priya", dates=[_on("2026-09-16"), _on("2026-09-24")])
    moved = ev(2, "Updated: Lisbon from 22 to 30 September [22–30 September 2026].", "2026-06-02T21:10:00", "Assistant",
               dates=[_on("2026-09-22", "2026-09-30")])
    niagara = ev(3, "Niagara Falls with my parents on June 20 [20 June 2026]", "2026-05-02T21:10:00", "Priya",
                 dates=[_on("2026-06-20")])
    again = ev(4, "back in Lisbon now, went to the Alfama [5 August 2026]", "2026-08-06T10:00:00", "Priya",
               dates=[_on("2026-08-05")])
    theirs = ev(5, "Leah moved her Lisbon party to 26 September [26 September 2026]", "2026-06-05T10:00:00", "Leah",
                dates=[_on("2026-09-26")])
    rewire = ev(6, "full rewire in Clevedon, starts 10 November [10 November 2025]", "2025-10-28T21:15:00", "Priya",
                dates=[_on("2025-11-10")])
    overrun = ev(7, "Clevedon's running over, now finishing on the 5th of December [5 December 2025]",
                 "2025-11-20T18:50:00", "Priya", dates=[_on("2025-12-05")])
    restated = ev(8, "Updated: Lisbon from 22 to 30 September [22–30 September 2026]; party on 26 September.",
                  "2026-06-02T21:10:05", "Assistant", dates=[_on("2026-09-22", "2026-09-30"), _on("2026-09-26")])
    items = [booked, moved, niagara, again, theirs, rewire, overrun]
    # an assistant restating the user's line the same day moves nothing
    assert redated([ev(9, "now leaving Sept 22 [22 September 2026], party Sept 26 [26 September 2026]",
                       "2026-06-02T21:10:00", "Priya", dates=[_on("2026-09-22"), _on("2026-09-26")]), restated]) == {}
    # the update moves the booking; a visit reported after the fact, someone else's plan and a new last
    # day alone (the rewire still started on 10 November) move nothing
    assert {old: new.note_id for old, new in redated(items).items()} == {1: 2}
    for question in ("When do I fly to Lisbon?", "What dates was the Lisbon trip in the end?"):
        prepared = temporal(question, items)
        assert [e.note_id for e in prepared.evidence if e.stale] == [1]
    assert [e.note_id for e in recency("Where am I flying in September?", items).evidence if e.stale] == [1]
    # A targeted question marks the moved plan only when it asks for a date: "what else" the first
    # telling holds stays unmarked.
    assert [e.note_id for e in prepare("targeted-extraction", "what dates was the Lisbon trip?", items).evidence
            if e.stale] == [1]
    assert [e.note_id for e in prepare("targeted-extraction", "Which hotel are we in for Lisbon?", items).evidence
            if e.stale] == []
    grounded = ground("Lisbon", [booked, moved])
    # unmarked too: the later telling of the plan while it was ahead, its days overlapping the first's
    assert (grounded.start, grounded.note_id) == (date(2026, 9, 22), 2)
    grounded = ground("Lisbon", temporal("When do I fly to Lisbon?", [booked, moved]).evidence)
    assert (grounded.start, grounded.note_id) == (date(2026, 9, 22), 2)  # the first telling is outdated


def test_an_overview_since_a_month_keeps_lines_said_since_and_amounts_are_whole() -> None:
    from edgemem.recall.preprocess import _placed_values, digest

    told = [Evidence(1, "bought a monitor, €420", "2025-07-02T10:00:00", "Rafael"),
            Evidence(2, "bought a sofa on the 12th [12 August 2025] for €890", "2025-08-01T10:00:00", "Rafael",
                     dates=[{"phrase": "the 12th", "start": "2025-08-12", "end": "2025-08-12"}]),
            Evidence(3, "bought a bike", "2025-03-01T10:00:00", "Rafael")]
    # A line that dates nothing is placed by the day it was said: the monitor, not the bike.
    assert digest("What have I bought since June?", told, [(date(2025, 6, 1), date(2025, 12, 1))]) == (
        "What your notes say about bought, oldest first:\n- 2 July 2025: bought a monitor, €420\n"
        "- 1 August 2025: bought a sofa on the 12th [12 August 2025] for €890", [1, 2])
    # Whole amounts, each with its sign, only for a question about money: no "500", no "800".
    assert [(k, v) for k, v, _ in _placed_values("Murphy quoted €14,500, Doyle €12,800", terms("murphy quoted"))] == [("money", "€14,500"), ("money", "€12,800")]
    assert _placed_values("Murphy quoted €14,500, Doyle €12,800", terms("murphy quoted"), money=False) == []


def test_a_count_with_nothing_on_the_days_asked_says_so_and_when_there_was() -> None:
    from edgemem.recall.preprocess import timeline

    told = [Evidence(1, "finished a book over christmas [25 December 2025], Clear", "2026-01-14T21:00:00", "Lena",
                     dates=[{"phrase": "christmas", "start": "2025-12-25", "end": "2025-12-25", "label": "25 December 2025"}])]
    this_year = [(date(2026, 1, 1), date(2026, 12, 31))]
    assert timeline("How many books have I read this year?", told, asked_days=this_year).direct == (
        "None: your notes have no mention of books on those dates (they mention books on 25 December 2025).", [])
    last_year = [(date(2025, 1, 1), date(2025, 12, 31))]
    assert timeline("How many books have I read last year?", told, asked_days=last_year).direct is None
    # Someone named: the lines naming them, and no other days listed (those are the asker's runs).
    runs = [Evidence(2, "parkrun 28th june [28 June 2025] 31:55, Sinéad came 2nd in her age group", "2025-07-01T13:00:00",
                     "Lena", dates=[{"phrase": "28th june", "start": "2025-06-28", "end": "2025-06-28"}])]
    assert timeline("How many parkruns has Sinéad done this year?", runs, asked_days=this_year).direct == (
        "None: your notes have no mention of parkruns for Sinéad on those dates.", [])


def test_an_overview_ranks_lines_with_the_people_and_the_topic_first_and_told_asks_for_one(monkeypatch) -> None:
    from edgemem.recall import preprocess
    from edgemem.recall.preprocess import digest

    family = [Evidence(1, "Dara and I said €200 for the gift", "2025-03-22T10:00:00", "Lena", score=0.5),
              Evidence(2, "Dara's trip to Rome with the TYs, 16-20 October", "2025-08-28T10:00:00", "Lena", score=0.4),
              Evidence(3, "our trip to Faro is booked, 14-21 July", "2025-06-03T10:00:00", "Lena", score=0.9)]
    monkeypatch.setattr(preprocess, "DIGEST_MAX", 2)
    # Rome names Dara and is a trip; then the trip to Faro outranks a line that only names Dara.
    assert digest("Give me a rundown of the trips in our family, mine and Dara's", family)[1] == [3, 2]
    knee = [Evidence(4, "Sinéad, the one who told me about you, says hi", "2025-03-04T10:00:00", "Lena"),
            Evidence(5, "tweaked my knee bouldering", "2025-11-02T10:00:00", "Lena"),
            Evidence(6, "knee is better, physio on tuesdays", "2025-12-02T10:00:00", "Lena")]
    assert digest("What have I told you about my knee?", knee)[1] == [5, 6]  # "told" is not the subject


def test_an_overview_line_starts_at_the_sentence_naming_whom_or_what_the_question_names() -> None:
    from edgemem.recall.preprocess import digest

    told = [Evidence(1, "the lease on the studio ends in May. so I need a new space. viewing Ferngate Mill on friday, "
                        "they sent a floor plan", "2025-03-02T10:00:00", "Ana"),
            Evidence(2, "Ferngate Mill said yes to the lease", "2025-03-20T10:00:00", "Ana")]
    text, cited = digest("How did I get the Ferngate Mill lease, step by step?", told)
    assert cited == [1, 2]
    assert text.splitlines()[1] == "- 2 March 2025: viewing Ferngate Mill on friday, they sent a floor plan"


def test_a_state_trend_reads_no_time_of_day_or_money_unless_the_question_asks_for_it() -> None:
    told = [Evidence(1, "Papá's care: Rosa comes weekdays, cardiologist on Thursday at 10:30", "2025-09-05T10:00:00",
                     speaker="Gloria"),
            Evidence(2, "Papá's care is changing, Rosa leaves. flights booked, 1,480 dollars", "2025-10-19T10:00:00",
                     speaker="Gloria"),
            Evidence(3, "Papá's care: Nelida starts, she comes at 9:00 on weekdays. change fee 180 dollars",
                     "2025-12-03T10:00:00", speaker="Gloria")]
    assert timeline("Tell me how Papá's care changed", told).computed is None
    assert timeline("How did the time Papá's carer comes change?", told).computed == (
        "From 10:30 (5 September 2025) to 9:00 (3 December 2025): 10:30 (5 September 2025) → 9:00 (3 December 2025)",
        [1, 3])
    assert timeline("How much has Papá's care cost?", told).computed[0].startswith("From 1,480 dollars")
    runs = [Evidence(4, "parkrun this morning, got it down to 28:10", "2025-03-01T10:00:00", speaker="Gloria"),
            Evidence(5, "parkrun again, in about 27:40", "2025-04-01T10:00:00", speaker="Gloria")]
    assert timeline("What's my parkrun PB?", runs).computed[0] == (
        "From 28:10 (1 March 2025) to 27:40 (1 April 2025): 28:10 (1 March 2025) → 27:40 (1 April 2025)")


def test_an_overview_asked_as_a_state_gets_the_lines_not_a_series_of_numbers_in_them() -> None:
    lines = [ev(1, "Noor started at the bakery, 14 hours a week for now", "2025-07-02T10:00:00", "Sami"),
             ev(2, "Noor cut back to 10 hours because of her exams", "2025-08-12T10:00:00", "Sami"),
             ev(3, "Noor passed her driving test!", "2025-09-01T10:00:00", "Sami")]
    overview = timeline("what do you know about Noor?", lines)
    assert overview.computed is None
    assert overview.direct == ("What your notes say about Noor, oldest first:\n"
                               "- 2 July 2025: Noor started at the bakery, 14 hours a week for now\n"
                               "- 12 August 2025: Noor cut back to 10 hours because of her exams\n"
                               "- 1 September 2025: Noor passed her driving test!", [1, 2, 3])
    assert timeline("Give me a rundown of Noor's hours", lines).computed is None
    # A tracked quantity the question names is still a series.
    assert timeline("How have Noor's hours changed?", lines).computed[0] == (
        "From 14 h (2 July 2025) to 10 h (12 August 2025): 14 h (2 July 2025) → 10 h (12 August 2025)")


def test_a_state_question_with_only_dates_for_a_subject_is_selected_by_them() -> None:
    lines = [told(1, "Christmas at Mum's: flying out 23 December", "2025-10-21T10:00:00"),
             told(2, "work do is on 12 December at the Crown", "2025-11-02T10:00:00"),
             told(3, "booked the dentist for 3 November", "2025-10-01T10:00:00")]
    december = [(date(2025, 12, 1), date(2025, 12, 31))]
    assert timeline("What's happening in December?", lines, asked_days=december).direct[1] == [1, 2]
    assert timeline("What's happening in December?", lines).direct is None


def told(note_id: int, text: str, when: str, speaker: str = "Graciela") -> Evidence:
    """A line as ingestion stores it: annotated, with its resolved dates."""
    said = datetime.fromisoformat(when)
    dates = [{"phrase": d.phrase, "start": d.start.isoformat(), "end": d.end.isoformat(), "granularity": d.granularity,
              "approximate": d.approximate, "label": d.label()} for d in resolve_dates(text, said)]
    return ev(note_id, annotate(text, said), when, speaker, dates=dates)


def test_a_stay_runs_from_its_first_day_to_the_day_it_closes_moved_by_a_later_line() -> None:
    plan = told(1, "Martín arrives tomorrow on the Buquebus with Julieta and they'll stay until the 2nd of January.",
                "2025-12-22T20:00:00")
    moved = told(2, "Christmas was lovely. Martín and Julieta ended up staying until Sunday the 4th because the "
                    "Buquebus on the 2nd was full.", "2026-01-14T20:00:00")
    other = told(3, "Martín's band plays Buenos Aires from 10 to 14 March.", "2026-01-14T20:05:00")
    assert temporal("How many nights did Martín stay with us over Christmas?", [plan, moved, other]).direct[0] == (
        "12 nights (23 December 2025 to 4 January 2026)")
    # Without the later line, the plan as told; a question counted from today is no stay.
    assert temporal("How many nights did Martín stay with us?", [plan]).direct[0] == (
        "10 nights (23 December 2025 to 2 January 2026)")
    assert temporal("How long have Martín and Julieta been together?", [plan, moved]).direct is None


def test_a_stretch_told_as_a_day_and_a_return_home() -> None:
    hospital = told(1, "On Monday the 3rd Papá woke up gasping; they took him in with fluid in the lungs. He came home "
                       "on Friday the 7th.", "2025-11-12T20:00:00")
    rosa = told(2, "Her last day with Papá will be Friday 28 November.", "2025-10-19T20:00:00")
    assert temporal("how long was papá in hospital in november?", [rosa, hospital],
                    asked_days=[(date(2025, 11, 1), date(2025, 11, 30))]).direct[0] == (
        "4 days, 5 days counting both ends (3 November 2025 to 7 November 2025)")


def test_a_stretch_is_the_one_told_with_the_rarest_of_the_questions_words() -> None:
    mocks = told(1, "Ella's mocks are 1 to 12 December, so the house has to be quiet.", "2025-11-20T20:00:00", "Tom")
    dinner = told(2, "Ella wants pizza on Friday.", "2025-11-21T20:00:00", "Tom")
    gcses = told(3, "GCSEs from 11 May to 19 June.", "2026-01-12T20:00:00", "Tom")
    assert temporal("How long do Ella's GCSEs last, first exam to last?", [mocks, dinner, gcses]).direct[0] == (
        "5 weeks and 4 days (39 days), 40 days counting both ends (11 May 2026 to 19 June 2026)")


def test_a_weekday_question_is_answered_when_the_line_names_the_day_as_asked() -> None:
    start = told(1, "Nélida started on Monday and it's going well. Papá already taught her truco.", "2025-12-03T20:00:00")
    assert temporal("when exactly did Nélida start with Papá, date and day?", [start]).direct == (
        "Monday, 1 December 2025", [1])
    # A line that holds only part of what names the day gives the weekday as a fact, for the model.
    visit = told(2, "Mum's in Rosewood House now, I saw her on the 4th.", "2025-09-09T19:00:00", "Tom")
    prepared = temporal("What day of the week is Mum's 80th?", [visit])
    assert prepared.direct is None and prepared.facts == ["4 September 2025 is a Thursday"]


def test_a_weekday_question_is_dated_by_the_words_that_name_its_day() -> None:
    # "week" and "year" ask; they do not name the day: they matched "a lovely week" in the visit line,
    # which then outranked the line about the birthday.
    visit = replace(told(1, "The grandchildren have gone home. It was a lovely week; on the Wednesday Leo had a cold "
                            "and we stayed in with cartoons.", "2026-08-01T20:00:00", "Halina"), score=0.5)
    birthday = replace(told(2, "Leo turns six on the 9th of November and he wants a real dinosaur.",
                            "2026-10-25T20:00:00", "Halina"), score=0.6)
    question = "What day of the week does Leo's birthday fall on this year?"
    assert temporal(question, [visit, birthday]).facts[-1] == "9 November 2026 is a Monday"
    assert prepare("targeted-extraction", question, [visit, birthday]).facts == ["9 November 2026 is a Monday"]
    assert _weekday_event(question) == "Leo's birthday"
    assert _weekday_event("what weekday are Kofi's Hawks tryouts on") == "Kofi's Hawks tryouts"
    assert _weekday_event("What day did we leave for Ghana?") == "we leave for Ghana"


def test_how_long_a_stay_lasted_is_measured_whatever_the_route() -> None:
    hospital = told(1, "On Monday the 3rd Papá woke up gasping; they took him in. He came home on Friday the 7th.",
                    "2025-11-12T20:00:00")
    november = [(date(2025, 11, 1), date(2025, 11, 30))]
    for tag in ("targeted-extraction", "conflict-resolution"):
        assert prepare(tag, "how long was papá in hospital in november?", [hospital], asked_days=november).direct == (
            "4 days, 5 days counting both ends (3 November 2025 to 7 November 2025)", [1])
    # Anything else the route asks is left to it.
    assert prepare("targeted-extraction", "where was papá in november?", [hospital]).direct is None


def test_leaving_for_a_trip_is_its_first_day_and_the_days_after_an_event_are_the_answer() -> None:
    moved_in = told(1, "moved in on the 6th, orbell st is sick", "2025-12-07T20:00:00", "Kai")
    trip = told(2, "oh wanaka moved!! now 29 dec to 3 jan bc of the wedding", "2025-11-26T20:00:00", "Kai")
    back = told(3, "back from wanaka!! got back saturday (the 3rd). best trip ever", "2026-01-07T20:00:00", "Kai")
    question = "How long after moving into Orbell St did we leave for Wanaka?"
    assert temporal(question, [moved_in, trip, back]).direct[0] == (
        "3 weeks and 2 days (23 days): moving into Orbell St 6 December 2025, we leave for Wanaka 29 December 2025")
    # Coming back is the trip's last day.
    assert temporal("How many days after moving into Orbell St did we get back from Wanaka?",
                    [moved_in, trip, back]).direct[0].startswith("28 days")
    # "after" the other way round is a grounding gone wrong: facts for the model, no answer.
    assert temporal("How many days after leaving for Wanaka did I move into Orbell St?", [moved_in, trip, back]).direct is None


def test_what_dates_a_trip_was_are_its_stretch_as_moved() -> None:
    first = told(1, "Helsa kickoff in Oslo is 19-21 january, flights booked", "2025-11-20T20:00:00", "Rafael")
    moved = told(2, "Oslo kickoff moved to 26-28 january, their CTO is sick", "2026-01-07T20:00:00", "Rafael")
    first = Evidence(**{**first.__dict__, "stale": True, "superseded_by": 2})  # as the recency filter marks it
    assert prepare("targeted-extraction", "what dates was the Helsa kickoff in Oslo?", [first, moved]).direct == (
        "26 January 2026 to 28 January 2026", [2])
    # Without the move, the dates as told.
    assert prepare("conflict-resolution", "what dates was the Helsa kickoff in Oslo?", [told(
        1, "Helsa kickoff in Oslo is 19-21 january, flights booked", "2025-11-20T20:00:00", "Rafael")]).direct == (
        "19 January 2026 to 21 January 2026", [1])


def test_a_moved_return_flight_moves_the_trips_last_day_and_opens_no_stretch_of_its_own() -> None:
    trip = told(1, "big one: Ghana for christmas. flights booked, out december 17th, back january 6th",
                "2025-09-09T21:30:00", "Kwame")
    moved = told(2, "change to the ghana trip: my brother is throwing Ma a surprise 75th on january 10th in Kumasi, "
                    "so we moved our return flight to the 12th", "2025-11-04T21:45:00", "Kwame")
    question = "How many days were we away in Ghana, flight to flight?"
    # Not the party's 10th to the flight's 12th: the trip as booked, its end moved.
    assert temporal(question, [trip, moved]).direct[0] == (
        "27 days counting both ends (26 nights) (17 December 2025 to 12 January 2026)")
    assert temporal(question, [trip]).direct[0] == (
        "21 days counting both ends (20 nights) (17 December 2025 to 6 January 2026)")


def test_the_date_of_one_event_is_the_day_its_line_gives_moved_or_not() -> None:
    plan = told(1, "choir news: our winter concert is on 22 November at the Église Saint-Bruno", "2025-10-02T20:15:00",
                "Ines")
    moved = told(2, "change of plan for the concert, the church double-booked so it's moved to the 29th. same place",
                 "2025-11-14T19:30:00", "Ines")
    # The moving line names only "concert": it answers for the line it moved, which names the rest.
    assert temporal("What was the date of the choir's winter concert?", [plan, moved]).direct == ("29 November 2025", [2])
    assert temporal("What was the date of the choir's winter concert?", [plan]).direct == ("22 November 2025", [1])
    # A line that holds only part of what the question names gives no answer.
    assert temporal("What was the date of the choir's spring concert?", [plan, moved]).direct is None
    # Nor the day a line was said (ground's fallback), when the line states no day of the event.
    contract = told(3, "main client is Kontor, 4 days a week, contract runs till end of the year", "2025-06-09T22:30:00",
                    "Rafael")
    assert temporal("when did my Kontor contract end?", [contract]).direct is None


def test_a_trips_leg_is_dated_from_its_stretch_as_moved() -> None:
    trip = told(1, "big one: Ghana for christmas. flights booked, out december 17th, back january 6th",
                "2025-09-09T21:30:00", "Kwame")
    moved = told(2, "change to the ghana trip: my brother is throwing Ma a surprise 75th on january 10th in Kumasi, "
                    "so we moved our return flight to the 12th", "2025-11-04T21:45:00", "Kwame")
    assert temporal("What date did we fly back from Ghana?", [trip, moved]).direct[0] == "12 January 2026"
    assert temporal("What day did we leave for Ghana?", [trip, moved]).direct[0] == "Wednesday, 17 December 2025"


def test_a_return_moved_instead_of_its_old_day_moves_the_stretch_whatever_its_words() -> None:
    booked = told(1, "BOOKED the wedding flights. Manchester to Seville, leaving Thursday 11 Sept, back Tuesday 16 Sept",
                  "2025-03-18T18:40:00", "Maya")
    moved = told(2, "annoying: Ryanair moved my return flight. coming back Wednesday 17 Sept now instead of the 16th",
                 "2025-08-16T10:10:00", "Maya")
    assert temporal("When do I fly back from Seville?", [booked, moved]).direct[0] == "17 September 2025"
    # A line that tells the trip anew gives its first day as well.
    ticket = told(3, "I am going to Madrid for the baby! Air Europa, leaving 12 February and coming back 5 March.",
                  "2025-10-19T20:30:00", "Graciela")
    retold = told(4, "Of course I changed the flight. I left Montevideo on Wednesday the 4th, landed here on Thursday "
                     "the 5th. And I'm going back on Thursday 26 February instead of 5 March.", "2026-02-09T19:00:00",
                  "Graciela")
    assert temporal("How many days was I away in Madrid in the end?", [ticket, retold]).direct[0] == (
        "23 days counting both ends (22 nights) (4 February 2026 to 26 February 2026)")


def test_a_weekday_or_a_changed_date_is_answered_on_any_route() -> None:
    tryouts = told(1, "Kofi has tryouts for a spring AAU team, the North Metro Hawks, on 21 march. he's been shooting",
                   "2026-02-03T21:25:00", "Kwame")
    assert prepare("conflict-resolution", "what weekday are Kofi's Hawks tryouts on", [tryouts]).direct == (
        "Saturday, 21 March 2026", [1])
    hen = told(2, "i'm organising the hen do. Marseille, 29 to 31 May", "2026-01-14T21:20:00", "Ines")
    assert prepare("constraint-validation", "what weekday does the hen do in Marseille kick off", [hen]).direct[0] == (
        "Friday, 29 May 2026")
    # Visitors arrive on a stay's first day; one comes back home on a trip's last.
    visit = told(5, "Kenji's parents are coming from Sapporo to stay with us from 8 to 12 August.", "2026-07-05T20:15:00",
                 "Aiko")
    assert prepare("temporal-reasoning", "Kenji's parents are coming in August, what day of the week do they arrive?",
                   [visit]).direct[0] == "Saturday, 8 August 2026"
    assert prepare("temporal-reasoning", "what day of the week do I get back home from the hen do in Marseille?",
                   [hen]).direct[0] == "Sunday, 31 May 2026"
    # A changed plan asked "in the end": "move" is the subject here, not only a word of changing.
    first = told(3, "we signed for a little house in Villeurbanne!! we move on 28 february", "2026-01-14T21:20:00", "Ines")
    pushed = told(4, "ugh and the move got pushed. the removal company messed up so now it's 7 march",
                  "2026-02-06T20:00:00", "Ines")
    assert prepare("conflict-resolution", "What day did we move into the house in the end?", [first, pushed]).direct == (
        "Saturday, 7 March 2026", [4])


def test_a_plan_is_moved_only_by_a_line_dating_it_within_two_months() -> None:
    wedding = told(1, "ok BIG news. Manon is getting married!! the wedding is on 13 June in Annecy", "2026-01-14T21:20:00",
                   "Ines")
    house = told(2, "more news: we signed for a little house!! we move on 28 february", "2026-01-14T21:21:00", "Ines")
    # "news" in common and "move" in the second is no move of the wedding.
    assert redated([wedding, house]) == {}
    concert = told(3, "our winter concert is on 22 November", "2025-10-02T20:15:00", "Ines")
    moved = told(4, "change of plan for the concert, it's moved to the 29th", "2025-11-14T19:30:00", "Ines")
    assert redated([concert, moved]) == {3: moved}


def test_a_plan_long_over_is_not_moved_by_a_later_line() -> None:
    first = told(1, "physio twice a week with seun, 15k per session. first one is thursday 12 march at 9am", "2026-03-09T19:00:00", "Chidi")
    later = told(2, "physio done!! went thu 2nd, then tue 7th (monday was easter monday so seun moved it)",
                 "2026-04-26T19:00:00", "Chidi")
    assert redated([first, later]) == {}  # 12 March was six weeks gone: the session moved is another one
    assert prepare("temporal-reasoning", "what date was my first physio session", [first, later]).direct == (
        "12 March 2026", [1])
    # Told before the planned day, the same line moves it.
    early = told(3, "seun is sick so he moved the physio to friday 13 march", "2026-03-10T19:00:00", "Chidi")
    assert redated([first, early]) == {1: early}


def test_the_end_of_a_stretch_is_its_last_day_in_date_maths() -> None:
    hen = told(1, "i'm organising the hen weekend. Marseille, 29 to 31 May", "2026-01-14T21:20:00", "Ines")
    wedding = told(2, "Manon's wedding is on 13 June in Annecy", "2026-01-14T21:21:00", "Ines")
    assert temporal("How many days are there between the end of the hen weekend and Manon's wedding?",
                    [hen, wedding]).direct[0] == (
        "1 week and 6 days (13 days): the end of the hen weekend 31 May 2026, Manon's wedding 13 June 2026")


def test_the_words_for_going_to_an_event_do_not_name_it() -> None:
    booked = told(1, "dentist thursday the 25th at 8:30, Dr Benali on the Grande Rue", "2025-09-13T21:40:00", "Ines")
    moved = told(2, "dentist cancelled on me btw, Benali's off sick. moved to thursday 9 october, same time",
                 "2025-10-02T20:15:00", "Ines")
    assert temporal("When did I actually see the dentist in the autumn?", [booked, moved]).direct == ("9 October 2025", [2])


def test_a_stay_moved_by_a_later_line_is_measured_on_its_new_days() -> None:
    plan = told(1, "they want me in london for onboarding week in oct, 12-16 oct. need a uk visitor visa",
                "2026-07-09T19:00:00", "Chidi")
    pushed = told(2, "london got pushed a week, the office has an inspection. now flying sun 18 oct, back sat 24 oct",
                  "2026-10-03T19:00:00", "Chidi")
    moved = redated([plan, pushed])
    assert moved == {1: pushed}  # "sat 24 oct" closes the stay: "back" before an abbreviated weekday
    prepared = prepare("temporal-reasoning", "how many days was i actually in london for onboarding", [plan, pushed])
    assert prepared.direct == ("7 days counting both ends (6 nights) (18 October 2026 to 24 October 2026)", [2])


def test_how_far_a_plan_was_moved() -> None:
    left = told(1, "the operation on the left eye is now fixed for Tuesday the 24th of February at 8:00",
                "2026-02-04T10:00:00", "Halina")
    left_moved = told(2, "you will remember the operation that was to be on the 24th. Dr. Nowicka had to go to a "
                         "conference, and it has been moved to next Tuesday, the 10th", "2026-03-03T10:00:00", "Halina")
    right = told(3, "the clinic has fixed the date for the right eye operation: Tuesday the 15th of September",
                 "2026-05-31T10:00:00", "Halina")
    right_moved = told(4, "the right eye operation has been moved again, the equipment needs a service, so it is now "
                          "on Tuesday the 6th of October", "2026-09-08T10:00:00", "Halina")
    notes = [left, left_moved, right, right_moved]
    asked = "By how much did the first eye operation get delayed compared with the original date?"
    assert prepare("temporal-reasoning", asked, notes).direct == (
        "2 weeks (14 days) later: planned for 24 February 2026, moved to 10 March 2026", [1, 2])
    assert prepare("temporal-reasoning", "how much later did the second eye operation happen than first planned?",
                   notes).direct == ("3 weeks (21 days) later: planned for 15 September 2026, moved to 6 October 2026", [3, 4])
    # One line telling both days.
    flat = told(5, "wahala. painter didnt finish the new flat so we did NOT move yesterday. pushed to sat 9 may",
                "2026-04-26T19:00:00", "Chidi")
    assert prepare("temporal-reasoning", "how much later than planned did i end up moving into the flat?",
                   [flat]).direct == ("2 weeks (14 days) later: planned for 25 April 2026, moved to 9 May 2026", [5])
    # Nothing moved: no answer made in code.
    assert prepare("temporal-reasoning", asked, [left, right]).direct is None
    # Told after the fact, weeks after the planned day: the day it moved to, from the line naming it.
    panel = told(6, "final panel interview is next tuesday 3pm lagos time", "2026-04-01T20:00:00", "Chidi")
    flat = told(7, "FINALLY moved on the 9th, new address is flat 3B", "2026-05-29T21:00:00", "Chidi")
    later = told(8, "harbor panel got moved from tue to thu 9th bc one interviewer was sick. did it thu",
                 "2026-04-26T16:40:00", "Chidi")
    assert prepare("temporal-reasoning", "my harbor final panel, what day was it supposed to be and when did it actually happen?",
                   [panel, flat, later]).direct == ("2 days later: planned for 7 April 2026, moved to 9 April 2026", [6, 8])


def test_a_question_about_a_habit_gets_no_one_day_answer() -> None:
    back = told(1, "back playing football since 2 may, ankle fine. the yaba guys r far now so im joining a lekki "
                   "squad, they play sundays 5pm", "2026-05-29T19:00:00", "Chidi")
    assert prepare("conflict-resolution", "when n where do i play football these days?", [back]).direct is None
    assert prepare("conflict-resolution", "when did i start playing football again?", [back]).direct == (
        "2 May 2026", [1])


def test_a_story_asked_as_a_state_reaches_its_lines_by_vector_too() -> None:
    physio, ankle, others = _ankle_saga()
    close = _ankle_cosines(others)
    question = "how did the whole ankle saga go, start to finish?"
    text, cited = prepare("state-tracking", question, [physio, *ankle, *others], similar=close).direct
    assert 1 in cited and "physio at stride" in text


def test_how_long_with_no_unit_is_told_in_the_unit_a_person_would_use() -> None:
    def answer(question: str, first: str, second: str) -> str:
        lines = [ev(1, f"the kitchen job started on {first}", "2025-01-02T10:00:00", "Lena"),
                 ev(2, f"the kitchen job finished on {second}", "2025-01-02T10:00:00", "Lena")]
        for e, day in zip(lines, (first, second), strict=True):
            e.dates.append({"phrase": day, "start": day, "end": day, "granularity": "day", "approximate": False})
        return temporal(question, lines).direct[0]

    asked = "How long was it from the kitchen job starting to the kitchen job finishing?"
    assert answer(asked, "2025-01-01", "2025-01-11").startswith("10 days: the kitchen job starting 1 January 2025")
    assert answer(asked, "2025-01-01", "2025-01-24").startswith("3 weeks and 2 days (23 days): ")
    assert answer(asked, "2025-01-01", "2025-04-01").startswith("3 months (90 days): ")
    # A unit asked is the unit answered.
    assert answer(asked.replace("How long was it", "How many days was it"), "2025-01-01", "2025-04-01").startswith(
        "90 days: ")


def test_a_move_told_as_a_distance_moves_the_plan_it_names() -> None:
    plan = told(1, "Christening confirmed: Sunday 14th June, St Mary's, 11am", "2026-04-19T10:00:00", "Maya")
    hat = told(2, "need to find a hat for the christening", "2026-05-02T10:00:00", "Maya")
    moved = told(3, "Ellie's mum can't do the 14th so they've pushed the christening back a week", "2026-05-20T10:00:00",
                 "Maya")
    assert prepare("temporal-reasoning", "What date is the christening?", [plan, hat, moved]).direct == (
        "21 June 2026", [3])
    # Someone else's plan, or a line that moves nothing the plan names, moves nothing.
    other = told(4, "the dentist pushed my check-up back a week", "2026-05-20T10:00:00", "Maya")
    assert prepare("temporal-reasoning", "What date is the christening?", [plan, other]).direct == ("14 June 2026", [1])


def test_a_move_of_the_way_home_moves_only_the_last_day() -> None:
    trip = told(1, "Booked Lisbon! Flying out Thursday 9/18, back the following Wednesday.", "2025-08-30T21:10:00", "me")
    moved = told(2, "TAP emailed - our return flight got pushed a day later, so we fly home Thursday now.",
                 "2025-09-10T19:45:00", "me")
    prepared = prepare("temporal-reasoning", "When did we fly back from Lisbon?", [trip, moved])
    assert prepared.direct == ("25 September 2025", [1])
    nights = prepare("temporal-reasoning", "How many nights were we in Lisbon?", [trip, moved])
    assert nights.direct[0].startswith("7 nights (18 September 2025 to 25 September 2025)")


def test_a_plan_relisted_or_rebooked_is_moved() -> None:
    hearing = [told(1, "The hearing is listed for 3 February at 10:30.", "2026-01-12T09:00:00", "me"),
               told(2, "Counsel advises that the hearing has been relisted to 5 February.", "2026-01-30T16:00:00", "me"),
               told(3, "Judgment handed down this morning.", "2026-02-27T11:00:00", "me")]
    assert prepare("temporal-reasoning", "How many days after the hearing was judgment handed down?", hearing).direct[0] \
        .startswith("22 days")


def test_a_change_that_names_nothing_moves_the_plan_told_last_and_moves_add_up() -> None:
    surgery = [told(1, "Max's knee surgery is set for 9/10", "2026-09-01T18:00:00", "me"),
               told(2, "Vet is out sick, Max's surgery moved to 9/17", "2026-09-08T12:00:00", "me"),
               told(3, "Another delay 😩 now 9/22", "2026-09-15T09:00:00", "me")]
    assert prepare("temporal-reasoning", "By how many days was Max's surgery delayed in total?", surgery).direct == (
        "12 days later: planned for 10 September 2026, moved to 22 September 2026", [1, 3])
    assert prepare("temporal-reasoning", "When is Max's surgery now?", surgery).direct[0] == "22 September 2026"


def test_a_changed_day_without_its_month_takes_the_month_of_the_plan_it_changes() -> None:
    trip = [told(1, "ibiza!!! 2-9 july 🏝️", "2026-05-01T21:00:00", "me"),
            told(2, "ok changed flights, now 3rd-9th, cheaper", "2026-05-20T12:00:00", "me")]
    assert trip[1].text == "ok changed flights, now 3rd-9th [3–9 May 2026], cheaper"  # the line alone: May
    assert prepare("temporal-reasoning", "how many nights are we in ibiza?", trip).direct[0].startswith(
        "6 nights (3 July 2026 to 9 July 2026)")
    house = [told(1, "Pattersons want us to house-sit while they're in Canada, 1st–15th August", "2026-07-01T19:00:00", "me"),
             told(2, "They've changed flights, now flying out the 3rd, still back the 15th", "2026-07-20T12:00:00", "me"),
             told(3, "Pattersons extending by two days, back on the 17th now", "2026-08-12T18:00:00", "me")]
    assert prepare("temporal-reasoning", "How many nights did we house-sit for the Pattersons?", house).direct[0] \
        .startswith("14 nights (3 August 2026 to 17 August 2026)")

    # A move of house re-dates no plan: "the 6th" stays in December, not in the month of the next trip.
    flat = [told(1, "signed a flat!! 7 orbell st, moving in sat 6 dec", "2025-11-09T19:00:00", "me"),
            told(2, "wanaka after xmas!! 27 dec to 2 jan", "2025-10-01T19:00:00", "me"),
            told(4, "Updated: Wanaka is now 29 December to 3 January.", "2025-11-26T19:00:00", "Assistant"),
            told(3, "moved in on the 6th, orbell st is sick", "2025-12-15T19:00:00", "me")]
    assert prepare("temporal-reasoning", "How long after moving into Orbell St did we leave for Wanaka?",
                   flat).facts[:2] == ["moving into Orbell St: 6 December 2025", "we leave for Wanaka: 29 December 2025"]


def test_a_plan_put_off_for_months_is_moved_when_the_line_says_so() -> None:
    gig = [told(1, "got tix for the wolf alice gig!!! 12 june", "2026-02-14T22:00:00", "me"),
           told(2, "gig rescheduled 😩 new date 9 oct. refunds available. not refunding obvs", "2026-04-22T08:30:00", "me")]
    assert prepare("temporal-reasoning", "what date is the wolf alice gig?", gig).direct == ("9 October 2026", [2])


def test_when_a_plan_is_now_gives_its_time_of_day_after_the_changes() -> None:
    review = [told(1, "Annual performance review scheduled: 14 October, 11:00.", "2026-09-28T09:00:00", "me"),
              told(2, "My manager has requested moving the review to 16 October, same time.", "2026-10-02T15:00:00", "me"),
              told(3, "The review has been moved back to the original date, 14 October, but at 15:00.",
                   "2026-10-07T10:00:00", "me")]
    assert prepare("temporal-reasoning", "When is my annual review now?", review).direct == (
        "14 October 2026 at 3pm", [1, 3])
    # A time without am/pm takes the meridiem of the one it replaces; one asked for and not had is none.
    booking = [told(1, "Booked Rosa's for Valentine's, 7pm", "2026-02-01T12:00:00", "me"),
               told(2, "Rosa's called, they overbooked, moved us to 8:15", "2026-02-05T18:00:00", "me"),
               told(3, "Called Rosa's to ask about 7:30 instead but they had nothing, keeping our slot",
                    "2026-02-12T20:00:00", "me")]
    assert prepare("temporal-reasoning", "What time is our reservation at Rosa's?", booking).direct[0].startswith("8:15pm")
    # A run time is no time of day.
    runs = [told(1, "parkrun pb 24:10", "2025-05-03T10:00:00", "me")]
    assert prepare("temporal-reasoning", "What time is my parkrun?", runs).direct is None


@pytest.mark.parametrize("text, days", [
    ("pushed the christening back a week", 7), ("the start is moved one week later", 7),
    ("Launch postponed by one week following QA findings.", 7), ("the flight is changed to one day earlier", -1),
    ("moved it 2 days earlier", -2), ("I moved a week ago", None), ("moving house in two weeks", None),
])
def test_how_far_a_line_moves_a_plan(text: str, days: int | None) -> None:
    told = _shift_phrase(text)
    assert (told[0] if told else None) == days


def test_a_word_opening_a_sentence_of_the_question_names_nobody() -> None:
    shifts = [ev(1, "Shift finish, 8 hours", "2026-06-08T22:00:00", "me"), ev(2, "Double shift finish, I am dead",
                                                                               "2026-06-13T23:00:00", "me")]
    facts = timeline("How many shifts did I work last week? Count the double as two.", shifts).facts
    assert facts[0].startswith("number of shifts: 2 ")


def test_a_series_takes_every_reading_of_a_note_each_on_the_day_written_before_it() -> None:
    runs = [
        Evidence(1, "parkrun!! missed the 28th [28 March 2026]. so my first one was sat 4th april [4 April 2026], 38:40. "
                    "then sat just gone, the 11th [11 April 2026], 37:15!!!", "2026-04-14T21:00:00", speaker="Shona"),
        Evidence(2, "parkrun update: did sat 25th april [25 April 2026], 35:58. then yesterday [16 May 2026] got a PB!!! 34:49.",
                 "2026-05-17T18:00:00", speaker="Shona"),
    ]
    found = timeline("How have my parkrun times changed since my first one?", runs)
    assert found.direct == ("From 38:40 (4 April 2026) to 34:49 (16 May 2026): 38:40 (4 April 2026) → 37:15 (11 April 2026) "
                            "→ 35:58 (25 April 2026) → 34:49 (16 May 2026)", [1, 2])
    # Not a question about how it went: the series is a fact, the model answers.
    assert timeline("Sum up my parkruns so far.", runs).direct != found.direct
    # A number asked, with "done since" in it: no series of times.
    assert timeline("How many parkruns have I done since March?", runs).direct != found.direct


def test_a_series_of_pay_reads_the_amounts_of_money_not_the_hours() -> None:
    pay = [
        Evidence(1, "i work at the café, ~15h a week at $16.10 an hour", "2025-11-27T21:00:00", speaker="Margaux"),
        Evidence(2, "got a raise at the café!! $16.75 now, still 12h a week", "2026-02-25T21:00:00", speaker="Margaux"),
    ]
    assert timeline("How did my pay at the café change?", pay).direct == (
        "From $16.10/h (27 November 2025) to $16.75 (25 February 2026): $16.10/h (27 November 2025) → $16.75 (25 February 2026)",
        [1, 2])
    # A rate is read by its unit, from a line that never names the topic too ("a-grade at 41 an hr").
    more = pay + [Evidence(3, "licensed now! a-grade at 41 an hr from 15 june [15 June 2026]", "2026-05-31T22:02:00",
                           speaker="Margaux")]
    assert timeline("How did my pay at the café change?", more).direct[0].endswith("→ 41/h (15 June 2026)")  # from that day
    # A change told beside a reading is no reading: "up 1.6 kg in a month".
    weights = [Evidence(1, "weight is 71.5 kg today", "2025-09-02T21:00:00", speaker="Brodie"),
               Evidence(2, "weight 73.1 kg, up 1.6 kg in a month", "2025-09-28T21:00:00", speaker="Brodie")]
    assert timeline("how's my weight gone?", weights).direct[0] == (
        "From 71.5 kg (2 September 2025) to 73.1 kg (28 September 2025): 71.5 kg (2 September 2025) → 73.1 kg (28 September 2025)")


def test_a_sum_answers_only_a_question_that_asks_for_a_total() -> None:
    told = [
        Evidence(1, "pilot study: 14 kids signed up", "2026-01-28T21:00:00", speaker="Margaux"),
        Evidence(2, "two kids dropped out of the pilot study", "2026-03-02T21:00:00", speaker="Margaux"),
        Evidence(3, "two more physio sessions since we talked, the 19th [19 June 2025] and then thursday the 3rd [3 July 2025]",
                 "2025-07-08T21:00:00", speaker="Kwame"),  # dated by its labels
    ]
    assert timeline("How many kids ended up in my pilot study?", told[:2]).direct is None
    assert timeline("How many kids have signed up to my pilot study in total?", told[:2]).direct is not None
    # The two of "two more sessions" is its two dated events, one each: no number above one to add up.
    assert timeline("How many physio sessions did I have in total?", told[2:]).direct is None
    assert count_occurrences("physio", told[2:]).describe_events().startswith("number of physio: 2 ")


def test_the_newest_line_with_two_days_answers_the_one_written_by_what_is_asked() -> None:
    lines = [
        Evidence(1, "lyon flights are booked: out sept 22 [22 September 2026], back sept 28 [28 September 2026]",
                 "2026-06-04T20:00:00", speaker="Margaux",
                 dates=[day("2026-09-22", "22 September 2026"), day("2026-09-28", "28 September 2026")]),
        Evidence(2, "lyon change: out on the 21st [21 September 2026] now, a day earlier, and back on the 26th "
                    "[26 September 2026], landing at 2:10pm", "2026-09-06T11:00:00", speaker="Margaux",
                 dates=[dict(day("2026-09-21", "21 September 2026"), phrase="the 21st"),
                        dict(day("2026-09-26", "26 September 2026"), phrase="the 26th")]),
    ]
    assert recency("When do I fly back from Lyon?", lines).direct == ("26 September 2026", [2])
    assert recency("When do I fly out to Lyon?", lines).direct == ("21 September 2026", [2])


def test_a_later_line_that_says_it_changed_replaces_the_earlier_one_on_a_lookup() -> None:
    from edgemem.recall.preprocess import changed, prepare

    first = ev(1, "ellie's joined a new club. coach is called jade, she seems lovely.", "2025-09-18T20:00:00")
    other = ev(2, "ellie scored twice on saturday!", "2025-10-05T20:00:00")
    later = ev(3, "ellie says new coach marcus is actually ok.", "2026-01-21T20:00:00")
    reply = ev(4, "Noted: Ellie's coach is now Marcus.", "2026-01-21T20:00:01", speaker="Assistant")
    question = "Who's Ellie's football coach?"
    assert {old: new.note_id for old, new in changed(question, [first, other, later, reply]).items()} == {1: 3}
    prepared = prepare("targeted-extraction", question, [first, other, later, reply])
    assert ids(prepared.evidence) == [2, 3, 4] and prepared.dropped == [1]  # the lookup shows the new coach only
    # no later line of that person says it changed: nothing is outdated
    assert changed(question, [first, other]) == {}
    assert set(changed("Who's her coach?", [first, later])) == {1}  # its one content term is all it needs
    assert changed("Which club did Ellie join?", [first, later]) == {}  # the later line holds "ellie" only
    # a line naming a new one of what is asked needs no other word of the question
    told = ev(5, "new coach from jan is marcus", "2026-01-10T20:00:00")
    assert {old: new.note_id for old, new in changed(question, [first, told]).items()} == {1: 5}
    boots = ev(6, "got her new football boots today", "2026-01-10T20:00:00")  # new boots: not a new coach
    assert changed(question, [first, boots]) == {}


def test_a_return_that_names_no_trip_is_the_other_anchors_trip_coming_home() -> None:
    september = told(1, "durban this weekend, fly down friday the 5th, flying back home sunday the 7th",
                     "2025-09-01T20:00:00", "Nomvula")
    christmas = told(2, "christmas sorted: fly down to durban on 19 december, back home on 4 january",
                     "2025-12-01T20:00:00", "Nomvula")
    question = "How many days were there between flying down to Durban for Christmas and flying back home?"
    # "flying back home" is Christmas's return, not September's "flying back home" line.
    assert temporal(question, [september, christmas]).direct[0] == (
        "16 days: flying down to Durban for Christmas 19 December 2025, flying back home 4 January 2026")


@pytest.mark.parametrize(("question", "account"), [
    ("Summarise what's been going on with Josh.", True),
    ("give me a rundown of the whole shoulder business", True),
    ("what do you know about Noor?", True),
    ("What's coming up with Dave?", True),
    ("What happened with the van this year?", True),
    ("how has my work life changed this past year?", True),
    ("What have I done on the allotment since last autumn?", True),
    ("Catch me up on Ama's piano.", True),
    ("What do Melanie's kids like?", False),
    ("Where has Maria made friends?", False),
    ("What are the names of John's children?", False),
])
def test_a_broad_question_asks_for_an_account_or_for_a_few_facts(question, account) -> None:
    from edgemem.recall.preprocess import asks_account

    assert asks_account(question) is account


def test_a_broad_question_asking_for_a_few_facts_gets_no_digest_but_the_diverse_lines() -> None:
    from edgemem.recall.preprocess import diversify

    account = diversify("Summarise what's been going on with Josh.", _josh())
    assert account.direct is not None and account.direct[0].startswith("What your notes say about Josh")
    facts = diversify("What does Josh do at weekends?", _josh())
    assert facts.direct is None and facts.evidence  # the model answers from the lines


def test_a_time_told_in_words_and_a_count_told_as_a_word_are_readings() -> None:
    swims = [
        Evidence(1, "On Wednesday [7 May 2025] I swam 1,000 metres in 32 minutes 40 seconds at the pool.",
                 "2025-05-11T21:30:00", speaker="Aiko"),
        Evidence(2, "This morning [25 June 2025] I swam 1,000 metres in 31 minutes 50 seconds. Progress!",
                 "2025-06-25T20:10:00", speaker="Aiko"),
        Evidence(3, "I signed up for the sea swim again. On Friday [3 July 2026] my 1,000 metres took 27 minutes 45 seconds.",
                 "2026-07-05T20:15:00", speaker="Aiko"),
    ]
    # Minutes and seconds are one reading, written as a clock reads, not "32 min" with its seconds lost.
    assert timeline("How has my 1,000 m swim time changed over the past year?", swims).direct == (
        "From 32:40 (7 May 2025) to 27:45 (3 July 2026): 32:40 (7 May 2025) → 31:50 (25 June 2025) → "
        "27:45 (3 July 2026)", [1, 2, 3])
    migraines = [
        Evidence(1, "In April I had nine migraine days, so she started me on a preventive.", "2025-05-11T21:30:00",
                 speaker="Aiko"),
        Evidence(2, "July was a good month: only five migraine days, despite the heat.", "2025-08-03T22:05:00",
                 speaker="Aiko"),
        Evidence(3, "Only one migraine day in June, and two new clients.", "2026-07-05T20:15:00", speaker="Aiko"),
    ]
    # "The number of …" asks for a count only without a word of change; "nine" before the topic is 9,
    # "two" before another word is no reading.
    found = timeline("How has the number of migraine days per month changed since I started counting?", migraines)
    assert found.direct == ("From 9 migraine (11 May 2025) to 1 migraine (5 July 2026): 9 migraine (11 May 2025) → "
                            "5 migraine (3 August 2025) → 1 migraine (5 July 2026)", [1, 2, 3])
    assert timeline("How many migraine days have I had?", migraines).direct != found.direct


def test_a_later_line_that_says_instead_or_moved_replaces_the_earlier_one_on_a_now_question() -> None:
    from edgemem.recall.preprocess import changed

    told = [
        Evidence(1, "Ellie's football training is on Tuesdays at the rec", "2025-09-02T19:00:00", speaker="Shona"),
        Evidence(2, "Ellie's football training is on Wednesdays instead, the rec got double booked",
                 "2025-11-02T19:00:00", speaker="Shona"),
        Evidence(3, "Ellie's football training moved to the school pitch", "2026-01-12T19:00:00", speaker="Shona"),
    ]
    # "instead" and "moved" say it changed (no word "changed" in either line).
    assert changed("When is Ellie's football training now?", told[:2]) == {1: told[1]}
    assert changed("When is Ellie's football training now?", [told[0], told[2]]) == {1: told[2]}
    assert changed("When is Ellie's football training now?", [told[0]]) == {}


def test_the_newest_line_on_a_now_question_may_say_it_in_other_words() -> None:
    told = [
        Evidence(1, "weighed 73.1 this morn [28 September 2025]", "2025-09-28T21:15:00", speaker="Brodie"),
        Evidence(2, "off to the coast for the long weekend", "2026-06-01T21:15:00", speaker="Brodie"),
        Evidence(3, "76.3 kg. almost there", "2026-07-12T16:45:00", speaker="Brodie"),
    ]
    question = "What do I weigh now?"
    # By its words alone, the only line that says "weigh" is the newest on it.
    assert recency(question, told).facts[0].startswith("Latest on what is asked: (28 September 2025, Brodie) weighed 73.1")
    # Close to the question's embedding as the closest line is, a newer line in other words is newer news;
    # a line far from it (the coast) is not about it, however new.
    similar = {1: 0.456, 2: 0.21, 3: 0.471}
    assert recency(question, told, similar=similar).facts[0] == (
        "Latest on what is asked: (12 July 2026, Brodie) 76.3 kg. almost there")
    assert recency(question, told[:2], similar=similar).facts[0].startswith("Latest on what is asked: (28 September 2025")

"""answer.fact_only: the words an answer repeats from its question, cut from its start and its close;
answer.date_not_told: a date asked, a month or a year told."""

import pytest

from edgemem.recall.answer import date_not_told, fact_only


@pytest.mark.parametrize(("question", "answer", "expected"), [
    # The subject and the asked phrase repeated: the fact between them is left.
    ("What activity did Maria take up with her friends from church in August 2023?",
     "Maria took up community work with her friends from church in August 2023.", "Took up community work"),
    ("How does Jon feel about the opening night of his dance studio?",
     "Jon feels excited about the opening night of his dance studio.", "Excited"),
    ("What did Gina receive from a dance contest?", "Gina received a trophy from a dance contest.", "Trophy"),
    # The closing phrase is cut from its first preposition, not from the first repeated word.
    ("How did the flood impact the homes in John's old area?",
     "The flood damaged many homes in John's old area.", "Damaged many homes"),
    # The asker's "my" is the answer's "your".
    ("What did I name my dog?", "You named your dog Biscuit.", "Biscuit."),
    # A typographic apostrophe keeps the possessive one word: not "S son got into an accident".
    ("What happened to Melanie's son on the road trip?", "Melanie’s son got into an accident on the road trip.",
     "Got into an accident"),  # nothing cut at the end: its stop stays
])
def test_repeated_words_are_cut(question: str, answer: str, expected: str) -> None:
    assert fact_only(question, answer) == expected


@pytest.mark.parametrize(("question", "answer"), [
    ("What did John buy?", "A red bike."),  # three words: nothing to cut
    ("Did Melanie go to the beach?", "Yes, Melanie went to the beach last week."),  # yes/no
    ("Why did Maria help her cousin?", "Maria helped her cousin because she lost her flat."),  # a reason restates
    ("What does Gina say about the opening?", "Gina says \"Can't wait for the opening!\""),  # a quote
    ("When is the dentist?", "The dentist is on Friday (12 June 2026)."),  # a date said as told
    ("What did I cook?", "Lasagne\nand a salad"),  # lines
    ("What does Sam eat?", "Sam does not eat meat."),  # a negation would open it
    ("What is Jon's favourite colour?", "Jon's favourite colour is"),  # nothing left: kept whole
])
def test_kept_whole(question: str, answer: str) -> None:
    assert fact_only(question, answer) == answer


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        ("what date is the Dublin half marathon?", "September 2026",
         "The exact date is not mentioned in your notes (they say: September 2026)."),
        ("When is the wedding exactly?", "2027.", "The exact date is not mentioned in your notes (they say: 2027)."),
        ("what date is the autumn concert?", "Saturday 31 October 2026", None),
        ("which date did we move in?", "the 4th, a Saturday", None),
        ("When is the wedding?", "2027", None),  # no date asked: the year answers
        ("what date did we fly back?", "I could not find reliable information.", None),
    ],
)
def test_a_date_asked_and_a_month_or_year_told(question: str, answer: str, expected: str | None) -> None:
    assert date_not_told(question, answer) == expected

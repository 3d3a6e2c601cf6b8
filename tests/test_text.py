"""The text code both paths share (edgemem.text): one tokenizer, one stopword list, one day label."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from edgemem.errors import BadInput
from edgemem.text import (
    STOPWORDS,
    check_text,
    day_label,
    extract_entities,
    extract_keywords,
    iso_day_label,
    tokens,
)


def test_day_labels_are_english_whatever_the_locale() -> None:
    assert day_label(date(2023, 5, 8)) == "8 May 2023"
    assert day_label(datetime(2023, 12, 31, 23, 59)) == "31 December 2023"
    assert day_label(date(2023, 5, 8), year=False) == "8 May"
    assert day_label(date(2023, 5, 8), month=False, year=False) == "8"
    assert iso_day_label("2023-05-08T13:56:00") == iso_day_label("2023-05-08") == "8 May 2023"


def test_tokens_keywords_and_entities() -> None:
    text = 'Caroline said the "Charlotte\'s Web" reading at Lake Tahoe was amazing'
    assert tokens("Don't stop-believing!") == ["don't", "stop-believing"]
    assert "amazing" in STOPWORDS and "amazing" not in extract_keywords(text)
    # Capitalised words after the first rank first, then longer words; stopwords never.
    assert extract_keywords(text) == ["charlotte's", "tahoe", "lake", "web", "caroline", "reading", "said"]
    assert "Lake Tahoe" in extract_entities(text) and "Charlotte's Web" in extract_entities(text)


@pytest.mark.parametrize("bad, reason", [
    (3, "must be a string"),
    ("a\x00b", "NUL bytes"),
    ("   ", "is empty"),
    ("x" * 20, "the limit is"),
    ("\ud800", "not valid Unicode"),
])
def test_check_text_refuses_with_one_line(bad, reason) -> None:
    with pytest.raises(BadInput, match=reason) as info:
        check_text(bad, 10, "question")
    assert info.value.message.startswith("question") and "\n" not in info.value.message
    assert check_text("fine", 10) == "fine"


def test_words_and_names_in_any_latin_script() -> None:
    from edgemem.text import extract_entities, tokens

    assert tokens("Oisín's orthodontist and Sinéad") == ["oisín's", "orthodontist", "and", "sinéad"]
    assert extract_entities("Did Zoë meet José at the Bank of Ireland?") == ["Zoë", "José", "Bank of Ireland"]
    assert extract_entities("Łukasz and Ødegaard, McDonald's") == ["Łukasz", "Ødegaard", "McDonald's"]


def test_a_titles_full_stop_ends_no_sentence() -> None:
    from edgemem.text import SENTENCE_END

    assert SENTENCE_END.split("the landlord is a sweet old man, sr. medeiros. he knocked £20 off! Dr. Lis agreed.") == [
        "the landlord is a sweet old man, sr. medeiros.", "he knocked £20 off!", "Dr. Lis agreed."]

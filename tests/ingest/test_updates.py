"""The update rules that make SUPERSEDES links without a model call (edgemem.ingest.updates)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from edgemem.ingest.updates import search_terms, update_reason

LOCOMO_DEV = Path("/work/shared/data/locomo/locomo-dev.json")


@pytest.mark.parametrize(("old", "new", "why"), [
    ("Researching adoption agencies, it's been a dream to have a family.",
     "Guess what I did this week? I applied to adoption agencies! It's a big decision.", "stage"),
    ("I took the first step towards becoming a mom - I applied to adoption agencies!",
     "Woohoo! I passed the adoption agency interviews last Friday!", "stage"),
    ("I'm thinking about a master's degree in nursing at the city college.",
     "I enrolled in the nursing master's at the city college.", "stage"),
    ("I signed up for the marathon in Berlin.", "I quit the Berlin marathon, my knee is bad.", "stage"),
    ("I live in Paris with two cats.", "We just moved to Berlin last week!", "home"),
    ("I work as a nurse at St Mary's hospital.", "I quit my job at the hospital and teach now.", "job"),
    ("My boyfriend Sam is coming over tonight.", "Sam and I broke up last month.", "partner"),
])
def test_an_update_is_recognised(old, new, why):
    assert update_reason(old, new) == why
    assert search_terms(new) is not None


@pytest.mark.parametrize(("old", "new"), [
    # the same object word once is not enough: the class is not over because a project is
    ("I just signed up for a pottery class yesterday.", "I finished another pottery project, want to see a pic?"),
    # a later stage of something else
    ("I'm looking into counseling as a career.", "I applied to adoption agencies this week!"),
    # an earlier-or-equal stage is not an update
    ("I applied to adoption agencies!", "I'm still researching adoption agencies, so many of them."),
    # repeating a change is not a new change ("since I lost my job" after "I lost my job at Door Dash")
    ("Unfortunately, I also lost my job at Door Dash this month.", "Since I lost my job at Door Dash, things have been tough."),
    # advice to someone else is no stage of one's own ("research" the noun)
    ("Do your research and find an adoption agency or lawyer.", "I passed the adoption agency interviews!"),
    # a change of one domain does not update another
    ("I work as a nurse at St Mary's hospital.", "We just moved to Berlin last week!"),
])
def test_what_is_not_an_update(old, new):
    assert update_reason(old, new) is None


def test_speaker_names_are_no_shared_object():
    old = "Melanie, I'm thinking about Melanie's idea for the garden."
    new = "Hi Melanie! I signed up, Melanie, for a painting class."
    assert update_reason(old, new, frozenset({"melanie"})) is None


def test_most_notes_state_no_change_and_cause_no_search():
    for text in ("Thanks, Mel! Your kind words mean a lot.", "I went to a LGBTQ support group yesterday.",
                 "I love painting landscapes.", "What did you do last weekend?"):
        assert search_terms(text) is None
    assert search_terms("I applied to adoption agencies!") == "adoption agencies"


@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason="LoCoMo dev file not present")
def test_on_locomo_dev_only_the_adoption_steps_are_updates():
    """Every (earlier, later) turn pair of the same speaker on another day in both dev conversations:
    the rules find Caroline's adoption steps and nothing else (precision over recall: a wrong
    SUPERSEDES marks a true note stale)."""
    found = []
    for sample in json.loads(LOCOMO_DEV.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        names = frozenset({conv["speaker_a"].lower(), conv["speaker_b"].lower()})
        turns = [(key, t["speaker"], t["dia_id"], t["text"])
                 for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
                 for t in conv[key]]
        for i, (session, speaker, dia, text) in enumerate(turns):
            if search_terms(text, names) is None:
                continue
            found += [(old_dia, dia) for old_session, old_speaker, old_dia, old_text in turns[:i]
                      if old_speaker == speaker and old_session != session and update_reason(old_text, text, names)]
    assert found == [("D2:8", "D13:1"), ("D2:8", "D19:1"), ("D13:1", "D19:1")]

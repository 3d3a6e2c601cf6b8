"""An answer cites the notes it rests on, not every packed note (real store and embeddings)."""

from __future__ import annotations

import pytest

from edgemem.recall import pipeline
from edgemem.recall.evidence import Evidence, supporting
from edgemem.store import profile as profile_store
from recall_fakes import FixedRouter, remembered

ORCHIDS = "My sister Ana's birthday is 14 March; she loves orchids."




@pytest.fixture
def engine(settings, embedder):
    eng, llm, ids = remembered(settings, embedder, [
        ("2024-02-01T09:00:00", ORCHIDS),
        ("2024-02-02T09:00:00", "Ana's new flat is near the station."),
        ("2024-02-03T09:00:00", "I'm reading The Phoenix Project by Gene Kim."),
        ("2024-02-04T09:00:00", "Dentist appointment on 3 April."),
    ])
    yield eng, llm, ids
    eng.close()


def ask(eng, llm, question, tag):
    return pipeline.run(eng.store.conn, question, llm=llm, embed=eng.runtime.embed, router=FixedRouter(tag))


def test_readme_example_cites_only_the_orchid_note(engine) -> None:
    eng, llm, ids = engine
    llm.enqueue("Bring orchids — Ana loves them.")
    out = ask(eng, llm, "What should I bring to Ana's birthday?", "targeted-extraction")
    assert out.text == "Orchids — Ana loves them."  # the question's "bring" is not said again (answer.fact_only)
    assert len(out.trace["used"]) > 1  # more was packed than is cited
    assert out.note_ids == [ids[ORCHIDS]] and out.trace["cite_reason"] == "overlap"


def test_profile_injection_combines_the_profile_with_the_notes(engine) -> None:
    eng, llm, ids = engine
    with eng.store.transaction() as conn:
        profile_store.upsert(conn, "user/preference/gift_style", "handmade or living gifts",
                             valid_from="2024-01-01T00:00:00", note_id=ids["Dentist appointment on 3 April."])
    # First the lines naming Ana are read for what suits her (answer.gift_suggestion); a reply naming
    # nothing they say leaves the suggestion to the profile path.
    llm.enqueue('{"facts": ["a pony"]}', "Bring a potted orchid: Ana loves orchids, and you prefer living gifts.", '"yes"')
    out = ask(eng, llm, "What should I bring to Ana's birthday?", "profile-injection")
    assert "What do the notes say of ana that matters here?" in llm.calls[0].messages[-1]["content"]
    prompt = llm.calls[1].messages[-1]["content"]
    # the profile fact and the note it should be combined with, side by side (the note's date resolved)
    assert "user — gift style: handmade or living gifts (preference)" in prompt
    assert "My sister Ana's birthday is 14 March [14 March 2024]; she loves orchids." in prompt
    assert "concrete suggestion" in llm.calls[1].messages[0]["content"]
    assert ids[ORCHIDS] in out.note_ids and ids["I'm reading The Phoenix Project by Gene Kim."] not in out.note_ids


def test_supporting_matches_numbers_and_date_labels_and_falls_back_to_the_top_note() -> None:
    items = [
        Evidence(1, "My gym locker code is 4512.", "2023-06-02T09:00:00", score=0.2),
        Evidence(2, "I went to the support group yesterday [7 May 2023].", "2023-05-08T09:00:00", score=0.9,
                 dates=[{"label": "7 May 2023"}]),
        Evidence(3, "The pottery class starts soon.", "2023-05-25T09:00:00", score=0.5),
    ]
    assert [e.note_id for e in supporting("What is my locker code?", "4512", items)[0]] == [1]
    assert [e.note_id for e in supporting("When did I go to the support group?", "7 May 2023", items)[0]] == [2]
    chosen, why = supporting("Anything else?", "Nothing comes to mind here.", items)
    assert ([e.note_id for e in chosen], why) == ([2], "top_ranked")

"""A gift for someone: the people a question asks it for, and the suggestion read off the lines naming them."""

from __future__ import annotations

import json

from edgemem.engine import Engine
from edgemem.recall import pipeline, tiers
from edgemem.recall.answer import (
    Drafted, free_suggestion, gift_for, gift_suggestion, is_person, suggested_for, suggestion_for, suggestion_lines,
)
from edgemem.recall.evidence import Evidence
from edgemem.runtime.fake import ScriptedLLM
from recall_fakes import FixedRouter


def test_the_people_a_gift_question_names() -> None:
    assert gift_for("what should i get finn for his next bday?") == ["finn"]
    assert gift_for("Emil's birthday is coming up, what should I get him?")[0] == "emil"
    assert gift_for("mums bday is coming up again, gift ideas?") == ["mum"]
    assert gift_for("Suggest a present for mémé.") == ["mémé"]
    assert gift_for("sipho graduates in december, what should i get him?") == ["sipho"]
    # no gift asked: a meal, an outing or a plan is no gift, whoever it is for
    assert gift_for("What should I cook for Christmas lunch when mama's staying with us?") == []
    assert gift_for("Plan me and Ana a weekend away in April") == []
    # a text to write is no gift, though it "gets" something booked
    assert gift_for("Can you write the text I'd send to get Figue's weigh-in booked?") == []


FINN = [
    Evidence(1, "got her a meyer lemon tree $45, she loved it. finn made the timaru boys 1st XV btw, massive crusaders fan too",
             "2025-08-02T20:00:00", speaker="Kai"),
    Evidence(2, "finns 17th is on the 9th. any gift ideas? budget 150ish", "2025-11-26T20:00:00", speaker="Kai"),
]


def test_a_gift_is_what_the_lines_naming_them_say_they_like() -> None:
    llm = ScriptedLLM([json.dumps({"likes": ["crusaders fan", "1st XV", "video games"]})])
    spent = Drafted(text="")
    found = gift_suggestion(llm, "finn", FINN, spent=spent)
    # "video games" is in no line: the model's own idea, left out; the lines holding the rest are cited
    assert found.text() == "Something to do with what Finn likes, from your notes: crusaders fan or 1st XV."
    assert found.basis() == " (your notes on Finn: crusaders fan; 1st XV)"
    assert found.cited == [1]
    assert spent.prompt_tokens > 0 and "finn" in llm.calls[0].messages[-1]["content"]
    # nothing the lines say: no suggestion (the usual path answers)
    assert gift_suggestion(ScriptedLLM([json.dumps({"likes": ["golf"]})]), "finn", FINN, spent=Drafted(text="")) is None


def test_a_gift_question_reads_the_lines_that_name_the_person(settings, embedder) -> None:
    llm = ScriptedLLM([json.dumps({"likes": ["rugby", "the Crusaders"]}), "**A Crusaders jersey.** He plays rugby.\nEnjoy!"])
    eng = Engine.open(settings, llm=llm, embedder=embedder, steps=[])
    try:
        for when, text in [("2025-08-02T20:00:00", "finn made the 1st XV at rugby, he's a massive fan of the Crusaders"),
                           ("2025-09-10T20:00:00", "dentist on friday, ugh"),
                           ("2025-10-01T20:00:00", "finn wants to come up for the Crusaders game on the 21st")]:
            eng.remember(text, when=when, speaker="Kai", process=True)
        assert [e.text[:9] for e in tiers.naming_lines(eng.store.conn, "finn", eng.runtime.embed)] == ["finn made", "finn want"]
        out = pipeline.run(eng.store.conn, "what should i get finn for his next bday?", llm=llm, embed=eng.runtime.embed,
                           router=FixedRouter("profile-injection"))
    finally:
        eng.close()
    # the model's own suggestion (markup and a third sentence dropped) leads; what it rests on follows
    assert out.text == "A Crusaders jersey. He plays rugby. (your notes on Finn: rugby; the Crusaders)"
    assert len(out.note_ids) == 2 and out.trace["verdict"] == "computed"
    assert len(llm.calls) == 2  # the constrained call and the suggestion, no answer or judge after them
    shown = llm.calls[1].messages[-1]["content"]  # the suggestion read the lines naming Finn and the user's own
    assert "finn made the 1st XV" in shown and "dentist on friday" in shown
    assert shown.rstrip().endswith("Request: what should i get finn for his next bday?")


def test_a_suggestion_for_someone_that_is_no_gift_names_them() -> None:
    assert suggestion_for("What should I cook for Christmas lunch when mama's staying with us?")[:1] == ["mama"]
    assert "brisk" in suggestion_for("I want to bring Brisk a treat home from the ship, any idea what?")
    assert {"nina", "diego"} <= set(suggestion_for("What could I cook when Nina and Diego come over?"))
    assert suggestion_for("plan my sunday for me") == []


MAMA = [
    Evidence(1, "Mama's sugar was 9.2 again, the clinic says she must cut the sugar", "2025-06-02T20:00:00", speaker="Nomvula"),
    Evidence(2, "took Mama to the Pinetown clinic, then she spent the afternoon in her garden", "2025-07-02T20:00:00",
             speaker="Nomvula"),
    Evidence(3, "flights to Durban booked, then home to mama for the weekend", "2025-08-02T20:00:00", speaker="Nomvula"),
]
DURBAN = [Evidence(4, "a week in Durban, hot in Durban", "2025-08-02T20:00:00", speaker="Nomvula"),
          Evidence(5, "we stayed at Durban North again", "2025-09-02T20:00:00", speaker="Nomvula")]


def test_a_person_is_written_with_a_capital_and_is_not_where_things_are() -> None:
    assert is_person("mama", MAMA)  # a family role
    assert is_person("sigrid", [Evidence(1, "cooking for Sigrid tonight, she's vegetarian", "2025-06-02T20:00:00")])
    assert not is_person("durban", DURBAN)  # written "in Durban", "at Durban North": a place
    assert not is_person("dinner", [Evidence(1, "dinner with Ana at the Thai place", "2025-06-02T20:00:00"),
                                    Evidence(2, "we had dinner at home", "2025-06-03T20:00:00")])


def test_a_suggestion_suits_what_the_lines_say_they_like_and_need() -> None:
    asked = "What should I cook for Christmas lunch when mama's staying with us?"
    assert suggested_for("Draft a message to book Pepper's check-up", [("pepper", MAMA)]) is None
    # a yes or no about someone asks no suggestion
    assert suggested_for("Would Mama likely have Dr. Seuss books on her bookshelf?", [("mama", MAMA)]) is None
    label, lines = suggested_for(asked, [("mama", MAMA)])
    assert label == "mama" and [e.note_id for e in lines] == [1, 2, 3]
    llm = ScriptedLLM([json.dumps({"facts": ["must cut the sugar", "her garden", "loves sushi"]})])
    found = gift_suggestion(llm, label, lines, spent=Drafted(text=""), question=asked)
    # "loves sushi" is in no line: left out; the question is shown to the model with the lines
    assert found.text() == "Something that suits Mama — your notes say: must cut the sugar; her garden."
    assert found.cited == [1, 2] and asked in llm.calls[0].messages[-1]["content"]


def test_a_name_the_question_capitalises_is_someone_however_the_notes_write_it() -> None:
    lines = [Evidence(1, "the date w dev went really well", "2025-11-02T20:00:00"),
             Evidence(2, "dev met ellie n callum properly, did a roast", "2026-02-16T20:00:00")]
    assert not is_person("dev", lines)
    assert is_person("dev", lines, "What should I cook for Sunday dinner when Dev and the kids come round?")


def test_a_free_suggestion_reads_the_users_best_lines_and_the_persons() -> None:
    own = [Evidence(10 + i, f"line {i} about dinner", f"2025-0{i + 1}-01T20:00:00", speaker="Kai", score=i / 10)
           for i in range(9)]
    own += [Evidence(30, "Noted: dinner on Friday.", "2025-09-30T20:00:00", speaker="Assistant", score=0.99),
            Evidence(-5, "(computed) number of dinners: 2", "", kind="summary", score=0.98)]
    lines = suggestion_lines(own, [("mama", MAMA), ("ana", [own[8]])])
    # the eight best of the user's own lines (no assistant echo, no computed fact), then the person's, oldest first
    assert [e.note_id for e in lines] == [11, 12, 13, 14, 15, 1, 16, 2, 17, 3, 18]  # 18 once, though Ana's too


def test_a_free_suggestion_is_none_when_the_model_finds_nothing() -> None:
    spent = Drafted(text="")
    llm = ScriptedLLM(["Chicken stew with less sugar, then an afternoon in her garden. She will love it. Truly."])
    text, cited = free_suggestion(llm, "What should I cook when mama's staying?", MAMA, spent=spent)
    assert text == "Chicken stew with less sugar, then an afternoon in her garden. She will love it."
    assert cited == [2] and spent.completion_tokens > 0  # the line it shares most with (evidence.supporting)
    assert "(2 June 2025, Nomvula) Mama's sugar was 9.2" in llm.calls[0].messages[-1]["content"]
    assert free_suggestion(ScriptedLLM(["ESCALATE_REQUIRED"]), "What should I cook?", MAMA, spent=Drafted(text="")) is None
    assert free_suggestion(ScriptedLLM(["I could not find anything."]), "What should I cook?", MAMA,
                           spent=Drafted(text="")) is None
    assert free_suggestion(None, "What should I cook?", MAMA, spent=Drafted(text="")) is None
    assert free_suggestion(ScriptedLLM(["Soup."]), "What should I cook?", [], spent=Drafted(text="")) is None

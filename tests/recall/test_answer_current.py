"""Yes/no questions about how things stand ("Is pottery still on Wednesday evenings?"): a later line
that cancels, moves or replaces the one the question restates answers "No", quoting it. The store
and embeddings are real; the scripted model stands in for the per-line check and says "changed" only
for the line a test names, so what is tested is which lines reach it and what the answer becomes."""

from __future__ import annotations

import pytest

from edgemem.recall import pipeline
from edgemem.recall.answer import Drafted, asks_current, current_verdict, restated_and_later
from edgemem.recall.evidence import Evidence
from edgemem.runtime.fake import ScriptedLLM
from recall_fakes import FixedRouter, remembered

MOVED = "Pottery changes from September: it moves to Tuesday evenings."


def changed_when(marker: str):
    """A scripted reply: changed exactly when the later statement shown contains ``marker``."""
    def reply(messages, schema):
        later = messages[-1]["content"].split("Later statement:", 1)[1]
        return {"changed": marker in later}
    return reply


@pytest.fixture
def engine(settings, embedder):
    eng, llm, ids = remembered(settings, embedder, [
        ("2025-02-03T19:20:00", "Wednesday evenings are pottery, so don't put anything after 6 on a Wednesday."),
        ("2025-07-22T19:45:00", MOVED),
        ("2025-10-21T18:15:00", "The pottery class has its end-of-term show, I'm showing two bowls."),
    ])
    yield eng, llm, ids
    eng.close()


def test_a_later_line_that_moved_it_answers_no_quoting_that_line(engine) -> None:
    eng, llm, ids = engine
    llm.default = changed_when("Tuesday")
    out = pipeline.run(eng.store.conn, "Is pottery still on Wednesday evenings?", llm=llm, embed=eng.runtime.embed,
                       router=FixedRouter("conflict-resolution"))
    assert out.text == f'No — as of 22 July 2025: "{MOVED}"'
    assert out.note_ids == [ids[MOVED]]
    assert out.trace["stages"]["validate0"]["stage"] == "rule_verdict"  # quoted verbatim: no judge
    assert len(llm.calls) == 1  # oldest later line first: the move is found by the first check
    first = llm.calls[0].messages[-1]["content"]
    assert "Earlier statement: (3 February 2025) Wednesday evenings are pottery" in first


def test_no_later_line_changing_it_leaves_the_ordinary_answer() -> None:
    lines = [
        Evidence(1, "Wednesday evenings are pottery.", "2025-02-03T19:20:00", score=0.9),
        Evidence(2, MOVED, "2025-07-22T19:45:00", score=0.8),
        Evidence(3, "The pottery class has its end-of-term show.", "2025-10-21T18:15:00", score=0.7),
    ]
    llm = ScriptedLLM(default=changed_when("never in any line"))
    question = "Is pottery still on Wednesday evenings?"
    assert restated_and_later(question, lines) == (lines[0], lines[1:])
    out = current_verdict(llm, "conflict-resolution", question, lines, "\n".join(e.line() for e in lines))
    assert out is None and len(llm.calls) == 2  # every later line checked, none changed it


def test_the_line_must_be_about_whom_and_what_the_question_names() -> None:
    lines = [
        Evidence(1, "my number if you need it: 07700 900118", "2025-01-10T10:00:00", speaker="Maya", score=0.9),
        Evidence(2, "new number, the old one's cancelled: 07700 900412", "2025-06-10T10:00:00", speaker="Maya", score=0.8),
    ]
    llm = ScriptedLLM()  # no replies: any model call fails the test
    assert current_verdict(llm, "conflict-resolution", "Did Ines change her phone number too?", lines, "") is None
    assert restated_and_later("Did Maya change her number?", lines) == (lines[0], [lines[1]])
    assert restated_and_later("Is my number still 07700 900412?", lines[1:]) is None  # nothing said later


@pytest.mark.parametrize("tag, question, asked", [
    ("conflict-resolution", "Is Sam on day shifts?", True),
    ("conflict-resolution", "Did we go to Cornwall at October half term?", True),
    ("targeted-extraction", "Am I still going to Gdańsk in December?", True),  # "still" on any route
    ("targeted-extraction", "Is Sam on day shifts?", False),
    ("conflict-resolution", "What night is Josh's training?", False),  # not yes/no
    ("conflict-resolution", "Can I book pottery on Wednesday?", False),  # a proposal: the rules decide
])
def test_which_questions_ask_how_things_stand(tag, question, asked) -> None:
    assert asks_current(tag, question) is asked


@pytest.mark.model
def test_the_check_gets_schema_valid_replies_from_a_real_model(small_llm) -> None:
    lines = [
        Evidence(1, "Wednesday evenings are pottery.", "2025-02-03T19:20:00", score=0.9),
        Evidence(2, MOVED, "2025-07-22T19:45:00", score=0.8),
    ]
    context = "\n".join(e.line() for e in lines)
    spent = Drafted(text="")
    out = current_verdict(small_llm, "conflict-resolution", "Is pottery still on Wednesday evenings?", lines, context,
                          spent=spent)
    assert spent.prompt_tokens > 0 and spent.completion_tokens > 0  # one check ran and its reply parsed
    assert out is None or out.text == f'No — as of 22 July 2025: "{MOVED}"'

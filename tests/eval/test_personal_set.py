"""The personal evaluation set (eval/data/personal.json), its split, and the answer-key judge."""

from __future__ import annotations

import json
import re
from collections import Counter
from importlib.resources import files
from pathlib import Path

import pytest

from edgemem.errors import BadInput
from edgemem.eval import locomo, splits
from edgemem.eval.key import judge, normalize, score, validate_key
from edgemem.ingest.dates import parse_when
from edgemem.recall.router import TAGS

PERSONAL = Path(str(files("edgemem.eval") / "data" / "personal.json"))
FRESH = Path(str(files("edgemem.eval") / "data" / "personal-fresh.json"))  # two check personas written later
MORE = Path(str(files("edgemem.eval") / "data" / "personal-more.json"))  # two tune personas written later still
TUNE2 = Path(str(files("edgemem.eval") / "data" / "personal-tune2.json"))  # two more tune personas, later again
FRESH2 = Path(str(files("edgemem.eval") / "data" / "personal-fresh2.json"))  # the check in the 27th session, tune since
FRESH3 = Path(str(files("edgemem.eval") / "data" / "personal-fresh3.json"))  # the check in sessions 28-33, tune since
FRESH4 = Path(str(files("edgemem.eval") / "data" / "personal-fresh4.json"))  # the check since the 34th session
FRESH5 = Path(str(files("edgemem.eval") / "data" / "personal-fresh5.json"))  # tune, written in the 37th session
FRESH6 = Path(str(files("edgemem.eval") / "data" / "personal-fresh6.json"))  # tune, written in the 41st session
SETS = (PERSONAL, FRESH, MORE, TUNE2, FRESH2, FRESH3, FRESH4, FRESH5, FRESH6)


@pytest.fixture(scope="module")
def samples() -> list[dict]:
    return [sample for path in SETS for sample in json.loads(path.read_text(encoding="utf-8"))]


def _sessions(sample: dict) -> list[int]:
    return sorted(int(m.group(1)) for k, v in sample["conversation"].items()
                  if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(v, list))


def test_loads_through_the_locomo_loader(samples):
    conversations = [c for path in SETS
                     for c in locomo.load(path, max_file_bytes=10_000_000, max_text_bytes=100_000)]
    assert [c.id for c in conversations] == [s["sample_id"] for s in samples]
    assert len(conversations) >= 3
    assert sum(len(c.questions) for c in conversations) >= 150
    fresh = [c.id for c in locomo.load(FRESH, max_file_bytes=10_000_000, max_text_bytes=100_000)]
    assert fresh == ["persona-ines", "persona-kwame"] and {splits.split_of(i) for i in fresh} == {"tune"}  # since the 27th session
    more = [c.id for c in locomo.load(MORE, max_file_bytes=10_000_000, max_text_bytes=100_000)]
    assert more == ["persona-lena", "persona-rafael"] and {splits.split_of(i) for i in more} == {"tune"}
    tune2 = [c.id for c in locomo.load(TUNE2, max_file_bytes=10_000_000, max_text_bytes=100_000)]
    assert tune2 == ["persona-kai", "persona-graciela"] and {splits.split_of(i) for i in tune2} == {"tune"}
    fresh2 = [c.id for c in locomo.load(FRESH2, max_file_bytes=10_000_000, max_text_bytes=100_000)]
    assert fresh2 == ["persona-halina", "persona-chidi"] and {splits.split_of(i) for i in fresh2} == {"tune"}
    fresh3 = [c.id for c in locomo.load(FRESH3, max_file_bytes=10_000_000, max_text_bytes=100_000)]
    assert fresh3 == ["persona-shona", "persona-margaux"] and {splits.split_of(i) for i in fresh3} == {"tune"}
    fresh4 = [c.id for c in locomo.load(FRESH4, max_file_bytes=10_000_000, max_text_bytes=100_000)]
    assert fresh4 == ["persona-bart", "persona-deepa"] and {splits.split_of(i) for i in fresh4} == {"check"}
    fresh5 = [c.id for c in locomo.load(FRESH5, max_file_bytes=10_000_000, max_text_bytes=100_000)]
    assert fresh5 == ["persona-oskar", "persona-nomvula"] and {splits.split_of(i) for i in fresh5} == {"tune"}
    fresh6 = [c.id for c in locomo.load(FRESH6, max_file_bytes=10_000_000, max_text_bytes=100_000)]
    assert fresh6 == ["persona-aiko", "persona-brodie"] and {splits.split_of(i) for i in fresh6} == {"tune"}


def test_shape_of_each_persona(samples):
    for sample in samples:
        assert sample["sample_id"].startswith("persona-")
        conv = sample["conversation"]
        assert conv["speaker_b"] == "Assistant"
        numbers = _sessions(sample)
        assert 9 <= len(numbers) <= 12, sample["sample_id"]
        for n in numbers:
            turns = conv[f"session_{n}"]
            assert 10 <= len(turns) <= 25, (sample["sample_id"], n)
            for i, turn in enumerate(turns, start=1):
                assert turn["dia_id"] == f"D{n}:{i}"
                assert turn["speaker"] in (conv["speaker_a"], "Assistant")
                assert turn["text"].strip()


def test_session_dates_increase(samples):
    for sample in samples:
        conv = sample["conversation"]
        dates = [parse_when(conv[f"session_{n}_date_time"]) for n in _sessions(sample)]
        assert dates == sorted(dates) and len(set(dates)) == len(dates), sample["sample_id"]
        assert all(2025 <= d.year <= 2026 for d in dates)


def test_questions_are_well_formed(samples):
    for sample in samples:
        dia_ids = {t["dia_id"] for n in _sessions(sample) for t in sample["conversation"][f"session_{n}"]}
        questions = [q["question"] for q in sample["qa"]]
        assert len(set(questions)) == len(questions), sample["sample_id"]
        for q in sample["qa"]:
            where = (sample["sample_id"], q["question"])
            assert q["intent"] in TAGS, where
            assert q["category"] in (1, 2, 3, 4, 5), where
            validate_key(q["key"])
            # A question about something never said may have no evidence turn (the fresh2 personas).
            assert (q["evidence"] or q["category"] == 5) and set(q["evidence"]) <= dia_ids, where
            if q["category"] == 5:
                assert ("answer" not in q and "adversarial_answer" in q) or q.get("answer") == "", where
                assert q["key"] == {"abstain": True}, where
            else:
                assert str(q["answer"]).strip() and "abstain" not in q["key"], where
                assert judge(str(q["answer"]), q["key"]), where  # the gold answer passes its own key


def test_coverage_per_persona(samples):
    total = 0
    for sample in samples:
        qa = sample["qa"]
        total += len(qa)
        assert len(qa) >= 40, sample["sample_id"]
        intents = Counter(q["intent"] for q in qa)
        assert set(intents) == set(TAGS), sample["sample_id"]
        assert min(intents.values()) >= 4, (sample["sample_id"], intents)
        adversarial = sum(q["category"] == 5 for q in qa) / len(qa)
        assert 0.08 <= adversarial <= 0.16, (sample["sample_id"], adversarial)
    assert total >= 150


def test_every_persona_is_split_and_both_splits_are_big_enough(samples):
    per_split = Counter()
    for sample in samples:
        assert sample["sample_id"] in splits.SPLITS
        per_split[splits.split_of(sample["sample_id"])] += len(sample["qa"])
    assert per_split["tune"] >= 70 and per_split["check"] >= 70


def test_splits_api():
    for sid in ("conv-26", "conv-30", "conv-41"):
        assert splits.split_of(sid) == "tune"
    for sid in ("conv-42", "conv-43", "conv-44"):
        assert splits.split_of(sid) == "check"
    assert splits.samples_in("check", ["conv-26", "conv-42", "persona-jonas"]) == ["conv-42", "persona-jonas"]
    assert splits.samples_in("tune", ["conv-26", "conv-42"]) == ["conv-26"]
    with pytest.raises(BadInput):
        splits.split_of("conv-99")
    with pytest.raises(BadInput):
        splits.samples_in("test", ["conv-26"])
    with pytest.raises(BadInput):
        splits.samples_in("tune", ["conv-26", "nope"])


# --- judge --------------------------------------------------------------------------------------


def test_normalize():
    assert normalize("  Friday,  the  “13th”!  ") == "friday the 13th"
    assert normalize("Don’t") == normalize("don't")
    assert normalize("20/06/2026.") == "20/06/2026"


def test_judge_required_elements_and_alternatives():
    key = {"all": [["no"], ["friday", "fridays"]]}
    assert judge("No, Fridays are kept free.", key)
    assert judge("NO -- Friday afternoons are deep-work time", key)
    assert not judge("No.", key)
    assert not judge("Friday works.", key)


def test_judge_word_boundaries():
    key = {"all": [["no"], ["friday"]]}
    assert not judge("I do not know about Friday", key)  # "not", "know" are not "no"
    assert not judge("Nobody meets on friday", key)
    assert judge("no (friday)", key)
    assert not judge("It is at 10am", {"all": [["10"]]})
    assert not judge("It took 3.5 weeks", {"all": [["3"]]})
    assert judge("three weeks", {"all": [["3", "three"]]})


def test_judge_none_phrases():
    key = {"all": [["300"]], "none": ["250"]}
    assert judge("Your eating-out budget is £300 a month.", key)
    assert not judge("It's £250, or maybe £300.", key)
    rule = {"all": [["no"], ["friday"]], "none": ["yes"]}
    assert not judge("Yes, no problem on Friday", rule)


def test_judge_date_alternatives():
    key = {"all": [["20 june", "june 20", "20th june", "20/06/2026", "2026-06-20"]]}
    for answer in ("Saturday, 20 June 2026", "June 20, 2026", "on the 20th June", "20/06/2026", "2026-06-20"):
        assert judge(answer, key), answer
    assert not judge("21 June 2026", key)
    assert not judge("120 June", key)


def test_judge_abstention():
    key = {"abstain": True}
    assert judge("I don't know; you never mentioned that.", key)
    assert judge("I could not find reliable information.", key)
    assert not judge("Her vet is Dr Amin.", key)
    assert not judge("", key)


def test_validate_key_rejects_malformed():
    for bad in (None, [], {}, {"all": []}, {"all": [[]]}, {"all": [["ok", ""]]}, {"all": "x"},
                {"all": [["x"]], "none": "y"}, {"all": [["x"]], "none": [" ,"]}, {"abstain": False},
                {"abstain": True, "all": [["x"]]}, {"all": [["x"]], "maybe": 1}, {"all": [[3]]}):
        with pytest.raises(BadInput):
            validate_key(bad)
    validate_key({"all": [["x", "y"]], "none": ["z"]})
    validate_key({"abstain": True})


def test_score():
    records = [
        {"prediction": "No, not on Friday", "key": {"all": [["no"], ["friday"]]}, "intent": "constraint-validation", "category": 3},
        {"prediction": "Yes", "key": {"all": [["no"]]}, "intent": "constraint-validation", "category": 3},
        {"prediction": "not mentioned", "key": {"abstain": True}, "intent": "targeted-extraction", "category": 5},
    ]
    result = score(records)
    assert result["overall"] == {"n": 3, "correct": 2, "percent": pytest.approx(200 / 3)}
    assert result["intents"]["constraint-validation"]["percent"] == 50.0
    assert result["intents"]["targeted-extraction"]["percent"] == 100.0
    assert result["categories"]["3"]["correct"] == 1
    assert score([])["overall"]["percent"] is None


def test_locomo_summary_scores_a_keyed_set_and_its_routing():
    from edgemem.eval import locomo

    records = [
        {"category": 4, "prediction": "Dr Amin", "gold": "Dr Amin", "intent": "targeted-extraction",
         "route_tag": "targeted-extraction", "answer_key": {"all": [["amin"]]}},
        {"category": 2, "prediction": "June 2025", "gold": "20 June 2026", "intent": "temporal-reasoning",
         "route_tag": "conflict-resolution", "answer_key": {"all": [["20 june 2026"]]}},
        {"category": 5, "prediction": "I could not find reliable information.", "gold": "", "intent": "targeted-extraction",
         "route_tag": "targeted-extraction", "answer_key": {"abstain": True}},
    ]
    summary = locomo.summarize(records, retrieval_only=False)
    assert summary["keyed"]["overall"] == {"n": 3, "correct": 2, "percent": 200 / 3}
    assert summary["keyed"]["intents"]["temporal-reasoning"]["correct"] == 0
    assert summary["routing"]["accuracy"] == 2 / 3
    assert summary["routing"]["confusion"]["temporal-reasoning"] == {"conflict-resolution": 1}
    text = locomo.table(summary)
    assert "Fixed key: 2/3 correct (66.7%)" in text and "Routing against the set's intent labels: 66.7% of 3" in text

"""The router cascade (MemFlow §3.1, Appendix B.1): rules → classifier → model → fallback."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from edgemem import linear, prompts
from edgemem.errors import BadInput
from edgemem.eval import router_eval
from edgemem.eval.metrics import ROUTE_TAGS
from edgemem.recall import router as router_module
from edgemem.recall.router import (
    LAYERS, SCHEMA, TAGS, Decision, Route, Router, frame, load_examples, parse_examples, rules,
)
from edgemem.runtime.fake import HashEmbedder, ScriptedLLM

LABELLED = Path(__file__).resolve().parents[1] / "data" / "router_labelled.jsonl"


@pytest.fixture(scope="module")
def router(embedder) -> Router:
    """One Router on the real embedder, shared so the examples are embedded once per module."""
    r = Router(embedder)
    r.classify("warm up")  # loads the packaged classifier
    return r


@pytest.fixture
def undecided(monkeypatch: pytest.MonkeyPatch) -> None:
    """The classifier is never confident, so every rule-less question reaches the model / fallback."""
    monkeypatch.setattr(router_module, "CONFIDENT_MARGIN", 1.01)


@pytest.fixture(scope="module")
def model_router(embedder) -> Router:
    """A second fitted Router whose model the ``with_llm`` fixture swaps per test."""
    r = Router(embedder)
    r.classify("warm up")
    return r


@pytest.fixture
def with_llm(model_router: Router):
    def attach(llm) -> Router:
        model_router.llm = llm
        return model_router

    yield attach
    model_router.llm = None


# --- rule layer ----------------------------------------------------------------------------------

RULE_CASES = {
    "temporal-reasoning": [
        "How many days passed between the interview and the offer?",
        "How many weeks went by between my two vaccine doses?",
        "How much time elapsed between the two visits?",
        "Did I renew the lease before or after the rent went up?",
        "When did Caroline go to the support group?",
        "What year did we buy the piano?",
    ],
    "conflict-resolution": [
        "What is my current job?",
        "What's the latest plan for the reunion?",
        "Where does my cousin work these days?",
        "Is Ana still vegetarian?",
        "What did we end up choosing for the kitchen tiles?",
    ],
    "constraint-validation": [
        "Am I allowed to eat nuts?",
        "What's the policy on guests in the dorm?",
        "What should I do when a customer complains?",
        "Is it okay to feed the dog rice?",
    ],
    "state-tracking": [
        "How has my running pace changed?",
        "How did my opinion of the neighborhood evolve?",
        "What has changed in my morning routine?",
        "How did the project grow month to month?",
    ],
    "profile-injection": [
        "Draft a note to my aunt in my usual tone.",
        "Recommend a novel I would enjoy.",
        "Any tips for keeping my kitchen clean?",
        "What should I cook tonight?",
    ],
}


@pytest.mark.parametrize(
    ("question", "tag"), [(q, tag) for tag, questions in RULE_CASES.items() for q in questions]
)
def test_rule_layer_names_exactly_one_tag(question: str, tag: str) -> None:
    assert rules(question) == {tag}


@pytest.mark.parametrize(
    "question",
    [
        "How long was I in Japan?",  # B.1: the duration of one event is a recalled fact, not a rule case
        "What did the mechanic say about the brakes?",
        "What books has Melanie read?",
        "Recommend a restaurant near the office.",  # a request without a preference cue
        "Is a 9am stand-up on a Thursday OK for me?",  # "for me" is not a request's preference cue
        "What do I never put in the dishwasher?",  # "never" leans to rules but is no rule
    ],
)
def test_no_rule_for_questions_without_an_unambiguous_cue(question: str) -> None:
    assert rules(question) == set()


def test_a_rule_matches_but_the_confident_classifier_decides(router: Router) -> None:
    route = router.route("How many days passed between the interview and the offer?")
    assert route.tag == "temporal-reasoning" and route.layer == "classifier"
    assert route.detail["rules"] == ["temporal-reasoning"]


def test_a_rule_breaks_a_near_tie_between_the_two_best_tags(router: Router, monkeypatch) -> None:
    question = "How many days passed between the interview and the offer?"
    ranked = ("conflict-resolution", "temporal-reasoning",
              *(t for t in TAGS if t not in ("conflict-resolution", "temporal-reasoning")))
    close = Decision(ranked, {t: 0.41 if t == ranked[0] else 0.39 if t == ranked[1] else 0.04 for t in TAGS})
    monkeypatch.setattr(router, "classify", lambda q: close)
    route = router.route(question)
    assert (route.tag, route.layer) == ("temporal-reasoning", "rules")


def test_several_rules_fall_through_to_the_next_layer(router: Router) -> None:
    question = "When did I most recently change my password?"
    assert rules(question) == {"temporal-reasoning", "conflict-resolution"}
    route = router.route(question)
    assert route.layer != "rules"
    assert route.detail["rules"] == ["temporal-reasoning", "conflict-resolution"]
    assert "classifier" in route.detail


# --- classifier on the real embedder -------------------------------------------------------------


def test_frame_keeps_the_shape_of_the_question() -> None:
    assert frame("What books has Priya read?") == "What things has someone read ?"
    assert frame("How long was I in Japan?") == "How long was I in someone ?"
    assert frame("Where did I leave my old green umbrella?") == "Where did I leave my old something ?"


def test_lexical_features_are_named_zero_one_columns() -> None:
    row = router_module.lexical_features("How many times did Rosa call me on Friday at 9pm?")
    names = dict(zip(router_module.LEXICAL_FEATURES, row))
    assert len(row) == len(router_module.LEXICAL_FEATURES)
    assert set(row.tolist()) <= {0.0, 1.0}
    assert names["first:how"] == names["how many"] == names["weekday"] == names["clock time"] == names["name"] == 1.0
    assert names["first:what"] == names["how long"] == names["rule:temporal-reasoning"] == 0.0


# Questions written for this test, none in the training file: one operation each, no real ambiguity.
UNSEEN = {
    "profile-injection": [
        "Suggest a restaurant for Friday night.",
        "Write a short birthday message for my brother.",
        "Would Omar enjoy a cooking class?",
    ],
    "targeted-extraction": [
        "What is the name of my cat's groomer?",
        "Which hospital did Rosa have her baby at?",
        "What's my library card number?",
    ],
    "temporal-reasoning": [
        "When did I start my new job?",
        "How long ago did we move to Porto?",
        "Which was first, the flood or the fire?",
    ],
    "conflict-resolution": [
        "What's my current address?",
        "Is Omar still living with his parents?",
        "Which car did we end up buying?",
    ],
    "broad-summarization": [
        "Summarize what I've said about my neighbours.",
        "What hobbies does Rosa have?",
        "Which countries has Omar visited?",
    ],
    "constraint-validation": [
        "Can we meet on Monday at 8am?",
        "Is a beef burger okay for me?",
        "Is a call at 9pm on Friday fine for me?",
    ],
    "state-tracking": [
        "How has my swimming improved since March?",
        "How many times have I gone hiking this year?",
        "How many books has Rosa read this year?",
    ],
}


def test_unseen_questions_are_not_training_examples() -> None:
    known = {q.lower() for q, _ in load_examples()}
    assert not known & {q.lower() for questions in UNSEEN.values() for q in questions}


@pytest.mark.parametrize(("question", "tag"), [(q, tag) for tag, questions in UNSEEN.items() for q in questions])
def test_unseen_unambiguous_questions(router: Router, question: str, tag: str) -> None:
    route = router.route(question)
    assert route.tag == tag, route.detail
    assert route.layer in ("rules", "classifier")


def test_classifier_decides_confident_questions(router: Router) -> None:
    question = "Is a call at 9pm on Friday fine for me?"
    assert rules(question) == set()
    route = router.route(question)
    assert (route.tag, route.layer) == ("constraint-validation", "classifier")
    seen = route.detail["classifier"]
    assert seen["tag"] == route.tag and seen["margin"] >= router_module.CONFIDENT_MARGIN
    assert route.confidence == pytest.approx(seen["probabilities"][route.tag], abs=1e-4)
    assert list(seen["probabilities"])[0] == route.tag and len(seen["probabilities"]) == 3


def test_two_routers_decide_identically(embedder) -> None:
    questions = [q for group in UNSEEN.values() for q in group]
    a, b = Router(embedder), Router(embedder)
    assert [a.classify(q).probabilities for q in questions] == [b.classify(q).probabilities for q in questions]
    assert a.trained == b.trained == "package"


def test_package_classifier_matches_the_examples() -> None:
    stored = router_module._stored()
    assert stored is not None, "run python -m edgemem.eval.router_train --locomo … to build the classifier file"
    assert str(stored["examples_sha256"]) == router_module.examples_digest(load_examples()), (
        "router_examples.jsonl changed: rebuild with python -m edgemem.eval.router_train --locomo …"
    )
    assert tuple(stored["lexical"].tolist()) == router_module.LEXICAL_FEATURES


def test_package_router_embeds_only_the_probes_and_the_question(embedder) -> None:
    calls: list[int] = []

    def counting(texts):
        calls.append(len(texts))
        return embedder.embed(texts)

    r = Router(counting)
    assert calls == []  # nothing happens at construction
    r.route("What sports does my nephew play?")
    r.route("Where did Ines buy her wedding dress?")
    # the probe check once, then the question and its frame per routed question
    assert calls == [len(linear.PROBE_TEXTS), 2, 2]
    assert r.trained == "package"


def test_another_embedder_trains_from_the_examples() -> None:
    hashed = HashEmbedder()
    r = Router(hashed)
    route = r.route("Is a call at 9pm on Friday fine for me?")
    assert r.trained == "examples"  # the probes differ from the stored MiniLM vectors
    assert route.tag in TAGS and route.layer in LAYERS


def test_custom_examples_train_a_classifier(embedder) -> None:
    examples = [(q, tag) for tag, questions in UNSEEN.items() for q in questions]
    r = Router(embedder, examples=examples)
    assert r.route("Which was first, the flood or the fire?").tag == "temporal-reasoning"
    assert r.trained == "examples"


@pytest.fixture(scope="module")
def example_features(embedder):
    examples = load_examples()
    labels = np.array([TAGS.index(tag) for _, tag in examples])
    return router_module.features(embedder.embed, [q for q, _ in examples]), labels


LOCOMO_DEV = [Path("/work/shared/data/locomo/locomo-dev.json"), Path("/work/shared/data/locomo/locomo-dev-more.json")]


def _packaged() -> router_module.Classifier:
    stored = router_module._stored()
    return router_module.Classifier(*(stored[k].astype(np.float64) for k in ("mean", "scale", "weights")))


@pytest.mark.slow
def test_training_is_deterministic_and_close_to_the_package(example_features) -> None:
    x, labels = example_features
    first = router_module.train(x, labels)
    second = router_module.train(x, labels)
    assert np.array_equal(first.weights, second.weights)
    stored = router_module._stored()
    # The shipped classifier also learnt LoCoMo's tune questions, which are not shipped: on the
    # package examples it still agrees with a classifier trained on them alone.
    assert int(stored["extra_count"]) == 497 and "tune split (conv-26, conv-30, conv-41)" in str(stored["extra_source"])
    agree = np.mean(first.probabilities(x).argmax(axis=1) == _packaged().probabilities(x).argmax(axis=1))
    assert agree >= 0.95


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in LOCOMO_DEV), reason="LoCoMo dev files not present")
def test_the_package_classifier_is_rebuilt_from_the_examples_and_locomo_tune(embedder, example_features) -> None:
    extra, source = router_eval.locomo_training_examples(embedder, LOCOMO_DEV)
    stored = router_module._stored()
    assert (len(extra), source) == (int(stored["extra_count"]), str(stored["extra_source"]))
    assert router_module.examples_digest(extra) == str(stored["extra_sha256"])
    x, labels = example_features
    extra_x = router_module.features(embedder.embed, [q for q, _ in extra])
    rebuilt = router_module.train(np.vstack([x, extra_x]),
                                  np.concatenate([labels, [TAGS.index(tag) for _, tag in extra]]))
    both = np.vstack([x, extra_x])
    assert np.array_equal(rebuilt.probabilities(both).argmax(axis=1), _packaged().probabilities(both).argmax(axis=1))
    with pytest.raises(BadInput, match="tune split only"):
        router_eval.locomo_training_examples(embedder, LOCOMO_DEV, split="check")


@pytest.mark.slow
def test_cross_validated_accuracy(embedder) -> None:
    result = router_eval.cross_validation(embedder)
    report = router_eval.format_report(result)
    assert result["n"] == len(load_examples()) >= 900
    # 0.89: the 89 casual questions of the Lena/Rafael tune personas (twenty-second session) brought
    # the classifier's own cross-validated accuracy from 0.915 to 0.900 (the router's 0.925 to
    # 0.912), and the router's check accuracy on both held-out personal sets up by 3-4 points.
    # 0.88: the 440 questions of ten more tune personas (thirty-seventh session), many of them
    # worded between two tags ("Summarise how my retirement plans have changed"), brought the
    # router's own cross-validated accuracy from 0.912 to 0.890 (classifier 0.900 to 0.881); see docs/measurements.md.
    assert result["classifier_accuracy"] >= 0.88, report
    assert result["accuracy"] >= 0.885, report
    # the model would see few questions: those under the margin threshold
    assert result["layers"]["fallback"] / result["n"] <= 0.08, report
    assert "10-fold cross-validation, router accuracy" in report
    assert "gold \\ routed" in report and "margin threshold" in report


def test_unconfident_classifier_without_a_model_takes_the_fallback(router: Router, undecided) -> None:
    question = "What sports does my nephew play?"
    route = router.route(question)
    assert route.layer == "fallback"
    assert route.tag == route.detail["classifier"]["tag"]
    assert "model_error" not in route.detail
    assert route.confidence == pytest.approx(route.detail["classifier"]["probabilities"][route.tag], abs=1e-4)


# --- model layer (ScriptedLLM: decision logic only) --------------------------------------------------


def test_model_layer_chooses_between_the_top_two(with_llm, undecided) -> None:
    first_q, second_q = "What sports does my nephew play?", "How did Omar's cooking skills come along?"
    top = {q: with_llm(None).classify(q).ranked[:2] for q in (first_q, second_q)}
    llm = ScriptedLLM([{"action_tag": top[first_q][1]}, {"action_tag": top[second_q][0]}])
    r = with_llm(llm)
    first = r.route(first_q)
    second = r.route(second_q)
    assert (first.tag, first.layer) == (top[first_q][1], "model")
    assert (second.tag, second.layer) == (top[second_q][0], "model")
    assert first.detail["model_candidates"] == list(top[first_q])
    assert "model" in first.detail and "model_error" not in first.detail
    assert first.tokens == first.detail["model"]["prompt_tokens"] + first.detail["model"]["completion_tokens"] > 0
    # schema-constrained to the two candidates; the static prompt first and identical, the question last
    call_a, call_b = llm.calls
    assert call_a.schema == router_module.schema_for(top[first_q])
    assert call_a.schema["properties"]["action_tag"]["enum"] == list(top[first_q])
    assert set(SCHEMA["properties"]["action_tag"]["enum"]) == set(TAGS) == ROUTE_TAGS
    assert call_a.messages[0] == call_b.messages[0] == {"role": "system", "content": prompts.render("router_system")}
    assert call_a.messages[1]["content"].rstrip().endswith("Question: What sports does my nephew play?")
    # labelled examples of both candidates are shown as few-shot context
    shown = r.prompt_examples(top[first_q])
    assert {tag for _, tag in shown} == set(top[first_q])
    assert len(shown) == 2 * router_module.PROMPT_EXAMPLES_PER_TAG
    for q, _ in shown:
        assert json.dumps(q, ensure_ascii=False) in call_a.messages[1]["content"]


@pytest.mark.parametrize(
    "reply",
    [
        {"action_tag": "summarize"},  # not one of the seven
        {"action_tag": "temporal-reasoning"},  # a tag, but not one of the two candidates
        {"tag": "broad-summarization"},  # wrong key
        "broad-summarization",  # not JSON
        {"action_tag": "broad-summarization", "requires_rag": True},  # extra key
    ],
)
def test_invalid_model_reply_falls_back_to_the_classifier(with_llm, undecided, reply) -> None:
    llm = ScriptedLLM([reply])
    question = "Can the kids have soda with dinner?"
    route = with_llm(llm).route(question)
    assert len(llm.calls) == 1
    assert route.layer == "fallback"
    assert route.tag == route.detail["classifier"]["tag"]
    assert route.detail["model_error"].startswith("SchemaError")
    assert route.tokens == 0


def test_prompt_too_long_for_the_model_falls_back_to_the_classifier(with_llm, undecided) -> None:
    llm = ScriptedLLM([{"action_tag": "broad-summarization"}], n_ctx=64)
    route = with_llm(llm).route("What sports does my nephew play?")
    assert llm.calls == []  # refused before calling
    assert route.layer == "fallback"
    assert route.detail["model_error"].startswith("ContextTooLong")


def test_model_is_not_asked_when_a_rule_or_the_classifier_decides(with_llm) -> None:
    llm = ScriptedLLM()  # would raise if called
    r = with_llm(llm)
    assert r.route("What is my current job?").layer == "classifier"
    assert r.route("Is a beef burger okay for me?").layer == "classifier"
    assert llm.calls == []


def test_prompts_put_the_static_text_first() -> None:
    assert prompts.fields("router_system") == set()
    assert prompts.fields("router_user") == {"examples", "question"}
    user = prompts.template("router_user")
    assert user.rstrip().endswith("{question}")
    system = prompts.render("router_system")
    for tag in TAGS:
        assert tag in system


# --- input and data ----------------------------------------------------------------------------------


@pytest.mark.parametrize("question", ["", "   ", None])
def test_empty_question_is_bad_input(router: Router, question) -> None:
    with pytest.raises(BadInput):
        router.route(question)


def test_parse_examples_names_the_bad_line() -> None:
    good = json.dumps({"q": "Where is my key?", "tag": "targeted-extraction"})
    assert parse_examples([good, ""]) == (("Where is my key?", "targeted-extraction"),)
    with pytest.raises(BadInput, match="line 2: unknown tag"):
        parse_examples([good, json.dumps({"q": "x", "tag": "lookup"})])
    with pytest.raises(BadInput, match="line 1: not JSON"):
        parse_examples(["{q: 1}"])
    with pytest.raises(BadInput, match="line 1: expected"):
        parse_examples([json.dumps({"question": "x", "tag": "state-tracking"})])


def test_router_needs_examples_of_every_tag(embedder) -> None:
    with pytest.raises(ValueError, match="none for"):
        Router(embedder, examples=[("Where is my key?", "targeted-extraction")])


def test_package_examples_ship_with_every_tag() -> None:
    examples = load_examples()
    counts = Counter(tag for _, tag in examples)
    assert set(counts) == set(TAGS)
    assert min(counts.values()) >= 120 and sum(counts.values()) >= 900
    questions = [q.lower() for q, _ in examples]
    assert len(questions) == len(set(questions))


def _labelled() -> list[dict[str, str]]:
    return router_eval.load_labelled(LABELLED)


def test_labelled_set_has_twenty_per_tag() -> None:
    counts = Counter(item["tag"] for item in _labelled())
    assert set(counts) == set(TAGS)
    assert min(counts.values()) >= 20
    assert sum(counts.values()) >= 140


def test_labelled_set_does_not_overlap_the_package_examples(embedder) -> None:
    def norm(text: str) -> str:
        return " ".join(text.lower().replace("\u2019", "'").strip(" ?.!").split())

    examples = [q for q, _ in load_examples()]
    tests = [item["q"] for item in _labelled()]
    assert not {norm(q) for q in examples} & {norm(q) for q in tests}
    # nor near-paraphrases: on the real embedder no test question is as close to an example as a
    # rewording would be (the closest pair when this test was written: 0.77)
    similarity = embedder.embed(tests) @ embedder.embed(examples).T
    assert similarity.max() < 0.85


@pytest.mark.slow
def test_labelled_accuracy_without_a_model(router: Router) -> None:
    result = router_eval.evaluate(router, _labelled())
    assert result["n"] >= 140
    assert result["accuracy"] >= 0.90, router_eval.format_report(result)
    assert result["layers"]["model"] == 0
    assert result["layers"]["classifier"] > 0


# --- evaluation report ---------------------------------------------------------------------------------


def test_evaluate_counts_layers_and_confusion(with_llm, undecided) -> None:
    sports, soda = "What sports does my nephew play?", "Can the kids have soda with dinner?"
    sports_top = with_llm(None).classify(sports).ranked[0]
    soda_top = with_llm(None).classify(soda).ranked[0]
    wrong = next(tag for tag in TAGS if tag != soda_top)
    llm = ScriptedLLM([{"action_tag": sports_top}, "garbage"])
    items = [
        {"q": "What is my current job?", "tag": "conflict-resolution"},  # rules, right
        {"q": sports, "tag": sports_top},  # model, right
        {"q": soda, "tag": wrong},  # fallback, wrong
    ]
    result = router_eval.evaluate(with_llm(llm), items)
    assert (result["n"], result["correct"]) == (3, 2)
    assert result["accuracy"] == pytest.approx(2 / 3)
    assert result["layers"] == {"rules": 1, "classifier": 0, "model": 1, "fallback": 1}
    assert result["layer_correct"] == {"rules": 1, "classifier": 0, "model": 1, "fallback": 0}
    assert result["model_errors"] == 1
    assert result["confusion"][wrong][soda_top] == 1
    assert sum(sum(row.values()) for row in result["confusion"].values()) == 3
    report = router_eval.format_report(result)
    assert "router accuracy: 2/3 = 66.7%" in report
    assert "model replies rejected (fallback used): 1" in report
    assert f"[fallback] {wrong} -> {soda_top}" in report
    # the confusion matrix: a header of short tag names, one row per gold tag
    assert "gold \\ routed" in report
    assert all(any(line.startswith(tag) for line in report.splitlines()) for tag in TAGS)


def _intent_file(tmp_path: Path) -> Path:
    samples = [
        {"sample_id": "persona-maya", "qa": [
            {"question": "When did Ines move to Lisbon?", "answer": "2021", "intent": "temporal-reasoning"},
            {"question": "What is my current job?", "answer": "nurse"},  # no intent: skipped
        ]},
        {"sample_id": "persona-priya", "qa": [
            {"question": "Where do I live now?", "answer": "Porto", "intent": "conflict-resolution"},
        ]},
    ]
    path = tmp_path / "personal.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def test_labelled_locomo_format_with_intents(tmp_path: Path) -> None:
    path = _intent_file(tmp_path)
    assert [i["tag"] for i in router_eval.load_labelled(path)] == ["temporal-reasoning", "conflict-resolution"]
    assert [i["q"] for i in router_eval.load_labelled(path, split="check")] == ["Where do I live now?"]
    assert [i["q"] for i in router_eval.load_labelled(path, samples=["persona-maya"])] == ["When did Ines move to Lisbon?"]
    with pytest.raises(BadInput, match="no sample"):
        router_eval.load_labelled(path, samples=["persona-x"])
    with pytest.raises(BadInput, match="LoCoMo-format"):
        router_eval.load_labelled(LABELLED, split="tune")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"sample_id": "persona-tom", "qa": [{"question": "x", "intent": "lookup"}]}]), encoding="utf-8")
    with pytest.raises(BadInput, match="unknown intent"):
        router_eval.load_labelled(bad)


def test_cross_validation_report_on_a_small_set() -> None:
    examples = [(q, tag) for tag, questions in UNSEEN.items() for q in questions]
    result = router_eval.cross_validation(HashEmbedder(), examples, folds=3)
    report = router_eval.format_report(result)
    assert result["n"] == len(examples) and result["cv_folds"] == 3
    assert sum(result["layers"].values()) == len(examples) and result["layers"]["model"] == 0
    assert report.startswith("3-fold cross-validation, router accuracy:")
    assert "gold \\ routed" in report and "margin threshold" in report


def test_locomo_mode_scores_per_category(router: Router, tmp_path: Path) -> None:
    sample = {
        "sample_id": "conv-x",
        "qa": [
            {"question": "When did Ines move to Lisbon?", "answer": "2021", "category": 2},
            {"question": "What is my current job?", "answer": "nurse", "category": 4},
            {"question": "Where did Ines buy her wedding dress?", "answer": "Porto", "category": 4},
        ],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    result = router_eval.evaluate_locomo(router, router_eval.load_locomo(path))
    assert result["categories"][2] == {
        "n": 1, "correct": 1, "tags": {"temporal-reasoning": 1}, "layers": {"classifier": 1}, "accuracy": 1.0,
    }
    # "current" routes to conflict-resolution, which LoCoMo's single-hop category does not accept
    assert result["categories"][4]["correct"] == 1
    assert (result["n"], result["correct"]) == (3, 2)
    assert "2 temporal" in router_eval.format_report(result)


def test_locomo_file_errors_are_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"qa": [{"question": "x", "category": 9}]}]), encoding="utf-8")
    with pytest.raises(BadInput, match="known category"):
        router_eval.load_locomo(path)
    with pytest.raises(BadInput, match="cannot read"):
        router_eval.load_locomo(tmp_path / "missing.json")


def test_route_is_a_plain_record() -> None:
    route = Route("state-tracking", "classifier", 0.8, {"rules": []})
    assert route.as_dict() == {"tag": "state-tracking", "layer": "classifier", "confidence": 0.8, "detail": {"rules": []}}


def test_router_train_refuses_a_missing_locomo_file_and_keeps_the_classifier(tmp_path, capsys) -> None:
    from edgemem.eval import router_train

    shipped = Path(router_module.__file__).with_name("data") / "router_classifier.npz"
    before = shipped.read_bytes()
    assert router_train.main(["--locomo", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("edgemem: cannot read LoCoMo file") and "\n" not in err
    assert shipped.read_bytes() == before

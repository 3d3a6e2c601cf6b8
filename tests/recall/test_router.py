"""The router cascade (MemFlow §3.1, Appendix B.1): rules → kNN → model → heuristic."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from edgemem import prompts
from edgemem.errors import BadInput
from edgemem.eval import router_eval
from edgemem.eval.metrics import ROUTE_TAGS
from edgemem.recall import router as router_module
from edgemem.recall.router import SCHEMA, TAGS, Route, Router, frame, heuristic, load_examples, parse_examples, rules
from edgemem.runtime.fake import ScriptedLLM

LABELLED = Path(__file__).resolve().parents[1] / "data" / "router_labelled.jsonl"


@pytest.fixture(scope="module")
def router(embedder) -> Router:
    """One Router on the real embedder, shared so the examples are embedded once per module."""
    r = Router(embedder)
    r.vote("warm up")  # embeds the examples and fits the discriminant
    return r


@pytest.fixture
def undecided(monkeypatch: pytest.MonkeyPatch) -> None:
    """No kNN vote is confident, so every rule-less question reaches the model / heuristic."""
    monkeypatch.setattr(router_module, "KNN_MIN_SHARE", 1.01)


@pytest.fixture(scope="module")
def model_router(embedder) -> Router:
    """A second fitted Router whose model the ``with_llm`` fixture swaps per test."""
    r = Router(embedder)
    r.vote("warm up")
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
        "What must I bring to the citizenship interview?",
        "What do I never put in the dishwasher?",
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
    ],
)
def test_no_rule_for_questions_without_an_unambiguous_cue(question: str) -> None:
    assert rules(question) == set()


def test_rule_layer_decides_with_full_confidence(router: Router) -> None:
    route = router.route("How many days passed between the interview and the offer?")
    assert route == Route("temporal-reasoning", "rules", 1.0, {"rules": ["temporal-reasoning"]})


def test_several_rules_fall_through_to_the_next_layer(router: Router) -> None:
    question = "When did I most recently change my password?"
    assert rules(question) == {"temporal-reasoning", "conflict-resolution"}
    route = router.route(question)
    assert route.layer != "rules"
    assert route.detail["rules"] == ["temporal-reasoning", "conflict-resolution"]
    assert "knn" in route.detail


# --- heuristic -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "tag"),
    [
        ("How often do I water the ferns?", "broad-summarization"),
        ("Summarize my notes on the renovation.", "broad-summarization"),
        ("When is the recital?", "temporal-reasoning"),
        ("Which apartment am I renting now?", "conflict-resolution"),
        ("Can I take the bus with my bike?", "constraint-validation"),
        ("Describe the progression of my cough.", "state-tracking"),
        ("Suggest a gift for my brother.", "profile-injection"),
        ("Would Maya enjoy a jazz festival?", "profile-injection"),
        ("What was the plumber's name?", "targeted-extraction"),
        ("Where is the blue folder?", "targeted-extraction"),  # no cue: the B.1 fact-lookup default
    ],
)
def test_heuristic_keyword_choice(question: str, tag: str) -> None:
    assert heuristic(question) == tag


def test_heuristic_breaks_ties_by_tag_order() -> None:
    # one weight-2 cue each for temporal ("when") and profile ("recommend"): profile comes first
    scores = router_module.heuristic_scores("When should I recommend it")
    assert scores["temporal-reasoning"] == scores["profile-injection"]
    assert heuristic("When should I recommend it") == "profile-injection"


# --- kNN layer on the real embedder ----------------------------------------------------------------


def test_frame_keeps_the_shape_of_the_question() -> None:
    assert frame("What books has Priya read?") == "What things has someone read ?"
    assert frame("How long was I in Japan?") == "How long was I in someone ?"
    assert frame("Where did I leave my old green umbrella?") == "Where did I leave my old something ?"


@pytest.mark.parametrize(
    ("question", "tag"),
    [
        # no rule matches, and the keyword heuristic would say targeted-extraction for all three
        ("What sports does my nephew play?", "broad-summarization"),
        ("Can the kids have soda with dinner?", "constraint-validation"),
        ("How did Omar's cooking skills come along?", "state-tracking"),
        ("Where did Ines buy her wedding dress?", "targeted-extraction"),
    ],
)
def test_knn_layer_decides_when_the_neighbours_agree(router: Router, question: str, tag: str) -> None:
    assert rules(question) == set()
    route = router.route(question)
    assert (route.tag, route.layer) == (tag, "knn")
    assert route.confidence >= router_module.KNN_MIN_SHARE
    knn = route.detail["knn"]
    assert len(knn["neighbours"]) == router_module.KNN_K
    assert knn["distances"] == sorted(knn["distances"])
    assert sum(knn["shares"].values()) == pytest.approx(1.0)


def test_examples_are_embedded_once_per_router(embedder) -> None:
    calls: list[int] = []

    def counting(texts):
        calls.append(len(texts))
        return embedder.embed(texts)

    examples = load_examples()
    r = Router(counting, examples=examples)
    assert calls == []  # nothing happens at construction
    r.route("What sports does my nephew play?")
    r.route("Where did Ines buy her wedding dress?")
    # one batch for the examples (frame + text each), then one per routed question
    assert calls == [2 * len(examples), 2, 2]


def test_unconfident_vote_without_a_model_takes_the_heuristic(router: Router, undecided) -> None:
    question = "What sports does my nephew play?"
    route = router.route(question)
    assert route.layer == "heuristic"
    assert route.tag == heuristic(question) == "targeted-extraction"
    assert "model_error" not in route.detail
    assert route.confidence == route.detail["knn"]["shares"].get(route.tag, 0.0)


def test_low_similarity_is_not_confident(router: Router) -> None:
    vote = router.vote("ok")
    assert vote.top_similarity < router_module.KNN_MIN_SIMILARITY
    assert not vote.confident


# --- model layer (ScriptedLLM: decision logic only) --------------------------------------------------


def test_model_layer_valid_tag(with_llm, undecided) -> None:
    llm = ScriptedLLM([{"action_tag": "broad-summarization"}, {"action_tag": "state-tracking"}])
    r = with_llm(llm)
    first = r.route("What sports does my nephew play?")
    second = r.route("How did Omar's cooking skills come along?")
    assert (first.tag, first.layer) == ("broad-summarization", "model")
    assert (second.tag, second.layer) == ("state-tracking", "model")
    assert "model" in first.detail and "model_error" not in first.detail
    assert first.tokens == first.detail["model"]["prompt_tokens"] + first.detail["model"]["completion_tokens"] > 0
    # schema-constrained to the seven tags; the static prompt first and identical, the question last
    call_a, call_b = llm.calls
    assert call_a.schema == SCHEMA
    assert set(call_a.schema["properties"]["action_tag"]["enum"]) == set(TAGS) == ROUTE_TAGS
    assert call_a.messages[0] == call_b.messages[0] == {"role": "system", "content": prompts.render("router_system")}
    assert call_a.messages[1]["content"].rstrip().endswith("Question: What sports does my nephew play?")
    # the nearest labelled examples are shown as few-shot context
    shown = first.detail["knn"]["neighbours"][: router_module.PROMPT_EXAMPLES]
    for i in shown:
        assert json.dumps(r.examples[i][0], ensure_ascii=False) in call_a.messages[1]["content"]


@pytest.mark.parametrize(
    "reply",
    [
        {"action_tag": "summarize"},  # not one of the seven
        {"tag": "broad-summarization"},  # wrong key
        "broad-summarization",  # not JSON
        {"action_tag": "broad-summarization", "requires_rag": True},  # extra key
    ],
)
def test_invalid_model_reply_falls_back_to_the_heuristic(with_llm, undecided, reply) -> None:
    llm = ScriptedLLM([reply])
    question = "Can the kids have soda with dinner?"
    route = with_llm(llm).route(question)
    assert len(llm.calls) == 1
    assert route.layer == "heuristic"
    assert route.tag == heuristic(question)
    assert route.detail["model_error"].startswith("SchemaError")
    assert route.tokens == 0


def test_prompt_too_long_for_the_model_falls_back_to_the_heuristic(with_llm, undecided) -> None:
    llm = ScriptedLLM([{"action_tag": "broad-summarization"}], n_ctx=64)
    route = with_llm(llm).route("What sports does my nephew play?")
    assert llm.calls == []  # refused before calling
    assert route.layer == "heuristic"
    assert route.detail["model_error"].startswith("ContextTooLong")


def test_model_is_not_asked_when_a_rule_or_the_knn_decides(with_llm) -> None:
    llm = ScriptedLLM()  # would raise if called
    r = with_llm(llm)
    assert r.route("What is my current job?").layer == "rules"
    assert r.route("What sports does my nephew play?").layer == "knn"
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
    assert min(counts.values()) >= 25
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
    assert result["layers"]["rules"] > 0 and result["layers"]["knn"] > 0


# --- evaluation report ---------------------------------------------------------------------------------


def test_evaluate_counts_layers_and_confusion(with_llm, undecided) -> None:
    llm = ScriptedLLM([{"action_tag": "broad-summarization"}, "garbage"])
    items = [
        {"q": "What is my current job?", "tag": "conflict-resolution"},  # rules, right
        {"q": "What sports does my nephew play?", "tag": "broad-summarization"},  # model, right
        {"q": "Can the kids have soda with dinner?", "tag": "constraint-validation"},  # heuristic, wrong
    ]
    result = router_eval.evaluate(with_llm(llm), items)
    assert (result["n"], result["correct"]) == (3, 2)
    assert result["accuracy"] == pytest.approx(2 / 3)
    assert result["layers"] == {"rules": 1, "knn": 0, "model": 1, "heuristic": 1}
    assert result["layer_correct"] == {"rules": 1, "knn": 0, "model": 1, "heuristic": 0}
    assert result["model_errors"] == 1
    assert result["confusion"]["constraint-validation"]["targeted-extraction"] == 1
    assert sum(sum(row.values()) for row in result["confusion"].values()) == 3
    report = router_eval.format_report(result)
    assert "router accuracy: 2/3 = 66.7%" in report
    assert "model replies rejected (heuristic used): 1" in report
    assert "[heuristic] constraint-validation -> targeted-extraction" in report


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
        "n": 1, "correct": 1, "tags": {"temporal-reasoning": 1}, "layers": {"rules": 1}, "accuracy": 1.0,
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
    route = Route("state-tracking", "knn", 0.8, {"rules": []})
    assert route.as_dict() == {"tag": "state-tracking", "layer": "knn", "confidence": 0.8, "detail": {"rules": []}}

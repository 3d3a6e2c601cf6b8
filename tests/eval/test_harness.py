"""The evaluation harness end to end on synthetic LoCoMo- and LongMemEval-format files.

Real store, real embedder; the model is a ScriptedLLM that answers from a table keyed by the
question (decision logic only: what the harness records, skips, samples and scores).
"""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgemem.errors import BadInput
from edgemem.eval import harness, locomo, longmemeval
from edgemem.eval.harness import Question, RunConfig, select_questions
from edgemem.recall.pipeline import ABSTAIN
from edgemem.runtime.fake import ScriptedLLM

SESSION_1 = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "That sounds amazing! I painted a sunrise over the lake last year."),
    ("Caroline", "I'm thinking about a career in counseling and psychology."),
    ("Melanie", "Look what the kids made.", "a photo of a clay dinosaur on a kitchen table"),
]
SESSION_2 = [
    ("Melanie", "We went camping at Lake Tahoe with the whole family."),
    ("Caroline", "My grandmother gave me a silver necklace from Sweden."),
    ("Melanie", "I read Charlotte's Web to the kids every night."),
    ("Caroline", "The adoption agency called me back today!"),
]
QA = [  # question, answer, evidence, category
    ("When did Caroline go to the LGBTQ support group?", "7 May 2023", ["D1:1"], 2),
    ("What did Melanie paint?", "a sunrise", ["D1:2"], 4),
    ("What career is Caroline considering?", "counseling, psychology", ["D1:3"], 1),
    ("What did Melanie's kids make?", "a clay dinosaur", ["D1:4"], 4),
    ("Where did Melanie go camping?", "Lake Tahoe", ["D2:1"], 4),
    ("Where is Caroline's necklace from?", "Sweden", ["D2:2"], 4),
    ("Would Melanie likely enjoy children's books?", "Yes; she reads to her kids", ["D2:3"], 3),
    ("What did Caroline's brother paint?", None, ["D1:2"], 5),
]
# The scripted model answers with the gold answer; category 3 is scored against the gold's part
# before ';' (official scorer), so that is what it says.
ANSWERS = {q: a.split(";")[0] for q, a, _, cat in QA if cat != 5}


def locomo_file(path: Path) -> Path:
    def turns(session: list, n: int) -> list[dict]:
        out = []
        for i, turn in enumerate(session, start=1):
            item = {"speaker": turn[0], "dia_id": f"D{n}:{i}", "text": turn[1]}
            if len(turn) > 2:
                item["blip_caption"] = turn[2]
            out.append(item)
        return out

    qa = []
    for question, answer, evidence, category in QA:
        item = {"question": question, "evidence": evidence, "category": category}
        if category == 5:
            item["adversarial_answer"] = "a sunrise"
        else:
            item["answer"] = answer
        qa.append(item)
    samples = [
        {"sample_id": "syn-1", "conversation": {
            "speaker_a": "Caroline", "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns(SESSION_1, 1),
            "session_2_date_time": "10:37 am on 27 June, 2023", "session_2": turns(SESSION_2, 2),
        }, "qa": qa},
        {"sample_id": "syn-2", "conversation": {
            "speaker_a": "Jon", "speaker_b": "Gina",
            "session_1_date_time": "4:04 pm on 20 January, 2023",
            "session_1": [{"speaker": "Jon", "dia_id": "D1:1", "text": "I lost my job as a banker."},
                          {"speaker": "Gina", "dia_id": "D1:2", "text": "I opened an online clothing store."}],
        }, "qa": [{"question": "What business did Gina start?", "answer": "an online clothing store",
                   "evidence": ["D1:2"], "category": 4}]},
    ]
    ANSWERS["What business did Gina start?"] = "an online clothing store"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def schema_instance(schema: dict):
    """Some value that satisfies a JSON schema (the first enum value, minimal sizes)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: schema_instance(v) for k, v in props.items()}
    if kind == "array":
        return [schema_instance(schema.get("items", {"type": "string"})) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def question_of(messages) -> str:
    found = re.findall(r"Question: (.+)", messages[-1]["content"])
    return found[-1].strip() if found else ""


def answering_llm(**kwargs) -> ScriptedLLM:
    """Answers free-text calls from ANSWERS (abstains on anything else); any schema gets a valid value."""

    def reply(messages, schema):
        if schema is not None:
            return schema_instance(schema)
        return ANSWERS.get(question_of(messages), ABSTAIN)

    return ScriptedLLM(default=reply, **kwargs)


def answer_calls(llm: ScriptedLLM) -> list[str]:
    return [question_of(c.messages) for c in llm.calls if c.schema is None]


def config(path: Path, out: Path, **kwargs) -> RunConfig:
    base = {"benchmark": "locomo", "path": path, "out": out, "system": "rag", "steps": "none", "progress": False}
    return RunConfig(**{**base, **kwargs})


def run_locomo(cfg: RunConfig, settings, llm, embedder, **kwargs) -> dict:
    conversations = locomo.load(cfg.path, max_file_bytes=settings.max_file_bytes, max_text_bytes=settings.max_text_bytes,
                                sample_ids=cfg.only)
    return harness.run(cfg, conversations, locomo.BENCHMARK, settings, llm=llm, embedder=embedder, **kwargs)


def read_records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]


def test_locomo_rag_run_writes_predictions_and_summary(tmp_path, settings, embedder):
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    out = tmp_path / "run"
    llm = answering_llm()
    summary = run_locomo(config(path, out), settings, llm, embedder)

    records = read_records(out)
    assert [r["key"] for r in records] == [f"syn-1#{i}" for i in range(len(QA))] + ["syn-2#0"]
    by_question = {r["question"]: r for r in records}
    first = by_question["Where did Melanie go camping?"]
    assert first["prediction"] == "Lake Tahoe" and first["gold"] == "Lake Tahoe" and first["category"] == 4
    assert first["system"] == "rag" and first["evidence"] == ["D2:1"]
    # The real embedder and BM25 find the camping turn among eight retrieved notes.
    assert "D2:1" in first["retrieved_dia_ids"][:8]
    assert first["packed_tokens"] > 0 and first["pipeline_tokens"] > first["packed_tokens"]
    assert first["model_calls"] == 1 and first["latency_ms"] >= 0
    assert "retrieve_ms" in first["stages"]
    # Flat RAG shows the model exactly what it retrieved.
    assert first["packed_dia_ids"] == first["retrieved_dia_ids"] and first["evidence_in_context"] == 1.0
    # The blip caption was stored as part of what was said, so it is retrievable too.
    kids = by_question["What did Melanie's kids make?"]
    assert "D1:4" in kids["retrieved_dia_ids"]
    trap = by_question["What did Caroline's brother paint?"]
    assert trap["prediction"] == ABSTAIN and trap["adversarial_answer"] == "a sunrise"

    saved = json.loads((out / "summary.json").read_text())
    assert saved["overall"]["n"] == len(QA) + 1
    # Every answer is the gold answer and the trap question abstained: perfect official F1.
    assert saved["overall"]["locomo_f1"] == pytest.approx(1.0)
    assert saved["categories"]["5"]["abstention_acc"] == 1.0
    assert saved["overall"]["recall_at_10"] > 0.5
    assert saved["run"]["system"] == "rag" and saved["run"]["errors"] == 0
    assert saved["run"]["ingest"]["syn-1"]["turns"] == 8 and saved["run"]["ingest"]["syn-1"]["notes"] == 8
    assert summary["table"].startswith("category") and "overall" in summary["table"]
    assert (out / "stores" / "syn-1.db").exists()
    assert oct((out / "predictions.jsonl").stat().st_mode & 0o777) == "0o600"


class Killed(Exception):
    """Stands in for the process dying mid-run."""


def test_resume_continues_a_killed_run_and_skips_done_questions(tmp_path, settings, embedder):
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    out = tmp_path / "run"
    answered = []

    def dying(messages, schema):
        if len(answered) == 3:
            raise Killed()
        answered.append(question_of(messages))
        return ANSWERS.get(question_of(messages), ABSTAIN)

    with pytest.raises(Killed):
        run_locomo(config(path, out), settings, ScriptedLLM(default=dying), embedder)
    done = [r["key"] for r in read_records(out)]
    assert done == ["syn-1#0", "syn-1#1", "syn-1#2"]
    # Mark the conversation's store: a resumed run must reuse it, not ingest again from scratch.
    from edgemem.ingest.raw import remember
    from edgemem.store import raw as raw_store
    from edgemem.store.db import Store

    with Store(out / "stores" / "syn-1.db", embed_model=embedder.name, dim=embedder.dim) as store:
        remember(store, "marker", max_bytes=100)
    # A torn last line, as a kill during a write leaves it, is dropped on resume.
    with open(out / "predictions.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"key": "syn-1#3", "predic')

    with pytest.raises(BadInput, match="already holds a run"):
        run_locomo(config(path, out), settings, answering_llm(), embedder)
    with pytest.raises(BadInput, match="system was 'rag', now 'full-context'"):
        run_locomo(config(path, out, resume=True, system="full-context"), settings, answering_llm(), embedder)

    llm = answering_llm()
    summary = run_locomo(config(path, out, resume=True), settings, llm, embedder)
    asked = answer_calls(llm)
    assert len(asked) == len(QA) + 1 - 3
    assert "When did Caroline go to the LGBTQ support group?" not in asked
    records = read_records(out)
    assert sorted(r["key"] for r in records) == sorted([f"syn-1#{i}" for i in range(len(QA))] + ["syn-2#0"])
    assert summary["overall"]["n"] == len(QA) + 1
    # The first run's store was reused (the marker is still there), not ingested twice.
    assert summary["run"]["ingest"]["syn-1"]["notes"] == 8
    with Store(out / "stores" / "syn-1.db", embed_model=embedder.name, dim=embedder.dim) as store:
        assert raw_store.count(store.conn) == 9


def test_seeded_sample_is_stable_and_proportional():
    questions = [Question(f"q{i}", f"question {i}", "a", cat) for i, cat in enumerate([1] * 10 + [2] * 20 + [4] * 50 + [5] * 20)]
    first = select_questions(questions, 10, seed=7)
    assert [q.key for q in first] == [q.key for q in select_questions(list(questions), 10, seed=7)]
    counts = {c: sum(1 for q in first if q.category == c) for c in (1, 2, 4, 5)}
    assert counts == {1: 1, 2: 2, 4: 5, 5: 2}
    assert [q.key for q in first] == sorted((q.key for q in first), key=lambda k: int(k[1:]))  # file order
    assert [q.key for q in select_questions(questions, 10, seed=8)] != [q.key for q in first]
    # Largest remainders: 7 of 100 -> 0.7, 1.4, 3.5, 1.4 -> floors 0, 1, 3, 1 (5) + the two largest remainders.
    seven = select_questions(questions, 7, seed=0)
    assert {c: sum(1 for q in seven if q.category == c) for c in (1, 2, 4, 5)} == {1: 1, 2: 1, 4: 4, 5: 1}
    assert select_questions(questions, None, seed=0) == questions
    with pytest.raises(BadInput):
        select_questions(questions, 0, seed=0)


def test_limited_run_selects_the_same_questions_every_time(tmp_path, settings, embedder):
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    keys = []
    for name in ("a", "b"):
        run_locomo(config(path, tmp_path / name, limit=4, seed=3, retrieval_only=True), settings, ScriptedLLM(), embedder)
        keys.append([r["key"] for r in read_records(tmp_path / name)])
    assert keys[0] == keys[1] and len(keys[0]) == 4


def test_retrieval_only_generates_nothing(tmp_path, settings, embedder):
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    out = tmp_path / "run"
    llm = ScriptedLLM()  # no script and no default: any completion would fail the test
    summary = run_locomo(config(path, out, retrieval_only=True, only=["syn-1"]), settings, llm, embedder)
    assert llm.calls == []
    records = read_records(out)
    assert len(records) == len(QA) and all(r["prediction"] is None for r in records)
    assert all(r["model_calls"] == 0 and r["packed_tokens"] > 0 for r in records)
    overall = summary["overall"]
    assert overall["locomo_f1"] is None and overall["mem0_f1"] is None and overall["abstention_rate"] is None
    assert overall["recall_at_10"] is not None and overall["recall_at_10"] > 0.5
    assert "Retrieval only" in summary["table"]


def test_edgemem_system_goes_through_engine_ask(tmp_path, settings, embedder):
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    out = tmp_path / "run"
    llm = answering_llm()
    run_locomo(config(path, out, system="edgemem", only=["syn-2"]), settings, llm, embedder)
    (record,) = read_records(out)
    assert record["system"] == "edgemem" and isinstance(record["prediction"], str)
    assert record["query_id"] and record["model_calls"] >= 1
    # The answer left a trace row in the conversation's store, as every answer does.
    from edgemem.store import traces
    from edgemem.store.db import Store

    with Store(out / "stores" / "syn-2.db", embed_model=embedder.name, dim=embedder.dim) as store:
        assert traces.get(store.conn, record["query_id"])["question"] == "What business did Gina start?"
    # Retrieval-only on the edgemem system reports retrieved turns without an answer.
    out2 = tmp_path / "retrieval"
    run_locomo(config(path, out2, system="edgemem", only=["syn-2"], retrieval_only=True), settings, answering_llm(), embedder)
    (record,) = read_records(out2)
    assert record["prediction"] is None and "D1:2" in record["retrieved_dia_ids"]


def test_full_context_keeps_the_newest_turns_that_fit(tmp_path, settings, embedder):
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    out = tmp_path / "run"
    llm = answering_llm(n_ctx=430)
    run_locomo(config(path, out, system="full-context", only=["syn-1"]), settings, llm, embedder)
    records = read_records(out)
    prompt = llm.calls[0].messages[-1]["content"]
    kept = records[0]["context_turns"]
    assert 0 < kept < 8
    # Newest turns kept, shown oldest first, every prompt within the window minus the answer reserve.
    assert "The adoption agency called me back today!" in prompt
    assert "it was so powerful" not in prompt
    assert prompt.index("silver necklace") < prompt.index("adoption agency")
    assert all(llm.count_messages(c.messages) + 200 <= 430 for c in llm.calls)
    by_question = {r["question"]: r for r in records}
    assert by_question["Where is Caroline's necklace from?"]["evidence_in_context"] == 1.0
    assert by_question["When did Caroline go to the LGBTQ support group?"]["evidence_in_context"] == 0.0
    assert by_question["Where is Caroline's necklace from?"]["retrieved_dia_ids"] is None
    summary = json.loads((out / "summary.json").read_text())
    assert 0 < summary["overall"]["evidence_in_context"] < 1
    assert "gold evidence turns were shown to the answer model" in summary["table"]


def test_model_errors_are_recorded_not_hidden(tmp_path, settings, embedder):
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    out = tmp_path / "run"
    # A window too small for even the empty prompt: every question fails with ContextTooLong.
    summary = run_locomo(config(path, out, system="full-context", only=["syn-2"]), settings, answering_llm(n_ctx=150), embedder)
    (record,) = read_records(out)
    assert record["error"].startswith("context_too_long") and record["prediction"] == ""
    assert summary["run"]["errors"] == 1 and "failed with an error" in summary["table"]


def test_locomo_file_errors_are_bad_input(tmp_path):
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    data = json.loads(path.read_text())
    data[0]["qa"][0]["category"] = 9
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput, match="syn-1 qa 1: 'category' must be 1-5"):
        locomo.load(path, max_file_bytes=1 << 20, max_text_bytes=4096)
    with pytest.raises(BadInput, match="no sample nope"):
        locomo.load(locomo_file(path), max_file_bytes=1 << 20, max_text_bytes=4096, sample_ids=["nope"])


# -- LongMemEval -------------------------------------------------------------------------------------
def longmemeval_file(path: Path) -> Path:
    def session(*turns):
        return [{"role": r, "content": c, **({"has_answer": True} if h else {})} for r, c, h in turns]

    haystack_a = [
        session(("user", "I just moved to Porto for a new job.", True), ("assistant", "Congratulations on the move!", False)),
        session(("user", "Any tips for growing basil?", False), ("assistant", "Give it lots of sun.", False)),
    ]
    items = [
        {"question_id": "q-ssu-1", "question_type": "single-session-user", "question": "Which city did I move to?",
         "answer": "Porto", "question_date": "2023/06/01 (Thu) 10:00",
         "haystack_session_ids": ["s-move", "s-basil"], "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/10 (Wed) 09:00"],
         "haystack_sessions": haystack_a, "answer_session_ids": ["s-move"]},
        {"question_id": "q-tr-2", "question_type": "temporal-reasoning", "question": "How many books did I finish in May?",
         "answer": 2, "question_date": "2023/06/02 (Fri) 10:00",
         "haystack_session_ids": ["s-books"], "haystack_dates": ["2023/05/30 (Tue) 20:00"],
         "haystack_sessions": [session(("user", "I finished two books in May: Dune and Emma.", True), ("assistant", "  ", False))],
         "answer_session_ids": ["s-books"]},
        {"question_id": "q-ssu-3_abs", "question_type": "single-session-user", "question": "What is my dog's name?",
         "answer": "The user never mentioned a dog.", "question_date": "2023/06/01 (Thu) 10:00",
         "haystack_session_ids": ["s-basil"], "haystack_dates": ["2023/05/10 (Wed) 09:00"],
         "haystack_sessions": [haystack_a[1]], "answer_session_ids": []},
    ]
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def test_longmemeval_run_on_a_synthetic_file(tmp_path, settings, embedder):
    path = longmemeval_file(tmp_path / "synthetic-lme.json")
    conversations = longmemeval.load(path, max_file_bytes=1 << 20, max_text_bytes=4096)
    assert [c.id for c in conversations] == ["q-ssu-1", "q-tr-2", "q-ssu-3_abs"]
    first = conversations[0]
    # Sessions are ingested in date order; turn n of session s has the id "s:n"; has_answer -> evidence.
    assert [s.uri for s in first.sessions] == ["q-ssu-1/s-basil", "q-ssu-1/s-move"]
    assert first.sessions[1].turns[1].when.isoformat() == "2023-05-20T02:21:01"
    assert first.questions[0].evidence == ["s-move:1"]
    assert first.now.isoformat() == "2023-06-01T10:00:00"
    assert len(conversations[1].sessions[0].turns) == 1  # the whitespace-only turn is skipped

    answers = {"Which city did I move to?": "Porto", "How many books did I finish in May?": "Two books"}

    def reply(messages, schema):
        return schema_instance(schema) if schema else answers.get(question_of(messages), ABSTAIN)

    out = tmp_path / "run"
    cfg = RunConfig(benchmark="longmemeval", path=path, out=out, system="rag", steps="none", progress=False, keep_stores=False)
    summary = harness.run(cfg, conversations, longmemeval.BENCHMARK, settings, llm=ScriptedLLM(default=reply), embedder=embedder)
    records = {r["key"]: r for r in read_records(out)}
    assert set(records) == {"q-ssu-1", "q-tr-2", "q-ssu-3_abs"}
    assert records["q-ssu-1"]["retrieved_dia_ids"][0] == "s-move:1"
    assert records["q-ssu-3_abs"]["abstention"] is True
    types = summary["categories"]
    assert list(types) == ["single-session-user", "temporal-reasoning"]
    assert types["single-session-user"]["n"] == 2
    # "Porto" is exact (F1 1) and the abstention item abstained (1); "Two books" vs 2: F1 0, contains 0.
    assert types["single-session-user"]["f1"] == pytest.approx(1.0)
    assert types["single-session-user"]["abstention_acc"] == 1.0
    assert types["temporal-reasoning"]["f1"] == 0.0
    assert summary["overall"]["session_recall_at_5"] == 1.0
    assert "question type" in summary["table"] and "not the official GPT-4o judge" in summary["table"]
    assert not list((out / "stores").glob("*.db"))  # --no-keep-stores


def test_longmemeval_scoring_and_bad_input(tmp_path):
    assert longmemeval.session_recall_at_k(["a:1", "b:3", "c:1"], ["b", "z"], 2) == 0.5
    assert longmemeval.contains("She moved to Porto in May.", "Porto")
    assert not longmemeval.contains("Portobello", "Porto")
    assert longmemeval.router_correct("knowledge-update", "state-tracking") is True
    assert longmemeval.router_correct("multi-session", "targeted-extraction") is False
    path = longmemeval_file(tmp_path / "lme.json")
    data = json.loads(path.read_text())
    del data[1]["haystack_dates"]
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput, match="item 2 lacks haystack_dates"):
        longmemeval.load(path, max_file_bytes=1 << 20, max_text_bytes=4096)


# -- the command line ----------------------------------------------------------------------------------
def test_cli_help_and_report(tmp_path, settings, embedder):
    from edgemem.eval.cli import eval_app

    runner = CliRunner()
    for command in ("locomo", "longmemeval", "report"):
        result = runner.invoke(eval_app, [command, "--help"])
        assert result.exit_code == 0, result.output
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    out = tmp_path / "run"
    run_locomo(config(path, out, only=["syn-2"]), settings, answering_llm(), embedder)
    (out / "summary.json").unlink()
    result = runner.invoke(eval_app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    assert "overall" in result.output and (out / "summary.json").exists()
    result = runner.invoke(eval_app, ["locomo", str(tmp_path / "missing.json")])
    assert isinstance(result.exception, BadInput)


def test_edgemem_retrieval_goes_through_engine_retrieve_with_the_question_time(tmp_path, settings, embedder):
    """Retrieval-only runs call ``Engine.retrieve`` (the pipeline without its answer stage) with the
    benchmark's question time, and read the route, the ranked candidates and the packed notes."""
    import dataclasses
    from datetime import datetime

    from edgemem.engine import Engine
    from edgemem.eval.harness import EdgememSystem, ext_ids_of, raw_ids_of
    from edgemem.ingest.importers import import_sessions, locomo_sessions

    path = locomo_file(tmp_path / "synthetic-locomo.json")
    sample = json.loads(path.read_text())[1]
    llm = ScriptedLLM()  # no replies: retrieval must not call the model
    with Engine.open(dataclasses.replace(settings, db_path=tmp_path / "p.db"), llm=llm, embedder=embedder,
                     steps=[]) as engine:
        import_sessions(engine.store, locomo_sessions(sample, max_text_bytes=4096))
        engine.process()
        when = datetime(2023, 2, 1, 12, 0)
        outcome = EdgememSystem(engine, None).retrieve("What business did Gina start?", when)
        conn = engine.store.conn
        assert llm.calls == [] and outcome.text is None and outcome.packed_tokens > 0
        assert outcome.trace["reference_date"] == "2023-02-01"
        assert "D1:2" in ext_ids_of(conn, raw_ids_of(conn, outcome.items))
        assert "D1:2" in ext_ids_of(conn, raw_ids_of(conn, outcome.trace["retrieved"]))
        tag, layer = harness.route_of(outcome.trace)
        assert tag is not None and layer is not None
        assert "route" in harness.stages_of(outcome.trace)


# -- the question date reaches Tier 3 ------------------------------------------------------------------
def elapsed_days_model(counts: dict) -> ScriptedLLM:
    """Answers only with what Tier-3 preprocessing computed against the reference date ("31 days"),
    and abstains when no such fact was packed: the number can only come from ``question_date``."""
    fact = re.compile(r"\(reference date\): (\d+ days?)")

    def reply(messages, schema):
        if schema is not None:
            return schema_instance(schema)
        found = fact.search(messages[-1]["content"])
        counts["answered" if found else "abstained"] = counts.get("answered" if found else "abstained", 0) + 1
        return found.group(1) if found else ABSTAIN

    return ScriptedLLM(default=reply)


def test_a_longmemeval_answer_that_depends_on_question_date(tmp_path, settings, embedder):
    """"How many days ago…" is answered from the day the question is asked: the same haystack asked
    on two question dates gives two numbers, each the right one, through the harness and Engine.ask."""
    haystack = [
        [{"role": "user", "content": "I adopted a puppy named Biscuit today!", "has_answer": True},
         {"role": "assistant", "content": "Congratulations on Biscuit!"}],
        [{"role": "user", "content": "Any tips for growing basil on a balcony?"},
         {"role": "assistant", "content": "Give it lots of sun."}],
    ]
    item = {"question_type": "temporal-reasoning", "question": "How many days ago did I adopt my puppy?",
            "haystack_session_ids": ["s-puppy", "s-basil"],
            "haystack_dates": ["2023/05/20 (Sat) 09:00", "2023/05/02 (Tue) 18:00"],
            "haystack_sessions": haystack, "answer_session_ids": ["s-puppy"]}
    items = [{**item, "question_id": "q-june", "question_date": "2023/06/20 (Tue) 10:00", "answer": "31 days"},
             {**item, "question_id": "q-july", "question_date": "2023/07/04 (Tue) 08:30", "answer": "45 days"}]
    path = tmp_path / "lme-dates.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    conversations = longmemeval.load(path, max_file_bytes=1 << 20, max_text_bytes=4096)
    counts: dict = {}
    out = tmp_path / "run"
    cfg = RunConfig(benchmark="longmemeval", path=path, out=out, system="edgemem", steps="none", progress=False)
    summary = harness.run(cfg, conversations, longmemeval.BENCHMARK, settings, llm=elapsed_days_model(counts),
                          embedder=embedder)

    records = {r["key"]: r for r in read_records(out)}
    assert records["q-june"]["prediction"] == "31 days" and records["q-july"]["prediction"] == "45 days"
    assert records["q-june"]["route_tag"] == "temporal-reasoning"
    assert counts == {"answered": 2}
    assert summary["overall"]["f1"] == pytest.approx(1.0) and summary["overall"]["contains"] == 1.0
    # The trace row says which day the answer was measured against.
    from edgemem.store import traces
    from edgemem.store.db import Store

    with Store(out / "stores" / "q-june.db", embed_model=embedder.name, dim=embedder.dim) as store:
        assert traces.get(store.conn, records["q-june"]["query_id"])["data"]["reference_date"] == "2023-06-20"


def test_a_system_named_at_oracle_reads_the_gold_evidence_whatever_evidence_says(tmp_path):
    """edgemem,rag,edgemem@oracle: the ceiling of one reader next to both systems, without rag@oracle."""
    path = tmp_path / "x.json"
    assert config(path, tmp_path / "a", system="edgemem,rag,edgemem@oracle").variants == [
        "edgemem", "rag", "edgemem@oracle"]
    assert config(path, tmp_path / "b", system="rag,edgemem@oracle", evidence="both").variants == [
        "rag", "rag@oracle", "edgemem@oracle"]
    assert config(path, tmp_path / "c", system="edgemem@oracle", evidence="both").variants == ["edgemem@oracle"]


def test_systems_and_oracle_evidence_answer_the_same_questions_on_shared_stores(tmp_path, settings, embedder,
                                                                                monkeypatch):
    """--system edgemem,rag --evidence both: four systems per question, one ingestion, a comparison table;
    the oracle variants read exactly the notes of the gold evidence turns, and a second run reuses the
    stores folder instead of ingesting again."""
    path = locomo_file(tmp_path / "synthetic-locomo.json")
    stores = tmp_path / "stores"
    llm = answering_llm()
    cfg = config(path, tmp_path / "run", system="edgemem,rag", evidence="both", only=["syn-1"], stores=stores)
    summary = run_locomo(cfg, settings, llm, embedder)

    records = read_records(tmp_path / "run")
    variants = ["edgemem", "rag", "edgemem@oracle", "rag@oracle"]
    assert [r["system"] for r in records[:4]] == variants
    assert len(records) == 4 * len(QA)
    by = {(r["system"], r["question"]): r for r in records}
    camping = by[("rag@oracle", "Where did Melanie go camping?")]
    assert camping["packed_dia_ids"] == ["D2:1"] and camping["prediction"] == "Lake Tahoe"
    oracle = by[("edgemem@oracle", "Where did Melanie go camping?")]
    assert oracle["retrieved_dia_ids"] == ["D2:1"]
    trap = by[("rag@oracle", "What did Caroline's brother paint?")]
    assert trap["prediction"] == ABSTAIN and trap["packed_dia_ids"] == trap["evidence"] == ["D1:2"]
    assert set(summary["systems"]) == set(variants)
    assert summary["systems"]["rag@oracle"]["overall"]["n"] == len(QA)
    assert "systems compared on the same questions and stores" in summary["table"]
    assert summary["systems"]["rag"]["answerable_abstention_rate"] == 0.0
    assert (stores / "syn-1.db").exists() and not (tmp_path / "run" / "stores" / "syn-1.db").exists()

    def no_ingest(*_args, **_kwargs):
        raise AssertionError("the shared store was ingested again")

    monkeypatch.setattr(harness, "_ingest", no_ingest)
    again = run_locomo(config(path, tmp_path / "run2", only=["syn-1"], stores=stores), settings, answering_llm(), embedder)
    assert again["run"]["ingest"]["syn-1"]["turns"] == 8 and again["run"]["n"] == len(QA)
    # A store built with other write-path steps is not reused.
    with pytest.raises(AssertionError, match="ingested again"):
        run_locomo(config(path, tmp_path / "run3", only=["syn-1"], stores=stores, steps="default"), settings,
                   answering_llm(), embedder)


def test_a_budget_given_for_the_run_packs_the_notes_and_is_recorded(tmp_path, settings, embedder):
    """--budget TAG=N: the run's packs hold no more than N raw tokens; the run says which budgets it had."""
    from edgemem.eval.cli import parse_budgets
    from edgemem.recall import packer

    path = locomo_file(tmp_path / "synthetic-locomo.json")
    default = run_locomo(config(path, tmp_path / "plain", system="edgemem", retrieval_only=True, only=["syn-1"]), settings, ScriptedLLM(), embedder)
    budgets = parse_budgets(["targeted-extraction=20", "temporal-reasoning=20", "broad-summarization=20"])
    small = run_locomo(config(path, tmp_path / "small", system="edgemem", retrieval_only=True, only=["syn-1"], budgets=budgets),
                       settings, ScriptedLLM(), embedder)
    assert small["run"]["budgets"] == {"broad-summarization": 20, "targeted-extraction": 20, "temporal-reasoning": 20}
    assert "budgets" not in default["run"]
    packed = [r for r in read_records(tmp_path / "small") if r["route_tag"] in budgets]
    assert packed and all(r["packed_tokens"] <= 20 for r in packed)
    assert max(r["packed_tokens"] for r in read_records(tmp_path / "plain")) > 20
    assert packer.FITTED_BUDGET["targeted-extraction"] == 320  # restored after the run
    with pytest.raises(BadInput, match="--budget takes TAG=TOKENS"):
        parse_budgets(["targeted=400"])
    with pytest.raises(BadInput, match="--budget takes TAG=TOKENS"):
        parse_budgets(["targeted-extraction=lots"])

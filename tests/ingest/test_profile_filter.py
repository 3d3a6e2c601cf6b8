"""The profile step's learned filter: shipped weights, real MiniLM vectors, the step's decisions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgemem.errors import BadInput
from edgemem.ingest import profile_filter
from edgemem.ingest.profile import ProfileStep, cues
from edgemem.ingest.profile_filter import THRESHOLD, ProfileFilter, load_examples, parse_examples
from edgemem.linear import examples_digest
from edgemem.ingest.raw import accept_turns
from edgemem.ingest.worker import Worker
from edgemem.runtime.fake import HashEmbedder, ScriptedLLM
from edgemem.store import profile as store_profile
from edgemem.store.db import Store

DAY = "2025-03-04T21:10:00"

# Lines written for this test (none is a training example): a lasting fact, said the way people
# text, without the cue patterns' words; and lines that state nothing lasting. A terse rule ("rule
# for you: no work calls after 7pm, ever") scores 0.91, under the default 0.92: rules said that way
# reach the profile only through a cue, and the read path's rules read them from the notes.
LASTING = [
    "fyi I'm coeliac, so anything you suggest has to be gluten free",
    "my sister Ciara is really into bouldering and natural wine",
    "ok the kids are finally asleep. oh and Dan's lactose intolerant so no cheese sauces when he's eating",
]
PASSING = [
    "Thanks, Gina! See you at the studio.",
    "went to the cinema last night, the popcorn was stale",
    "dentist moved to Thursday 3pm",
    "what time does the pharmacy close?",
]


def vectors(embedder, speaker: str, text: str) -> np.ndarray:
    from edgemem.ingest.notes import sentences

    return np.asarray(embedder.embed([f"{speaker}: {text}"] + [f"{speaker}: {s}" for s in sentences(text)]))


@pytest.fixture(scope="module")
def real_filter(embedder) -> ProfileFilter:
    return ProfileFilter(embedder.embed)


def test_the_shipped_weights_match_the_examples_and_the_embedder(real_filter, embedder) -> None:
    examples = load_examples()
    assert len(examples) > 1000 and {label for _, label in examples} == {0, 1}
    assert not {text for text, _ in examples} & set(LASTING + PASSING)
    real_filter.probability(vectors(embedder, "Mia", "hello"))
    assert real_filter.trained == "package"


@pytest.mark.parametrize("text", LASTING)
def test_a_lasting_fact_without_a_cue_passes(real_filter, embedder, text) -> None:
    assert cues(text) == []  # the cue patterns alone never asked the model about these
    assert real_filter.probability(vectors(embedder, "Mia", text)) >= THRESHOLD


@pytest.mark.parametrize("text", PASSING)
def test_events_requests_and_small_talk_do_not(real_filter, embedder, text) -> None:
    assert real_filter.probability(vectors(embedder, "Mia", text)) < THRESHOLD


def test_edited_examples_or_another_embedder_train_from_the_examples() -> None:
    hashed = HashEmbedder(384)
    f = ProfileFilter(hashed.embed)
    f.probability(np.asarray(hashed.embed(["Mia: hello"])))
    assert f.trained == "examples"
    assert examples_digest([("a", 1)]) != examples_digest([("a", 0)])


@pytest.mark.parametrize("line, message", [
    ('{"text": "x"}', "line 1: not a JSON object with text and label"),
    ('{"text": "", "label": 1}', "line 1: text must be non-empty and label 0 or 1"),
    ('{"text": "x", "label": 2}', "line 1: text must be non-empty and label 0 or 1"),
    ("not json", "line 1: not a JSON object with text and label"),
])
def test_a_bad_example_line_is_a_one_line_error(line, message) -> None:
    with pytest.raises(BadInput, match=message):
        parse_examples([line], source="examples")


def test_rebuild_writes_a_file_that_loads(tmp_path: Path, embedder) -> None:
    target = tmp_path / "filter.npz"
    summary = profile_filter.rebuild(embedder.embed, target)
    assert summary["examples"] == len(load_examples()) and target.stat().st_size > 0
    with np.load(target) as npz:
        assert str(npz["examples_sha256"]) == examples_digest(load_examples())
        assert npz["weights"].shape == (385, 2)


@pytest.fixture
def real_store(tmp_path: Path):
    s = Store(tmp_path / "t.db", embed_model="all-MiniLM-L6-v2", dim=384)
    yield s
    s.close()


def test_the_step_asks_the_model_about_a_lasting_fact_and_not_about_small_talk(real_store, embedder) -> None:
    replies = [{"facts": [{"kind": "identity", "key": "diet", "value": "coeliac, gluten free"}]}]

    def reply(messages, schema):
        if "facts" not in schema["properties"]:
            return {h: {"redundancy": 0.0, "complementarity": 0.0, "relation": "RELATED"} for h in schema["required"]}
        return replies.pop(0)

    llm = ScriptedLLM(default=reply)
    accept_turns(real_store, [("Mia", LASTING[0], DAY, None), ("Mia", PASSING[1], DAY, None),
                              ("Assistant", "Noted: you love gluten free baking.", DAY, None)],
                 kind="conversation", uri="chat")
    Worker(real_store, llm, embedder.embed, steps=[ProfileStep()]).drain()
    asked = [c for c in llm.calls if "facts" in c.schema["properties"]]
    assert len(asked) == 1 and LASTING[0] in asked[0].messages[-1]["content"]
    (fact,) = store_profile.current(real_store.conn)
    assert (fact.key, fact.value) == ("mia/identity/diet", "coeliac, gluten free")


def test_the_profile_filter_setting_sets_the_threshold_and_1_leaves_only_cues(real_store, embedder) -> None:
    from edgemem import config
    from edgemem.errors import ConfigError
    from edgemem.ingest.steps import default_steps

    settings = config.load(env={"EDGEMEM_HOME": str(real_store.path.parent), "EDGEMEM_PROFILE_FILTER": "1"})
    assert settings.profile_filter == 1.0
    (step,) = [s for s in default_steps(settings.profile_filter) if isinstance(s, ProfileStep)]
    assert step.threshold == 1.0
    assert [s.threshold for s in default_steps() if isinstance(s, ProfileStep)] == [THRESHOLD]
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ConfigError, match="profile_filter must be a probability"):
            default_steps(bad)

    llm = ScriptedLLM(default=lambda messages, schema: {"facts": []})
    accept_turns(real_store, [("Mia", LASTING[0], DAY, None), ("Mia", "I love climbing", DAY, None)],
                 kind="conversation", uri="chat")
    Worker(real_store, llm, embedder.embed, steps=[step]).drain()
    # The lasting fact with no cue is not asked about; the cued line still is.
    asked = [c.messages[-1]["content"] for c in llm.calls if "facts" in c.schema["properties"]]
    assert len(asked) == 1 and "I love climbing" in asked[0]

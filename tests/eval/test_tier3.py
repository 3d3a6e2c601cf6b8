"""Tier-3 date facts judged by a fixed key without the model (edgemem.eval.tier3).

A keyed persona is ingested through the evaluation harness (real store, real embedder, the write
path's date resolver, no model steps); Tier 3 is then run on its temporal questions as the daemon's
read path would, and each is judged by its key."""

import json
from pathlib import Path

from edgemem.eval import harness, locomo, tier3
from edgemem.eval.harness import RunConfig
from edgemem.runtime.fake import ScriptedLLM

TURNS = [  # session 1, said on Sunday 2 November 2025
    ("Ana", "Booked the dentist for Thursday the 13th at 10."),
    ("Ana", "My sister's wedding is on 13 September next year, in Porto."),
]
TURNS_2 = [  # session 2, said on Monday 17 November 2025
    ("Ana", "Started my new job at the library today!"),
]
QA = [
    ("How many days were there between my dentist appointment and starting at the library?",
     {"all": [["4 days"]]}),
    ("What day of the week is my sister's wedding?", {"all": [["sunday"]]}),
    ("When did I start at the library?", {"all": [["17 november"]]}),
    ("What day of the week was my dentist appointment?", {"all": [["friday"]]}),  # a wrong key: it was a Thursday
]


def persona(path: Path) -> Path:
    def turns(session: list, n: int) -> list[dict]:
        return [{"speaker": s, "dia_id": f"D{n}:{i}", "text": t} for i, (s, t) in enumerate(session, start=1)]

    qa = [{"question": q, "answer": "x", "evidence": ["D1:1"], "category": 2, "intent": "temporal-reasoning",
           "key": key} for q, key in QA]
    sample = {"sample_id": "persona-ana", "qa": qa, "conversation": {
        "speaker_a": "Ana", "speaker_b": "Assistant",
        "session_1_date_time": "8:00 pm on 2 November, 2025", "session_1": turns(TURNS, 1),
        "session_2_date_time": "9:00 pm on 17 November, 2025", "session_2": turns(TURNS_2, 2)}}
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_kinds_and_verdicts() -> None:
    assert tier3.kind_of("What day of the week is Mum's 80th?") == "weekday"
    assert tier3.kind_of("how many nights did we stay?") == "span"
    assert tier3.kind_of("Was the hike before or after Tiago's visit?") == "order"
    assert tier3.kind_of("When is Zosia's birthday?") == "when"
    key = {"all": [["monday"]]}
    assert tier3.verdict("Monday, 9 November 2026", ["9 November 2026 is a Monday"], key) == "direct"
    assert tier3.verdict(None, ["9 November 2026 is a Monday"], key) == "fact"
    assert tier3.verdict(None, ["29 July 2026 is a Wednesday"], key) == "wrong"
    assert tier3.verdict(None, [], key) == "none"


def test_tier3_on_a_keyed_persona(tmp_path, settings, embedder, capsys) -> None:
    path = persona(tmp_path / "ana.json")
    stores = tmp_path / "stores"
    cfg = RunConfig(benchmark="locomo", path=path, out=tmp_path / "run", system="edgemem", steps="none",
                    progress=False, retrieval_only=True, stores=stores)
    conversations = locomo.load(path, max_file_bytes=settings.max_file_bytes, max_text_bytes=settings.max_text_bytes)
    harness.run(cfg, conversations, locomo.BENCHMARK, settings, llm=ScriptedLLM(), embedder=embedder)
    counts = tier3.run(path, stores)
    # 13 November 2025 → 17 November 2025 is 4 days; the wedding, 13 September 2026, is a Sunday;
    # "today" said on 17 November; the dentist was a Thursday, not the key's Friday.
    assert counts == {("span", "direct"): 1, ("weekday", "direct"): 1, ("when", "direct"): 1, ("weekday", "wrong"): 1}
    assert tier3.main([str(path), "--stores", str(stores)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].split() == ["all", "3", "0", "1", "0", "4"]
    assert tier3.main([str(path), "--stores", str(tmp_path / "none")]) == 2

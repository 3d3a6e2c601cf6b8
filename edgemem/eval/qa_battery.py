"""How often the read path's Tier-3 steps answer a temporal or counting question right by themselves.

``data/qa-battery.jsonl``: 170 small histories (4 to 10 messages from one user, over weeks or
months, in five registers) each ending in one question with a fixed key, written by a helper that
never saw edgemem's code. Kinds: date, distance, stretch, weekday, ago, shift (how far a plan moved),
current (a plan after its changes), count and total. Half the items (by a hash of their id) are
*tune*, the rest *check*.

No retrieval and no model: every message is annotated as the write path would, all of them are the
evidence, and the step of the kind's intent (temporal-reasoning, or state-tracking for counts)
prepares it. A direct answer (the step answering in code) is judged by the key; questions without
one go to the model in a real run, and are counted apart. For counts, the step's "number of …"
fact, which the model is handed, is judged too.

    python -m edgemem.eval.qa_battery --split check
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

from edgemem.engine import asked_spans
from edgemem.eval.date_battery import split_of
from edgemem.eval.key import judge
from edgemem.ingest import notes
from edgemem.recall.evidence import Evidence
from edgemem.recall.preprocess import prepare
from edgemem.store.raw import Turn

BATTERY = Path(__file__).parent / "data" / "qa-battery.jsonl"
INTENT = {"count": "state-tracking", "total": "state-tracking"}
_NUMBER_OF = re.compile(r"^number of [^:]+: (\d+)")


def evidence(item: dict) -> list[Evidence]:
    """The item's messages as the write path drafts them (:func:`edgemem.ingest.notes.draft`): annotated,
    with their resolved dates."""
    out = []
    for i, line in enumerate(item["lines"], 1):
        note = notes.draft(Turn(i, 1, i, "me", line["text"], line["said_at"], line["said_at"], None))
        out.append(Evidence(i, note.content, note.event_time, note.speaker, dates=note.dates))
    return out


def score(split: str = "all", path: Path = BATTERY) -> dict[str, Counter]:
    """Per kind: direct answers right, wrong, none; and count facts right."""
    out: dict[str, Counter] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if split != "all" and split_of(item["id"]) != split:
            continue
        asked = datetime.fromisoformat(item["asked_at"])
        days = [(a, b) for a, b, _ in asked_spans(item["question"], asked)]
        prepared = prepare(INTENT.get(item["kind"], "temporal-reasoning"), item["question"], evidence(item),
                           reference=asked.date(), asked_days=days)
        tally = out.setdefault(item["kind"], Counter())
        tally["n"] += 1
        if prepared.direct is None:
            tally["none"] += 1
        else:
            tally["right" if judge(prepared.direct[0], item["key"]) else "wrong"] += 1
        counted = next((m.group(1) for f in prepared.facts if (m := _NUMBER_OF.match(f))), None)
        if item["kind"] == "count":
            tally["fact right"] += counted is not None and judge(f"{counted} times", item["key"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "check", "all"), default="all")
    args = parser.parse_args(argv)
    kinds = score(args.split)
    total = sum(kinds.values(), Counter())
    print(f"{args.split}: {total['n']} questions, direct answers {total['right']} right, {total['wrong']} wrong, "
          f"{total['none']} left to the model; count facts right {total['fact right']} of {kinds.get('count', Counter())['n']}")
    for kind in sorted(kinds):
        k = kinds[kind]
        print(f"  {kind}: {k['right']} right, {k['wrong']} wrong, {k['none']} none of {k['n']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

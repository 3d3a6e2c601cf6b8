"""How well the write path's date resolver reads dates as people write them.

``data/date-battery.jsonl``: 380 chat messages, each with the time it was sent and every phrase in it
that names a day or a span of days, resolved by hand-checked ``datetime`` code (start, end, and the
other reading where a reader could take either, as ``also``). It was written by a helper that never
saw edgemem's code, in six registers (fast texting, British, American, non-native English, formal,
long messages with several dates), with 42 messages whose only date-like words are no dates ("may
I", "sat down", "24/7"). Half the messages (by a hash of their id) are *tune*, the rest *check*.

A phrase is right when a resolved date overlaps it in the text and has its start and end (or those of
its ``also``); a resolved date overlapping no expected phrase is an extra.

    python -m edgemem.eval.date_battery --split check
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from edgemem.ingest.dates import find_spans

BATTERY = Path(__file__).parent / "data" / "date-battery.jsonl"


def split_of(item_id: str) -> str:
    return "tune" if int(hashlib.sha1(item_id.encode()).hexdigest()[0], 16) < 8 else "check"


@dataclass
class Score:
    right: int = 0
    phrases: int = 0
    extra: int = 0
    messages: int = 0
    clean: int = 0  # messages with every phrase right and no extra
    by_register: Counter = field(default_factory=Counter)
    right_by_register: Counter = field(default_factory=Counter)


def score(split: str = "all", path: Path = BATTERY) -> Score:
    out = Score()
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if split != "all" and split_of(item["id"]) != split:
            continue
        text, found = item["text"], find_spans(item["text"], datetime.fromisoformat(item["said_at"]))
        out.messages += 1
        used: set[int] = set()
        wrong = 0
        cursor = 0
        for expected in item["expected"]:
            begin = text.find(expected["phrase"], cursor)
            stop, cursor = begin + len(expected["phrase"]), begin + 1
            readings = {(expected["start"], expected["end"])} | {tuple(a) for a in expected.get("also") or []}
            hit = False
            for k, (b, e, resolved) in enumerate(found):
                if b < stop and e > begin:
                    used.add(k)
                    hit = hit or (resolved.start.isoformat(), resolved.end.isoformat()) in readings
            out.phrases += 1
            out.right += hit
            wrong += not hit
            out.by_register[item["register"]] += 1
            out.right_by_register[item["register"]] += hit
        extra = len(found) - len(used)
        out.extra += extra
        out.clean += not wrong and not extra
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "check", "all"), default="all")
    args = parser.parse_args(argv)
    s = score(args.split)
    print(f"{args.split}: phrases {s.right}/{s.phrases} ({100 * s.right / max(s.phrases, 1):.1f}%), "
          f"extra {s.extra}, messages all right {s.clean}/{s.messages}")
    print(" ".join(f"{k} {s.right_by_register[k]}/{s.by_register[k]}" for k in sorted(s.by_register)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

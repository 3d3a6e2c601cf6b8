"""What Tier 3 computes for the temporal questions of a keyed set, judged by their fixed keys, without
the model.

For each question whose intent is temporal-reasoning, route it as the daemon would, gather and
preprocess its evidence (:func:`edgemem.recall.tiers.gather`, the date maths of MemFlow A.2) at the
time the set asks it, and judge by the question's key (:mod:`edgemem.eval.key`):

* ``direct`` — the answer Tier 3 gives with no model call is right;
* ``fact`` — no right direct answer, but the computed facts handed to the model hold the answer;
* ``wrong`` — Tier 3 computed something, and it is not the answer;
* ``none`` — Tier 3 computed nothing (a "when" question left to the model's reading).

Counts are by the kind of question (a weekday, a span between or within events, which came first, a
date, other). It needs the stores an ``edgemem eval locomo`` run kept (``--stores DIR``: one
``<sample_id>.db`` each) and reads no model, so it runs in seconds: the date grounding can be judged
on many questions apart from the model's reading. Per-question lines (``--show``) print questions:
use them on the *tune* split only.

    python -m edgemem.eval.tier3 PATH --stores DIR [--split tune|check] [--show]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections import Counter
from pathlib import Path

from edgemem import config
from edgemem.errors import BadInput

KINDS = ("weekday", "span", "order", "when", "other")
VERDICTS = ("direct", "fact", "wrong", "none")


def kind_of(question: str) -> str:
    """The kind of temporal question: the day of the week, a span, an order, a date, or other."""
    q = question.lower()
    if re.search(r"day\s+of\s+the\s+week|\bweekday\b|\bwhat\s+day\b", q):
        return "weekday"
    if re.search(r"\bhow\s+(?:many|long|much|old)\b|\bhow\s+far\s+apart\b", q):
        return "span"
    if re.search(r"\bfirst\b|\bbefore\b|\bafter\b|\bearlier\b|\blater\b", q):
        return "order"
    if re.search(r"\bwhen\b|\bwhat\s+date\b|\bwhich\s+dates?\b", q):
        return "when"
    return "other"


def verdict(direct: str | None, facts: list[str], key: dict) -> str:
    """How Tier 3 did on one question (see the module docstring)."""
    from edgemem.eval.key import judge

    if direct and judge(direct, key):
        return "direct"
    if facts and judge(" ; ".join(facts), key):
        return "fact"
    return "wrong" if direct or facts else "none"


def run(path: Path, stores: Path, *, split: str | None = None, show: bool = False) -> Counter:
    """(kind, verdict) counts over the set's keyed temporal questions; ``show`` prints each one."""
    from edgemem.engine import Engine, asked_spans
    from edgemem.eval import locomo
    from edgemem.eval.splits import split_of
    from edgemem.recall import tiers

    settings = config.load()
    conversations = locomo.load(path, max_file_bytes=settings.max_file_bytes, max_text_bytes=settings.max_text_bytes)
    counts: Counter = Counter()
    for conversation in conversations:
        if split is not None and split_of(conversation.id) != split:
            continue
        asked = [q for q in conversation.questions
                 if q.extra.get("intent") == "temporal-reasoning" and q.extra.get("answer_key")]
        if not asked:
            continue
        db = stores / f"{conversation.id}.db"
        if not db.exists():
            raise BadInput(f"{db}: no store for {conversation.id} (build it with edgemem eval locomo --stores)")
        engine = Engine.open(dataclasses.replace(settings, db_path=db))
        now = conversation.now
        try:
            for question in asked:
                tag = engine.router.route(question.question).tag
                days = [(a, b) for a, b, _ in asked_spans(question.question, now)] if now is not None else []
                gathered = tiers.gather(engine.store.conn, tag, question.question, engine.runtime.embed,
                                        reference=now.date() if now is not None else None, asked_days=days)
                facts = [e.text for e in gathered.items if e.kind == "summary"]
                direct = gathered.direct[0] if gathered.direct else None
                found = verdict(direct, facts, question.extra["answer_key"])
                counts[(kind_of(question.question), found)] += 1
                if show:
                    print(f"{found:6} {conversation.id} | {question.question}\n       direct: {direct} | facts: {facts[:4]}")
        finally:
            engine.close()
    return counts


def table(counts: Counter) -> str:
    rows = [f"{'kind':8} " + " ".join(f"{v:>6}" for v in VERDICTS) + "    all"]
    for kind in KINDS:
        row = [counts[(kind, v)] for v in VERDICTS]
        if any(row):
            rows.append(f"{kind:8} " + " ".join(f"{n:>6}" for n in row) + f" {sum(row):>6}")
    total = [sum(counts[(k, v)] for k in KINDS) for v in VERDICTS]
    rows.append(f"{'all':8} " + " ".join(f"{n:>6}" for n in total) + f" {sum(total):>6}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a LoCoMo-format file whose questions carry keys and intents")
    parser.add_argument("--stores", type=Path, required=True, help="the stores an eval run kept (--stores DIR)")
    parser.add_argument("--split", choices=("tune", "check"), default=None)
    parser.add_argument("--show", action="store_true", help="print each question (tune split only)")
    args = parser.parse_args(argv)
    try:
        counts = run(args.path, args.stores, split=args.split, show=args.show)
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(table(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m edgemem.eval.router_train [--locomo PATH ...]``: retrain the router's shipped classifier.

Trains on the package examples (``recall/data/router_examples.jsonl``) and, with ``--locomo``, the
questions of those LoCoMo files' *tune* conversations, labelled by
:func:`edgemem.eval.router_eval.locomo_training_examples`, with the default embedder; writes
``recall/data/router_classifier.npz``. It lives in ``eval`` because reading and labelling a
benchmark is evaluation's business; ``recall`` only trains (:func:`edgemem.recall.router.rebuild`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import numpy as np

from edgemem.errors import EdgememError
from edgemem.eval.router_eval import locomo_training_examples
from edgemem.recall.router import rebuild


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edgemem.eval.router_train",
                                     description="retrain the router's shipped classifier")
    parser.add_argument("--locomo", metavar="PATH", action="append", default=[],
                        help="also train on this LoCoMo file's tune-split questions (repeatable)")
    args = parser.parse_args(argv)

    from edgemem import config
    from edgemem.runtime.runtime import Runtime

    runtime = Runtime(config.load())
    vectors: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:
        """The embedder, each text once: labelling and training embed the same package examples."""
        missing = [t for t in dict.fromkeys(texts) if t not in vectors]
        if missing:
            vectors.update(zip(missing, np.asarray(runtime.embedder.embed(missing)), strict=True))
        return np.array([vectors[t] for t in texts])

    try:
        extra: tuple[tuple[str, str], ...] = ()
        source = ""
        if args.locomo:
            extra, source = locomo_training_examples(embed, args.locomo)
        print(json.dumps(rebuild(embed, extra=extra, extra_source=source), indent=2))
    except EdgememError as exc:
        print(f"edgemem: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        runtime.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

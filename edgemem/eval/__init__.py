"""Evaluation: LoCoMo and LongMemEval through the harness, the baselines, metrics and benchmarks.

``edgemem eval locomo PATH`` / ``edgemem eval longmemeval PATH`` (:mod:`edgemem.eval.cli`) ingest
each conversation into a fresh store through the daemon's write path, answer through a system's
read path and score with :mod:`edgemem.eval.metrics`; ``edgemem bench`` times the store, retrieval,
ingestion and ``ask``. Nothing here is imported by the daemon.
"""

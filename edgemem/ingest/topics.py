"""MemFly topic evolution (§3.2 structural prior, §3.3 "Topic Evolution"): keyword co-occurrence
graph G_kw partitioned by the Leiden algorithm into Topics, each with a centroid embedding.

- ``KeywordStep`` keeps the keyword index (``keywords`` df, ``note_keywords``) in step with every
  note and enqueues a ``topics`` job every ``every`` = 50 new notes (at most one pending). The paper
  restructures "periodically" without a period; 50 notes is a handful of conversation sessions,
  and a rebuild of a few thousand notes takes well under a second.
- ``rebuild_topics`` (the job, and ``edgemem rebuild``): vertices are keywords carried by at least
  ``min_df`` = 2 active notes (a term seen once links nothing), edge weights count the notes in which
  two keywords co-occur; Leiden with the modularity objective, seeded, run to convergence. Topics of
  fewer than 2 keywords are dropped. A topic's centroid is the mean of its notes' embeddings, each
  note weighted by the share of its keywords that fall in the topic.

No model is involved: labels are the topic's three most frequent keywords.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

import igraph
import numpy as np

from edgemem.ingest.notes import NoteDraft
from edgemem.store import clusters as cluster_store
from edgemem.store import notes
from edgemem.store import topics as store

if TYPE_CHECKING:
    from edgemem.ingest.worker import WriteContext
    from edgemem.store.jobs import Job

TOPICS_JOB = "topics"
JOB_PRIORITY = 11  # after pending note jobs: a burst of ingestion ends with a single rebuild


@dataclass(frozen=True)
class TopicParams:
    every: int = 50  # new notes between rebuilds
    min_df: int = 2
    min_keywords: int = 2  # smallest topic kept
    resolution: float = 1.0
    seed: int = 0


@dataclass
class TopicPlan:
    """A computed partition, ready to be written: (label, size, centroid, terms) per topic."""

    topics: list[tuple[str, int, np.ndarray, list[str]]] = field(default_factory=list)
    vocabulary: int = 0
    edges: int = 0
    notes: int = 0


def leiden(vertices: list[str], weights: dict[tuple[int, int], float], *, resolution: float = 1.0,
           seed: int = 0) -> list[list[int]]:
    """Leiden communities (modularity objective) of a weighted undirected graph; deterministic per seed.

    igraph draws from a module-wide generator; it is pointed at a seeded one for the call and restored.
    """
    graph = igraph.Graph(n=len(vertices), edges=sorted(weights), directed=False)
    graph.es["weight"] = [weights[e] for e in sorted(weights)]
    igraph.set_random_number_generator(random.Random(seed))
    try:
        part = graph.community_leiden(objective_function="modularity", weights="weight", resolution=resolution,
                                      n_iterations=-1)
    finally:
        igraph.set_random_number_generator(random)
    return [list(c) for c in part]


def compute_topics(conn: Any, params: TopicParams) -> TopicPlan:
    """Read the active notes and compute the partition and centroids (no writes)."""
    keyed = [(nid, sorted(set(kws))) for nid, kws in store.active_keywords(conn)]
    df = Counter(t for _, kws in keyed for t in kws)
    vocab = sorted(t for t, n in df.items() if n >= params.min_df)
    index = {t: i for i, t in enumerate(vocab)}
    weights: Counter[tuple[int, int]] = Counter()
    note_terms: dict[int, list[int]] = {}
    for nid, kws in keyed:
        ids = [index[t] for t in kws if t in index]
        if ids:
            note_terms[nid] = ids
        weights.update(combinations(ids, 2))  # ids ascending: each pair once, (low, high)
    plan = TopicPlan(vocabulary=len(vocab), edges=len(weights), notes=len(keyed))
    if not weights:
        return plan
    communities = [c for c in leiden(vocab, dict(weights), resolution=params.resolution, seed=params.seed)
                   if len(c) >= params.min_keywords]
    communities.sort(key=lambda c: (-len(c), vocab[min(c)]))
    vecs = notes.vectors(conn, list(note_terms))
    nids = [nid for nid in note_terms if nid in vecs]
    x = np.array([vecs[nid] for nid in nids], dtype=np.float64).reshape(len(nids), -1)
    for community in communities:
        members = set(community)
        share = np.array([sum(i in members for i in note_terms[nid]) / len(note_terms[nid]) for nid in nids])
        if not share.any():
            continue
        terms = sorted((vocab[i] for i in community), key=lambda t: (-df[t], t))
        centroid = cluster_store.unit((share[:, None] * x).sum(0))
        plan.topics.append((" / ".join(terms[:3]), int((share > 0).sum()), centroid, terms))
    return plan


def write_topics(conn: Any, plan: TopicPlan) -> list[int]:
    """Resync the keyword index from the notes, then replace the topics (inside a transaction)."""
    store.reindex(conn)
    ids = store.replace(conn, plan.topics)
    store.reset_new_notes(conn)
    return ids


def rebuild_topics(conn: Any, params: TopicParams | None = None) -> TopicPlan:
    """Recompute keywords, the co-occurrence graph and its Leiden topics; the caller holds the transaction."""
    plan = compute_topics(conn, params or TopicParams())
    write_topics(conn, plan)
    return plan


def topics_job(ctx: WriteContext, job: Job, params: TopicParams) -> Callable[[Any], None]:
    plan = compute_topics(ctx.store.conn, params)

    def apply(conn: Any) -> None:
        write_topics(conn, plan)
        ctx.count("topics_rebuilt")

    return apply


def extra_handlers(params: TopicParams | None = None) -> dict[str, Callable[[WriteContext, Job], Callable[[Any], None]]]:
    p = params or TopicParams()
    return {TOPICS_JOB: lambda ctx, job: topics_job(ctx, job, p)}


# -- the keyword step -----------------------------------------------------------------------------
@dataclass
class KeywordPlan:
    params: TopicParams

    def apply(self, conn: Any, draft: NoteDraft, note_id: int) -> int:
        note = notes.get(conn, note_id)
        if note is not None and note.status == "active":
            # A merge may have changed the surviving note's keywords: index what the note holds now.
            store.sync_note(conn, note_id, note.keywords)
        if store.bump_new_notes(conn) >= self.params.every:
            cluster_store.enqueue_once(conn, TOPICS_JOB, {}, JOB_PRIORITY)
        return note_id


class KeywordStep:
    """WriteStep: index the note's keywords (MemFly keyword layer) and schedule topic rebuilds."""

    name = "keywords"

    def __init__(self, params: TopicParams | None = None) -> None:
        self.params = params or TopicParams()

    def plan(self, ctx: WriteContext, draft: NoteDraft) -> KeywordPlan:
        return KeywordPlan(self.params)

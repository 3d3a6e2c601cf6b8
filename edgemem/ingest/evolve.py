"""CLAG localized evolution (§3.3): links and neighbour rewrites inside the routed cluster only.

For a new note, M_local is its k_local = 5 nearest notes *within its cluster* (during the cold start,
before any cluster exists, the buffer counts as one cluster). CLAG asks the SLM once for the links
(L_new) and once per neighbour for its rewrite (m*_j): up to six calls per note, far more than the
whole write path can spend on a laptop CPU. edgemem keeps the structure and makes the decisions in
code:

- Link: a RELATED link new → neighbour when the two are close (cosine >= ``link_min``) *and* the
  keywords they share are specific enough: the sum of their idf, log(N / df) over the active notes
  (df from MemFly's keyword index), reaches ``anchor_idf`` = log 20, i.e. one keyword carried by at
  most 5% of the notes, or two commoner ones. Speakers' names never count. Without this anchor,
  conversation turns link on "glad" or on the other speaker's name: small talk, not memory.
- Rewrite: each linked neighbour's tags gain the two most specific shared keywords (the anchor of
  the link) and its cluster's tags, capped at ``max_tags``; its content and context stay as they
  were, and raw_turns are never touched.

Every link and rewrite is recorded in ``ops`` with before/after. Links the gate already made between
the same two notes are left alone. A note that the gate merged into an existing one is not evolved
again (the merge was its update).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from edgemem.ingest.notes import NoteDraft
from edgemem.store import clusters, links, notes, ops, topics

if TYPE_CHECKING:
    from edgemem.ingest.worker import WriteContext


@dataclass(frozen=True)
class EvolveParams:
    k_local: int = 5  # CLAG Table 8
    # MiniLM cosine between a LoCoMo turn and its 5 in-cluster neighbours: median 0.68-0.72, 10th
    # percentile 0.55 (measured on conv-26 / conv-30); the shared-keyword condition does the filtering.
    link_min: float = 0.5
    anchor_idf: float = math.log(20)
    tag_terms: int = 2
    max_tags: int = 8


@dataclass
class Evolution:
    note_id: int
    neighbours: list[tuple[int, float]]  # (note id, cosine) within the cluster, best first
    linked: list[int]
    rewritten: list[int]


def _words(names: list[str | None]) -> set[str]:
    return {w.lower() for n in names if n for w in n.split()}


def evolve(conn: Any, note_id: int, vector: np.ndarray, params: EvolveParams) -> Evolution:
    """Link the note to its close in-cluster neighbours and retag them; everything recorded in ops."""
    note = notes.get(conn, note_id)
    cluster_id = note.cluster_id if note else None
    pool = clusters.members(conn, cluster_id) if cluster_id is not None else clusters.unassigned(conn)
    pool = [n for n in pool if n != note_id]
    vecs = notes.vectors(conn, pool)
    ids = [n for n in pool if n in vecs]
    out = Evolution(note_id, [], [], [])
    if note is None or not ids:
        return out
    sims = np.array([vecs[n] for n in ids], dtype=np.float32) @ np.asarray(vector, dtype=np.float32)
    order = np.argsort(-sims, kind="stable")[: params.k_local]
    out.neighbours = [(ids[i], float(sims[i])) for i in order]
    already = {lk.dst if lk.src == note_id else lk.src for lk in links.of_note(conn, note_id)}
    cluster = clusters.get(conn, cluster_id) if cluster_id is not None else None
    cluster_tags = cluster.tags if cluster else []
    close = notes.get_many(conn, [n for n, s in out.neighbours if s >= params.link_min and n not in already])
    total = max(notes.count_active(conn), 1)
    df = topics.df(conn, sorted({k for nb in close for k in nb.keywords} & set(note.keywords)))
    for nb in close:
        names = _words([note.speaker, nb.speaker])
        idf = {k: math.log(total / max(df.get(k, 1), 1)) for k in note.keywords if k in set(nb.keywords) and k not in names}
        if sum(idf.values()) < params.anchor_idf:
            continue
        shared = sorted(idf, key=lambda k: (-idf[k], k))
        sim = dict(out.neighbours)[nb.id]
        links.add(conn, note_id, nb.id, "RELATED", strength=round(sim, 4), made_by="evolve")
        ops.record(conn, "link", note_id, None, {"dst": nb.id, "kind": "RELATED", "strength": round(sim, 4),
                                                 "made_by": "evolve", "shared": shared})
        out.linked.append(nb.id)
        tags = list(dict.fromkeys([*nb.tags, *shared[: params.tag_terms], *cluster_tags]))[: params.max_tags]
        if tags != nb.tags:
            notes.update(conn, nb.id, tags=tags)
            ops.record(conn, "evolve", nb.id, {"tags": nb.tags}, {"tags": tags, "by_note": note_id})
            out.rewritten.append(nb.id)
    return out


@dataclass
class EvolvePlan:
    params: EvolveParams
    ctx: Any

    def apply(self, conn: Any, draft: NoteDraft, note_id: int) -> int:
        note = notes.get(conn, note_id)
        if note is None or note.raw_id != draft.raw_ids[0]:
            return note_id  # merged into an older note: the gate's merge was its update
        result = evolve(conn, note_id, np.asarray(draft.embedding, dtype=np.float32), self.params)
        if result.linked:
            self.ctx.count("evolve_links", len(result.linked))
        if result.rewritten:
            self.ctx.count("evolve_rewrites", len(result.rewritten))
        return note_id


class EvolveStep:
    """WriteStep placed after ClusterStep: the work needs the note's cluster, so it runs in apply."""

    name = "evolve"

    def __init__(self, params: EvolveParams | None = None) -> None:
        self.params = params or EvolveParams()

    def plan(self, ctx: WriteContext, draft: NoteDraft) -> EvolvePlan:
        return EvolvePlan(self.params, ctx)

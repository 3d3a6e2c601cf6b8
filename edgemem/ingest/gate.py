"""MemFly gated structural update: merge, link or append each new note (MemFly §3.1, §3.3, App. A.1.2, C).

Cascade (DESIGN Principle 2), per new note:

1. **Neighbourhood** (§3.3 "dual sparse-dense indices"): the union of the top dense (sqlite-vec) and
   sparse (FTS5) neighbours, each scored by cosine similarity to the new note.
2. **Floor**: only candidates at cosine >= ``SIMILARITY_FLOOR`` go further; a note with none is
   appended without a model call. MemFly asks the LLM about every candidate pair; with a 0.5-2B model
   on a laptop that is unaffordable, so the floor sits at the top of the distribution of
   nearest-earlier-neighbour cosines of conversation turns, where near-repeats and chit-chat
   paraphrases ("Thanks, Mel! Your kind words mean a lot") are: only a few turns in a hundred reach
   the model, leaving the write path's model budget to the other steps.
3. **Rule**: the same speaker saying the same words again (identical normalised text) is merged
   without asking the model.
4. **Model**: ONE schema-constrained call scores every remaining candidate at once, keyed by small
   integer handles "1".."n" that are mapped back to note ids (STYLE "Model calls"). Each handle is a
   required property, so the grammar makes even a tiny model score every candidate exactly once
   (a list of items would let it score one note twice); scores sit on a 0.1 grid the grammar also
   enforces, so no reply falls outside [0, 1].
5. **Decision** (:func:`decide`, Appendix C thresholds): redundancy >= τm = 0.7 merges into the most
   redundant candidate; otherwise complementarity >= τl = 0.5 links with the model's relation
   (SUPPORTS / CONFLICTS / RELATED); a conflict between notes of different event times becomes
   SUPERSEDES from the newer to the older (both kept, the newer current), one between notes of the
   same event time stays CONFLICTS (nothing says which is current); nothing above threshold appends.
6. **Fallback**: no model, an invalid reply (SchemaError) or a prompt too long appends the note as
   it is, with no links; counted as ``gate_fallback``.
7. **Updates by rule** (:mod:`edgemem.ingest.updates`, no model call): a note that states a change
   ("I applied to the agencies", "I quit my job") supersedes the earlier notes of its speaker that it
   updates ("researching adoption agencies", "I work at the bakery"). A change is usually said in
   other words than the fact it replaces (far under the floor), so steps 2-5 rarely see the pair,
   and a small model does not reliably call such a pair a conflict when it does. Counted as
   ``gate_supersede_rule``.

Merge policy (MemFly's merge "preserves distinct information from both units"; here without a
second model call): the surviving note is the existing one, so its id, links and cluster stay
valid. Its content keeps its own text and gains the new text on a new line, prefixed with the new
note's day when that differs, unless every word of the new text is already there (a repeat). The
new note (inserted by the worker, like every note) is marked merged into the survivor, the survivor's
``note_sources`` gains the new raw turn, and ``ops`` records the survivor before and after. Only
notes of the same speaker merge (two people saying alike things are two facts), and a merge that
would grow a note past ``MAX_MERGED_CHARS`` becomes a link (with the model's relation) instead.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgemem import prompts
from edgemem.errors import ContextTooLong, SchemaError
from edgemem.ingest import updates
from edgemem.ingest.notes import NoteDraft
from edgemem.ingest.worker import WriteContext
from edgemem.store import links, notes, ops
from edgemem.store.notes import Note
from edgemem.text import iso_day_label, tokens

log = logging.getLogger(__name__)

TAU_MERGE = 0.7  # MemFly Appendix C, τm
TAU_LINK = 0.5  # MemFly Appendix C, τl
SIMILARITY_FLOOR = 0.86  # cosine; the measurement behind it: docs/measurements.md (gate)
NEIGHBOURHOOD = 8  # dense and sparse candidates fetched each
MAX_CANDIDATES = 4  # above-floor candidates shown to the model (prompt stays ~400 tokens)
CANDIDATE_CHARS = 400
NOTE_CHARS = 600
MAX_MERGED_CHARS = 1500
MAX_CONTEXT_CHARS = 400
MAX_KEYWORDS = 20
MAX_SUPERSEDED = 2  # earlier notes one note may supersede by rule
SUPERSEDE_SEARCH = 20  # notes fetched by the changed thing's words
RELATIONS = ("SUPPORTS", "CONFLICTS", "RELATED")
GRID = [round(i / 10, 1) for i in range(11)]


@dataclass(frozen=True)
class CandidateScore:
    """One candidate as :func:`decide` sees it.

    ``mergeable``: same speaker and the merged note would stay under the size cap. ``newer``: True
    when the new note's event time is later than the candidate's, False when earlier, None on a tie
    (then a conflict cannot say which is current and stays a CONFLICTS link).
    """

    note_id: int
    redundancy: float
    complementarity: float
    relation: str = "RELATED"
    mergeable: bool = True
    newer: bool | None = True


@dataclass(frozen=True)
class PlannedLink:
    other: int
    kind: str
    strength: float
    outgoing: bool = True  # True: src = the new note (or its merge survivor); False: src = ``other``
    by: str | None = None  # the cascade layer that made it, when not the plan's own ("rule")


@dataclass(frozen=True)
class Decision:
    action: str  # "append" | "merge" | "link"
    target: int | None = None
    links: tuple[PlannedLink, ...] = ()


def decide(scores: list[CandidateScore], *, tau_merge: float = TAU_MERGE, tau_link: float = TAU_LINK) -> Decision:
    """The thresholded update of MemFly §3.3: merge the most redundant, link the complementary, else append.

    A candidate the new note CONFLICTS with is never merged (that would blur which value is
    current): it is linked when either score reaches τl, as SUPERSEDES when the event times say which
    is newer. A redundant candidate that may not be merged (another speaker, size cap) is linked.
    A link's strength is the score that made it.
    """
    mergeable = [s for s in scores if s.mergeable and s.relation != "CONFLICTS" and s.redundancy >= tau_merge]
    target = max(mergeable, key=lambda s: (s.redundancy, s.complementarity, -s.note_id), default=None)
    planned: list[PlannedLink] = []
    for s in scores:
        if target is not None and s.note_id == target.note_id:
            continue
        strength = max(s.redundancy, s.complementarity)
        if s.relation == "CONFLICTS":
            if strength < tau_link:
                continue
            if s.newer is None:
                planned.append(PlannedLink(s.note_id, "CONFLICTS", strength))
            else:
                planned.append(PlannedLink(s.note_id, "SUPERSEDES", strength, outgoing=s.newer))
        elif s.complementarity >= tau_link:
            planned.append(PlannedLink(s.note_id, s.relation, s.complementarity))
        elif s.redundancy >= tau_merge:  # redundant but not mergeable
            planned.append(PlannedLink(s.note_id, s.relation, s.redundancy))
    if target is not None:
        return Decision("merge", target.note_id, tuple(planned))
    return Decision("link" if planned else "append", None, tuple(planned))


# -- candidates -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    note: Note
    similarity: float


def neighbourhood(conn: Any, draft: NoteDraft, *, k: int = NEIGHBOURHOOD) -> list[Candidate]:
    """Dense ∪ sparse neighbours of the draft, each with its cosine similarity, most similar first."""
    vector = np.asarray(draft.embedding, dtype=np.float32)
    sims = dict(notes.knn(conn, vector, k))
    sparse = [i for i, _ in notes.fts(conn, draft.content, k) if i not in sims]
    for note_id, vec in notes.vectors(conn, sparse).items():
        sims[note_id] = float(np.dot(vec, vector))
    found = {n.id: n for n in notes.get_many(conn, list(sims)) if n.status == "active"}
    out = [Candidate(found[i], s) for i, s in sims.items() if i in found]
    return sorted(out, key=lambda c: (-c.similarity, c.note.id))


def outdated(conn: Any, draft: NoteDraft, found: list[Candidate], *, skip: int | None = None) -> list[int]:
    """Earlier notes of the draft's speaker that the draft supersedes by the rules of :mod:`updates`.

    Looked for only when the draft states a change (a few notes in a hundred): among its neighbours
    and the notes sharing the changed thing's words, said on an earlier day. A note already
    superseded is left alone (the chain reaches it), at most ``MAX_SUPERSEDED`` newest first.
    """
    names = frozenset(tokens(draft.speaker or ""))
    terms = updates.search_terms(draft.content, names)
    if terms is None:
        return []
    known = {c.note.id: c.note for c in found}
    more = [i for i, _ in notes.fts(conn, terms, SUPERSEDE_SEARCH) if i not in known]
    day = draft.event_time[:10]
    earlier = [n for n in [*known.values(), *notes.get_many(conn, more)]
               if n.status == "active" and n.id != skip and (n.speaker or "") == (draft.speaker or "") and n.event_time[:10] < day]
    out: list[int] = []
    for note in sorted(earlier, key=lambda n: (n.event_time, n.id), reverse=True):
        if links.superseded_by(conn, note.id):
            continue
        if updates.update_reason(note.content, draft.content, names) is not None:
            out.append(note.id)
            if len(out) == MAX_SUPERSEDED:
                break
    return out


def _norm_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def merge_text(target: Note, draft: NoteDraft) -> str:
    """The survivor's content after absorbing ``draft`` (see the module docstring)."""
    if set(_norm_words(draft.content)) <= set(_norm_words(target.content)):
        return target.content
    day = iso_day_label(draft.event_time)
    prefix = f"[{day}] " if day != iso_day_label(target.event_time) else ""
    return f"{target.content}\n{prefix}{draft.content}"


def _mergeable(target: Note, draft: NoteDraft) -> bool:
    if (target.speaker or "") != (draft.speaker or ""):
        return False
    return len(merge_text(target, draft)) <= MAX_MERGED_CHARS


def _newer(draft: NoteDraft, note: Note) -> bool | None:
    if draft.event_time == note.event_time:
        return None
    return draft.event_time > note.event_time


# -- the model call -------------------------------------------------------------------------------
def schema(n: int) -> dict:
    """One required property per handle "1".."n": the grammar then emits every handle exactly once."""
    score = {"type": "number", "enum": GRID}
    pair = {
        "type": "object",
        # The grammar makes the model write them in this order: the one the gate's thresholds were
        # measured with (a sorted schema gave it until the eighteenth session), not the prompt's example.
        "properties": {"complementarity": score, "redundancy": score, "relation": {"type": "string", "enum": list(RELATIONS)}},
        "required": ["complementarity", "redundancy", "relation"],
        "additionalProperties": False,
    }
    handles = [str(i) for i in range(1, n + 1)]
    return {"type": "object", "properties": {h: pair for h in handles}, "required": handles, "additionalProperties": False}


def _line(note_time: str, speaker: str | None, content: str, limit: int) -> str:
    who = f", {speaker}" if speaker else ""
    text = content if len(content) <= limit else content[:limit].rstrip() + " …"
    return f"({iso_day_label(note_time)}{who}) {text}"


def messages(draft: NoteDraft, candidates: list[Note]) -> list[dict[str, str]]:
    block = "\n".join(
        f"[{i}] {_line(n.event_time, n.speaker, n.content, CANDIDATE_CHARS)}" for i, n in enumerate(candidates, start=1)
    )
    return [
        {"role": "system", "content": prompts.render("gate")},
        {"role": "user", "content": prompts.render("gate_user", candidates=block,
                                                   note=_line(draft.event_time, draft.speaker, draft.content, NOTE_CHARS))},
    ]


def score(llm: Any, draft: NoteDraft, candidates: list[Note]) -> list[tuple[int, float, float, str]]:
    """One call scoring every candidate: (note id, redundancy, complementarity, relation) per candidate.

    Raises SchemaError for a reply that fails the schema, ContextTooLong when the prompt does not
    fit; the caller falls back.
    """
    n = len(candidates)
    reply = llm.complete_json(messages(draft, candidates), schema(n), max_tokens=8 + 30 * n).value
    return [
        (note.id, float(reply[str(h)]["redundancy"]), float(reply[str(h)]["complementarity"]), reply[str(h)]["relation"])
        for h, note in enumerate(candidates, start=1)
    ]


# -- the step -------------------------------------------------------------------------------------
@dataclass
class GatePlan:
    """What the gate decided for one draft, applied inside the job's transaction."""

    decision: Decision
    layer: str  # "empty" | "floor" | "rule" | "model" | "fallback": which part of the cascade decided
    candidates: dict[int, float] = field(default_factory=dict)  # note id -> cosine, above the floor
    merged_content: str | None = None
    merged_embedding: np.ndarray | None = None
    target_version: int | None = None
    ctx: WriteContext | None = None

    @property
    def action(self) -> str:
        return self.decision.action

    def apply(self, conn: Any, draft: NoteDraft, note_id: int) -> int:
        """``note_id`` is the new note (the worker inserted it); returns the survivor of a merge, or it."""
        decision = self.decision
        if decision.action == "merge":
            target = notes.get(conn, decision.target)
            if target is None or target.status != "active" or target.version != self.target_version:
                # Changed since planning (forgotten, merged, evolved): keep the new note on its own.
                self._count("gate_stale_merge")
                decision = Decision("link" if decision.links else "append", None, decision.links)
            else:
                return self._merge(conn, draft, note_id, target, decision)
        self._links(conn, note_id, decision.links)
        return note_id

    def _merge(self, conn: Any, draft: NoteDraft, absorbed: int, target: Note, decision: Decision) -> int:
        before = _snapshot(target)
        keywords = list(dict.fromkeys([*target.keywords, *draft.keywords]))[:MAX_KEYWORDS]
        dates = list({(d.get("start"), d.get("end"), d.get("phrase")): d for d in [*target.dates, *draft.dates]}.values())
        context = target.context
        if draft.context not in context and len(context) + len(draft.context) + 2 <= MAX_CONTEXT_CHARS:
            context = f"{context}; {draft.context}"
        content = self.merged_content if self.merged_content is not None else target.content
        updated = notes.update(conn, target.id, content=content, context=context, keywords=keywords, dates=dates,
                               embedding=self.merged_embedding)
        notes.add_sources(conn, target.id, draft.raw_ids)
        notes.mark_merged(conn, absorbed, target.id)
        updated.source_turns = sorted({*target.source_turns, *draft.raw_ids})
        ops.record(conn, "merge", target.id, before, {**_snapshot(updated), "absorbed": absorbed, "layer": self.layer})
        self._links(conn, target.id, decision.links)
        return target.id

    def _links(self, conn: Any, note_id: int, planned: tuple[PlannedLink, ...]) -> None:
        for link in planned:
            src, dst = (note_id, link.other) if link.outgoing else (link.other, note_id)
            if notes.get(conn, link.other) is None:  # forgotten since planning
                continue
            if links.add(conn, src, dst, link.kind, strength=link.strength, made_by=f"gate:{link.by or self.layer}") is not None:
                ops.record(conn, "supersede" if link.kind == "SUPERSEDES" else "link", src,
                           None, {"src": src, "dst": dst, "kind": link.kind, "strength": link.strength})

    def _count(self, name: str) -> None:
        if self.ctx is not None:
            self.ctx.count(name)


def _snapshot(note: Note) -> dict:
    return {"content": note.content, "context": note.context, "keywords": note.keywords, "dates": note.dates,
            "version": note.version, "sources": note.source_turns}


class GateStep:
    """The gate as a write step (runs first: it decides whether the new note stays new or merges)."""

    name = "gate"

    def __init__(self, *, floor: float = SIMILARITY_FLOOR, tau_merge: float = TAU_MERGE, tau_link: float = TAU_LINK,
                 max_candidates: int = MAX_CANDIDATES) -> None:
        self.floor = floor
        self.tau_merge = tau_merge
        self.tau_link = tau_link
        self.max_candidates = max_candidates

    def plan(self, ctx: WriteContext, draft: NoteDraft) -> GatePlan:
        conn = ctx.store.conn
        found = neighbourhood(conn, draft)
        close = [c for c in found if c.similarity >= self.floor][: self.max_candidates]
        plan = self._plan(ctx, draft, found, close)
        stale = outdated(conn, draft, found, skip=plan.decision.target)
        if stale:
            ctx.count("gate_supersede_rule", len(stale))
            kept = tuple(link for link in plan.decision.links if link.other not in stale)
            added = tuple(PlannedLink(i, "SUPERSEDES", 1.0, by="rule") for i in stale)
            action = plan.decision.action if plan.decision.action == "merge" else "link"
            plan.decision = Decision(action, plan.decision.target, kept + added)
        return self._done(ctx, plan)

    def _plan(self, ctx: WriteContext, draft: NoteDraft, found: list[Candidate], close: list[Candidate]) -> GatePlan:
        """Merge / link / append by the cascade of the module docstring (steps 2-6)."""
        sims = {c.note.id: c.similarity for c in close}
        if not close:  # most notes: nothing close enough to be worth a model call
            ctx.count("gate_skipped")
            return GatePlan(Decision("append"), "empty" if not found else "floor", ctx=ctx)
        by_id = {c.note.id: c.note for c in close}
        repeat = [c.note for c in close if _mergeable(c.note, draft)
                  and _norm_words(c.note.content) == _norm_words(draft.content)]
        if repeat:
            ctx.count("gate_rule")
            return self._merge_plan(ctx, draft, Decision("merge", repeat[0].id), "rule", sims, by_id)
        if ctx.llm is None:
            ctx.count("gate_fallback")
            return GatePlan(Decision("append"), "fallback", sims, ctx=ctx)
        ctx.count("model_calls_gate")
        try:
            scored = score(ctx.llm, draft, [c.note for c in close])
        except (SchemaError, ContextTooLong) as exc:
            log.info("gate reply unusable (%s); appending", type(exc).__name__)
            ctx.count("gate_fallback")
            return GatePlan(Decision("append"), "fallback", sims, ctx=ctx)
        scores = [
            CandidateScore(note_id, red, comp, rel, mergeable=_mergeable(by_id[note_id], draft), newer=_newer(draft, by_id[note_id]))
            for note_id, red, comp, rel in scored
        ]
        decision = decide(scores, tau_merge=self.tau_merge, tau_link=self.tau_link)
        if decision.action == "merge":
            return self._merge_plan(ctx, draft, decision, "model", sims, by_id)
        return GatePlan(decision, "model", sims, ctx=ctx)

    def _merge_plan(self, ctx: WriteContext, draft: NoteDraft, decision: Decision, layer: str,
                    sims: dict[int, float], by_id: dict[int, Note]) -> GatePlan:
        target = by_id[decision.target]
        content = merge_text(target, draft)
        embedding = None
        if content != target.content:  # the survivor's vector must describe what it now says
            text = f"{target.speaker}: {content}" if target.speaker else content
            embedding = np.asarray(ctx.embed([text])[0], dtype=np.float32)
        return GatePlan(decision, layer, sims, content, embedding, target.version, ctx)

    @staticmethod
    def _done(ctx: WriteContext, plan: GatePlan) -> GatePlan:
        ctx.count(f"gate_{plan.action}")
        return plan

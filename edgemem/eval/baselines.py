"""Baselines run in the evaluation harness, on the same store, model and answer prompt.

MemFlow compares against both (section 4, Table 1; Appendix C):

- **Flat RAG** — hybrid BM25 + dense top-8 fused by RRF, one answer call, no routing, no packer, no
  validator (:func:`flat_answer`): the retrieval the full pipeline starts from, with nothing after it.
- **Full context** — no retrieval: the most recent raw turns that fit the model's window, packed
  newest-first until ``n_ctx`` minus the answer reserve is spent, then shown in chronological
  order in one prompt. MemFlow's full-context SLM baseline likewise truncates the history to the
  window; the kept turns are the newest because a conversation's latest state is what an assistant
  would keep.

Both use the ``answer_basic`` prompts, so the systems differ only in the context they show. Each
class is built once per conversation (the full-context window does not depend on the question,
so it is packed once) and offers ``answer`` and, for retrieval-only runs, ``retrieve``.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from edgemem import prompts
from edgemem.errors import ContextTooLong
from edgemem.eval.systems import SystemOutput
from edgemem.recall.pipeline import ABSTAIN
from edgemem.recall.retrieve import Hit, hybrid
from edgemem.store import notes as notes_store
from edgemem.store import raw as raw_store
from edgemem.store.notes import Note
from edgemem.store.raw import Turn

RAG_K = 8  # MemFlow's flat RAG baseline: hybrid top-8
ANSWER_TOKENS = 200  # the reserve for the answer, as flat_answer's max_tokens


def note_line(i: int, note: Note) -> str:
    """A retrieved note as the baselines show it: ``[i] (2023-05-08) Caroline: text``."""
    day = note.event_time[:10]
    who = f" {note.speaker}:" if note.speaker else ""
    return f"[{i}] ({day}){who} {note.content}"


def flat_answer(conn: Any, llm: Any, embed: Any, question: str, *, k: int = RAG_K,
                on_token: Any = None, note_ids: list[int] | None = None) -> tuple[str, list[Note], dict]:
    """Hybrid top-``k`` → one grounded answer call citing the notes; abstains when nothing is found.
    ``note_ids`` replaces the retrieval (the evaluation's oracle evidence)."""
    t0 = time.perf_counter()
    if note_ids is None:
        vector = embed([question])[0]
        hits = hybrid(conn, question, vector, k)
        found = notes_store.get_many(conn, [h.note_id for h in hits])
    else:
        found = notes_store.get_many(conn, note_ids)
        hits = [Hit(n.id, 1.0) for n in found]
    t1 = time.perf_counter()
    if not found:
        if on_token:
            on_token(ABSTAIN)
        return ABSTAIN, [], {"retrieve_ms": (t1 - t0) * 1000, "retrieved": []}
    block = "\n".join(note_line(i, n) for i, n in enumerate(found, start=1))
    result = llm.complete(_messages(block, question), max_tokens=ANSWER_TOKENS, on_token=on_token)
    trace = {
        "retrieved": [h.note_id for h in hits],
        "retrieve_ms": (t1 - t0) * 1000,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "prefill_ms": result.prefill_ms,
        "generate_ms": result.generate_ms,
    }
    return result.text.strip(), found, trace


class FlatRAG:
    name = "rag"

    def __init__(self, engine: Any, llm: Any) -> None:
        self.engine = engine
        self.llm = llm

    def _packed(self, found: list) -> int | None:
        if not found:
            return 0
        block = "\n".join(note_line(i, n) for i, n in enumerate(found, start=1))
        return self.llm.count_tokens(block)

    def answer(self, question: str, now: datetime | None) -> SystemOutput:  # noqa: ARG002 - same call as the others
        runtime = self.engine.runtime
        text, found, trace = flat_answer(self.engine.store.conn, runtime.interactive, runtime.embed, question, k=RAG_K)
        trace["system"] = "rag"
        return SystemOutput(text, list(found), trace, self._packed(found))

    def answer_from(self, question: str, now: datetime | None, note_ids: list[int]) -> SystemOutput:  # noqa: ARG002
        runtime = self.engine.runtime
        text, found, trace = flat_answer(self.engine.store.conn, runtime.interactive, runtime.embed, question,
                                         note_ids=note_ids)
        trace["system"] = "rag"
        return SystemOutput(text, list(found), trace, self._packed(found))

    def retrieve(self, question: str, now: datetime | None) -> SystemOutput:  # noqa: ARG002
        conn = self.engine.store.conn
        t0 = time.perf_counter()
        vector = self.engine.runtime.embed([question])[0]
        hits = hybrid(conn, question, vector, RAG_K)
        found = notes_store.get_many(conn, [h.note_id for h in hits])
        trace = {"system": "rag", "retrieved": [h.note_id for h in hits], "retrieve_ms": (time.perf_counter() - t0) * 1000}
        return SystemOutput(None, found, trace, self._packed(found))


def turn_line(i: int, turn: Turn) -> str:
    """A raw turn as ``note_line`` shows a note: ``[i] (2023-05-08) Caroline: text``."""
    who = f" {turn.speaker}:" if turn.speaker else ""
    return f"[{i}] ({turn.event_time[:10]}){who} {turn.text}"


def _messages(block: str, question: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": prompts.render("answer_basic")},
        {"role": "user", "content": prompts.render("answer_basic_user", notes=block, question=question)},
    ]


def pack_recent(turns: list[Turn], llm: Any, question: str, *, reserve: int = ANSWER_TOKENS,
                costs: dict[int, int] | None = None) -> tuple[list[Turn], list[dict[str, str]]]:
    """The newest turns whose prompt fits ``llm.n_ctx - reserve``, in chronological order, and the prompt.

    Turns are added newest-first by their own token counts (``costs`` caches them by turn id); the
    assembled prompt is then counted exactly with the chat template and the oldest kept turn
    dropped until it fits.
    """
    costs = {} if costs is None else costs
    ordered = sorted(turns, key=lambda t: (t.event_time, t.id))
    limit = llm.n_ctx - reserve
    frame = llm.count_messages(_messages("", question))
    if frame > limit:
        raise ContextTooLong(frame + reserve, llm.n_ctx)
    kept: list[Turn] = []
    used = frame
    for turn in reversed(ordered):
        if turn.id not in costs:  # "[999]" stands in for the line's number; +1 for the newline
            costs[turn.id] = llm.count_tokens(turn_line(999, turn)) + 1
        cost = costs[turn.id]
        if used + cost > limit:
            break
        kept.append(turn)
        used += cost
    kept.reverse()
    while True:
        block = "\n".join(turn_line(i, t) for i, t in enumerate(kept, start=1))
        messages = _messages(block, question)
        if llm.count_messages(messages) <= limit or not kept:
            return kept, messages
        kept = kept[1:]


class FullContext:
    name = "full-context"

    def __init__(self, engine: Any, llm: Any) -> None:
        self.engine = engine
        self.llm = llm
        self.turns = list(raw_store.iter_turns(engine.store.conn))
        self.costs: dict[int, int] = {}

    def _pack(self, question: str) -> tuple[list[Turn], list[dict[str, str]], int]:
        kept, messages = pack_recent(self.turns, self.llm, question, costs=self.costs)
        block = "\n".join(turn_line(i, t) for i, t in enumerate(kept, start=1))
        return kept, messages, self.llm.count_tokens(block) if kept else 0

    def answer(self, question: str, now: datetime | None) -> SystemOutput:  # noqa: ARG002
        t0 = time.perf_counter()
        kept, messages, packed = self._pack(question)
        t1 = time.perf_counter()
        result = self.engine.runtime.interactive.complete(messages, max_tokens=ANSWER_TOKENS)
        trace = {"system": "full-context", "pack_ms": (t1 - t0) * 1000, "turns_total": len(self.turns),
                 "turns_kept": len(kept), "prompt_tokens": result.prompt_tokens,
                 "completion_tokens": result.completion_tokens, "prefill_ms": result.prefill_ms,
                 "generate_ms": result.generate_ms}
        return SystemOutput(result.text.strip(), [], trace, packed, context_raw_ids=[t.id for t in kept])

    def retrieve(self, question: str, now: datetime | None) -> SystemOutput:  # noqa: ARG002
        t0 = time.perf_counter()
        kept, _messages_, packed = self._pack(question)
        trace = {"system": "full-context", "pack_ms": (time.perf_counter() - t0) * 1000,
                 "turns_total": len(self.turns), "turns_kept": len(kept)}
        return SystemOutput(None, [], trace, packed, context_raw_ids=[t.id for t in kept])

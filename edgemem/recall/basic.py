"""The walking skeleton's read path: hybrid top-k → grounded answer citing its notes.

Kept as the "flat RAG" baseline (hybrid top-8, no routing, no validator) that MemFlow's Table 1
compares against; the full pipeline lives in :mod:`edgemem.recall.pipeline`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from edgemem import prompts
from edgemem.recall.retrieve import hybrid
from edgemem.store import notes
from edgemem.store.notes import Note

ABSTAIN = "I could not find reliable information."


@dataclass
class Answer:
    query_id: str
    question: str
    text: str
    notes: list[Note] = field(default_factory=list)
    trace: dict = field(default_factory=dict)


def note_line(i: int, note: Note) -> str:
    day = note.event_time[:10]
    who = f" {note.speaker}:" if note.speaker else ""
    return f"[{i}] ({day}){who} {note.content}"


def flat_answer(conn: Any, llm: Any, embed: Any, question: str, *, k: int = 8, on_token: Any = None) -> tuple[str, list[Note], dict]:
    t0 = time.perf_counter()
    vector = embed([question])[0]
    hits = hybrid(conn, question, vector, k)
    found = notes.get_many(conn, [h.note_id for h in hits])
    t1 = time.perf_counter()
    if not found:
        if on_token:
            on_token(ABSTAIN)
        return ABSTAIN, [], {"retrieve_ms": (t1 - t0) * 1000, "retrieved": []}
    block = "\n".join(note_line(i, n) for i, n in enumerate(found, start=1))
    messages = [
        {"role": "system", "content": prompts.render("answer_basic")},
        {"role": "user", "content": prompts.render("answer_basic_user", notes=block, question=question)},
    ]
    result = llm.complete(messages, max_tokens=200, on_token=on_token)
    trace = {
        "retrieved": [h.note_id for h in hits],
        "retrieve_ms": (t1 - t0) * 1000,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "prefill_ms": result.prefill_ms,
        "generate_ms": result.generate_ms,
    }
    return result.text.strip(), found, trace

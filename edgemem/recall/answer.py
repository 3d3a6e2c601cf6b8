"""Answer agent (MemFlow §3.2, Appendix B.2): a tag-specific system prompt over the packed context,
with at most three bounded ``TOOL:`` rounds executed in code (Algorithm 1, lines 7-12).

Tokens stream to ``on_token`` as they are generated; a round that turns out to be a tool call is
not streamed past its ``TOOL:`` line (the user sees answers, not tool syntax).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from edgemem import prompts
from edgemem.recall import tools
from edgemem.recall.evidence import Evidence

ESCALATE = "ESCALATE_REQUIRED"
ANSWER_TOKENS = 160


@dataclass
class Drafted:
    text: str
    rounds: int = 0
    tool_calls: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prefill_ms: float = 0.0
    generate_ms: float = 0.0


def system_prompt(tag: str) -> str:
    return f"{prompts.render('answer_' + tag)}\n{prompts.render('answer_grounding')}"


def messages_for(tag: str, question: str, context: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_prompt(tag)},
        {"role": "user", "content": prompts.render("answer_user", context=context, question=question)},
    ]


_HELD = ("TOOL", ESCALATE)  # reply openings the user must not see: tool syntax, the escalation signal


def _is_held(text: str) -> bool:
    head = text.lstrip(" >*`_-").upper()
    return any(head.startswith(h) for h in _HELD)


def _may_become_held(text: str) -> bool:
    head = text.lstrip(" >*`_-").upper()
    return any(h.startswith(head) for h in _HELD)


class _ToolLineFilter:
    """Forwards streamed text until a TOOL: line or ESCALATE_REQUIRED appears, then holds the rest back."""

    def __init__(self, sink: Callable[[str], None] | None) -> None:
        self.sink = sink
        self.pending = ""
        self.blocked = False

    def __call__(self, piece: str) -> None:
        if self.sink is None or self.blocked:
            return
        self.pending += piece
        lines = self.pending.split("\n")
        for line in lines[:-1]:
            if _is_held(line):
                self.blocked = True
                return
            self.sink(line + "\n")
        self.pending = lines[-1]
        if _is_held(self.pending):
            self.blocked = True
            return
        if _may_become_held(self.pending):
            return  # might be a tool line or the escalation signal: wait for more
        self.sink(self.pending)
        self.pending = ""

    def flush(self) -> None:
        if self.sink is not None and not self.blocked and self.pending and not _is_held(self.pending):
            self.sink(self.pending)
        self.pending = ""


def answer(llm: Any, tag: str, question: str, context: str, evidence: Sequence[Evidence],
           on_token: Callable[[str], None] | None = None) -> Drafted:
    messages = messages_for(tag, question, context)
    out = Drafted(text="")
    allowed = tools.TAG_TOOLS.get(tag, ())
    while True:
        stream = _ToolLineFilter(on_token)
        result = llm.complete(messages, max_tokens=ANSWER_TOKENS, on_token=stream)
        out.prompt_tokens += result.prompt_tokens
        out.completion_tokens += result.completion_tokens
        out.prefill_ms += result.prefill_ms
        out.generate_ms += result.generate_ms
        call = tools.parse_tool_call(result.text) if allowed else None
        if call is None or out.rounds >= tools.MAX_TOOL_ROUNDS:
            stream.flush()
            out.text = _strip_tool_lines(result.text).strip()
            return out
        out.rounds += 1
        outcome = tools.execute(call, evidence) if call.name in allowed else f"{tools.ERROR_PREFIX}tool not available here"
        out.tool_calls.append(f"{call} -> {outcome}")
        messages = [
            *messages,
            {"role": "assistant", "content": result.text.strip()},
            {"role": "user", "content": f"{tools.RESULT_PREFIX}{outcome}\nNow give the final answer."},
        ]


def _strip_tool_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip(" >*`_-").upper().startswith("TOOL"))

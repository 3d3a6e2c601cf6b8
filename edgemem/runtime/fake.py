"""Fakes implementing the runtime protocols, for unit tests of decision logic only.

``ScriptedLLM`` answers from a script (strings, objects for structured calls, or a function of the
prompt) and records every call; ``HashEmbedder`` maps texts to bag-of-words vectors so that texts
sharing words are close. Neither knows anything about the code under test.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgemem.errors import ContextTooLong
from edgemem.runtime.embed import normalise
from edgemem.runtime.llm import Completion, Message, OnToken, parse_json

Reply = str | dict | list | Callable[[Sequence[Message], dict | None], Any]


@dataclass
class Call:
    messages: list[Message]
    schema: dict | None
    max_tokens: int


@dataclass
class ScriptedLLM:
    """Replies in order from ``script``; when it runs out, ``default`` (or an error if None)."""

    script: list[Reply] = field(default_factory=list)
    default: Reply | None = None
    n_ctx: int = 4096
    name: str = "scripted"
    calls: list[Call] = field(default_factory=list)

    def enqueue(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def count_tokens(self, text: str) -> int:
        return len(re.findall(r"\w+|[^\w\s]", text))

    def count_messages(self, messages: Sequence[Message]) -> int:
        return sum(self.count_tokens(m["content"]) + 4 for m in messages)

    def _next(self, messages: Sequence[Message], schema: dict | None, max_tokens: int) -> str:
        prompt = self.count_messages(messages)
        if prompt + max_tokens > self.n_ctx:
            raise ContextTooLong(prompt + max_tokens, self.n_ctx)
        self.calls.append(Call(list(messages), schema, max_tokens))
        if self.script:
            reply = self.script.pop(0)
        elif self.default is not None:
            reply = self.default
        else:
            raise AssertionError("ScriptedLLM ran out of replies")
        if callable(reply):
            reply = reply(messages, schema)
        return reply if isinstance(reply, str) else json.dumps(reply)

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 256, stop: Sequence[str] | None = None,
                 on_token: OnToken | None = None) -> Completion:
        text = self._next(messages, None, max_tokens)
        if on_token is not None:
            for piece in re.findall(r"\S+\s*|\s+", text):
                on_token(piece)
        return Completion(text, self.count_messages(messages), self.count_tokens(text), 0.0, 0.0)

    def complete_json(self, messages: Sequence[Message], schema: dict, *, max_tokens: int = 256) -> Completion:
        text = self._next(messages, schema, max_tokens)
        result = Completion(text, self.count_messages(messages), self.count_tokens(text), 0.0, 0.0)
        result.value = parse_json(text, schema)
        return result

    def close(self) -> None:
        return None


class HashEmbedder:
    """Deterministic bag-of-words vectors: shared (lower-cased) words make texts similar."""

    def __init__(self, dim: int = 384, name: str = "hash-embedder") -> None:
        self.dim = dim
        self.name = name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return normalise(out)

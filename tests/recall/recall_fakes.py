"""Stand-ins shared by the read-path tests (same protocols as the real parts; decision logic only)."""

from __future__ import annotations

from edgemem.recall.router import Route


class FixedRouter:
    """Same protocol as recall.router.Router; always answers one tag."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def route(self, question: str) -> Route:  # noqa: ARG002 - the protocol's signature
        return Route(self.tag, "rules", 1.0, {})

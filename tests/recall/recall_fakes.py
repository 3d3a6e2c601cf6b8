"""Stand-ins shared by the read-path tests (same protocols as the real parts; decision logic only)."""

from __future__ import annotations

from edgemem.recall.router import Route


class FixedRouter:
    """Same protocol as recall.router.Router; always answers one tag."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def route(self, question: str) -> Route:  # noqa: ARG002 - the protocol's signature
        return Route(self.tag, "rules", 1.0, {})


def remembered(settings, embedder, notes):
    """An engine (scripted model, real store and embedder) holding ``notes`` [(when, text)], the model
    and each text's note id."""
    from edgemem.engine import Engine
    from edgemem.runtime.fake import ScriptedLLM

    llm = ScriptedLLM()
    eng = Engine.open(settings, llm=llm, embedder=embedder, steps=[])
    ids = {text: eng.remember(text, when=when, process=True)["notes"][0] for when, text in notes}
    return eng, llm, ids

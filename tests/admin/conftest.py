"""Admin fixtures: a real store (sqlite-vec, FTS5) with the real embedder and the notes-only worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edgemem import config
from edgemem.ingest import raw as accept
from edgemem.ingest.worker import Worker
from edgemem.store.db import Store


class Memory:
    """A store plus the write path without model steps: remember → raw → note (keywords, dates, vector)."""

    def __init__(self, store: Store, embedder, settings: config.Settings) -> None:
        self.store = store
        self.settings = settings
        self.worker = Worker(store, None, embedder.embed, [])

    def remember(self, text: str, *, speaker: str | None = None, when: str = "2024-05-07T10:00:00",
                 session: str | None = None, process: bool = True) -> list[int]:
        acc = accept.remember(self.store, text, max_bytes=self.settings.max_text_bytes, speaker=speaker, when=when, session=session)
        if process:
            self.worker.drain()
        return acc.raw_ids

    def note_of(self, raw_id: int) -> int:
        row = self.store.conn.execute("SELECT note_id FROM note_sources WHERE raw_id = ?", (raw_id,)).fetchone()
        assert row is not None, f"raw turn {raw_id} has no note"
        return row[0]


@pytest.fixture
def memory(settings: config.Settings, embedder) -> Iterator[Memory]:
    with Store(settings.database, embed_model=embedder.name, dim=embedder.dim) as store:
        yield Memory(store, embedder, settings)

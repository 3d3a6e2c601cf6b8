"""Section chunking of files: exact slices that join back into the file, heading paths, sizes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from edgemem.ingest.raw import CHUNK_CHARS, chunk_document, chunk_text, heading_paths, ingest_file
from edgemem.store import raw
from edgemem.store.db import Store


def para(tag: str, words: int) -> str:
    return f"{tag} " + " ".join(f"w{i}" for i in range(words))


GUIDE = ("# Guide\n\n" + para("Intro", 80) + "\n\n## Install\n\n### Linux\n\n" + para("Linux", 80)
         + "\n\n### macOS\n\n" + para("Mac", 80) + "\n\n## Usage\n\n"
         + "\n\n".join(para(f"Usage{i}", 60) for i in range(12)) + "\n\n## FAQ\n\n" + para("FAQ", 300) + "\n")


def test_markdown_is_cut_at_headings_with_exact_boundaries() -> None:
    chunks = chunk_document(GUIDE)
    assert "".join(c.body for c in chunks) == GUIDE
    assert [c.path for c in chunks] == [("Guide",), ("Guide", "Install"), ("Guide", "Usage"), ("Guide", "Usage"),
                                        ("Guide", "FAQ")]
    # A bare heading (## Install) goes with the section under it; small siblings share a chunk; the
    # long Usage section is cut at a paragraph boundary into two even pieces; FAQ stays whole.
    starts = [GUIDE.index(c.body) for c in chunks]
    assert starts == [0, GUIDE.index("## Install"), GUIDE.index("## Usage"), GUIDE.index("Usage6 "), GUIDE.index("## FAQ")]
    assert [len(c.body) for c in chunks] == [326, 666, 1438, 1430, 1402]
    assert chunks[1].text.startswith("Guide > Install\n\n## Install\n\n### Linux\n\nLinux w0")
    assert "### macOS" in chunks[1].body
    assert chunks[3].text.startswith("Guide > Usage\n\nUsage6 w0") and not chunks[3].text.endswith("\n")
    assert all(len(c.body) <= CHUNK_CHARS for c in chunks)


def test_small_sections_merge_only_under_the_same_parent() -> None:
    doc = ("# Book\n\n" + para("Preface", 60) + "\n\n## Part A\n\n### a1\n\n" + para("a1", 40) + "\n\n### a2\n\n"
           + para("a2", 40) + "\n\n## Part B\n\n### b1\n\n" + para("b1", 40) + "\n\n### b2\n\n" + para("b2", 40) + "\n")
    chunks = chunk_document(doc)
    assert "".join(c.body for c in chunks) == doc
    assert [c.path for c in chunks] == [("Book",), ("Book", "Part A"), ("Book", "Part B")]
    assert "### a1" in chunks[1].body and "### a2" in chunks[1].body and "## Part B" not in chunks[1].body


def test_a_hash_in_a_code_block_is_not_a_heading() -> None:
    doc = "# Shell\n\n" + para("Intro", 50) + "\n\n```sh\n# not a heading\necho hi\n```\n\n" + para("After", 50) + "\n"
    (chunk,) = chunk_document(doc)
    assert chunk.path == ("Shell",) and chunk.body == doc


def test_plain_text_packs_paragraphs_to_the_budget_and_ignores_hashes() -> None:
    text = "# not a heading in a .txt\n\n" + "\n\n".join(para(f"P{i}", 50) for i in range(40))
    chunks = chunk_document(text, markdown=False)
    assert "".join(c.body for c in chunks) == text
    assert all(c.path == () for c in chunks) and len(chunks) == -(-len(text) // CHUNK_CHARS)
    assert all(len(c.body) <= CHUNK_CHARS for c in chunks)
    assert all(c.body.endswith("\n\n") for c in chunks[:-1])  # cut at paragraph boundaries
    assert min(len(c.body) for c in chunks) > CHUNK_CHARS // 2  # near the budget, no scraps


def test_a_long_paragraph_is_cut_at_sentences_and_a_huge_word_hard() -> None:
    sentences = " ".join(f"Sentence number {i} is here." for i in range(300))
    chunks = chunk_text(sentences)
    assert "".join(chunks) == sentences and all(len(c) <= CHUNK_CHARS for c in chunks)
    assert all(c.endswith(". ") for c in chunks[:-1])
    word = "x" * (CHUNK_CHARS * 2 + 10)
    assert chunk_text(word) == [word[:CHUNK_CHARS], word[CHUNK_CHARS:2 * CHUNK_CHARS], word[2 * CHUNK_CHARS:]]


def handbook(target: int, seed: int = 1) -> str:
    """A Markdown handbook: chapters (##) of sections (###) holding 1-12 paragraphs, lists or code blocks."""
    rng = random.Random(seed)
    words = ("the orchid garden water install configure server network memory model answer question daemon "
             "socket record note cluster profile topic kernel module package release version update backup").split()

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(6, 22))).capitalize() + "."

    def paragraph(chars: int) -> str:
        out: list[str] = []
        while sum(map(len, out)) < chars:
            out.append(sentence())
        return " ".join(out)

    def block() -> str:
        k = rng.random()
        if k < 0.1:
            return "```\n" + "\n".join(f"cmd --flag {rng.randint(0, 99)}" for _ in range(rng.randint(2, 8))) + "\n```"
        if k < 0.2:
            return "\n".join(f"- {sentence()}" for _ in range(rng.randint(2, 6)))
        return paragraph(rng.randint(80, 700))

    parts = ["# Handbook", paragraph(300)]
    size = chapter = 0
    while size < target:
        chapter += 1
        parts += [f"## Chapter {chapter}", paragraph(rng.randint(100, 400))]
        for s in range(rng.randint(3, 10)):
            parts.append(f"### Section {chapter}.{s + 1}")
            parts += [block() for _ in range(rng.randint(1, 12))]
        size = sum(len(p) + 2 for p in parts)
    return "\n\n".join(parts) + "\n"


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "c.db", embed_model="hash-embedder", dim=384)
    yield s
    s.close()


def test_the_raw_record_is_the_file_verbatim(store: Store, tmp_path: Path) -> None:
    text = "\n\n  \r\n# Notes\r\n\r\n" + para("Intro", 30) + "\r\n\r\n## Ünïcode ✓\n\n" + "\n\n".join(
        para(f"P{i}", 70) for i in range(10)) + "\n\n\n   \n"
    doc = tmp_path / "notes.md"
    doc.write_bytes(text.encode("utf-8"))
    acc = ingest_file(store, doc, max_bytes=10 << 20)
    turns = raw.turns_of_source(store.conn, acc.source_id)
    assert "".join(t.text for t in turns) == text and len(turns) == len(acc.raw_ids) > 1
    assert heading_paths([t.text for t in turns]) == [c.path for c in chunk_document(text)]
    assert heading_paths([t.text for t in turns])[-1] == ("Notes", "Ünïcode ✓")


def test_a_two_megabyte_markdown_file_makes_about_a_thousand_chunks(store: Store, tmp_path: Path) -> None:
    text = handbook(2_000_000)
    doc = tmp_path / "handbook.md"
    doc.write_text(text)
    assert doc.stat().st_size >= 2_000_000
    acc = ingest_file(store, doc, max_bytes=10 << 20)
    turns = raw.turns_of_source(store.conn, acc.source_id)
    assert 800 <= len(turns) <= 1500, len(turns)
    assert "".join(t.text for t in turns) == text
    assert max(len(t.text) for t in turns) <= CHUNK_CHARS

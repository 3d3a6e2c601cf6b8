"""The context packer (MemFlow A.3, Table 6), counted with a real tokenizer (SmolLM2-135M's)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from edgemem.errors import ContextTooLong
from edgemem.recall.evidence import Evidence
from edgemem.recall.packer import (
    DEDUP_JACCARD,
    PINNED_BUDGET,
    SUMMARY_BUDGET,
    FITTED_BUDGET,
    PAPER_SCALED_BUDGET,
    TIER2_BUDGET,
    WORD_CAP,
    ceiling_for,
    pack,
    top_sentences,
)

pytestmark = pytest.mark.model  # the tokenizer comes from the smallest GGUF through llama.cpp

TAGS = list(TIER2_BUDGET)
_WORDS = (
    "garden lake pottery camping violin recipe marathon puppy sunrise library concert bicycle museum "
    "festival painting hiking guitar novel kayak picnic workshop bakery theatre volunteer"
).split()


def filler(note_id: int, sentences: int = 3) -> str:
    """A deterministic note of a few sentences; two notes share few words (no near-duplicates)."""
    rng = random.Random(note_id)
    return " ".join(
        f"On day {note_id} we talked about the {', the '.join(rng.sample(_WORDS, 4))} near home."
        for _ in range(sentences)
    )


def raw(note_id: int, text: str | None = None, score: float = 0.0, **kw) -> Evidence:
    kw.setdefault("speaker", "Caroline")
    return Evidence(note_id, text or filler(note_id), f"2023-05-{1 + note_id % 28:02d}T10:00:00", score=score, **kw)


def profile(note_id: int, text: str) -> Evidence:
    return Evidence(note_id, text, "2023-01-01T00:00:00", kind="profile")


def summary(note_id: int, text: str) -> Evidence:
    return Evidence(note_id, text, "", kind="summary")


@pytest.mark.parametrize("tag", TAGS)
def test_budgets_are_never_exceeded(small_llm, tag: str) -> None:
    count = small_llm.count_tokens
    pinned = [profile(-100, "Caroline prefers short answers and lives in Boston.")]
    facts = [summary(-(i + 1), f"state on {i + 1} May 2023 (Caroline): " + filler(i, 1)) for i in range(40)]
    chunks = [raw(i, score=1.0 - i / 100) for i in range(120)]
    for ceiling in (ceiling_for(small_llm.n_ctx), 700, 260):
        packed = pack("What did Caroline say about the pottery workshop?", tag, pinned + facts + chunks, count, ceiling=ceiling)
        assert packed.total_tokens == count(packed.text) <= ceiling
        assert packed.tokens_by_slot["summary"] <= packed.budgets["summary"] <= SUMMARY_BUDGET + PINNED_BUDGET
        assert packed.tokens_by_slot["raw"] <= packed.budgets["raw"]
        assert packed.budgets["raw"] <= TIER2_BUDGET[tag] + SUMMARY_BUDGET + PINNED_BUDGET
        # The slot counts are what the lines cost: each line with its newline.
        assert sum(packed.tokens_by_slot.values()) == sum(count(line + "\n") for line in packed.text.split("\n"))
        assert set(packed.items_used).isdisjoint(packed.dropped)
        assert len(packed.items_used) + len(packed.dropped) == 161
        assert -100 in packed.items_used
    # At the smallest ceiling the summaries take what pinned leaves and raw chunks get nothing.
    assert packed.tokens_by_slot["raw"] == 0 < packed.tokens_by_slot["summary"]


def test_every_line_carries_its_date_and_speaker(small_llm) -> None:
    items = [raw(1, "I adopted a puppy yesterday [7 May 2023]."), raw(2, "We went camping.", speaker="Melanie")]
    packed = pack("puppy?", "temporal-reasoning", items, small_llm.count_tokens, ceiling=2000)
    assert packed.text == (
        "(2 May 2023, Caroline) I adopted a puppy yesterday [7 May 2023].\n"
        "(3 May 2023, Melanie) We went camping."
    )
    assert packed.items_used == [1, 2]


def test_pinned_items_are_never_dropped_or_truncated(small_llm) -> None:
    count = small_llm.count_tokens
    # Pinned facts far over the pinned slot's nominal budget, and a flood of raw chunks.
    pinned = [profile(-(100 + i), f"Rule {i}: " + filler(i, 4)) for i in range(8)]
    pinned_cost = sum(count(e.line() + "\n") for e in pinned)
    assert pinned_cost > PINNED_BUDGET
    chunks = [raw(i, score=1.0) for i in range(200)]
    packed = pack("pottery?", "broad-summarization", pinned + chunks, count, ceiling=pinned_cost + 150)
    for e in pinned:
        assert e.line() in packed.text.split("\n")
        assert e.note_id in packed.items_used
        assert e.note_id not in packed.dropped and e.note_id not in packed.truncated
    assert packed.tokens_by_slot["pinned"] == pinned_cost
    assert packed.tokens_by_slot["raw"] <= 150
    assert packed.total_tokens <= pinned_cost + 150
    # Pinned facts that cannot fit at all: a typed error, not a silent cut.
    with pytest.raises(ContextTooLong):
        pack("pottery?", "broad-summarization", pinned + chunks, count, ceiling=pinned_cost - 1)


def test_raw_is_truncated_first_then_summaries_reduced(small_llm) -> None:
    count = small_llm.count_tokens
    pinned = [profile(-100, "Caroline is vegetarian.")]
    facts = [summary(-1, "7 May 2023 → 25 May 2023: 18 days"), summary(-2, "state on 7 May 2023 (Caroline): " + filler(3, 3))]
    p_cost = count(pinned[0].line() + "\n")
    s_cost = sum(count(e.line() + "\n") for e in facts)
    chunks = [raw(i, score=1.0) for i in range(10)]
    # Room for pinned + summaries + a little: summaries whole, the raw slot gets the rest.
    packed = pack("days?", "temporal-reasoning", pinned + facts + chunks, count, ceiling=p_cost + s_cost + 40)
    assert packed.tokens_by_slot["summary"] == s_cost
    assert packed.tokens_by_slot["raw"] <= 40
    # Less room than the summaries need: the raw slot is empty and the last summary is cut.
    packed = pack("days?", "temporal-reasoning", pinned + facts + chunks, count, ceiling=p_cost + s_cost - 10)
    assert packed.tokens_by_slot["raw"] == 0
    assert packed.truncated == [-2]
    assert "7 May 2023 → 25 May 2023: 18 days" in packed.text
    assert packed.text.split("\n")[-1].endswith(" …")
    assert set(range(10)) <= set(packed.dropped)


def test_dedup_at_jaccard_085(small_llm) -> None:
    base = _WORDS[:17]  # distinct words; similarity = |shared words| / |all words|
    original = " ".join(base + ["alpha"])
    at_085 = " ".join(base + ["beta", "gamma"])  # 17 / 20 = 0.85: dropped
    at_080 = " ".join(base[:16] + ["delta", "epsilon", "zeta"])  # 16 / 21 < 0.85: kept
    assert DEDUP_JACCARD == 0.85
    items = [raw(1, original, 0.9), raw(2, at_085, 0.8), raw(3, at_080, 0.7)]
    packed = pack("q", "conflict-resolution", items, small_llm.count_tokens, ceiling=2000)
    assert packed.items_used == [1, 3]
    assert packed.dropped == [2]
    # The higher-scored copy is the one kept, wherever it stands in the input.
    packed = pack("q", "conflict-resolution", [raw(2, at_085, 0.1), raw(1, original, 0.9)], small_llm.count_tokens, ceiling=2000)
    assert (packed.items_used, packed.dropped) == ([1], [2])
    # A raw chunk repeating a pinned fact goes; the pinned fact stays.
    packed = pack("q", "conflict-resolution", [raw(1, original, 0.9), profile(-5, original)], small_llm.count_tokens, ceiling=2000)
    assert (packed.items_used, packed.dropped) == ([-5], [1])


def test_top2_sentence_extraction_for_precision_tags(small_llm) -> None:
    text = (
        "I spent the morning cleaning. My sister called about her new job at the bank. "
        "Then I went for a long walk. She starts at the bank on Monday and is nervous."
    )
    question = "When does Caroline's sister start at the bank on Monday?"
    # The fourth sentence ranks first (3 shared terms, the second has 2); both kept in text order.
    assert top_sentences(text, question) == (
        "My sister called about her new job at the bank. She starts at the bank on Monday and is nervous."
    )
    for tag in ("targeted-extraction", "constraint-validation", "state-tracking"):
        packed = pack(question, tag, [raw(1, text)], small_llm.count_tokens, ceiling=2000)
        body = "My sister called about her new job at the bank. She starts at the bank on Monday and is nervous."
        capped = " ".join(body.split()[: WORD_CAP[tag]]) + (" …" if len(body.split()) > WORD_CAP[tag] else "")
        assert packed.text == f"(2 May 2023, Caroline) {capped}"
    # A sentence tied with the second is kept too: the earlier of a tie is not the likelier answer.
    line = ("First month in the new job done. managing 14 staff, bit overwhelming. my manager is Bernadette, "
            "she's great. she brought us all for thai on friday.")
    assert top_sentences(line, "what's my manager called in the new job?") == (
        "First month in the new job done. managing 14 staff, bit overwhelming. my manager is Bernadette, she's great."
    )
    # no tie at zero: the second sentence is the nearest to the best one, after it if there is one
    assert top_sentences(line, "where did we go for thai?") == (
        "my manager is Bernadette, she's great. she brought us all for thai on friday.")
    note = "afternoon! just back from the allotment, garlics in!!! 2 rows of germidour, did it this morning. stan says july"
    assert top_sentences(note, "Which variety of garlic did I plant?") == (
        "just back from the allotment, garlics in!!! 2 rows of germidour, did it this morning.")
    # Not a precision tag: the whole chunk.
    packed = pack(question, "conflict-resolution", [raw(1, text)], small_llm.count_tokens, ceiling=2000)
    assert packed.text == f"(2 May 2023, Caroline) {text}"


def test_word_cap_per_chunk(small_llm) -> None:
    long_sentence = " ".join(f"word{i}" for i in range(80)) + "."
    packed = pack("word1?", "state-tracking", [raw(1, long_sentence)], small_llm.count_tokens, ceiling=2000)
    assert packed.text == "(2 May 2023, Caroline) " + " ".join(f"word{i}" for i in range(WORD_CAP["state-tracking"])) + " …"
    assert packed.truncated == [1]


def test_unused_budget_is_reallocated_down(small_llm) -> None:
    count = small_llm.count_tokens
    tag = "targeted-extraction"
    chunks = [raw(i, score=1.0 - i / 1000) for i in range(200)]
    # Nothing pinned and no summaries: the raw slot gets all three nominal budgets.
    packed = pack("pottery?", tag, chunks, count, ceiling=20_000, flow_down=True)
    assert packed.budgets == {"pinned": PINNED_BUDGET, "summary": SUMMARY_BUDGET + PINNED_BUDGET,
                              "raw": TIER2_BUDGET[tag] + SUMMARY_BUDGET + PINNED_BUDGET}
    assert TIER2_BUDGET[tag] < packed.tokens_by_slot["raw"] <= packed.budgets["raw"]
    # Some pinned and summary use: exactly what they leave flows down.
    pinned = [profile(-100, "Caroline prefers short answers.")]
    facts = [summary(-1, "'pottery' is mentioned 3 times in 2 notes from 2 sessions")]
    packed = pack("pottery?", tag, pinned + facts + chunks, count, ceiling=20_000, flow_down=True)
    used_p, used_s = packed.tokens_by_slot["pinned"], packed.tokens_by_slot["summary"]
    assert used_p == count(pinned[0].line() + "\n") and used_s == count(facts[0].line() + "\n")
    assert packed.budgets["summary"] == SUMMARY_BUDGET + PINNED_BUDGET - used_p
    assert packed.budgets["raw"] == TIER2_BUDGET[tag] + packed.budgets["summary"] - used_s


def test_a_fitted_budget_is_the_whole_raw_allowance(small_llm) -> None:
    """Tags with a budget fitted on the tune split get no flow-down by default; broad summarization
    (not fitted) keeps it."""
    count = small_llm.count_tokens
    chunks = [raw(i, score=1.0 - i / 1000) for i in range(200)]
    for tag in FITTED_BUDGET:
        packed = pack("pottery?", tag, chunks, count, ceiling=20_000)
        assert packed.budgets["raw"] == FITTED_BUDGET[tag] >= packed.tokens_by_slot["raw"] > FITTED_BUDGET[tag] - 80
    broad = pack("pottery?", "broad-summarization", chunks, count, ceiling=20_000)
    assert broad.budgets["raw"] == PAPER_SCALED_BUDGET["broad-summarization"] + SUMMARY_BUDGET + PINNED_BUDGET
    assert TIER2_BUDGET["targeted-extraction"] == FITTED_BUDGET["targeted-extraction"] == 320


def test_budgets_overridden_replaces_a_budget_for_the_block_only(small_llm) -> None:
    from edgemem.recall.packer import budgets_overridden

    count = small_llm.count_tokens
    chunks = [raw(i, score=1.0 - i / 1000) for i in range(200)]
    before = dict(TIER2_BUDGET), dict(FITTED_BUDGET)
    with budgets_overridden({"targeted-extraction": 150, "broad-summarization": 300}):
        assert pack("pottery?", "targeted-extraction", chunks, count, ceiling=20_000).budgets["raw"] == 150
        broad = pack("pottery?", "broad-summarization", chunks, count, ceiling=20_000)
        assert broad.budgets["raw"] == 300 >= broad.tokens_by_slot["raw"]  # a whole allowance: no flow-down
    assert (dict(TIER2_BUDGET), dict(FITTED_BUDGET)) == before
    assert pack("pottery?", "targeted-extraction", chunks, count, ceiling=20_000).budgets["raw"] == 320
    with pytest.raises(ValueError, match="unknown action tag"), budgets_overridden({"gossip": 10}):
        pass
    assert (dict(TIER2_BUDGET), dict(FITTED_BUDGET)) == before


def test_profile_injection_has_no_raw_slot(small_llm) -> None:
    items = [profile(-1, "Caroline prefers short answers."), raw(1), raw(2)]
    packed = pack("Draft a note in my style", "profile-injection", items, small_llm.count_tokens, ceiling=2000)
    assert packed.text == "(profile) Caroline prefers short answers."
    assert (packed.items_used, packed.dropped, packed.budgets["raw"]) == ([-1], [1, 2], 0)


def test_an_outdated_chunk_comes_after_the_one_that_replaced_it_and_shows_in_time_order(small_llm) -> None:
    count = small_llm.count_tokens
    old = raw(1, "My favourite colour is blue.", 0.9, stale=True, stale_since="2023-06-01", superseded_by=2)
    new = raw(2, "My favourite colour is green now.", 0.5)
    # A state's history shows the old value too (marked); a question after one current value does not.
    packed = pack("colour?", "state-tracking", [old, new], count, ceiling=2000)
    assert packed.text == (
        "(2 May 2023, Caroline) My favourite colour is blue. (outdated as of 1 June 2023)\n"
        "(3 May 2023, Caroline) My favourite colour is green now."
    )
    # Room for one line: the newer one, though the old one scored higher.
    only_one = count(new.line() + "\n") + 2
    packed = pack("colour?", "state-tracking", [old, new], count, ceiling=only_one)
    assert (packed.items_used, packed.dropped) == ([2], [1])


def test_a_value_question_leaves_out_a_line_replaced_by_one_on_what_is_asked(small_llm) -> None:
    count = small_llm.count_tokens
    old = raw(1, "the big scary thing is my comps exam. it's april 17.", 0.9, stale=True, stale_since="2023-06-01",
              superseded_by=2)
    new = raw(2, "comps moved. now may 8.", 0.5)
    for tag in ("conflict-resolution", "temporal-reasoning"):
        packed = pack("When was my comps exam?", tag, [old, new], count, ceiling=2000)
        assert packed.items_used == [2], tag
    # a lookup or a rule check keeps it, marked
    for tag in ("targeted-extraction", "constraint-validation"):
        assert pack("When was my comps exam?", tag, [old, new], count, ceiling=2000).items_used == [1, 2], tag
    # replaced by a line that shares no word with the question: kept, marked
    packed = pack("When was my exam?", "conflict-resolution", [old, new], count, ceiling=2000)
    assert packed.items_used == [1, 2]


def test_an_outdated_chunk_is_chosen_by_its_score_not_last(small_llm) -> None:
    # "What date was my pre-op appointment?": the line that gives it also names the operation's date,
    # which a later line moved, so the line is outdated on that point; it still holds the pre-op.
    count = small_llm.count_tokens
    pre_op = raw(1, "Pre-op appointment this Thursday at 11:30, operation on the 24th.", 0.9, stale=True,
                 stale_since="2023-05-04", superseded_by=3)
    other = raw(2, "Irena is my closest friend from the choir and sings soprano.", 0.8)
    moved = raw(3, "The operation on the 24th is moved to the 10th of March.", 0.3)
    lines = [pre_op, other, moved]
    two = count(pre_op.line() + "\n") + count(moved.line() + "\n") + 2
    packed = pack("when was my pre-op?", "temporal-reasoning", lines, count, ceiling=two)
    assert (packed.items_used, packed.dropped) == ([1, 3], [2])
    # Outdated by a line that is not among them: after the lines that are not outdated.
    alone = replace(pre_op, superseded_by=99)
    packed = pack("when was my pre-op?", "temporal-reasoning", [alone, other, moved], count, ceiling=two)
    assert packed.items_used[:2] == [2, 3]


def test_broad_keeps_round_robin_priority_and_groups_by_session(small_llm) -> None:
    count = small_llm.count_tokens
    a1 = raw(1, "Camping at the lake.", 0.9, session="A")
    a2 = raw(2, "Camping in the forest.", 0.8, session="A")
    b1 = raw(3, "Pottery class again.", 0.1, session="B")
    # Round-robin order from preprocessing: a1, b1, a2. Room for two lines: a1 and b1, not a2.
    room = count(a1.line() + "\n") + count(b1.line() + "\n") + 3
    packed = pack("how many?", "broad-summarization", [a1, b1, a2], count, ceiling=room)
    assert (packed.items_used, packed.dropped) == ([1, 3], [2])
    packed = pack("how many?", "broad-summarization", [a1, b1, a2], count, ceiling=2000)
    assert packed.items_used == [1, 2, 3]  # session A's lines together, in time order


def test_ceiling_from_the_model_context() -> None:
    assert ceiling_for(8192) == 8192 - 1024
    assert ceiling_for(8192, reserved=500) == 7692
    assert ceiling_for(32_768, reserved=0) == 20_480  # the paper's ceiling caps it
    assert ceiling_for(512) == 0


def test_unknown_tag_or_kind_is_a_bug_not_an_empty_pack(small_llm) -> None:
    with pytest.raises(ValueError, match="unknown action tag"):
        pack("q", "chit-chat", [raw(1)], small_llm.count_tokens, ceiling=100)
    with pytest.raises(ValueError, match="unknown kind"):
        pack("q", "temporal-reasoning", [raw(1, kind="memo")], small_llm.count_tokens, ceiling=100)


# --- profile lines ----------------------------------------------------------------------------------
def test_a_profile_line_says_its_value_once_and_carries_no_date():
    from edgemem.recall.evidence import profile_line, profile_value

    assert profile_line("maya", "diet", "pescatarian", "identity") == "maya — diet: pescatarian (identity)"
    # Named by its value, as the profile step often does: the value alone; a slug reads as words.
    assert profile_line("melanie", "keep_family_happy", "keep my family happy", "rule") == \
        "melanie — keep my family happy (rule)"
    assert profile_line("melanie", "dinosaur exhibit", "dinosaur_exhibit", "preference") == \
        "melanie — dinosaur exhibit (preference)"
    assert profile_line("user", "rule", "never schedule meetings on Fridays", "rule") == \
        "user — rule: never schedule meetings on Fridays (rule)"
    # A value with its own colon keeps the attribute, so the value reads back whole.
    line = profile_line("maya", "gift budget", "budget: about 50 pounds", "identity")
    assert line == "maya — gift budget: budget: about 50 pounds (identity)"
    assert profile_value(line) == "budget: about 50 pounds"
    assert profile_value("melanie — keep my family happy (rule)") == "keep my family happy"
    assert profile_value("user — rule: never schedule meetings on Fridays (rule)") == "never schedule meetings on Fridays"
    # Packed, a fact's header says what it is, not when it was written (ten tokens a line).
    assert profile(-1_000_001, line).line() == f"(profile) {line}"


def test_a_rule_check_sees_a_long_notes_rule_whole() -> None:
    rule = ("Sunday mornings are sacred: I take Papá to nine o'clock mass at the parish church in Cordón and then we walk "
            "very slowly through the feria, so nothing before 1pm on a Sunday, ever.")
    note = Evidence(1, "Please remember a few rules of mine. " + rule + " Also the bakery opens at six.",
                    "2025-09-05T21:40:00", speaker="Graciela")
    question = "The hearing-aid technician can come on Sunday at 10. Should I say yes?"
    packed = pack(question, "constraint-validation", [note], lambda t: len(t) // 4, ceiling=2000)
    assert rule in packed.text and "Please remember" not in packed.text  # the line after the rule carries on
    # Another tag still gets the note cut to its word cap.
    assert rule not in pack(question, "state-tracking", [note], lambda t: len(t) // 4, ceiling=2000).text


def test_a_rule_check_sees_every_rule_sentence_of_a_note_beside_those_like_the_question() -> None:
    from edgemem.recall.evidence import Evidence
    from edgemem.recall.packer import pack

    note = Evidence(1, "rule number one. sundays are not for work. church in the morning, i play drums in the band, "
                       "then family dinner. never book me anything work related on a sunday", "2025-05-18T22:15:00",
                    speaker="Kwame", score=1.0)
    packed = pack("My parts supplier invited me to dinner on a Thursday evening in March. Can I go?",
                  "constraint-validation", [note], lambda t: len(t) // 4, ceiling=2000)
    assert "never book me anything work related on a sunday" in packed.text
    assert "then family dinner." in packed.text

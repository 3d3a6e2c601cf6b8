"""The context packer: evidence into a token-budgeted context (MemFlow §3.1, Appendix A.3, Table 6).

Three priority slots under one global ceiling:

1. ``pinned`` — Tier-1 profile facts, pinned facts, behavioural rules: never truncated, never
   dropped. If they alone exceed the ceiling the prompt cannot fit and :class:`ContextTooLong` is
   raised (DESIGN Principle 5: a typed error, never a silent cut).
2. ``summary`` — Tier-3 pre-computed facts (date math, timelines, counts): reduced on overflow.
3. ``raw`` — Tier-2 episodic chunks: truncated first on overflow.

Unused budget flows down: what the pinned slot leaves of its nominal budget goes to the summary
slot, what the summary slot leaves goes to the raw slot (A.3 "dynamic budget reallocation").
Before budgeting, the A.3 enhancements run: relevance sort (score), top-2 sentence extraction for
the precision tags, per-chunk word caps (Table 6), and Jaccard ≥ 0.85 near-duplicate removal.

Budgets, scaled from the paper to the default 1.5B model on a laptop CPU
------------------------------------------------------------------------
The paper packs for Qwen3-1.7B on a GPU under a 20,480-token ceiling (Algorithm 1) with Tier-2
budgets of 4,400-8,000 tokens (Table 6), yet its packs average 469 tokens on LoCoMo and 1,543 on
LongMemEval (Table 10). edgemem's default model runs with n_ctx 8,192 on a CPU, where every packed
token is prefilled before the first answer token. The Tier-2 budgets are the paper's divided by
five (targeted-extraction 6,000 → 1,200), which keeps its ratios between tags (temporal 0.73x,
broad 1.33x) and puts the largest full pack — nominal pinned 300 + summary 400 + broad raw 1,600 —
at 2,300 tokens, the top of the paper's LoCoMo / LongMemEval range. The per-chunk word caps are divided by five too (300 → 60 words), so a budget
still holds the same ~15 full-size chunks as the paper's (6,000 tokens / ~400 per 300-word chunk).
The paper gives no Tier-1 or Tier-3 budget; 300 and 400 tokens hold a compiled profile and a dozen
one-line facts. The global ceiling is min(20,480, n_ctx − reserved) (:func:`ceiling_for`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from edgemem.errors import ContextTooLong
from edgemem.recall.evidence import NOW_TERMS, Evidence, jaccard, terms
from edgemem.recall.rules import rule_sentence
from edgemem.text import SENTENCE_END

__all__ = [
    "Packed", "pack", "ceiling_for", "top_sentences", "PAPER_CEILING", "PAPER_TIER2_BUDGET",
    "TIER2_BUDGET", "FITTED_BUDGET", "PAPER_SCALED_BUDGET", "WORD_CAP", "PAPER_WORD_CAP", "PRECISION_TAGS", "PINNED_BUDGET", "SUMMARY_BUDGET",
    "DEDUP_JACCARD", "TOP_SENTENCES", "budgets_overridden", "CHECK_BUDGET", "check_budget",
]

PAPER_CEILING = 20_480  # Algorithm 1, Stage 4
PAPER_TIER2_BUDGET = {  # Table 6
    "profile-injection": 0, "targeted-extraction": 6_000, "temporal-reasoning": 4_400,
    "conflict-resolution": 6_000, "broad-summarization": 8_000, "constraint-validation": 6_000,
    "state-tracking": 6_000,
}
PAPER_WORD_CAP = {"targeted-extraction": 300, "constraint-validation": 200, "state-tracking": 150}
SCALE = 5  # see the module docstring and docs/measurements.md: CPU prefill, n_ctx 8,192, the paper's pack sizes
PAPER_SCALED_BUDGET = {tag: budget // SCALE for tag, budget in PAPER_TIER2_BUDGET.items()}
# Whole raw allowances, with nothing flowing down into them. First fitted on LoCoMo's tune
# conversations (conv-26/30/41) by ``python -m edgemem.eval.budgets`` as the smallest allowance packing
# 98% of the gold evidence the largest one does (targeted 600, temporal 800, state 600; with the
# paper's flow-down every Tier-2 raw slot got ~700 tokens more than its budget and a budget below
# ~900 changed nothing). Then judged by answer F1 on the same tune conversations, which is what the
# budget is for (``edgemem eval locomo --split tune --budget TAG=N``, docs/measurements.md,
# fourteenth session): a smaller pack carries less of the evidence but fewer distractors, and the
# 1.5B model reads it no worse. Mem0 F1 on 100 tune questions (seed 1): 35.4 with the coverage fit,
# 36.7 with targeted 400 / temporal 500, 34.8 with 250 / 350 (single-hop 40.1 → 41.7 → 35.3,
# category-5 abstention 52 → 52 → 39%); on 60 tune temporal questions (seed 2), temporal 300 / 400
# / 550 / 800: 56.1 / 57.8 / 57.1 / 55.9. Then, on 100 tune questions (seed 1) with the sentence
# pathway, 400 / 320 for both: Mem0 F1 34.9 / 35.3, official F1 40.0 / 41.0, category-5 abstention
# 52.2 / 56.5%, temporal 56.9 / 59.5, single-hop 35.7 / 33.9 (sixteenth and seventeenth sessions):
# 320. Not a gain everywhere: on the 150-question sample over all six conversations (seed 0) Mem0
# F1 32.3 / 30.7, answerable abstention 10.4 / 7.0% (docs/measurements.md). Every packed token is
# prefilled before the first answer token (~100 tok/s on a 2-core CPU), so the first token waits
# ~0.8 s less. State, conflict and constraint questions are rare in LoCoMo
# and were judged on the personal tune personas (docs/measurements.md). Broad summarization keeps
# the paper's scaled budget and flow-down (coverage kept rising up to 2,400 tokens: capped by cost).
FITTED_BUDGET = {"targeted-extraction": 320, "temporal-reasoning": 320, "state-tracking": 600,
                 "conflict-resolution": 1_200, "constraint-validation": 1_200}
# What the model-free checks read (the validator's ownership check: whose line holds the answer).
# They cost no prefill, so they keep the coverage fit, which packs the gold evidence: cut to the
# model's 400 tokens, the lines showing that the thing asked about is someone else's fell out of
# view. On LoCoMo's 150-question sample (seed 0) the smaller pack alone kept Mem0 F1 (33.1 → 33.3)
# and lost 6 of 23 adversarial abstentions, 4 of them the ownership check's (docs/measurements.md).
CHECK_BUDGET = {"targeted-extraction": 600, "temporal-reasoning": 800}
TIER2_BUDGET = {**PAPER_SCALED_BUDGET, **FITTED_BUDGET}
WORD_CAP = {tag: words // SCALE for tag, words in PAPER_WORD_CAP.items()}
PINNED_BUDGET = 300  # nominal Tier-1 share; pinned items are never cut, the rest flows down
SUMMARY_BUDGET = 400  # Tier-3 facts
# A.3: precision-sensitive tags keep only the two most relevant sentences of each chunk.
PRECISION_TAGS = frozenset({"targeted-extraction", "constraint-validation", "state-tracking"})
TOP_SENTENCES = 2
DEDUP_JACCARD = 0.85  # A.3: near-duplicate chunks at or above this Jaccard similarity are dropped
# Profile-injection answers from the profile (Table 6: Tier-2 budget 0), but a suggestion tailored to
# the user ("What should I bring to Ana's birthday?") needs the note that says what Ana loves beside
# the stated likes: the read path may open a small raw slot for a few retrieved notes (``tier2_budget``).
PROFILE_NOTES_BUDGET = 360  # five of the user's lines (answer.PROFILE_NOTES)
# A chunk cut to fewer tokens than this carries no usable fact: it is dropped instead.
MIN_CUT_TOKENS = 12
# What the rest of the answer prompt needs besides the pack, for ceiling_for's default: the tag
# system prompt (~350 tokens for the B.2 prompts with the grounding instruction), the question,
# the answer (256) and three tool rounds (each a TOOL: line plus a TOOL_RESULT: line).
DEFAULT_RESERVED = 1_024

SLOTS = ("pinned", "summary", "raw")
_SLOT_OF_KIND = {"profile": "pinned", "pinned": "pinned", "summary": "summary", "raw": "raw"}
_CUT = " …"


def check_budget(tag: str) -> int | None:
    """The raw budget of the context the model-free checks read for ``tag``, when it is wider than
    the model's (None: they read what the model reads)."""
    wide = CHECK_BUDGET.get(tag)
    return wide if wide is not None and wide > TIER2_BUDGET[tag] else None


@contextmanager
def budgets_overridden(budgets: Mapping[str, int]) -> Iterator[None]:
    """Within the block, ``budgets`` (tag → raw allowance) replace the tags' Tier-2 budgets, as
    fitted whole allowances (no flow-down). For measuring budgets against answer quality
    (``edgemem eval … --budget TAG=N``); the module's budgets are restored on exit."""
    unknown = set(budgets) - set(TIER2_BUDGET)
    if unknown:
        raise ValueError(f"unknown action tag(s) {', '.join(sorted(unknown))}")
    saved = dict(TIER2_BUDGET), dict(FITTED_BUDGET)
    TIER2_BUDGET.update(budgets)
    FITTED_BUDGET.update(budgets)
    try:
        yield
    finally:
        TIER2_BUDGET.clear()
        TIER2_BUDGET.update(saved[0])
        FITTED_BUDGET.clear()
        FITTED_BUDGET.update(saved[1])


def ceiling_for(n_ctx: int, reserved: int = DEFAULT_RESERVED) -> int:
    """The pack's global ceiling: the paper's, or what the model's context leaves, if less."""
    return max(0, min(PAPER_CEILING, n_ctx - reserved))


@dataclass
class Packed:
    text: str
    items_used: list[int]  # note ids in the order shown (computed facts have negative ids)
    tokens_by_slot: dict[str, int]
    total_tokens: int  # count_tokens(text)
    dropped: list[int]  # note ids left out: duplicates, over budget, or a closed raw slot
    budgets: dict[str, int] = field(default_factory=dict)  # what each slot was allowed
    truncated: list[int] = field(default_factory=list)  # note ids shown cut


def _shingles(text: str) -> set[str]:
    """The word set Jaccard dedup compares. Numbers count: "ran 5 km" and "ran 10 km" differ."""
    return set(re.findall(r"\w+", text.lower()))


def top_sentences(text: str, question: str, k: int = TOP_SENTENCES) -> str:
    """The ``k`` sentences sharing most content terms with the question, and any tied with the last
    of them, in their original order (A.3 sentence-level extraction)."""
    sentences = SENTENCE_END.split(text.strip())
    if len(sentences) <= k:
        return text.strip()
    wanted = terms(question)
    shared = [len(terms(s) & wanted) for s in sentences]
    # A sentence that shares no word with the question is taken for its place: the one after the best
    # carries on what that one began ("garlics in!!! 2 rows of germidour, did it this morning"), where
    # the note's first line is mostly a greeting ("afternoon!").
    best = max(range(len(sentences)), key=lambda i: (shared[i], -i))
    ranked = sorted(range(len(sentences)), key=lambda i: (-shared[i], abs(i - best - 0.5) if shared[i] == 0 else i))
    # Sentences tied with the k-th are kept too: "managing 14 staff" and "my manager is Bernadette"
    # share one word each with "what's my manager called in the new job?", and the earlier of a
    # tie is not the likelier answer.
    last = shared[ranked[k - 1]]
    chosen = [i for i in ranked if i in ranked[:k] or (last > 0 and shared[i] == last)]
    return " ".join(sentences[i] for i in sorted(chosen))


def _cap_words(text: str, cap: int | None) -> tuple[str, bool]:
    words = text.split()
    if cap is None or len(words) <= cap:
        return text, False
    return " ".join(words[:cap]) + _CUT, True


@dataclass
class _Line:
    item: Evidence
    body: str  # the (possibly extracted / capped) text shown
    cut: bool = False

    def render(self, body: str | None = None) -> str:
        return f"{self.item.header()} {self.body if body is None else body}{self.item.stale_marker()}"


def _fit(line: _Line, allowance: int, count: Callable[[str], int]) -> str | None:
    """The longest word prefix of the line's body whose rendered line fits ``allowance`` tokens
    (newline included), or None when not even MIN_CUT_TOKENS of it fit."""
    if allowance < MIN_CUT_TOKENS:
        return None
    words = line.body.split()
    lo, hi, best = 1, len(words) - 1, None
    while lo <= hi:  # binary search: the token count grows with the number of words
        mid = (lo + hi) // 2
        candidate = " ".join(words[:mid]) + _CUT
        if count(line.render(candidate) + "\n") <= allowance:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best


def _with_rules(text: str, chosen: str) -> str:
    """The sentences of ``text`` that are in ``chosen`` or hold a rule, in the text's order."""
    kept = set(SENTENCE_END.split(chosen.strip()))
    sentences = SENTENCE_END.split(text.strip())
    return " ".join(s for s in sentences if s in kept or rule_sentence(s))


# Questions after a date or a changed value: an outdated chunk is left out when the chunk that
# replaced it is among the candidates and is itself on what is asked (shares a content term of the
# question). Marked "(outdated as of …)" beside its replacement, the 1.5B model still answered from
# it when it came first ("When was my comps exam?": "17 April 2026", the line after it saying "comps
# moved. now may 8"). A replacement on another point keeps it: "Pre-op this Thursday, operation on
# the 24th" outdated by "the operation is moved to the 10th" still answers "when was my pre-op?".
# Not for a lookup, where a line is outdated only for the date it gives ("Where did Dev and I go on our
# first date?" lost "Metropolitan"), nor a rule check, which reads a replaced rule beside the line that
# replaced it (preprocess.rules marks by word overlap: a replacing line was itself left out).
REPLACED_DROPPED = frozenset({"temporal-reasoning", "conflict-resolution"})


def _newer_first(raw: list[tuple[int, Evidence]]) -> list[tuple[int, Evidence]]:
    """``raw`` in its order, except that an outdated item is preceded by the item that replaced it,
    when that one is in ``raw`` too (and by its replacement in turn): the packer then never shows an
    old value without the one that replaced it, whatever their scores."""
    by_id = {item.note_id: (position, item) for position, item in raw}
    out: list[tuple[int, Evidence]] = []
    placed: set[int] = set()
    for entry in raw:
        chain = [entry]  # the item, what replaced it, what replaced that, … (a cycle stops the walk)
        while chain[-1][1].stale and chain[-1][1].superseded_by in by_id:
            newer = by_id[chain[-1][1].superseded_by]
            if any(newer[1].note_id == e[1].note_id for e in chain):
                break
            chain.append(newer)
        for position, item in reversed(chain):
            if item.note_id not in placed:
                placed.add(item.note_id)
                out.append((position, item))
    return out


def pack(
    question: str,
    tag: str,
    items: Sequence[Evidence],
    count_tokens: Callable[[str], int],
    *,
    ceiling: int,
    tier2_budget: int | None = None,
    flow_down: bool | None = None,
) -> Packed:
    """Pack ``items`` for a question routed to ``tag`` under ``ceiling`` tokens (A.3).

    Order shown: pinned, then summaries, then raw chunks in the order given (Tier-3 preprocessing
    has already put them in time or session order). Raw chunks are *chosen* by score, an outdated
    one right after the chunk that replaced it (last when that is not among them) — except for
    broad-summarization, where the given round-robin order is the priority, since
    re-sorting by score would undo the session-diversity guarantee. ``tier2_budget`` replaces the
    tag's raw budget when given: profile-injection's few retrieved notes. ``flow_down`` says whether
    what the summary slot leaves is added to the raw budget (A.3); by default it is for the tags
    whose budget is not fitted (``FITTED_BUDGET`` budgets are whole raw allowances)."""
    if tag not in TIER2_BUDGET:
        raise ValueError(f"unknown action tag {tag!r}")
    by_slot: dict[str, list[tuple[int, Evidence]]] = {slot: [] for slot in SLOTS}
    for position, item in enumerate(items):
        slot = _SLOT_OF_KIND.get(item.kind)
        if slot is None:
            raise ValueError(f"evidence {item.note_id} has unknown kind {item.kind!r}")
        by_slot[slot].append((position, item))

    # A.3 (2) sentence extraction and Table 6 word caps: raw chunks only.
    cap = WORD_CAP.get(tag)
    lines: dict[int, _Line] = {}
    for position, item in by_slot["pinned"] + by_slot["summary"]:
        lines[position] = _Line(item, item.text.strip())
    for position, item in by_slot["raw"]:
        body = top_sentences(item.text, question) if tag in PRECISION_TAGS else item.text.strip()
        if tag == "constraint-validation" and body != item.text.strip():
            # The sentences most like the question, and every rule sentence of the note: "church in
            # the morning, … then family dinner" is like "dinner on a Thursday", but the rule around
            # it ("never book me anything work related on a sunday") says which day it is about.
            body = _with_rules(item.text, body)
        shown, cut = _cap_words(body, cap)
        if cut and tag == "constraint-validation":
            # A rule is quoted whole or not at all: "Sunday mornings are sacred: I take Papá to mass
            # …, so nothing before 1pm on a Sunday" cut at 40 words lost the rule it ends with. The
            # note's rule sentences are shown whole instead (the slot's budget still bounds them).
            ruling = [sentence for sentence in SENTENCE_END.split(item.text.strip()) if rule_sentence(sentence)]
            if ruling:
                shown, cut = " ".join(ruling), True
        lines[position] = _Line(item, shown, cut)

    # A.3 (1) relevance sort: the order raw chunks are considered in.
    raw = by_slot["raw"]
    if tag != "broad-summarization":
        # An outdated chunk is chosen by its score, right after the chunk that replaced it: a line
        # outdated on one point may be the only one holding another ("pre-op this Thursday, operation
        # on the 24th", the operation moved later, for "when was my pre-op?"). Chosen after every
        # current chunk, as before, it never reached a 320-token temporal pack (docs/measurements.md,
        # thirty-second session). One whose replacement is not among them still goes last.
        ids = {item.note_id for _, item in raw}
        raw = _newer_first(sorted(raw, key=lambda p: (p[1].stale and p[1].superseded_by not in ids, -p[1].score, p[0])))
        if tag in REPLACED_DROPPED:
            asked = terms(question) - NOW_TERMS
            on_it = {item.note_id for _, item in raw if terms(item.text) & asked}
            raw = [(p, item) for p, item in raw if not (item.stale and item.superseded_by in on_it)]

    # A.3 (3) Jaccard dedup in priority order: a chunk that nearly repeats one already kept goes.
    dropped: list[int] = []
    seen: list[set[str]] = []
    survivors: dict[str, list[int]] = {slot: [] for slot in SLOTS}
    for slot, entries in (("pinned", by_slot["pinned"]), ("summary", by_slot["summary"]), ("raw", raw)):
        for position, item in entries:
            words = _shingles(lines[position].body)
            if slot != "pinned" and any(jaccard(words, other) >= DEDUP_JACCARD for other in seen):
                dropped.append(item.note_id)
                continue
            seen.append(words)
            survivors[slot].append(position)

    def cost(position: int, body: str | None = None) -> int:
        return count_tokens(lines[position].render(body) + "\n")

    # Slot 1: pinned, whole.
    used = {slot: 0 for slot in SLOTS}
    used["pinned"] = sum(cost(p) for p in survivors["pinned"])
    if used["pinned"] > ceiling:
        raise ContextTooLong(used["pinned"], ceiling)
    shown: dict[int, str | None] = {p: None for p in survivors["pinned"]}  # position -> cut body
    truncated: list[int] = []

    def fill(slot: str, budget: int) -> None:
        for n, position in enumerate(survivors[slot]):
            need = cost(position)
            if used[slot] + need <= budget:
                shown[position] = None
                used[slot] += need
                continue
            body = _fit(lines[position], budget - used[slot], count_tokens)
            if body is not None:
                shown[position] = body
                used[slot] += cost(position, body)
                truncated.append(lines[position].item.note_id)
            else:
                dropped.append(lines[position].item.note_id)
            dropped.extend(lines[p].item.note_id for p in survivors[slot][n + 1 :])
            return

    # Slot 2: summaries get their own budget plus what pinned left, never more than the ceiling left.
    left = ceiling - used["pinned"]
    summary_budget = min(left, SUMMARY_BUDGET + max(0, PINNED_BUDGET - used["pinned"]))
    fill("summary", summary_budget)
    # Slot 3: raw gets the tag's budget plus what the slots above left. Profile-injection answers
    # from the profile alone (Table 6: Tier-2 budget 0), so its raw slot stays closed.
    left -= used["summary"]
    tier2 = TIER2_BUDGET[tag] if tier2_budget is None else tier2_budget
    if flow_down is None:
        flow_down = tag not in FITTED_BUDGET
    spare = summary_budget - used["summary"] if flow_down else 0
    raw_budget = 0 if tier2 == 0 else min(left, tier2 + spare)
    fill("raw", raw_budget)
    for position in survivors["raw"]:
        if lines[position].cut and position in shown:
            truncated.append(lines[position].item.note_id)

    text, order = _render(tag, lines, shown)
    total = count_tokens(text)
    # Guard: each line was counted alone; should the tokenizer merge across a newline so that the
    # joined text costs more, the lowest-priority raw lines go until the ceiling holds again.
    while total > ceiling and order:
        last_raw = next((p for p in reversed(order) if lines[p].item.kind == "raw"), None)
        if last_raw is None:
            raise ContextTooLong(total, ceiling)
        used["raw"] -= cost(last_raw, shown.pop(last_raw))
        dropped.append(lines[last_raw].item.note_id)
        text, order = _render(tag, lines, shown)
        total = count_tokens(text)
    return Packed(
        text=text,
        items_used=[lines[p].item.note_id for p in order],
        tokens_by_slot=dict(used),
        total_tokens=total,
        dropped=dropped,
        budgets={"pinned": max(PINNED_BUDGET, used["pinned"]), "summary": summary_budget, "raw": raw_budget},
        truncated=list(dict.fromkeys(truncated)),
    )


def _render(tag: str, lines: dict[int, _Line], shown: dict[int, str | None]) -> tuple[str, list[int]]:
    """Lines in slot order, each slot in the order the items were given; broad-summarization's raw
    chunks grouped by session (sessions by first time said, items in time order within one)."""
    slot_rank = {"pinned": 0, "summary": 1, "raw": 2}
    order = sorted(shown, key=lambda p: (slot_rank[_SLOT_OF_KIND[lines[p].item.kind]], p))
    if tag == "broad-summarization":
        head = [p for p in order if lines[p].item.kind != "raw"]
        sessions: dict[str, list[int]] = {}
        for p in sorted((p for p in order if lines[p].item.kind == "raw"), key=lambda p: (lines[p].item.event_time, p)):
            item = lines[p].item
            sessions.setdefault(item.session or item.event_time[:10], []).append(p)
        order = head + [p for group in sessions.values() for p in group]
    return "\n".join(lines[p].render(shown[p]) for p in order), order

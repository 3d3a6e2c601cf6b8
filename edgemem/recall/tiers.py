"""The memory agent's three tiers (MemFlow §3.1, Appendix A.2, Table 5).

- Tier 1 (profile-injection): the compiled profile, no retrieval.
- Tier 2 (targeted-extraction): a primary hybrid pass for the whole question plus one pass per
  extracted entity / noun phrase, unioned by RRF and deduplicated by note.
- Tier 3 (the five other tags): multi-pathway retrieval (dense, BM25, CLAG clusters, MemFly keywords
  and topics, link expansion), dual-anchor passes for temporal questions, then the tag's deterministic
  preprocessing (:mod:`edgemem.recall.preprocess`).

Profile facts that share terms with the question are pinned in every tier: they are the user's
stable facts and rules, and the packer never truncates them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np

from edgemem.recall import preprocess, rules
from edgemem.recall.evidence import ASSISTANT_SPEAKERS, TIME_FRAME_TERMS, Evidence, profile_line, terms
from edgemem.recall.retrieve import Hit, fused_rank, hybrid, multi_path, rrf, with_replies
from edgemem.store import links, notes, search
from edgemem.store import profile as profile_store
from edgemem.text import extract_entities, extract_keywords

TIER = {
    "profile-injection": 1,
    "targeted-extraction": 2,
    "temporal-reasoning": 3,
    "conflict-resolution": 3,
    "broad-summarization": 3,
    "constraint-validation": 3,
    "state-tracking": 3,
}
TOP_K = {"base": 8, "tier2": 20, "tier3": 20, "broad": 80}  # Table 5
ENTITY_PASSES = 3
ENTITY_WEIGHT = 0.5  # a secondary pass refines the primary one; it should not outvote it
COMMON_ANCHOR = 0.2
PROFILE_ID_BASE = 1_000_000  # profile facts appear with negative ids below -PROFILE_ID_BASE


@dataclass
class Gathered:
    tag: str
    tier: int
    items: list[Evidence]  # pinned profile, pre-computed facts, then evidence in preprocessing order
    retrieved: list[int] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    computed: tuple[str, list[int]] | None = None  # Tier 3's own answer, for when the model's fail
    direct: tuple[str, list[int]] | None = None  # Tier 3's answer in place of the model's (no model call)
    unheld: str | None = None  # why Tier 3 found the notes cannot answer it (the pipeline abstains)


# The most profile facts one question is given. Pinned facts are never cut by the packer, and a
# profile grows for as long as the user talks: a year of chat compiles hundreds of facts, which
# would fill the context (or overflow it) before any note. A suggestion gets the facts closest to
# it in meaning ("what should I cook tonight?": the diets and the dislikes, not the dentist); any
# other question the few that share a word with it, closest first.
PROFILE_FACTS = {"profile-injection": 12, "other": 6}


def profile_evidence(conn: Any, question: str | None = None, *, embed: Callable | None = None,
                     related: bool = True, limit: int | None = None) -> list[Evidence]:
    """Current profile facts: with a question, those sharing a term with it (all of them when not
    ``related``); at most ``limit``, the closest to the question by embedding when ``embed`` is
    given (else the newest), in the profile's order."""
    out = []
    for fact in profile_store.current(conn):
        if profile_store.fragment(fact.attribute, fact.value):
            continue  # a bare word filed as a fact (a store written before the write path dropped them)
        line = profile_line(fact.subject, fact.attribute, fact.value, fact.kind)
        out.append(Evidence(-(PROFILE_ID_BASE + fact.id), line, fact.valid_from, kind="profile"))
    if question and related:
        out = [e for e in out if _shares_term(e, question)]
    return out if limit is None else _closest(question, out, embed, limit)


def _shares_term(fact: Evidence, question: str) -> bool:
    """The fact shares a content term with the question, time-frame words aside ("this year")."""
    return bool(terms(fact.text) & (terms(question) - TIME_FRAME_TERMS))


def _closest(question: str | None, facts: list[Evidence], embed: Callable | None, limit: int) -> list[Evidence]:
    """At most ``limit`` of ``facts``, in their order: the closest to the question by embedding when
    ``embed`` is given, else the newest."""
    if len(facts) <= limit:
        return facts
    if embed is not None and question:
        vectors = np.asarray(embed([question] + [e.text for e in facts]), dtype=np.float64)
        closeness = vectors[1:] @ vectors[0]
    else:
        closeness = np.array([e.event_time for e in facts]).argsort().argsort().astype(np.float64)
    keep = set(np.argsort(-closeness, kind="stable")[:limit].tolist())
    return [e for i, e in enumerate(facts) if i in keep]


# A suggestion's facts that share no word with it: only the few closest in meaning ("what should I
# cook?": the diet, the dislikes). The write path's facts are often a fragment of a note ("margaux —
# wooden chess clock (identity)"); given twelve such facts beside the notes, the 1.5B model suggested
# "a wooden chess clock" for a grandmother who gardens. Tune profile questions (21, five personas
# with the default write path): 10 → 11 right, median prompt 466 → 417 tokens.
SUGGESTION_UNSHARED = 4


def suggestion_profile(conn: Any, question: str, embed: Callable | None) -> list[Evidence]:
    """The profile facts a suggestion reads, in the profile's order: those sharing a term with the
    question (at most PROFILE_FACTS), and the SUGGESTION_UNSHARED others closest to it."""
    every = profile_evidence(conn, question, related=False)
    shared = [e for e in every if _shares_term(e, question)]
    others = [e for e in every if not _shares_term(e, question)]
    kept = {e.note_id for e in _closest(question, shared, embed, PROFILE_FACTS["profile-injection"])
            + _closest(question, others, embed, SUGGESTION_UNSHARED)}
    return [e for e in every if e.note_id in kept]


NAMING_LINES = 8  # the lines naming someone a gift for them is read from
NAMING_SCAN = 400  # the full-text matches on a name read to find them (the notes of years of chat)


def naming_lines(conn: Any, name: str, embed: Callable, k: int = NAMING_LINES, *, needs: bool = False,
                 question: str = "") -> list[Evidence]:
    """The user's lines anywhere in the store that name ``name`` (a word: "Finn", "mum"), the ``k``
    closest to what a person likes, oldest first. Retrieval led by the question ("what should I get
    Finn for his bday?") ranks the last birthday's gift first; what Finn plays and follows is in lines
    about Finn that say nothing of birthdays. ``needs``: for a suggestion that is no gift, the lines
    closest to the ``question`` and to what they like and cannot have or need ("Sigrid is vegetarian
    since she was 15" for "What should I cook when Sigrid, Jonas and Ingrid come for Christmas?")."""
    pattern = re.compile(rf"\b{re.escape(name)}(?:['’]?s)?\b", re.IGNORECASE)
    matched = notes.get_many(conn, [note_id for note_id, _ in notes.fts(conn, name, NAMING_SCAN)])
    found = [n for n in matched if pattern.search(n.content) and (n.speaker or "").casefold() not in ASSISTANT_SPEAKERS]
    if not found:
        return []
    if len(found) > k:
        wanted = (f"{question} what {name} likes, eats and enjoys, and cannot have or needs".strip() if needs
                  else f"what {name} likes, loves, plays, follows and asks for")
        probe = np.asarray(embed([wanted]), dtype=np.float64)[0]
        vectors = notes.vectors(conn, [n.id for n in found])
        found = sorted(found, key=lambda n: -float(vectors[n.id] @ probe) if n.id in vectors else 0.0)[:k]
    found.sort(key=lambda n: (n.event_time, n.id))
    return [Evidence(n.id, n.content, n.event_time, speaker=n.speaker) for n in found]


def to_evidence(conn: Any, hits: list[Hit]) -> list[Evidence]:
    found = notes.get_many(conn, [h.note_id for h in hits])
    where = notes.provenance(conn, [n.id for n in found])
    score = {h.note_id: h.score for h in hits}
    out = []
    for note in found:
        uri, ext = where.get(note.id, (None, []))
        out.append(Evidence(
            note.id, note.content, note.event_time, speaker=note.speaker, session=uri, dates=note.dates,
            score=score.get(note.id, 0.0), ext_id=",".join(ext) if ext else None,
        ))
    return out


def _anchors(conn: Any, question: str) -> list[str]:
    """Entities and noun phrases worth a pass of their own (A.2's lightweight parser).

    An anchor found in more than COMMON_ANCHOR of the notes is skipped: in a two-person conversation
    a speaker's name matches half the record, and a pass on it only dilutes the primary pass."""
    candidates = list(dict.fromkeys(extract_entities(question) + extract_keywords(question, limit=3)))
    total = max(notes.count_active(conn), 1)
    kept = [a for a in candidates if search.doc_frequency(conn, a) <= COMMON_ANCHOR * total]
    return kept[:ENTITY_PASSES]


def content_query(question: str, speakers: Sequence[str]) -> str:
    """The question without the names of the record's speakers, for text matching.

    Who is asked about is the ranking's job (``retrieve.fused_rank``, on the question as asked). Left in, a speaker's name makes every short line of theirs look relevant: "Jon: Agreed!"
    ranked above the line about Paris for "Which cities has Jon visited?", since the note's embedded
    text starts with the name, and BM25 matches every line that greets them."""
    out = question
    for name in speakers:
        out = re.sub(rf"\b{re.escape(name)}(?:'s|’s)?\b", " ", out, flags=re.IGNORECASE)
    out = re.sub(r"\s+", " ", out).strip()
    return out if re.search(r"\w{3,}", out) else question


def _tier2(conn: Any, question: str, embed: Callable, vector: np.ndarray, query: str) -> tuple[list[Hit], dict]:
    anchors = _anchors(conn, question)
    ranked = {"primary": [h.note_id for h in hybrid(conn, query, vector, TOP_K["tier2"])]}
    weights = {"primary": 1.0}
    if anchors:
        for anchor, avec in zip(anchors, embed(anchors), strict=True):
            ranked[f"entity:{anchor}"] = [h.note_id for h in hybrid(conn, anchor, avec, TOP_K["base"])]
            weights[f"entity:{anchor}"] = ENTITY_WEIGHT
    hits, speaker = fused_rank(conn, question, query, vector, with_replies(conn, rrf(ranked, weights=weights)), TOP_K["tier2"])
    return hits, {"anchors": anchors, "speaker": speaker}


def _tier3(conn: Any, tag: str, question: str, embed: Callable, vector: np.ndarray, llm: Any | None,
           query: str) -> tuple[list[Hit], dict]:
    # A count needs every mention, not the best twenty: counting questions search as deep as broad ones.
    k = TOP_K["broad"] if tag == "broad-summarization" or preprocess.is_counting(question) else TOP_K["tier3"]
    hits, info = multi_path(conn, query, vector, 2 * k, llm=llm)  # twice as deep: the ranking may reorder
    if tag == "temporal-reasoning":
        anchors = preprocess.anchors(question)
        if anchors:
            ranked = {"main": [h.note_id for h in hits]}
            for anchor, avec in zip(anchors, embed(anchors), strict=True):
                ranked[f"anchor:{anchor}"] = [h.note_id for h in hybrid(conn, anchor, avec, TOP_K["base"])]
            hits = rrf(ranked)
            info["anchors"] = anchors
    hits, info["speaker"] = fused_rank(conn, question, query, vector, with_replies(conn, hits), k)
    return hits, info


RULES_ADDED = 4  # stored rules that cover a proposal, added to what retrieval found (the newest)
LIFTS_ADDED = 2  # lines lifting a limit, added for a proposal with an amount (the newest); the limit check reads them


def governing_rules(conn: Any, question: str, have: set[int], tag: str | None = None) -> list[Hit]:
    """Notes anywhere in the store with a rule that covers the proposal the question makes (its day,
    month and time inside what the rule speaks to), or a limit on it (:func:`rules.covering_limit`):
    "rule #1 dont book me anything before 9am" for
    "liam wants to leave for castle hill at 8am this saturday, can I do that?", which retrieval,
    led by Liam and Castle Hill, never reached. Rules are few and decide the answer; a question's
    words need not resemble them. The newest :data:`RULES_ADDED`, as hits scored 0. For a question
    naming an amount ("Is 25 kilo ok with my shoulder?"), the newest lines saying a limit no longer
    holds (:func:`rules.lifts_limit`), which the limit check reads after the limit. ``tag``: the
    question's route, which may make it a proposal (:func:`rules.proposes`)."""
    proposal, amount = rules.proposes(question, tag), rules.asks_amount(question)
    if not proposal and not amount:
        return []
    # Who is asked about is no subject a rule shares: "Hey Maria, long time no talk!" rules nothing
    # about "Can Maria go to the shelter on Saturday?".
    asked = content_query(question, notes.speaker_names(conn))
    found = []
    freeing = []  # lines that may free a rule's days, kept from the same scan (see _changed_by)
    lifting = []  # lines saying a limit no longer holds ("no more limits, I can lift what I like again")
    for note_id, text in notes.active_texts(conn):
        if rules.lifts_limit(text) and note_id not in have:
            lifting.append(note_id)
        if note_id in have or not proposal:
            continue
        if rules.may_free(text):
            freeing.append(note_id)
        if rules.covering_limit(asked, text):
            found.append(note_id)
            continue
        if not rules.has_rule_words(text):
            continue
        item = Evidence(note_id, text, "")
        if any(rules.applies(asked, sentence) == "match" for sentence in rules.rule_sentences_of(item)):
            found.append(note_id)
    added = found[-RULES_ADDED:]
    lifted = [i for i in lifting if i not in added][-LIFTS_ADDED:] if amount else []
    return [Hit(note_id, 0.0) for note_id in added + _changed_by(conn, added, [i for i in freeing if i not in added])
            + lifted]


def _changed_by(conn: Any, added: list[int], candidates: list[int]) -> list[int]:
    """Of ``candidates`` (lines holding "… are free"), the later ones of the same speaker that free the
    days of a rule the scan added: a rule seen without the line that changed it ("thursdays are free"
    after "thursday evenings are Kofi's games. i don't miss them") reads as in force."""
    if not added or not candidates:
        return []
    rule_items = [Evidence(n.id, n.content, n.event_time, speaker=n.speaker)
                  for n in (notes.get(conn, i) for i in added) if n is not None]
    if not rule_items:
        return []
    first = min(item.event_time for item in rule_items)
    out: list[int] = []
    for note_id in candidates:
        later = notes.get(conn, note_id)
        if later is None or later.event_time <= first:
            continue
        if any(rules.frees(item, later.content) for item in rule_items if (item.speaker or "") == (later.speaker or "")):
            out.append(note_id)
    return out[-RULES_ADDED:]


def gather(conn: Any, tag: str, question: str, embed: Callable, *, llm: Any | None = None,
           reference: date | None = None, asked_days: Sequence[tuple[date, date]] = ()) -> Gathered:
    """Evidence for ``question`` along ``tag``'s tier, preprocessed and ready for the packer.

    ``reference`` is the day the question is asked: the temporal preprocessing measures "how long
    ago" / "since" questions against it. ``asked_days``: the spans the question's own dates name."""
    tier = TIER[tag]
    if tier == 1:
        return Gathered(tag, 1, suggestion_profile(conn, question, embed))
    query = content_query(question, notes.speaker_names(conn))
    vector = embed([query])[0]
    if tier == 2:
        hits, info = _tier2(conn, question, embed, vector, query)
    else:
        hits, info = _tier3(conn, tag, question, embed, vector, llm, query)
    evidence = to_evidence(conn, hits)
    if tag == "constraint-validation":
        added = governing_rules(conn, question, {h.note_id for h in hits}, tag)
        evidence += to_evidence(conn, added)
        info["rules_added"] = len(added)
    supersedes: dict[int, int] = {}
    if tag in ("conflict-resolution", "constraint-validation", "state-tracking", "temporal-reasoning"):
        current = links.current(conn, [e.note_id for e in evidence])
        supersedes = {old: new for old, new in current.items() if new is not None}
        missing = [new for new in dict.fromkeys(supersedes.values()) if new not in {e.note_id for e in evidence}]
        if missing:  # the newer fact must be in view for the recency filter to prefer it
            evidence += to_evidence(conn, [Hit(n, 0.0) for n in missing])
    similar = None
    # An overview's lines about its subject in other words; the newest line on what a "now" question asks.
    if tag in ("broad-summarization", "state-tracking", "conflict-resolution"):
        similar = {i: float(v @ vector) for i, v in notes.vectors(conn, [e.note_id for e in evidence]).items()}
    prepared = preprocess.prepare(tag, question, evidence, reference=reference, supersedes=supersedes,
                                  asked_days=asked_days, similar=similar)
    pinned = profile_evidence(conn, question, embed=embed, limit=PROFILE_FACTS["other"])
    info["pinned"] = len(pinned)
    return Gathered(tag, tier, pinned + prepared.items(), [h.note_id for h in hits], info, prepared.computed,
                    prepared.direct, prepared.unheld)


def given(conn: Any, tag: str, note_ids: Sequence[int]) -> Gathered:
    """The notes named, in that order, as if retrieval had found them (evaluation's ``--evidence oracle``)."""
    hits = [Hit(int(i), 1.0) for i in note_ids]
    return Gathered(tag, 0, to_evidence(conn, hits), retrieved=[h.note_id for h in hits], info={"evidence": "given"})

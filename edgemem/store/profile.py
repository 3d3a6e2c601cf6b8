"""The Tier-1 profile (MemFlow §3.1 Tier 1): stable preferences, identity facts and behavioural rules.

Key scheme: ``<subject>/<kind>/<attribute>``, each part a lower-case slug ([a-z0-9_]):

- ``subject``: who the fact is about — the speaker of the note it came from ("caroline"), or
  ``user`` for a remembered note without a speaker (the owner of the store);
- ``kind``: ``preference`` | ``identity`` | ``rule``;
- ``attribute``: what the fact is about. Identity attributes are single-valued (``relationship_status``,
  ``job``, ``home_city``); preferences are keyed by the thing liked or disliked (``painting``, ``coffee``)
  so that several can be current at once; rules by what they govern (``meeting_times``).

Example: ``caroline/identity/relationship_status`` = "single". Each key has at most one *current*
row (``valid_to`` NULL). A different value for the same key closes the previous row at the new
row's ``valid_from`` (the event time of the note that stated it) and becomes current; both are kept,
with their source notes in ``profile_sources``. A value arriving out of order (an older note
processed later) is slotted into the history and does not displace the newer current value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from edgemem.store.db import now

KINDS = ("preference", "identity", "rule")
DEFAULT_SUBJECT = "user"
_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str, limit: int = 48) -> str:
    """Lower-case ``[a-z0-9_]`` form of ``text`` ('' when nothing is left)."""
    return _SLUG.sub("_", text.lower()).strip("_")[:limit].strip("_")


def subject_of(speaker: str | None) -> str:
    """The profile subject for a note's speaker: its slug, or ``user`` when there is none."""
    return slug(speaker or "") or DEFAULT_SUBJECT


def make_key(subject: str, kind: str, attribute: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown profile kind {kind!r}")
    parts = (slug(subject) or DEFAULT_SUBJECT, kind, slug(attribute))
    if not parts[2]:
        raise ValueError(f"empty profile attribute {attribute!r}")
    return "/".join(parts)


# A fact is a thing said of someone: "no meetings before 10am", "loves painting", "home_city: Lyon".
# The 1.5B model's extraction also files bare words ("halina — Kuba (identity)", "margaux — wooden chess
# clock", "shona — socks (preference)"): a name, a place or an object with no attribute and no word
# saying how it stands to the person. Pinned beside the notes, such fragments were answered from ("a
# wooden chess clock" for a grandmother who gardens). A fragment: at most two words, all of them its
# own key (so no attribute was named), none saying a stance (no, never, only, max, allergic, loves ...).
_STANCE = re.compile(
    r"\b(?:no|not|never|none|only|max|maximum|min|minimum|under|over|before|after|always|avoid\w*|allerg\w*|"
    r"intoleran\w*|vegan|vegetarian|pescatarian|teetotal|sober|love[sd]?|like[sd]?|hate[sd]?|prefer\w*|dislike[sd]?|"
    r"can['’]?t|cannot|don['’]?t|won['’]?t|free|sacred)\b",
    re.IGNORECASE,
)


def fragment(attribute: str, value: str) -> bool:
    """A fact that says nothing of its subject (see above): "Kuba" filed as kuba, "socks" as socks;
    not "RA job" as job (an attribute named), "lactose intolerant", "no cats", "true crime podcasts"."""
    if _STANCE.search(value):
        return False
    words = [w for w in _SLUG.split(value.lower()) if len(w) > 1]
    if len([w for w in words if len(w) > 2]) > 2:
        return False
    key = set(_SLUG.split(attribute.lower()))
    return all(w in key for w in words)


def split_key(key: str) -> tuple[str, str, str]:
    subject, kind, attribute = key.split("/", 2)
    return subject, kind, attribute


@dataclass
class ProfileFact:
    id: int
    key: str
    value: str
    kind: str
    valid_from: str
    valid_to: str | None
    created_at: str
    sources: list[int] = field(default_factory=list)

    @property
    def subject(self) -> str:
        return split_key(self.key)[0]

    @property
    def attribute(self) -> str:
        return split_key(self.key)[2]

    @property
    def is_current(self) -> bool:
        return self.valid_to is None


@dataclass(frozen=True)
class Upserted:
    """What :func:`upsert` did: ``new`` key, ``same`` value confirmed, ``superseded`` the current value,
    or ``historical`` (an out-of-order older value slotted before the current one)."""

    action: str
    fact_id: int
    previous: ProfileFact | None = None


_SELECT = """
SELECT p.*, (SELECT group_concat(note_id) FROM profile_sources s WHERE s.profile_id = p.id) AS source_list
FROM profile p
"""


def _fact(row: Any) -> ProfileFact:
    src = row["source_list"]
    return ProfileFact(
        row["id"], row["key"], row["value"], row["kind"], row["valid_from"], row["valid_to"], row["created_at"],
        sorted(int(x) for x in src.split(",")) if src else [],
    )


def _same(a: str, b: str) -> bool:
    # The model sometimes echoes the key as the value ("loves_flowers" for "loves flowers").
    return " ".join(a.replace("_", " ").casefold().split()) == " ".join(b.replace("_", " ").casefold().split())


def history(conn: Any, key: str) -> list[ProfileFact]:
    """Every value the key has had, oldest first."""
    return [_fact(r) for r in conn.execute(_SELECT + " WHERE p.key = ? ORDER BY p.valid_from, p.id", (key,))]


def current(conn: Any, subject: str | None = None) -> list[ProfileFact]:
    """Current facts (``valid_to`` NULL), of one subject or of all, ordered by key."""
    if subject is None:
        rows = conn.execute(_SELECT + " WHERE p.valid_to IS NULL ORDER BY p.key")
    else:
        rows = conn.execute(_SELECT + " WHERE p.valid_to IS NULL AND p.key LIKE ? ESCAPE '\\' ORDER BY p.key",
                            (slug(subject).replace("_", "\\_") + "/%",))
    return [_fact(r) for r in rows]


def all_facts(conn: Any) -> list[ProfileFact]:
    """Every fact, current and superseded, each key's history oldest first (``edgemem profile``)."""
    return [_fact(r) for r in conn.execute(_SELECT + " ORDER BY p.key, p.valid_from, p.id")]


def get(conn: Any, fact_id: int) -> ProfileFact | None:
    row = conn.execute(_SELECT + " WHERE p.id = ?", (fact_id,)).fetchone()
    return _fact(row) if row else None


def subjects(conn: Any) -> list[str]:
    rows = conn.execute("SELECT DISTINCT substr(key, 1, instr(key, '/') - 1) FROM profile WHERE valid_to IS NULL ORDER BY 1")
    return [r[0] for r in rows]


def add_source(conn: Any, fact_id: int, note_id: int) -> None:
    conn.execute("INSERT OR IGNORE INTO profile_sources(profile_id, note_id) VALUES (?, ?)", (fact_id, note_id))


def upsert(conn: Any, key: str, value: str, *, valid_from: str, note_id: int) -> Upserted:
    """Record that ``key`` had ``value`` from ``valid_from`` on, as stated by note ``note_id``."""
    subject, kind, attribute = split_key(key)
    if kind not in KINDS or not subject or not attribute:
        raise ValueError(f"malformed profile key {key!r}")
    rows = history(conn, key)
    before = [r for r in rows if r.valid_from <= valid_from]
    after = [r for r in rows if r.valid_from > valid_from]
    pred = before[-1] if before else None
    succ = after[0] if after else None
    if pred is not None and _same(pred.value, value):
        add_source(conn, pred.id, note_id)
        return Upserted("same", pred.id, pred)
    if succ is not None and _same(succ.value, value):  # an earlier mention of a later value: it held since then
        conn.execute("UPDATE profile SET valid_from = ? WHERE id = ?", (valid_from, succ.id))
        if pred is not None and (pred.valid_to is None or pred.valid_to > valid_from):
            conn.execute("UPDATE profile SET valid_to = ? WHERE id = ?", (valid_from, pred.id))
        add_source(conn, succ.id, note_id)
        return Upserted("same", succ.id, pred)
    cur = conn.execute(
        "INSERT INTO profile(key, value, kind, valid_from, valid_to, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (key, value, kind, valid_from, succ.valid_from if succ else None, now()),
    )
    fact_id = cur.lastrowid
    add_source(conn, fact_id, note_id)
    if pred is not None and (pred.valid_to is None or pred.valid_to > valid_from):
        conn.execute("UPDATE profile SET valid_to = ? WHERE id = ?", (valid_from, pred.id))
    if pred is None and succ is None:
        return Upserted("new", fact_id)
    return Upserted("historical" if succ is not None else "superseded", fact_id, pred)


def heal(conn: Any, key: str) -> None:
    """Re-derive a key's validity chain from its rows (each valid until the next one's ``valid_from``).

    For callers that delete profile rows (forget): when the current value goes, the value it
    superseded becomes current again instead of the key being left with no current value.
    """
    rows = history(conn, key)
    for row, nxt in zip(rows, [*rows[1:], None], strict=True):
        valid_to = nxt.valid_from if nxt is not None else None
        if row.valid_to != valid_to:
            conn.execute("UPDATE profile SET valid_to = ? WHERE id = ?", (valid_to, row.id))

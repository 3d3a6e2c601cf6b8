"""The write path's organising steps in order, and the extra job kinds they enqueue.

Order matters (DESIGN "Write path" 3-7):
1. gate — keeps the new note (the worker inserted it) or merges it into an existing one, so it
   must come first: the later steps organise the survivor;
2. clusters — routes the note (skips a merged note, which keeps its survivor's cluster);
3. keywords — the MemFly keyword index, read by evolution's rarity test;
4. evolve — CLAG localized evolution inside the routed cluster;
5. profile — MemFlow Tier-1 facts, sourced from the note.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edgemem.ingest import clusters, topics
from edgemem.ingest.evolve import EvolveStep
from edgemem.ingest.gate import GateStep
from edgemem.ingest.profile import ProfileStep
from edgemem.ingest.worker import WriteStep


def default_steps(profile_filter: float | None = None) -> list[WriteStep]:
    """``profile_filter``: the setting of that name (None: the profile filter's fitted default)."""
    profile = ProfileStep() if profile_filter is None else ProfileStep(threshold=profile_filter)
    return [GateStep(), clusters.ClusterStep(), topics.KeywordStep(), EvolveStep(), profile]


def extra_handlers() -> dict[str, Callable[..., Callable[[Any], None]]]:
    """Job kinds besides "note": cluster_init, cluster_profile, cluster_split, topics."""
    return {**clusters.extra_handlers(), **topics.extra_handlers()}

"""``edgemem profile``: the compiled Tier-1 profile through the daemon and with ``--local``, for people
(aligned rows with validity dates, current and superseded values told apart) and as JSON."""

from __future__ import annotations

import json

from daemon_util import cli

from edgemem.engine import Engine
from edgemem.runtime.fake import ScriptedLLM
from edgemem.store import profile as profile_store


def add_facts(engine: Engine) -> list[int]:
    """Three notes and the profile facts they stated: a job that changed, and a preference.

    The facts are written with the store's own upsert (the model that extracts them is not under
    test here; tests/ingest/test_profile.py covers that step)."""
    said = [("I work at the bakery on Elm Street.", "2022-01-10T09:00:00"),
            ("I started as a nurse at St Mary's today.", "2023-05-08T08:30:00"),
            ("I love orchids, the white ones most.", "2023-06-01T19:15:00")]
    ids = [engine.remember(text, when=when, process=True)["notes"][0] for text, when in said]
    with engine.store.transaction() as conn:
        profile_store.upsert(conn, "user/identity/job", "baker", valid_from=said[0][1], note_id=ids[0])
        profile_store.upsert(conn, "user/identity/job", "nurse", valid_from=said[1][1], note_id=ids[1])
        profile_store.upsert(conn, "user/preference/orchids", "loves white orchids", valid_from=said[2][1], note_id=ids[2])
    return ids


def expected_text(ids: list[int]) -> str:
    return "\n".join([
        "STATE       KIND        KEY                      VALUE                FROM        TO          NOTES",
        f"superseded  identity    user/identity/job        baker                2022-01-10  2023-05-08  {ids[0]}",
        f"current     identity    user/identity/job        nurse                2023-05-08  -           {ids[1]}",
        f"current     preference  user/preference/orchids  loves white orchids  2023-06-01  -           {ids[2]}",
        "2 current, 1 superseded",
    ]) + "\n"


def check_json(out: str, ids: list[int]) -> None:
    result = json.loads(out)
    assert (result["current"], result["superseded"]) == (2, 1)
    job_then, job_now, orchids = result["facts"]
    assert job_then == {"id": job_then["id"], "key": "user/identity/job", "subject": "user", "kind": "identity",
                        "attribute": "job", "value": "baker", "valid_from": "2022-01-10T09:00:00",
                        "valid_to": "2023-05-08T08:30:00", "current": False, "sources": [ids[0]]}
    assert (job_now["value"], job_now["valid_to"], job_now["current"], job_now["sources"]) == ("nurse", None, True, [ids[1]])
    assert (orchids["kind"], orchids["valid_from"], orchids["current"]) == ("preference", "2023-06-01T19:15:00", True)


def test_profile_through_the_daemon(settings, served, engine) -> None:
    code, out = cli("profile")
    assert (code, out) == (0, "the profile is empty: facts are compiled from your notes as the daemon organises them\n")
    ids = add_facts(engine)
    code, out = cli("profile")
    assert code == 0 and out == expected_text(ids)
    code, out = cli("--json", "profile")
    assert code == 0
    check_json(out, ids)


def test_profile_with_local(settings, embedder) -> None:
    with Engine.open(settings, llm=ScriptedLLM(default="no"), embedder=embedder) as engine:
        ids = add_facts(engine)
    assert not settings.socket.exists()
    code, out = cli("--local", "profile")
    assert code == 0 and out == expected_text(ids)
    code, out = cli("--local", "--json", "profile")
    assert code == 0
    check_json(out, ids)


def test_profile_without_a_daemon_exits_6(settings) -> None:
    code, message = cli("profile")
    assert code == 6 and "edgemem serve" in message and "--local" in message

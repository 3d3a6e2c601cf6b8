"""The date battery: well-formed, split in two, and read by the resolver at the level measured."""

from __future__ import annotations

import json
from collections import Counter

from edgemem.eval import date_battery


def test_the_battery_is_well_formed_and_split_in_two() -> None:
    items = [json.loads(line) for line in date_battery.BATTERY.read_text(encoding="utf-8").splitlines()]
    assert len(items) == 380 and len({i["id"] for i in items}) == 380
    for item in items:
        cursor = 0
        for expected in item["expected"]:
            cursor = item["text"].index(expected["phrase"], cursor) + 1  # verbatim, in reading order
            assert expected["start"] <= expected["end"]
    sides = Counter(date_battery.split_of(i["id"]) for i in items)
    assert sides == {"tune": 180, "check": 200}
    assert sum(not i["expected"] for i in items) == 42  # messages whose date-like words are no dates


def test_the_resolver_reads_most_of_the_check_half() -> None:
    # Measured on 5 December 2026: 210 of 265 check phrases (79.2%), 6 extras; before the texted
    # forms, British relatives, numeric dates and weekday-of-the-month holidays, 158 (59.6%).
    check = date_battery.score("check")
    assert check.phrases == 265
    assert check.right >= 205 and check.extra <= 8


def test_the_command_prints_the_score(capsys) -> None:
    assert date_battery.main(["--split", "tune"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("tune: phrases ") and "/237 (" in first

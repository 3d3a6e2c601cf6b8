"""Prompt templates as files, filled by a pure function that refuses a missing variable.

Templates use ``{name}`` placeholders (``str.format`` syntax; literal braces are doubled). Keeping
the static instructions first and the variable parts last lets llama.cpp reuse the cached prefix.
"""

from __future__ import annotations

import string
from functools import cache
from importlib import resources


@cache
def template(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")


def fields(name: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template(name)) if f}


def render(name: str, **values: object) -> str:
    """Fill template ``name``; a missing or unexpected variable is a programming error."""
    wanted = fields(name)
    missing = wanted - values.keys()
    extra = values.keys() - wanted
    if missing or extra:
        raise KeyError(f"prompt {name}: missing {sorted(missing)}, unexpected {sorted(extra)}")
    return template(name).format(**values)

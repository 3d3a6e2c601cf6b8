"""How results look to people: aligned fields, the `why` timeline, tables. ``--json`` skips all of this.

Pure functions from the plain data that the daemon and ``--local`` both return to text. They render
what they are given, keys they do not know included (a new ``status`` field shows up without a change
here), and follow naming conventions rather than a list of fields: ``*_bytes`` is a size, ``*_ms`` and
``*_s`` are durations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

INDENT = "  "


def size(n: int | float) -> str:
    """1536 -> '1.5 KiB': binary units, as the limits in the configuration table are written."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            if unit == "bytes":
                return f"{int(value)} bytes"
            return f"{value:.1f} {unit}".replace(".0 ", " ")
        value /= 1024
    raise AssertionError("unreachable")


def scalar(key: str, value: Any) -> str:
    """One value on one line, read by its key's suffix where that says what it is."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if key.endswith("_bytes") or key == "bytes":
            return size(value)
        if key.endswith("_ms") or key == "ms":
            return f"{value:g} ms"
        if key.endswith("_s"):
            return f"{value:g} s"
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {scalar(str(k), v)}" for k, v in value.items()) or "-"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ", ".join(scalar(key, v) for v in value) or "-"
    return " ".join(str(value).split())  # one line, whatever the value holds


def _flat(value: Any) -> bool:
    """A value that fits on its key's line: not a non-empty mapping or a list holding mappings."""
    if isinstance(value, Mapping):
        return not value
    if isinstance(value, Sequence) and not isinstance(value, str):
        return not any(isinstance(v, (Mapping, list, tuple)) for v in value)
    return True


def fields(data: Mapping[str, Any], depth: int = 0, width: int | None = None) -> list[str]:
    """Aligned ``key  value`` lines; a nested mapping gets its key alone, then its fields indented."""
    pad = INDENT * depth
    if width is None:
        width = max((len(str(k)) for k, v in data.items() if _flat(v)), default=0)
    lines: list[str] = []
    for key, value in data.items():
        key = str(key)
        if _flat(value):
            lines.append(f"{pad}{key:<{width}}  {scalar(key, value)}".rstrip())
        elif isinstance(value, Mapping):
            lines.append(f"{pad}{key}")
            lines += fields(value, depth + 1)
        else:  # a list of mappings (or of lists): one item per line
            lines.append(f"{pad}{key}")
            lines += [f"{pad}{INDENT}- {scalar(key, item)}" for item in value]
    return lines


def fields_text(data: Mapping[str, Any]) -> str:
    return "\n".join(fields(data))


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Columns padded to their widest cell, the header first; the last column is not padded."""
    cells = [[str(c) for c in header]] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in cells).rstrip()


# -- `edgemem why` --------------------------------------------------------------------------------
def _stage_detail(name: str, stage: Mapping[str, Any]) -> str:
    """What a read-path stage did, besides its time (recall.pipeline writes these keys)."""
    parts: list[str] = []
    rest = {k: v for k, v in stage.items() if k != "ms"}
    if name.startswith("answer"):
        parts.append(f"{rest.pop('prompt_tokens', 0)} prompt + {rest.pop('completion_tokens', 0)} generated tokens")
        calls = rest.pop("tool_calls", None)
        if calls:
            parts.append(f"{len(calls) if isinstance(calls, list) else calls} tool call(s)")
    elif name.startswith("validate"):
        grounded = rest.pop("grounded", None)
        parts.append(f"{rest.pop('stage', '?')}: {'grounded' if grounded else 'not grounded'}")
    elif name.startswith("retrieve") and "tier" in rest:
        parts.append(f"tier {rest.pop('tier')}")
    if "tokens" in rest:
        parts.append(f"{rest.pop('tokens')} tokens")
    for key, value in rest.items():  # anything else the stage recorded
        label = key.removesuffix("_ms")  # "prefill 12 ms", not "prefill_ms 12 ms"
        if isinstance(value, Mapping):
            parts.append(f"{key} ({scalar(key, value)})" if _flat(list(value.values())) else f"{key} ({len(value)})")
        elif isinstance(value, (list, tuple)):
            parts.append(f"{key} {len(value)}")
        else:
            parts.append(f"{label} {scalar(key, value)}")
    return ", ".join(parts)


def _verdict(data: Mapping[str, Any]) -> str:
    if data.get("cancelled"):
        return (f"cancelled by the client during {data.get('cancelled_at', '?')}, after "
                f"{data.get('completion_tokens', 0)} generated token(s)")
    verdict = data.get("verdict")
    if verdict is None:
        return "-"
    if verdict == "abstain":
        return "abstained: no answer passed the validator (\"I could not find reliable information.\")"
    if verdict == "suggested":
        return "a suggestion in the model's words from your lines: no answer passed the validator"
    how = "after one escalation" if data.get("escalated") else "first try"
    return f"grounded ({verdict}), {how}"


def why_text(trace: Mapping[str, Any]) -> str:
    """A short timeline of one answer: route and deciding layer, notes found, tokens, ms per stage, verdict."""
    data: Mapping[str, Any] = trace.get("data") or {}
    head: dict[str, Any] = {"query": f"{trace.get('id', '?')}  ({trace.get('created_at', '?')})",
                            "question": trace.get("question")}
    layer = data.get("route_layer", trace.get("route_layer"))
    if layer == "active-context":
        head["route"] = "answered from the session's recent turns (active context): no retrieval, no model call"
    else:
        head["route"] = f"{data.get('route_tag') or trace.get('route_tag') or '?'}, decided by the {layer or '?'} layer"
        head["tier"] = data.get("tier", trace.get("tier"))
        retrieved, used = data.get("retrieved") or [], data.get("used") or []
        if data.get("cancelled") and not retrieved:  # a cancelled trace keeps counts, not ids
            head["notes"] = f"{data.get('notes_found', 0)} found, {data.get('notes_packed', 0)} packed"
        else:
            head["notes"] = (f"{len(retrieved)} retrieved, {len(used)} used"
                             + (f" (note{'s' if len(used) > 1 else ''} {', '.join(map(str, used))})" if used else ""))
        head["tokens"] = (f"{data.get('packed_tokens', 0)} packed for the answer, "
                          f"{data.get('pipeline_tokens', 0)} model tokens in all")
    tail: dict[str, Any] = {"verdict": _verdict(data) if layer != "active-context" else "-"}
    if "total_ms" in data:
        tail["total"] = f"{data['total_ms']:g} ms"
    tail["answer"] = trace.get("answer")
    width = max(len(k) for k in [*head, *tail])
    lines = fields(head, width=width)
    stages: Mapping[str, Mapping[str, Any]] = data.get("stages") or {}
    if stages:
        lines.append("timeline")
        name_width = max(len(n) for n in stages)
        ms_width = max(len(f"{s.get('ms', 0):g}") for s in stages.values())
        escalation = data.get("escalated_to")
        for name, stage in stages.items():
            if escalation and name.endswith("1"):  # the first stage of the second attempt
                lines.append(f"{INDENT}escalated to {escalation}")
                escalation = None
            ms = f"{stage.get('ms', 0):g}".rjust(ms_width)
            lines.append(f"{INDENT}{name:<{name_width}}  {ms} ms  {_stage_detail(name, stage)}".rstrip())
    lines += fields(tail, width=width)
    return "\n".join(lines)

"""Validate model replies against the JSON-schema subset edgemem's prompts use (Principle 3).

llama.cpp's grammar constrains decoding, but a schema it cannot convert is silently accepted as any
JSON (ENVIRONMENT.md), so every reply is checked here too. Supported: type, properties, required,
additionalProperties false, enum, items, minItems, maxItems, minimum, maximum, minLength, maxLength.
"""

from __future__ import annotations

from typing import Any

from edgemem.errors import SchemaError

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def validate(value: Any, schema: dict, path: str = "$") -> Any:
    """Return ``value`` if it satisfies ``schema``; raise SchemaError naming the first violation."""
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        ok = any(isinstance(value, _TYPES[k]) and not (k in ("integer", "number") and isinstance(value, bool)) for k in kinds)
        if not ok:
            raise SchemaError(f"{path}: expected {kind}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                raise SchemaError(f"{path}: missing {name!r}")
        if schema.get("additionalProperties") is False:
            extra = set(value) - set(props)
            if extra:
                raise SchemaError(f"{path}: unexpected {sorted(extra)}")
        for name, sub in props.items():
            if name in value:
                validate(value[name], sub, f"{path}.{name}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            raise SchemaError(f"{path}: {len(value)} items outside [{schema.get('minItems', 0)}, {schema.get('maxItems', '∞')}]")
        if "items" in schema:
            for i, item in enumerate(value):
                validate(item, schema["items"], f"{path}[{i}]")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
            raise SchemaError(f"{path}: string length {len(value)} out of range")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaError(f"{path}: {value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaError(f"{path}: {value} > {schema['maximum']}")
    return value

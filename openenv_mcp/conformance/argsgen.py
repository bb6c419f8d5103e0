"""Seeded, bounded tool arguments generated from a tool's JSON Schema.

Used when an environment has no scripted trajectories: the conformance rules
call every tool with arguments that satisfy its ``inputSchema`` (property-based
style, but reproducible from the seed), and with arguments that violate it.
Sizes are bounded (short strings, small arrays, shallow nesting).
"""

from __future__ import annotations

import random
from typing import Any

import jsonschema
import jsonschema.validators
from mcp.types import Tool

from ..types import CallTool

__all__ = ["generate_arguments", "generate_calls", "generate_value", "nonce_words", "violations"]

_WORDS = ["alpha", "beta", "notes.txt", "hello world", "x", "42", "data", "a/b", "Zeta", ""]
_MAX_DEPTH = 4


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 10:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return {}
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, dict) else {}
        schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
    return schema


def generate_value(
    schema: Any, rng: random.Random, root: dict[str, Any] | None = None, depth: int = 0, words: list[str] | None = None
) -> Any:
    """One value valid for ``schema`` (best effort; bounded size). Strings come from ``words``."""
    root = root if root is not None else (schema if isinstance(schema, dict) else {})
    schema = _resolve(schema, root)
    if schema is True or not isinstance(schema, dict) or not schema:
        return rng.choice(["any", 1, True])
    if "const" in schema:
        return schema["const"]
    if "enum" in schema and schema["enum"]:
        return rng.choice(schema["enum"])
    if "default" in schema and rng.random() < 0.3:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = [o for o in schema[key] if not (isinstance(o, dict) and o.get("type") == "null")]
            return generate_value(rng.choice(options or schema[key]), rng, root, depth + 1, words)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        return generate_value(merged, rng, root, depth + 1, words)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        kind = rng.choice(kinds)
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "string":
        lo, hi = int(schema.get("minLength", 0)), int(schema.get("maxLength", 24))
        word = rng.choice(words or _WORDS)
        while len(word) < lo:
            word += rng.choice("abcdefgh")
        return word[: max(hi, lo)]
    if kind in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -5))
        hi = schema.get("maximum", schema.get("exclusiveMaximum", 100))
        lo, hi = (
            int(lo) + (1 if "exclusiveMinimum" in schema else 0),
            int(hi) - (1 if "exclusiveMaximum" in schema else 0),
        )
        hi = max(lo, min(hi, lo + 1000))
        value = rng.randint(lo, hi)
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            value -= value % step
        return value if kind == "integer" else float(value)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "array":
        lo, hi = int(schema.get("minItems", 0)), int(schema.get("maxItems", 3))
        n = rng.randint(lo, max(lo, min(hi, lo + 3))) if depth < _MAX_DEPTH else lo
        items = schema.get("items", {})
        return [generate_value(items, rng, root, depth + 1, words) for _ in range(n)]
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {}) or {}
        required = set(schema.get("required", []) or [])
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or (depth < _MAX_DEPTH and rng.random() < 0.5):
                out[name] = generate_value(sub, rng, root, depth + 1, words)
        for name in required - set(out):
            out[name] = "x"
        return out
    return None


def _valid(schema: dict[str, Any], value: Any) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        return cls(schema).is_valid(value)
    except Exception:
        return False


def generate_arguments(tool: Tool, rng: random.Random, words: list[str] | None = None) -> dict[str, Any]:
    """Arguments valid for ``tool.inputSchema``; falls back to ``{}``."""
    schema = tool.input_schema or {}
    for _ in range(5):
        value = generate_value(schema, rng, words=words)
        if isinstance(value, dict) and _valid(schema, value):
            return value
    return {}


def generate_calls(tools: list[Tool], seed: int, count: int, words: list[str] | None = None) -> list[CallTool]:
    """``count`` seeded calls: every tool at least once (sorted by name), then random ones.

    ``words``: the strings to draw from. A small vocabulary unique to one
    experiment (see :func:`nonce_words`) makes reads and writes hit the same
    keys, and makes anything an earlier episode left behind recognisable.
    """
    rng = random.Random(seed)
    ordered = sorted(tools, key=lambda t: t.name)
    calls = [CallTool(name=t.name, arguments=generate_arguments(t, rng, words)) for t in ordered]
    while ordered and len(calls) < count:
        tool = rng.choice(ordered)
        calls.append(CallTool(name=tool.name, arguments=generate_arguments(tool, rng, words)))
    return calls[: max(count, len(ordered))]


def nonce_words() -> list[str]:
    """Two strings no earlier episode can have used (e.g. ``k-3fa2c1``, ``v-3fa2c1``)."""
    import secrets

    nonce = secrets.token_hex(3)
    return [f"k-{nonce}", f"v-{nonce}"]


def violations(tool: Tool) -> list[tuple[str, dict[str, Any]]]:
    """Argument objects that violate ``tool.inputSchema``: (what is wrong, arguments).

    A missing required property, and a property given a value of the wrong type
    (an object where a scalar is expected, a string where an object/array is).
    Empty when the schema accepts anything.
    """
    schema = tool.input_schema or {}
    props: dict[str, Any] = schema.get("properties", {}) or {}
    required = [r for r in schema.get("required", []) or [] if isinstance(r, str)]
    out: list[tuple[str, dict[str, Any]]] = []
    rng = random.Random(0)
    valid = generate_arguments(tool, rng)
    if required:
        args = {k: v for k, v in valid.items() if k != required[0]}
        if not _valid(schema, args):
            out.append((f"required property {required[0]!r} missing", args))
    for name, sub in props.items():
        sub = _resolve(sub, schema)
        kind = sub.get("type") if isinstance(sub, dict) else None
        if kind is None:
            continue
        wrong: Any = {"conformance": True} if kind not in ("object",) else "not an object"
        args = {**valid, name: wrong}
        if not _valid(schema, args):
            out.append((f"property {name!r} given {type(wrong).__name__} instead of {kind}", args))
            break
    return out

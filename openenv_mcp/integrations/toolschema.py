"""MCP tool schemas as Python signatures, and the normal form both are compared in.

Trainers that take Python callables as tools (TRL, through transformers'
``get_json_schema``) derive each tool's JSON schema from the function's type
annotations, signature defaults and Google-style docstring. This module turns
an MCP tool (``name``, ``description``, ``inputSchema``) into exactly those
three things, and defines the *normal form* in which a tool's ``inputSchema``
and a derived schema are compared:

* types: each property's set of accepted JSON types, ``null`` included
  (``anyOf: [X, {type: null}]``, ``type: [X, "null"]`` and ``nullable: true``
  are the same thing), with array ``items``, object value schemas and ``enum``
  / ``const`` values, recursively; local ``$ref`` are inlined;
* ``required``, as a set;
* descriptions (tool and parameters), whitespace runs collapsed to one space
  (TRL joins a parameter description's lines) and a missing one read as ``""``;
* defaults: the schema's ``default`` against the Python signature's default.

Validation keywords (``minimum``, ``maximum``, ``pattern``, ``minLength``,
``format``...) and ``title`` are not part of the normal form: a Python
annotation cannot carry them and TRL does not render them. The environment
still enforces them: a call that breaks one comes back as an error result the
model reads.

What cannot be expressed (a nested object with its own properties, ``allOf``,
tuples, recursive ``$ref``, a parameter name that is not a Python identifier,
more than one parameter without a description...) raises :class:`Unsupported`
with the reason.
"""

from __future__ import annotations

import json
import keyword
import re
from typing import Any, Literal, Optional, Union

__all__ = ["NO_DEFAULT", "Unsupported", "collapse", "normal_form", "python_type"]

_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}
_IGNORED = {
    "title",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "examples",
    "default",
    "description",
    "$schema",
    "$id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
    "$defs",
    "definitions",
}
_UNSUPPORTED_KEYS = {
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "prefixItems",
    "patternProperties",
    "dependentSchemas",
    "dependentRequired",
    "propertyNames",
    "contains",
    "unevaluatedProperties",
    "unevaluatedItems",
}


class Unsupported(ValueError):
    """A schema (or part of one) that a Python signature cannot express; ``str()`` says why."""


class _NoDefault:
    def __repr__(self) -> str:
        return "<no default: omitted from the call>"


NO_DEFAULT: Any = _NoDefault()
"""Signature default of an optional parameter whose schema gives no ``default``:
the argument is simply left out of the call when the model does not give it."""


def collapse(text: str | None) -> str:
    """A description in normal form: whitespace runs collapsed to one space, stripped."""
    return re.sub(r"\s+", " ", text or "").strip()


def _resolve(schema: Any, root: dict[str, Any], seen: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        if ref in seen:
            raise Unsupported(f"recursive $ref {ref!r}")
        match = re.fullmatch(r"#/(\$defs|definitions)/([^/]+)", str(ref))
        if match is None or match.group(2) not in root.get(match.group(1), {}):
            raise Unsupported(f"$ref {ref!r} is not a local definition")
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema, seen = {**root[match.group(1)][match.group(2)], **rest}, (*seen, ref)
    return schema, seen


def _alternatives(schema: Any, root: dict[str, Any], seen: tuple[str, ...] = ()) -> list[dict[str, Any]] | None:
    """The normal form of one schema: a sorted list of alternatives, or ``None`` for "anything"."""
    if schema is True or schema == {}:
        return None
    if not isinstance(schema, dict):
        raise Unsupported(f"schema {schema!r} is not an object")
    schema, seen = _resolve(schema, root, seen)
    bad = sorted(_UNSUPPORTED_KEYS & schema.keys())
    if bad:
        raise Unsupported(f"uses {', '.join(bad)}")
    union = schema.get("anyOf", schema.get("oneOf"))
    if union is not None:
        alts = _union_alternatives(union, root, seen)
        if alts is None:
            return None
    elif "enum" in schema or "const" in schema:
        alts = _enum_alternatives(schema["enum"] if "enum" in schema else [schema["const"]])
    elif "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        alts = [_typed_alternative(kind, schema, root, seen) for kind in types]
    else:
        leftover = set(schema) - _IGNORED - {"nullable", "additionalProperties", "properties", "required"}
        if leftover:
            raise Unsupported(f"cannot read schema keywords {sorted(leftover)}")
        return None
    if schema.get("nullable") is True:
        alts.append({"type": "null"})
    unique = {json.dumps(a, sort_keys=True): a for a in alts}
    return [unique[k] for k in sorted(unique)]


def _union_alternatives(union: Any, root: dict[str, Any], seen: tuple[str, ...]) -> list[dict[str, Any]] | None:
    """The members' alternatives of an ``anyOf``/``oneOf``, together; ``None`` when a member accepts anything."""
    alts: list[dict[str, Any]] = []
    for member in union:
        sub = _alternatives(member, root, seen)
        if sub is None:
            return None
        alts.extend(sub)
    return alts


def _enum_alternatives(values: list[Any]) -> list[dict[str, Any]]:
    """One alternative per JSON type of an ``enum``'s (or a ``const``'s) values, each listing its values sorted."""
    by_type: dict[str, list[Any]] = {}
    for value in values:
        kind = _json_type(value)
        if kind not in _JSON_TYPES:
            raise Unsupported(f"enum value {value!r} is not a JSON scalar")
        by_type.setdefault(kind, []).append(value)
    return [{"type": kind, "enum": sorted(vals, key=json.dumps)} for kind, vals in by_type.items()]


def _typed_alternative(
    kind: str, schema: dict[str, Any], root: dict[str, Any], seen: tuple[str, ...]
) -> dict[str, Any]:
    """The alternative for one ``type`` of ``schema``: an array's items, a map's values (never a nested
    object's own properties)."""
    alt: dict[str, Any] = {"type": kind}
    if kind == "array":
        items = _alternatives(schema.get("items", {}), root, seen)
        if items is not None:
            alt["items"] = items
    elif kind == "object":
        if schema.get("properties"):
            raise Unsupported("a nested object with its own properties")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            values_alts = _alternatives(extra, root, seen)
            if values_alts is not None:
                alt["values"] = values_alts
    elif kind not in _JSON_TYPES:
        raise Unsupported(f"unknown JSON type {kind!r}")
    return alt


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def normal_form(
    description: str | None, input_schema: dict[str, Any], defaults: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The normal form of a tool: its description and, per parameter, type, description and default.

    ``defaults`` (a derived schema's side) gives each parameter's default; by
    default they are read from the schema's own ``default`` keys.
    """
    props = input_schema.get("properties") or {}
    out_props: dict[str, Any] = {}
    for name, prop in props.items():
        resolved, _ = _resolve(prop, input_schema, ()) if isinstance(prop, dict) else (prop, ())
        entry: dict[str, Any] = {
            "type": _alternatives(prop, input_schema),
            "description": collapse(resolved.get("description") if isinstance(resolved, dict) else None),
        }
        if defaults is None:
            if isinstance(resolved, dict) and "default" in resolved:
                entry["default"] = resolved["default"]
        elif defaults.get(name, NO_DEFAULT) is not NO_DEFAULT:
            entry["default"] = defaults[name]
        out_props[name] = entry
    return {
        "description": collapse(description),
        "properties": out_props,
        "required": sorted(input_schema.get("required") or []),
    }


def python_type(schema: Any, root: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """The annotation whose JSON schema (as transformers derives it) has the normal form of ``schema``."""
    alts = _alternatives(schema, root, seen)
    if alts is None:
        return Any
    hints: list[Any] = []
    for alt in alts:
        kind = alt["type"]
        if "enum" in alt:
            hints.append(Literal[tuple(alt["enum"])])
        elif kind == "array":
            hints.append(list[_from_alts(alt["items"])] if "items" in alt else list)
        elif kind == "object":
            hints.append(dict[str, _from_alts(alt["values"])] if "values" in alt else dict)
        else:
            hints.append(_JSON_TYPES[kind])
    return _union(hints)


def _from_alts(alts: list[dict[str, Any]]) -> Any:
    return python_type({"anyOf": alts}, {})


def _union(hints: list[Any]) -> Any:
    if len(hints) == 1:
        return hints[0]
    non_null = [h for h in hints if h is not type(None)]
    hint = Union[tuple(non_null)] if len(non_null) > 1 else non_null[0]  # noqa: UP007
    return Optional[hint] if len(non_null) < len(hints) else hint  # noqa: UP045


def check_parameter_name(name: str) -> None:
    """Raise :class:`Unsupported` unless ``name`` can be a Python parameter."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise Unsupported(f"parameter name {name!r} is not a Python identifier")

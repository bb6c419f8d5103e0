"""Tool-argument validation against a tool's ``inputSchema`` (JSON Schema 2020-12).

Every call is checked before it reaches a tool server, so an agent's bad
arguments get the same error result whichever boundary the server sits behind.
Most tool schemas are flat objects of scalar properties; for those a compiled
check answers the common case (valid arguments) without running the full
validator, which then only runs to explain a failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

__all__ = ["ArgumentValidator", "validator_for"]

_SCALARS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}
_ANNOTATIONS = {"title", "description", "default", "examples"}


def _compile_flat(schema: dict[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    """A sound fast check for flat object schemas, or ``None`` when the schema is richer.

    Sound: it answers ``True`` only when the full validator would; anything it
    cannot decide goes to the full validator."""
    if set(schema) - {"type", "properties", "required", "additionalProperties", *_ANNOTATIONS, "$schema"}:
        return None
    if schema.get("type", "object") != "object" or schema.get("additionalProperties", True) not in (True, False):
        return None
    checks: dict[str, Callable[[Any], bool] | None] = {}
    for prop, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, dict) or set(sub) - {"type", *_ANNOTATIONS}:
            return None
        kind = sub.get("type")
        if kind is None:
            checks[prop] = None
        elif isinstance(kind, str) and kind in _SCALARS:
            checks[prop] = _SCALARS[kind]
        else:
            return None
    required = tuple(schema.get("required") or ())
    closed = schema.get("additionalProperties", True) is False

    def valid(arguments: dict[str, Any]) -> bool:
        for key in required:
            if key not in arguments:
                return False
        for key, value in arguments.items():
            if key in checks:
                check = checks[key]
                if check is not None and not check(value):
                    return False
            elif closed:
                return False
        return True

    return valid


class ArgumentValidator:
    """Validates one tool's arguments; :meth:`error` says what is wrong, or ``None``."""

    def __init__(self, schema: dict[str, Any]) -> None:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        self._full = cls(schema)
        self._fast = _compile_flat(schema)

    def error(self, tool: str, arguments: Any) -> str | None:
        if not isinstance(arguments, dict):
            return f"Invalid arguments for tool {tool!r}: arguments must be an object"
        if self._fast is not None and self._fast(arguments):
            return None
        error = jsonschema.exceptions.best_match(self._full.iter_errors(arguments))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        at = f" at '{where}'" if where else ""
        return f"Invalid arguments for tool {tool!r}{at}: {error.message}"


_CACHE: dict[str, ArgumentValidator] = {}


def validator_for(schema: dict[str, Any]) -> ArgumentValidator:
    """The (shared) validator for ``schema``."""
    key = json.dumps(schema, sort_keys=True)
    validator = _CACHE.get(key)
    if validator is None:
        validator = _CACHE[key] = ArgumentValidator(schema)
    return validator

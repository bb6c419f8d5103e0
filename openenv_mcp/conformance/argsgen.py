"""Seeded, bounded tool arguments generated from a tool's JSON Schema.

Used when an environment has no scripted trajectories: the conformance rules
call every tool with arguments that satisfy its ``inputSchema`` (property-based
style, but reproducible from the seed), and with arguments that violate it.
Sizes are bounded (short strings, small arrays, shallow nesting).

Where values come from, first to last: sample arguments from the env file's
``solutions`` (a tool's arguments in the reference trajectories), the schema's
own ``examples``/``default``/``const``/``enum``, the caller's vocabulary
(``words``, when a string property accepts them), and for everything a small
hand-written generator cannot satisfy (``pattern``, ``format``, ``multipleOf``,
``not``, conditionals...) a small pool of values drawn by
`hypothesis-jsonschema <https://github.com/python-jsonschema/hypothesis-jsonschema>`_
with a fixed seed. Every result is validated against the schema, formats
included; a schema nothing can satisfy gives ``{}``.
"""

from __future__ import annotations

import json
import random
import warnings
from typing import Any

import jsonschema
import jsonschema.validators
from mcp.types import Tool

from openenv_mcp.types import CallTool

__all__ = ["generate_arguments", "generate_calls", "generate_value", "nonce_words", "schema_pool", "violations"]

_WORDS = ["alpha", "beta", "notes.txt", "hello world", "x", "42", "data", "a/b", "Zeta", ""]
_MAX_DEPTH = 4
POOL_SIZE = 4
"""Distinct values kept per schema drawn by hypothesis: few, so reads and writes hit the same keys."""
_POOLS: dict[str, list[Any]] = {}
_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_HARD = ("pattern", "format", "multipleOf", "not", "if", "dependentRequired", "dependentSchemas", "contains")
"""Keywords the hand-written generator does not honour: such a (sub)schema takes values from its pool."""


def _keep_hypothesis_out_of_cwd() -> None:
    """Hypothesis caches what it learns about source files under ``./.hypothesis``: a conformance run
    must not litter the user's folder, so (unless they configured it or already use one there) the
    cache goes to ``${XDG_CACHE_HOME:-~/.cache}/openenv-mcp/hypothesis``."""
    import os
    from pathlib import Path

    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or (Path.cwd() / ".hypothesis").exists():
        return
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(Path(cache) / "openenv-mcp" / "hypothesis")


def schema_pool(schema: Any) -> list[Any]:
    """Up to :data:`POOL_SIZE` distinct values valid for ``schema``, drawn by hypothesis-jsonschema
    with a fixed seed (the same values on every run), smallest first; ``[]`` when it cannot."""
    try:
        key = json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return []
    if key in _POOLS:
        return _POOLS[key]
    values: list[Any] = []
    _keep_hypothesis_out_of_cwd()
    try:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as fixed_seed
        from hypothesis import strategies as st
        from hypothesis_jsonschema import from_schema

        extra_formats = {  # formats hypothesis-jsonschema does not know
            "uuid": st.uuids().map(str),
            "duration": st.sampled_from(["P1D", "PT1H", "PT30M", "P1Y2M3DT4H5M6S", "P2W"]),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            strategy = from_schema(schema, custom_formats=extra_formats, allow_x00=False, codec="ascii")

            @fixed_seed(20261130)
            @settings(
                database=None,
                max_examples=POOL_SIZE * 6,
                deadline=None,
                phases=[Phase.generate],
                suppress_health_check=[HealthCheck(h) for h in HealthCheck],
                derandomize=False,
            )
            @given(strategy)
            def collect(value: Any) -> None:
                if value not in values and len(values) < POOL_SIZE and len(json.dumps(value)) <= 400:
                    values.append(value)

            collect()
    except Exception:  # unsupported or unsatisfiable schema (hypothesis-jsonschema raises assorted errors)
        values = values[:POOL_SIZE]  # keep what was drawn before the failure; the caller falls back when none
    values = [v for v in values if _valid(schema, v)] if isinstance(schema, dict) else values
    if len(_POOLS) >= 2048:  # a server with endless distinct schemas cannot grow this without bound
        _POOLS.clear()
    _POOLS[key] = values
    return values


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


_NOTHING: Any = object()
"""What a value source returns when it has nothing for the schema (``None`` is a JSON value)."""


def generate_value(
    schema: Any, rng: random.Random, root: dict[str, Any] | None = None, depth: int = 0, words: list[str] | None = None
) -> Any:
    """One value valid for ``schema`` (best effort; bounded size). Strings come from ``words``."""
    root = root if root is not None else (schema if isinstance(schema, dict) else {})
    schema = _resolve(schema, root)
    if schema is True or not isinstance(schema, dict) or not schema:
        return rng.choice(["any", 1, True])
    given = _given_value(schema, rng, root, words)
    if given is not _NOTHING:
        return given
    combined = _combined_value(schema, rng, root, depth, words)
    if combined is not _NOTHING:
        return combined
    return _value_of_type(_pick_type(schema, rng), schema, rng, root, depth, words)


def _given_value(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], words: list[str] | None) -> Any:
    """A value the schema names (``const``, ``enum``, usually its ``examples``/``default``), or for a
    keyword the generator does not honour, one of ``words`` or of the schema's pool; else :data:`_NOTHING`."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema and schema["enum"]:
        return rng.choice(schema["enum"])
    seeds = (
        [v for v in (schema.get("examples") or []) if _valid(schema, v)]
        if isinstance(schema.get("examples"), list)
        else []
    )
    if "default" in schema and _valid(schema, schema["default"]):
        seeds.append(schema["default"])
    if seeds and rng.random() < 0.7:  # the schema's own examples and default first
        return rng.choice(seeds)
    if any(k in schema for k in _HARD):
        good = [w for w in (words or []) if _valid(schema, w)]  # the caller's vocabulary when it fits
        pool = good or schema_pool(_inline(schema, root))
        if pool:
            return rng.choice(pool)
    return _NOTHING


def _combined_value(
    schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int, words: list[str] | None
) -> Any:
    """A value for one (non-null, when it can) member of ``anyOf``/``oneOf``, or for the merged
    ``allOf``; :data:`_NOTHING` when the schema combines nothing."""
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = [o for o in schema[key] if not (isinstance(o, dict) and o.get("type") == "null")]
            return generate_value(rng.choice(options or schema[key]), rng, root, depth + 1, words)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        return generate_value(merged, rng, root, depth + 1, words)
    return _NOTHING


def _pick_type(schema: dict[str, Any], rng: random.Random) -> Any:
    """The schema's ``type`` (one of a list, not ``null`` when another is allowed); untyped: an object
    when it has properties, else a string."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        kind = rng.choice(kinds)
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    return kind


def _value_of_type(
    kind: Any, schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int, words: list[str] | None
) -> Any:
    if kind == "string":
        return _string_value(schema, rng, words)
    if kind in ("integer", "number"):
        return _number_value(kind, schema, rng, root)
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
        return _object_value(schema, rng, root, depth, words)
    return None


def _string_value(schema: dict[str, Any], rng: random.Random, words: list[str] | None) -> str:
    """A word (of ``words``, else a built-in list) within ``minLength``/``maxLength``, padded or cut to fit."""
    lo, hi = int(schema.get("minLength", 0)), int(schema.get("maxLength", 24))
    fitting = [w for w in (words or _WORDS) if lo <= len(w) <= hi]
    word = rng.choice(fitting or words or _WORDS)
    while len(word) < lo:
        word += rng.choice("abcdefgh")
    return word[: max(hi, lo)]


def _number_value(kind: str, schema: dict[str, Any], rng: random.Random, root: dict[str, Any]) -> Any:
    """An integer within the bounds (a multiple of an integer ``multipleOf``), as a float for ``number``;
    from the pool when the range holds no integer or a bound is fractional."""
    lo, hi = _bounds(schema)
    if lo > hi or (kind == "number" and not all(float(schema.get(k, 0)).is_integer() for k in _NUMERIC)):
        pool = schema_pool(_inline(schema, root))  # a range with no integer in it, fractional bounds
        if pool:
            return rng.choice(pool)
    value = rng.randint(lo, hi)
    step = schema.get("multipleOf")
    if isinstance(step, int) and step > 0:
        value -= value % step
    return value if kind == "integer" else float(value)


def _object_value(
    schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int, words: list[str] | None
) -> dict[str, Any]:
    """Every required property and, while shallower than the depth limit, about half the others."""
    props: dict[str, Any] = schema.get("properties", {}) or {}
    required = set(schema.get("required", []) or [])
    out: dict[str, Any] = {}
    for name, sub in props.items():
        if name in required or (depth < _MAX_DEPTH and rng.random() < 0.5):
            out[name] = generate_value(sub, rng, root, depth + 1, words)
    for name in required - set(out):
        out[name] = "x"
    return out


def _bounds(schema: dict[str, Any]) -> tuple[int, int]:
    """Integer range inside ``minimum``/``maximum`` and ``exclusive*`` (numbers or draft-4 booleans)."""
    lo, hi = -5, 100
    if isinstance(schema.get("minimum"), int | float):
        lo = _ceil(schema["minimum"]) + (1 if schema.get("exclusiveMinimum") is True else 0)
    if isinstance(schema.get("exclusiveMinimum"), int | float) and not isinstance(schema["exclusiveMinimum"], bool):
        lo = max(lo if "minimum" in schema else -(10**18), int(schema["exclusiveMinimum"] // 1) + 1)
    if isinstance(schema.get("maximum"), int | float):
        hi = int(schema["maximum"] // 1) - (1 if schema.get("exclusiveMaximum") is True else 0)
    if isinstance(schema.get("exclusiveMaximum"), int | float) and not isinstance(schema["exclusiveMaximum"], bool):
        limit = schema["exclusiveMaximum"]
        hi = min(hi if "maximum" in schema else 10**18, _ceil(limit) - 1)
    if "minimum" not in schema and "exclusiveMinimum" not in schema:
        lo = min(lo, hi - 100)
    return lo, min(hi, lo + 1000)


def _ceil(x: float) -> int:
    return int(-(-x // 1))


def _inline(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """``schema`` made self-contained for the pool: the root's definitions ride along for ``$ref``."""
    extra = {k: root[k] for k in ("$defs", "definitions") if k in root and k not in schema}
    return {**schema, **extra} if extra else schema


def _valid(schema: Any, value: Any) -> bool:
    """``value`` satisfies ``schema``, formats (date-time, email, uri, uuid...) included."""
    if schema is True or schema == {}:
        return True
    if not isinstance(schema, dict):
        return schema is not False
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)
    except Exception:
        return False


def generate_arguments(
    tool: Tool, rng: random.Random, words: list[str] | None = None, samples: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Arguments valid for ``tool.inputSchema``, generated; when the generator cannot satisfy the
    schema, a value of its hypothesis pool, else a sample (``samples``: argument objects known to
    work, e.g. from the env file's solutions), else ``{}``."""
    schema = tool.input_schema or {}
    for _ in range(5):
        value = generate_value(schema, rng, words=words)
        if isinstance(value, dict) and _valid(schema, value):
            return value
    pool = [v for v in schema_pool(schema) if isinstance(v, dict)]
    if pool:
        return rng.choice(pool)
    return dict(samples[0]) if samples else {}


def generate_calls(
    tools: list[Tool],
    seed: int | str,
    count: int,
    words: list[str] | None = None,
    samples: list[CallTool] | None = None,
) -> list[CallTool]:
    """``count`` seeded calls: every tool at least once (sorted by name), then random ones.

    ``words``: the strings to draw from. A small vocabulary unique to one
    experiment (see :func:`nonce_words`) makes reads and writes hit the same
    keys, and makes anything an earlier episode left behind recognisable.
    ``samples``: calls known to work (the env file's solutions; the episode's
    own task first). Order: samples (at most ``count // 2``); every tool once,
    generated over the first word only (what one episode writes there, the
    next one reads at once); then random calls, of which two in three replay
    a sample where the tool has one. ``seed`` may be a string (e.g. the seed
    and a rule id, so two experiments on one server write different values).
    """
    rng = random.Random(seed)
    ordered = sorted(tools, key=lambda t: t.name)
    names = {t.name for t in ordered}
    known_calls = [c for c in samples or [] if c.name in names]
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for c in known_calls:
        by_tool.setdefault(c.name, []).append(c.arguments)
    # samples first (calls known to work), at most half the budget
    calls = [CallTool(name=c.name, arguments=dict(c.arguments)) for c in known_calls[: count // 2]]
    first = words[:1] if words else None  # one word: a write in this pass is read back by the next episode
    calls += [CallTool(name=t.name, arguments=generate_arguments(t, rng, first)) for t in ordered]
    later: dict[str, int] = {}
    while ordered and len(calls) < count:
        tool = rng.choice(ordered)
        n = later[tool.name] = later.get(tool.name, 0) + 1
        known = by_tool.get(tool.name)
        if known and n % 3:  # two later calls in three replay a sample, the third is generated
            calls.append(CallTool(name=tool.name, arguments=dict(rng.choice(known))))
        else:
            calls.append(CallTool(name=tool.name, arguments=generate_arguments(tool, rng, words, known)))
    return calls[: max(count, len(ordered) + len(known_calls[: count // 2]))]


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

"""Argument validation: the compiled fast check agrees with the full JSON Schema validator."""

from __future__ import annotations

import itertools

import jsonschema
import pytest

from openenv_mcp.core.validation import ArgumentValidator, _compile_flat, validator_for

FLAT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["text"],
    "properties": {
        "text": {"type": "string"},
        "n": {"type": "integer", "default": 1},
        "x": {"type": "number"},
        "flag": {"type": "boolean"},
        "any": {"title": "Any"},
    },
}
VALUES = ["s", 1, 1.0, 1.5, True, None, [], {}]


def test_the_fast_check_never_accepts_what_the_full_validator_refuses():
    fast = _compile_flat(FLAT)
    assert fast is not None
    full = jsonschema.Draft202012Validator(FLAT)
    keys = ["text", "n", "x", "flag", "any", "extra"]
    for chosen in itertools.chain.from_iterable(itertools.combinations(keys, r) for r in range(0, 3)):
        for values in itertools.product(VALUES, repeat=len(chosen)):
            args = dict(zip(chosen, values, strict=True))
            if fast(args):
                assert full.is_valid(args), args


def test_richer_schemas_take_the_full_validator():
    assert _compile_flat({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}) is None
    assert _compile_flat({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}) is None
    assert _compile_flat({"type": "object", "anyOf": [{}]}) is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "Invalid arguments for tool 't': 'text' is a required property"),
        ({"text": 3}, "Invalid arguments for tool 't' at 'text': 3 is not of type 'string'"),
        ({"text": "a", "n": True}, "Invalid arguments for tool 't' at 'n': True is not of type 'integer'"),
        (
            {"text": "a", "zz": 1},
            "Invalid arguments for tool 't': Additional properties are not allowed ('zz' was unexpected)",
        ),
        ([1], "Invalid arguments for tool 't': arguments must be an object"),
        ({"text": "a", "n": 2.0, "x": 3, "any": [1]}, None),
    ],
)
def test_errors_name_the_tool_the_place_and_the_problem(arguments, message):
    assert ArgumentValidator(FLAT).error("t", arguments) == message


def test_validators_are_shared_per_schema():
    assert validator_for(dict(FLAT)) is validator_for(dict(FLAT))

"""Argument validation: the compiled fast check agrees with the full JSON Schema validator."""

from __future__ import annotations

import itertools

import jsonschema
import pytest

from openenv_mcp.core.arguments import ArgumentValidator, validator_for

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


def test_the_validator_never_accepts_what_the_full_json_schema_validator_refuses():
    """A flat schema takes the fast check: whatever it lets through, the full validator accepts too."""
    validator = ArgumentValidator(FLAT)
    full = jsonschema.Draft202012Validator(FLAT)
    keys = ["text", "n", "x", "flag", "any", "extra"]
    for chosen in itertools.chain.from_iterable(itertools.combinations(keys, r) for r in range(0, 3)):
        for values in itertools.product(VALUES, repeat=len(chosen)):
            args = dict(zip(chosen, values, strict=True))
            assert (validator.error("t", args) is None) == full.is_valid(args), args


@pytest.mark.parametrize(
    ("schema", "arguments", "message"),
    [
        (
            {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}},
            {"n": -1},
            "Invalid arguments for tool 't' at 'n': -1 is less than the minimum of 0",
        ),
        (
            {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
            {"a": 1},
            "Invalid arguments for tool 't' at 'a': 1 is not of type 'string', 'null'",
        ),
        (
            {"type": "object", "anyOf": [{"required": ["a"]}]},
            {},
            "Invalid arguments for tool 't': 'a' is a required property",
        ),
    ],
)
def test_richer_schemas_are_checked_in_full(schema, arguments, message):
    assert ArgumentValidator(schema).error("t", arguments) == message


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

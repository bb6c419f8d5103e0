"""Conformance verdicts that test something (issue 12, items 2 and 5): generated arguments satisfy
the schema, a rule whose calls were all rejected is ``inconclusive`` (never ``pass``), prompts and
robustness rules fit any correct server.

Fixtures: ``conformance/fixtures/envs/zones`` (a store keyed by a ``pattern`` that leaks across
episodes, and its fixed twin ``isolated.toml``), ``envs/rejecting`` (a tool that rejects every value
it does not know; ``with-solutions.toml`` gives calls that work) and ``argument_servers.py``.
"""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
from mcp.types import Tool

from openenv_mcp.cli import main
from openenv_mcp.conformance import check_env_async
from openenv_mcp.conformance.argsgen import generate_arguments, generate_calls
from openenv_mcp.conformance.report import Report, Result
from openenv_mcp.definitions.spec import load_module
from openenv_mcp.types import CallTool

from support import ROOT

FIXTURES = ROOT / "conformance" / "fixtures"
ENVS = FIXTURES / "envs"
servers = load_module("argument_servers", FIXTURES)
EPISODE_RULES = ("env.determinism", "env.parity", "env.reset_restores", "env.episode_isolation")
HOW = (
    "to make this rule conclusive, give calls that work as `solutions` in the env file (per task a reference "
    'trajectory of {"name": tool, "arguments": {...}} calls; see docs/env-file.md): the rules replay them and '
    "take their arguments as samples"
)

SCHEMAS = {
    "pattern": {
        "type": "object",
        "properties": {"user": {"type": "string", "pattern": "^user-[0-9]{3}$"}},
        "required": ["user"],
    },
    "formats": {
        "type": "object",
        "properties": {
            f: {"type": "string", "format": f} for f in ("date-time", "date", "time", "email", "uri", "uuid", "ipv4")
        },
        "required": ["date-time", "date", "time", "email", "uri", "uuid", "ipv4"],
    },
    "bounds": {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 10, "maximum": 12},
            "x": {"type": "number", "exclusiveMinimum": 0.5, "exclusiveMaximum": 0.7},
            "s": {"type": "string", "minLength": 30, "maxLength": 31},
            "steps": {"type": "array", "items": {"type": "integer", "multipleOf": 7}, "minItems": 2, "maxItems": 3},
        },
        "required": ["n", "x", "s", "steps"],
    },
    "nested": {
        "type": "object",
        "properties": {
            "where": {
                "type": "object",
                "properties": {"zone": {"enum": ["UTC", "Asia/Tokyo"]}, "v": {"const": 3}},
                "required": ["zone", "v"],
                "additionalProperties": False,
            },
            "refs": {"$ref": "#/$defs/Id"},
        },
        "required": ["where", "refs"],
        "$defs": {"Id": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{2}$"}},
    },
}


def _valid(schema: dict, value: object) -> bool:
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)


# -- generated arguments ------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_generated_arguments_satisfy_pattern_format_enum_bounds_and_refs(name):
    tool = Tool(name=name, input_schema=SCHEMAS[name])
    rng = random.Random(0)
    for _ in range(6):
        args = generate_arguments(tool, rng, words=["k-1a2b3c", "v-1a2b3c"])
        assert args and _valid(SCHEMAS[name], args), args


def test_generated_arguments_are_the_same_for_the_same_seed():
    tools = [Tool(name=n, input_schema=s) for n, s in SCHEMAS.items()]
    assert generate_calls(tools, 7, 12) == generate_calls(tools, 7, 12)
    assert generate_calls(tools, 7, 12) != generate_calls(tools, 8, 12)


def test_examples_and_default_seed_the_generated_values():
    schema = {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "examples": ["Europe/Paris", "Asia/Tokyo"]},
            "unit": {"type": "string", "default": "celsius"},
        },
        "required": ["timezone", "unit"],
    }
    tool = Tool(name="weather", input_schema=schema)
    rng = random.Random(0)
    drawn = [generate_arguments(tool, rng) for _ in range(20)]
    assert sum(a["timezone"] in ("Europe/Paris", "Asia/Tokyo") for a in drawn) >= 10
    assert sum(a["unit"] == "celsius" for a in drawn) >= 10


def test_solution_calls_come_first_and_are_replayed_among_generated_ones():
    schema = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
    tool = Tool(name="utc_offset", input_schema=schema)
    sample = CallTool(name="utc_offset", arguments={"timezone": "Europe/Paris"})
    calls = generate_calls([tool], 0, 12, words=["k-1"], samples=[sample])
    assert calls[0] == sample
    assert calls[1] == CallTool(name="utc_offset", arguments={"timezone": "k-1"})
    assert sum(c == sample for c in calls) >= 7  # two later calls in three replay it


# -- no empty passes ----------------------------------------------------------------------------
@pytest.mark.anyio
async def test_a_store_keyed_by_a_pattern_that_leaks_across_episodes_is_caught():
    report = await check_env_async(ENVS / "zones", only="env", official=False)
    reset, isolation = report.result("env.reset_restores"), report.result("env.episode_isolation")
    assert reset.status == "failed", reset
    assert isolation.status == "failed", isolation
    assert 'tools/call \'get_zone\' {"user": "user-' in reset.message
    assert "changes made in the previous episode are still visible" in reset.message
    assert "A's writes are visible in B" in isolation.message


@pytest.mark.anyio
async def test_the_fixed_twin_of_the_pattern_keyed_store_passes_on_calls_that_succeeded():
    report = await check_env_async(ENVS / "zones" / "isolated.toml", only="env", official=False)
    assert [(r.rule, r.status) for r in report.results if r.rule in EPISODE_RULES] == [
        (rule, "passed") for rule in EPISODE_RULES
    ]


@pytest.mark.anyio
async def test_a_server_rejecting_every_generated_call_is_inconclusive_never_passed():
    report = await check_env_async(ENVS / "rejecting", only="env", official=False)
    for rule in EPISODE_RULES:
        row = report.result(rule)
        assert row.status == "inconclusive", row
        if rule in ("env.reset_restores", "env.episode_isolation"):
            # the rules that look for leaked writes say so in their own words (env.reset_restores'
            # and env.episode_isolation's failed-write verdict), naming the rejected call
            assert row.message.startswith("every call that could write failed ("), row.message
            assert "returned error \"Invalid timezone '" in row.message
            assert row.message.endswith("(give the environment solutions that succeed, or a writable workspace)")
            continue
        assert row.message.startswith("1 of the 1 tools called never succeeded ('utc_offset'; 0 of "), row.message
        assert "answered \"Invalid timezone '" in row.message
        assert row.message.endswith("the episodes agreed on errors, which proves nothing; " + HOW)
    assert report.ok and report.exit_code == 0 and report.exit_code_for(strict=True) == 2
    assert report.summary().startswith("INCONCLUSIVE: ")
    assert ", 4 inconclusive, " in report.summary()
    data = report.to_json()
    assert data["counts"]["inconclusive"] == 4 and data["counts"]["passed"] == 1


@pytest.mark.anyio
async def test_solutions_in_the_env_file_make_the_rejecting_server_conclusive():
    report = await check_env_async(ENVS / "rejecting" / "with-solutions.toml", only="env", official=False)
    assert {r.rule: r.status for r in report.results if r.rule in EPISODE_RULES} == dict.fromkeys(
        EPISODE_RULES, "passed"
    )
    assert report.summary().startswith("CONFORMANT: ")


def test_the_report_table_shows_inconclusive_rows():
    from rich.console import Console

    report = Report(
        target="t",
        results=[Result(rule="env.parity", severity="error", status="inconclusive", message="only errors")],
    )
    console = Console(record=True, width=200)
    report.print(console)
    text = console.export_text()
    assert "env.parity" in text and "inconclusive" in text and "INCONCLUSIVE: t: 0 passed" in text


def test_cli_exits_0_on_inconclusive_rules_and_2_with_strict(tmp_path, capsys):
    out = tmp_path / "report.json"
    target = str(ENVS / "rejecting")
    assert main(["conformance", target, "--only", "env.parity", "--no-official", "--json", str(out)]) == 0
    assert "INCONCLUSIVE" in capsys.readouterr().out
    assert json.loads(out.read_text())["results"][0]["status"] == "inconclusive"
    assert main(["conformance", target, "--only", "env.parity", "--no-official", "--strict"]) == 2


# -- prompts.list ---------------------------------------------------------------------------------
def test_a_prompt_argument_follows_the_schema_its_description_declares():
    from openenv_mcp.conformance.rules.mcp import prompt_argument

    note = 'Provide a value matching the following JSON schema: {"type":"integer","minimum":3,"maximum":5}. '
    assert prompt_argument(note + "Encode non-string values as JSON.") in ("3", "4", "5")
    enum = 'Provide a value matching the following JSON schema: {"enum":["calm","busy"],"type":"string"}. '
    assert prompt_argument(enum + "Encode non-string values as JSON.") in ("calm", "busy")
    assert prompt_argument("A language code.") == "conformance"


@pytest.mark.anyio
async def test_prompts_that_refuse_argument_values_with_a_clean_error_pass_prompts_list():
    report = await check_env_async(servers.prompts_with_required_arguments(), only="prompts.list", official=False)
    assert report.result("prompts.list").status == "passed", report.result("prompts.list")


@pytest.mark.anyio
async def test_prompts_list_renders_a_typed_prompt_with_a_valid_value_and_checks_its_messages():
    report = await check_env_async(
        servers.prompt_that_renders_badly_with_valid_arguments(), only="prompts.list", official=False
    )
    row = report.result("prompts.list")
    assert row.status == "failed"
    assert row.message == "prompts/get 'plan' messages[0] content[0] image data is not base64: 'not base64!'"


# -- wire.robustness --------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_wire_robustness_probes_a_tool_with_a_typed_parameter_not_the_first_tool():
    report = await check_env_async(servers.first_tool_without_parameters(), only="wire.robustness", official=False)
    row = report.result("wire.robustness")
    assert (row.status, row.message) == ("passed", ""), row


@pytest.mark.anyio
async def test_wire_robustness_says_so_when_no_tool_can_be_violated():
    report = await check_env_async(servers.only_untyped_tools(), only="wire.robustness", official=False)
    row = report.result("wire.robustness")
    assert row.status == "passed", row
    assert row.message == (
        "no tool declares a typed parameter, so no call could violate a schema: the wrong-type probe was not run "
        "(the other probes were)"
    )

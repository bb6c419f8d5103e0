"""The conformance checker: built-in environments pass, every rule fails on its broken fixture.

Broken fixtures live in ``conformance/fixtures/``: plain MCP servers
(``raw_servers.py``), environments (``envs/*``), a hand-written HTTP server with
faults (``fragile_http.py``) and broken faces (``broken_subjects.py``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from openenv_mcp.cli import main
from openenv_mcp.client.registry import list_envs, load_environment
from openenv_mcp.conformance import RULES, ConformanceError, assert_conformant_async, check_env_async
from openenv_mcp.conformance.report import load_known_failures
from openenv_mcp.conformance.runner import run_order, select_rules
from openenv_mcp.definitions.spec import load_module
from openenv_mcp.errors import ConfigError
from openenv_mcp.testing import free_port

from support import ROOT, need_boundaries, representative_tasks

FIXTURES = ROOT / "conformance" / "fixtures"
ENVS = FIXTURES / "envs"
raw = load_module("raw_servers", FIXTURES)
broken_subjects = load_module("broken_subjects", FIXTURES)


# -- every built-in environment passes --------------------------------------------------
OWN_CONFORMANCE_TEST = {"browser": "tests/envs/test_browser_conformance.py"}
"""Built-in worlds whose (longer) conformance run has a test file of its own, with the rules it must pass."""


@pytest.mark.anyio
@pytest.mark.parametrize("name", [spec.name for spec in list_envs() if spec.name not in OWN_CONFORMANCE_TEST])
async def test_every_builtin_environment_passes(name, request, monkeypatch):
    spec = next(s for s in list_envs() if s.name == name)
    need_boundaries(spec)
    if any("DATABASE_URL" in (s.prod or {}).get("pass_env", []) for s in spec.tool_servers):
        # the production variant (env.prod_identity) talks to a real PostgreSQL server
        monkeypatch.setenv("DATABASE_URL", request.getfixturevalue("postgres_server").url)
    report = await check_env_async(name, official=False, max_tasks=1, tasks=representative_tasks(spec))
    bad = [f"{r.rule}: {r.message}" for r in report.failed]
    assert report.ok and not bad, f"{name}: {bad}"
    assert report.result("env.parity").status == "passed"
    assert report.result("env.determinism").status == "passed"


# -- plain MCP servers, one broken rule each ------------------------------------------------
RAW_CASES = [
    (
        "reserved_name",
        "control_plane.hidden",
        "tools/list exposes 'reset': control-plane names (close, reset, state, step) must never be tools, "
        "an agent must not learn it can reset",
    ),
    (
        "bad_schema",
        "tools.schema",
        "tools/list: tool 'echo' inputSchema is not a valid JSON Schema (Draft202012Validator): 'strin' is not "
        "valid under any of the given schemas at 'properties/text/type'",
    ),
    (
        "bad_name",
        "tools.names",
        "tools/list: tool name 'echo this!' does not match [A-Za-z0-9_.-]{1,128} (MCP 2025-11-25)",
    ),
    (
        "long_dotted_name",
        "tools.names_portable",
        "tools/list: tool name 'files.read' is not accepted by common function-calling APIs ([A-Za-z0-9_-]{1,64})",
    ),
    ("no_descriptions", "tools.descriptions", "tools/list: tool 'echo' has description None"),
    ("no_tools", "tools.list", "tools/list returned no tools"),
    (
        "unknown_tool_succeeds",
        "call.unknown_tool",
        "tools/call 'openenv_conformance_no_such_tool' returned "
        "isError=false with content 'ok'; an unknown tool must be an error",
    ),
    (
        "no_validation",
        "call.invalid_arguments",
        "tools/call 'echo' with required property 'text' missing ({}) returned isError=false: '{}'; "
        "tools/call 'echo' with property 'text' given dict instead of string ({\"text\": {\"conformance\": true}}) "
        "returned isError=false: \"{'text': {'conformance': True}}\"",
    ),
    (
        "bad_content",
        "call.content",
        "tools/call 'echo' content[0] image has mimeType 'text/plain', expected "
        "'image/...'; tools/call 'echo' content[0] image data is not base64: 'not base64!'",
    ),
    (
        "bad_structured",
        "call.content",
        'tools/call \'echo\' structuredContent {"n": "one"} does not match its outputSchema: '
        "'one' is not of type 'integer'",
    ),
    (
        "broken_resources",
        "resources.list",
        "resources/read 'test://listed' returned no contents; "
        "resources/read 'openenv-conformance://no-such-resource' (not listed) succeeded; expected an error (-32002)",
    ),
    (
        "broken_prompts",
        "prompts.list",
        "prompts/get 'greet' {} answered JSON-RPC error -32603: template missing; "
        "prompts/get 'openenv_conformance_no_such_prompt' (not listed) succeeded; expected an error (-32602)",
    ),
]


def _match(expected, message: str) -> bool:
    return bool(expected.fullmatch(message)) if isinstance(expected, re.Pattern) else message == expected


@pytest.mark.anyio
@pytest.mark.parametrize(("builder", "rule", "message"), RAW_CASES, ids=[c[0] for c in RAW_CASES])
async def test_broken_mcp_server_fails_its_rule(builder, rule, message):
    report = await check_env_async(getattr(raw, builder)(), only=rule, official=False)
    result = report.result(rule)
    assert result.status == "failed", result
    assert _match(message, result.message), result.message
    assert report.ok == (RULES[rule].severity == "warning")


@pytest.mark.anyio
async def test_a_correct_plain_mcp_server_passes_every_mcp_rule_and_skips_episode_rules():
    report = await check_env_async(raw.good(), official=False)
    assert report.ok and not report.failed, [(r.rule, r.message) for r in report.failed]
    assert report.result("resources.list").message == "the server declares no resources capability"
    assert report.result("env.parity").status == "skipped"
    assert report.result("env.parity").message == "needs episodes (an openenv-mcp environment, not a plain MCP server)"
    assert report.result("wire.robustness").status == "passed"  # served over real HTTP in-process


# -- broken environments -----------------------------------------------------------------------
NONCE = r"[kv]-[0-9a-f]{6}"
ENV_CASES = [
    (
        "nondeterministic",
        "env.determinism",
        re.compile(
            r"two episodes reset with seed 0, same trajectory: step 1 tools/call 'roll' \{\} returned \"\d+\" "
            r"structured \{\"result\": \"\d+\"\} in one episode and \"\d+\" structured \{\"result\": \"\d+\"\} "
            r"in the other \(and \d+ more on tool roll\); env.parity, env.reset_restores and env.episode_isolation "
            r"ignore these values on tool roll \(each tool's first call ran one wall-clock second apart; from the calls reset and isolation generate, only clock-, counter- and random-name-shaped values\)"
        ),
    ),
    (
        "leaky",
        "env.episode_isolation",
        re.compile(
            r"two live episodes \(seed 0\), A replayed generated calls, then B the same ones: step \d+ tools/call "
            rf"'read_note' \{{\"key\": \"{NONCE}\"\}} returned \"{NONCE}\" structured \{{\"result\": \"{NONCE}\"\}} "
            r"in episode B and \"\(none\)\" structured \{\"result\": \"\(none\)\"\} in episode A: "
            r"A's writes are visible in B"
        ),
    ),
    (
        "sticky",
        "env.reset_restores",
        re.compile(
            r"replaying generated calls after reset\(seed=0\): step \d+ tools/call 'read_note' "
            rf"\{{\"key\": \"{NONCE}\"\}} returned \"{NONCE}\" structured \{{\"result\": \"{NONCE}\"\}} after reset "
            r"and \"\(none\)\" structured \{\"result\": \"\(none\)\"\} in the first episode: changes made in the "
            r"previous episode are still visible"
        ),
    ),
    (
        "leaks_answer",
        "env.answer_hidden",
        "task 'capital-fr': MCP resources/read 'quiz://tasks' shows the grader-only answer \"Paris (Île-de-France)\"; "
        "task 'capital-fr': MCP resources/read 'quiz://tasks' shows the grader-only data.accepted "
        '["paris", "paris, france"]; task \'capital-fr\': step observation shows the grader-only answer '
        "\"Paris (Île-de-France)\"; task 'capital-fr': control plane POST /episodes/{id}/step call_tool shows the "
        "grader-only answer \"Paris (Île-de-France)\"; task 'capital-jp': MCP resources/read 'quiz://tasks' shows "
        "the grader-only answer \"Tokyo (Kantō)\"; task 'capital-jp': MCP resources/read 'quiz://tasks' shows the "
        'grader-only data.accepted ["tokyo", "tokyo, japan"]; task \'capital-jp\': step observation shows the '
        "grader-only answer \"Tokyo (Kantō)\"; task 'capital-jp': control plane POST /episodes/{id}/step call_tool "
        'shows the grader-only answer "Tokyo (Kantō)"',
    ),
    (
        "prod_drift",
        "env.prod_identity",
        "servers ['db']: tool 'db_lookup' inputSchema differs: sim {\"additionalProperties\":false,\"properties\":"
        '{"key":{"type":"string"}},"required":["key"],"type":"obj…, prod {"additionalProperties":'
        'false,"properties":{"key":{"type":"integer"}},"required":["key"],"type":"ob…',
    ),
    (
        "prod_rename",
        "env.prod_identity",
        "servers ['notes']: tools only in sim: ['notes_lookup'], only in prod: ['notes_find']",
    ),
    (
        "prod_redescribed",
        "env.prod_identity",
        "servers ['notes']: tool 'notes_lookup' description differs: sim \"Look a note up by key.\", prod \"Look a note "
        "up by key (production).\"; servers ['notes']: tool 'notes_lookup' annotations differs: sim {\"readOnlyHint\":"
        "true}, prod null",
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("folder", "rule", "message"), ENV_CASES, ids=[c[0] for c in ENV_CASES])
async def test_broken_environment_fails_its_rule(folder, rule, message, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the sticky fixture's state file goes here
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    report = await check_env_async(ENVS / folder, only="env", official=False)
    result = report.result(rule)
    assert result.status == "failed", result
    assert _match(message, result.message), result.message
    assert not report.ok


@pytest.mark.anyio
async def test_an_environment_with_a_tool_named_reset_fails_control_plane_hidden():
    report = await check_env_async(ENVS / "reserved_name", official=False)
    message = (
        "tool server 'world' offers a tool named 'reset', which would be exposed as 'reset': control-plane "
        "names (close, reset, state, step) can never be tools; give the server a namespace or rename the tool"
    )
    assert report.result("control_plane.hidden").message == message
    assert report.result("mcp.handshake").message == f"the environment could not start an episode to serve: {message}"
    assert report.result("tools.list").message == "mcp.handshake failed: no MCP session, nothing else can be checked"


@pytest.mark.anyio
async def test_a_framework_that_shows_the_full_task_fails_answer_hidden(monkeypatch):
    """The bug env.answer_hidden guards against: every observation carried the whole task."""
    from openenv_mcp.types import Task

    monkeypatch.setattr(Task, "public", lambda self, private=(): self)
    report = await check_env_async("files", only="env.answer_hidden", official=False)
    result = report.result("env.answer_hidden")
    assert result.status == "failed", result
    assert result.message.startswith(
        "task 'rename-notes': reset observation carries grader-only task.data keys ['goals', 'keep']; "
        "task 'rename-notes': list_tools observation carries grader-only task.data keys ['goals', 'keep']; "
        "task 'rename-notes': step observation carries grader-only task.data keys ['goals', 'keep']; "
        "task 'rename-notes': control plane POST /episodes carries grader-only observation.task.data keys "
        "['goals', 'keep']"
    ), result.message


@pytest.mark.anyio
async def test_a_clock_fails_determinism_but_is_not_taken_for_leaked_state():
    report = await check_env_async(ENVS / "clock", only="env", official=False)
    assert report.result("env.determinism").status == "failed"
    message = report.result("env.determinism").message
    assert message.startswith(
        "two episodes reset with seed 0, same trajectory: step 1 tools/call 'now' {} returned \"20"
    ), message
    assert ' in one episode and "20' in message, message
    assert re.search(r" in the other \(and \d+ more on tool now\); ", message), message
    assert message.endswith(
        "; env.parity, env.reset_restores and env.episode_isolation ignore "
        "these values on tool now "
        "(each tool's first call ran one wall-clock second apart; from the calls reset and isolation generate, only clock-, counter- and random-name-shaped values)"
    ), message
    assert report.result("env.reset_restores").status == "passed"
    assert report.result("env.episode_isolation").status == "passed"


@pytest.mark.anyio
async def test_leaky_environment_passes_determinism_so_the_isolation_verdict_is_not_caveated():
    report = await check_env_async(ENVS / "leaky", only="env", official=False)
    assert report.result("env.determinism").status == "passed"
    assert report.result("env.reset_restores").status == "failed"
    assert "may be nondeterminism" not in report.result("env.episode_isolation").message


@pytest.mark.anyio
async def test_unseeded_randomness_is_one_determinism_finding_that_the_leak_rules_ignore():
    report = await check_env_async(ENVS / "nondeterministic", only="env", official=False)
    assert report.result("env.determinism").status == "failed"
    for rule in ("env.parity", "env.reset_restores", "env.episode_isolation"):
        result = report.result(rule)
        assert result.status == "passed", result
        assert result.message.endswith("ignored the values env.determinism found nondeterministic on tool roll"), result


@pytest.mark.anyio
async def test_a_face_that_rewrites_results_fails_parity():
    subject = broken_subjects.TamperedMcpSubject(load_environment("echo"))
    report = await check_env_async(subject, only="env.parity", official=False)
    assert report.result("env.parity").message == (
        "task 'echo-00' (reference trajectory, seed 0): step 1 tools/call 'echo' {\"text\": \"hello world\"} "
        'returned "hello world" structured {"result": "hello world"} via step() and "HELLO WORLD" '
        'structured {"result": "hello world"} via MCP tools/call'
    )


@pytest.mark.anyio
async def test_a_serving_layer_that_rewrites_results_fails_wire_parity():
    subject = broken_subjects.TamperedWireSubject(load_environment("echo"))
    report = await check_env_async(subject, only="wire.parity", official=False)
    assert report.result("wire.parity").message == (
        "task 'echo-02' (reference trajectory, seed 0): step 1 tools/call 'echo' {\"text\": \"reinforcement "
        'learning"} returned "reinforcement learning" structured {"result": "reinforcement '
        'learning"} via step() and "REINFORCEMENT LEARNING" structured {"result": "reinforcement '
        'learning"} via MCP tools/call'
    )


@pytest.mark.anyio
async def test_a_server_that_leaves_a_process_behind_fails_shutdown():
    module = load_module("server", ENVS / "leaks_process")
    try:
        report = await check_env_async(ENVS / "leaks_process", only="shutdown", official=False)
        result = report.result("shutdown.clean")
        pid = module.STARTED[-1].pid
        assert re.fullmatch(
            rf"pid {pid} \(\S*python\S* -c import time; time\.sleep\(120\)\) still running 5 s "
            r"after close\(\)",
            result.message,
        ), result.message
    finally:
        for proc in module.STARTED:
            proc.kill()
            proc.wait()


# -- a hand-written HTTP server with faults ------------------------------------------------------
@pytest.fixture
def fragile(request):
    procs = []

    def start(*flags: str) -> str:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, str(FIXTURES / "fragile_http.py"), str(port), *flags], stdout=subprocess.PIPE, text=True
        )
        procs.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()
        proc.stdout.close()


@pytest.mark.anyio
async def test_a_server_that_dies_on_bad_input_fails_robustness(fragile):
    report = await check_env_async(fragile("--die-on-bad-input"), only="wire", official=False)
    message = report.result("wire.robustness").message
    assert re.fullmatch(
        r"POST a malformed JSON body: got no answer \((RemoteProtocolError|ReadError): [^)]*\); "
        # the ping meets the dying process (ReadError) or the closed port (ConnectError)
        r"after POST a malformed JSON body: ping got no answer \((ConnectError: All connection "
        r"attempts failed|ReadError: [^)]*)\): the server stopped answering",
        message,
    ), message


@pytest.mark.anyio
async def test_a_hand_written_server_without_faults_passes_but_warns_about_discover(fragile):
    report = await check_env_async(fragile(), official=False)
    assert report.ok, [(r.rule, r.message) for r in report.errors]
    assert [r.rule for r in report.warnings] == ["mcp.discover"]
    assert report.result("mcp.discover").message == (
        "server/discover was not answered: the client fell back to initialize and negotiated '2025-11-25' "
        "instead of '2026-07-28'"
    )
    assert report.result("wire.robustness").status == "passed"


@pytest.mark.anyio
async def test_a_wrong_protocol_version_fails_the_handshake_and_stops_the_run(fragile):
    report = await check_env_async(fragile("--bad-version"), official=False)
    assert report.result("mcp.handshake").message == (
        "initialize failed: Unsupported protocol version from the server: 1999-01-01"
    )
    assert report.result("tools.list").message == "mcp.handshake failed: no MCP session, nothing else can be checked"


@pytest.mark.anyio
async def test_a_server_without_ping_fails_ping(fragile):
    report = await check_env_async(fragile("--no-ping"), only="mcp.ping", official=False)
    assert report.result("mcp.ping").message == "ping answered JSON-RPC error -32601: Method not found: ping"


# -- report, known failures, selection, CLI ----------------------------------------------------------
def test_known_failures_need_a_reason(tmp_path):
    good = tmp_path / "known.toml"
    good.write_text('[known."env.determinism"]\nreason = "the dice are random by design"\n')
    assert load_known_failures(good) == {"env.determinism": "the dice are random by design"}
    as_json = tmp_path / "known.json"
    as_json.write_text(json.dumps({"known": {"tools.names": {"reason": "legacy client names"}}}))
    assert load_known_failures(as_json) == {"tools.names": "legacy client names"}
    missing = tmp_path / "missing.toml"
    missing.write_text('[known."env.determinism"]\n')
    with pytest.raises(
        ConfigError,
        match=r"invalid known-failures file \(known\.env\.determinism\.reason: Field "
        r"required\)",
    ):
        load_known_failures(missing)
    empty = tmp_path / "empty.toml"
    empty.write_text('[known."env.determinism"]\nreason = "  "\n')
    with pytest.raises(ConfigError, match="reason must say why the failure is accepted"):
        load_known_failures(empty)


@pytest.mark.anyio
async def test_a_known_failure_is_accepted_with_its_reason(tmp_path):
    known = tmp_path / "known.toml"
    known.write_text('[known."env.determinism"]\nreason = "the dice are random by design"\n')
    report = await check_env_async(
        ENVS / "nondeterministic", only="env.determinism", known_failures=known, official=False
    )
    result = report.result("env.determinism")
    assert result.status == "known"
    assert result.message.endswith("[known failure: the dice are random by design]")
    assert report.ok and report.exit_code == 0


@pytest.mark.anyio
async def test_a_face_that_drops_tool_annotations_fails_the_annotation_rule():
    subject = broken_subjects.UnannotatedMcpSubject(load_environment("echo"))
    report = await check_env_async(subject, only="tools.annotations", official=False)
    result = report.result("tools.annotations")
    assert result.status == "failed", result
    assert result.message == (
        'tool \'echo\': its server declares {"annotations":{"destructiveHint":false,"idempotentHint":true,'
        '"openWorldHint":false,"readOnlyHint":true,"title":"Echo text"},"title":"Echo text"} but tools/list over '
        "MCP offers {}: a harness that approves or shows tools by their annotations (Codex unattended runs only "
        "tools marked safe) sees another tool than the server's"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["echo", "files", "sql"])
async def test_the_reference_tools_annotations_pass_through_both_faces(name):
    report = await check_env_async(name, only="tools.annotations", official=False)
    result = report.result("tools.annotations")
    assert result.status == "passed", result
    hinted, total = re.match(r"(\d+) of (\d+) tools carry annotations", result.message).groups()  # type: ignore[union-attr]
    assert hinted == total, result.message


def test_rule_selection_by_id_and_prefix():
    assert [r.id for r in select_rules(only="env.parity")] == ["env.parity"]
    assert {r.id for r in select_rules(only="tools")} == {
        "tools.list",
        "tools.schema",
        "tools.names",
        "tools.names_portable",
        "tools.descriptions",
        "tools.list_changed",
        "tools.annotations",
    }
    assert "env.parity" not in {r.id for r in select_rules(skip=["env", "wire"])}
    with pytest.raises(ConfigError, match="unknown rule 'nope'"):
        select_rules(only="nope")


def test_determinism_runs_after_reset_and_isolation_but_is_reported_first():
    """It learns what varies in their calls only after their episodes ran (learning it first would write
    their values into a shared store and hide its leak); the report keeps registration order."""
    rules = select_rules(only="env")
    ran = [r.id for r in run_order(rules)]
    assert ran.index("env.determinism") > max(ran.index("env.reset_restores"), ran.index("env.episode_isolation"))
    assert [r.id for r in rules][0] == "env.determinism"
    assert [r.id for r in run_order(select_rules(only="env.determinism"))] == ["env.determinism"]


@pytest.mark.anyio
async def test_the_report_lists_rules_in_registration_order_whatever_order_they_ran_in():
    report = await check_env_async("echo", only="env.determinism,env.reset_restores", official=False)
    assert [r.rule for r in report.results] == ["env.determinism", "env.reset_restores"]


def test_cli_prints_the_report_writes_json_and_exits_by_verdict(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["conformance", "echo", "--json", str(out), "--no-official", "--skip", "wire"]) == 0
    text = capsys.readouterr().out
    assert "CONFORMANT: echo:" in text and "env.parity" in text
    data = json.loads(out.read_text())
    assert data["ok"] is True
    row = next(r for r in data["results"] if r["rule"] == "env.parity")
    assert set(row) >= {"rule", "severity", "status", "message", "duration"}
    assert main(["conformance", str(ENVS / "nondeterministic"), "--only", "env.determinism", "--no-official"]) == 1
    assert "NOT CONFORMANT" in capsys.readouterr().out


@pytest.mark.anyio
async def test_assert_conformant_raises_with_the_errors():
    with pytest.raises(ConformanceError, match=r"env\.determinism \[error\]: two episodes reset with seed 0"):
        await assert_conformant_async(ENVS / "nondeterministic", only="env.determinism", official=False)


def test_every_rule_has_a_fixture_that_fails_it():
    """Every rule id is made to fail by a test: the parametrized cases above, the named tests,
    and tests/conformance/test_containment.py for the containment probes."""
    named = {
        "env.parity": test_a_face_that_rewrites_results_fails_parity,
        "wire.parity": test_a_serving_layer_that_rewrites_results_fails_wire_parity,
        "shutdown.clean": test_a_server_that_leaves_a_process_behind_fails_shutdown,
        "wire.robustness": test_a_server_that_dies_on_bad_input_fails_robustness,
        "mcp.discover": test_a_hand_written_server_without_faults_passes_but_warns_about_discover,
        "mcp.handshake": test_a_wrong_protocol_version_fails_the_handshake_and_stops_the_run,
        "mcp.ping": test_a_server_without_ping_fails_ping,
        "containment.host_file": "tests/conformance/test_containment.py",
        "containment.network": "tests/conformance/test_containment.py",
        "tools.list_changed": "tests/conformance/test_planted_interface.py (tools_change)",
        "tools.annotations": test_a_face_that_drops_tool_annotations_fails_the_annotation_rule,
    }
    covered = {c[1] for c in RAW_CASES} | {c[1] for c in ENV_CASES} | set(named)
    assert set(RULES) <= covered, f"rules no fixture fails: {sorted(set(RULES) - covered)}"


# -- a served environment, checked by URL: episodes over the control plane, parity over the wire ----
@pytest.mark.anyio
async def test_a_served_environment_is_checked_over_the_wire_by_url():
    from openenv_mcp.serve.app import create_app
    from openenv_mcp.testing import serving

    async with serving(create_app(load_environment("echo"))) as base:
        report = await check_env_async(base, official=False)
        by_mcp_url = await check_env_async(base + "/mcp", only="env.parity", official=False)
    assert report.ok and not report.failed, [(r.rule, r.message) for r in report.failed]
    for rule in ("env.parity", "env.determinism", "env.reset_restores", "env.episode_isolation", "wire.robustness"):
        assert report.result(rule).status == "passed", rule
    assert report.result("shutdown.clean").message == (
        "needs the environment's definition (give a name, env file or folder, not a URL)"
    )
    assert by_mcp_url.result("env.parity").status == "passed"


@pytest.mark.anyio
async def test_a_production_server_has_no_control_plane_so_episode_rules_are_skipped():
    from openenv_mcp.serve.app import create_app
    from openenv_mcp.testing import serving

    async with serving(create_app(load_environment("echo", mode="prod"))) as base:
        report = await check_env_async(base, official=False)
    assert report.ok and not report.failed, [(r.rule, r.message) for r in report.failed]
    assert report.result("env.parity").message == "needs episodes (an openenv-mcp environment, not a plain MCP server)"
    assert report.result("control_plane.hidden").status == "passed"


@pytest.mark.anyio
async def test_an_env_from_make_is_a_target_too():
    from openenv_mcp.client.registry import make_async

    report = await check_env_async(make_async("echo"), only="env.parity", official=False)
    assert report.result("env.parity").status == "passed"


@pytest.mark.anyio
async def test_a_server_behind_a_token_is_checked_with_the_token():
    from openenv_mcp.serve.app import create_app
    from openenv_mcp.testing import serving

    async with serving(create_app(load_environment("echo"), token="s3cret")) as base:
        report = await check_env_async(base, token="s3cret", official=False, skip="tools,resources,prompts")
        refused = await check_env_async(base, only="mcp.handshake", official=False)
    assert report.ok and not report.failed, [(r.rule, r.message) for r in report.failed]
    assert report.result("env.parity").status == "passed"
    assert report.result("wire.robustness").status == "passed"
    assert refused.result("mcp.handshake").status == "failed"
    assert re.fullmatch(
        r"initialize failed: .*\(POST http://127\.0\.0\.1:\d+/mcp answered HTTP 401: .*missing or wrong "
        r"bearer token.*\)",
        refused.result("mcp.handshake").message,
    ), refused.result("mcp.handshake").message

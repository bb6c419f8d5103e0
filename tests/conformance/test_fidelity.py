"""A wrapped server stays itself: its raw answers over stdio equal the same requests through
``/mcp`` and ``step()`` (``openenv_mcp.testing.fidelity_diff``), and what a wrapper used to lose
(instructions, capabilities, resource templates, its own errors, tool-list changes, task-required
tools) is kept. The kitchen-sink fixture server declares and uses all of it."""

from __future__ import annotations

from contextlib import AsyncExitStack

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from openenv_mcp.client.env import AsyncEnv
from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.routing import task_required_message
from openenv_mcp.definitions.surface import compose_instructions
from openenv_mcp.testing import fidelity_diff, wait_for
from openenv_mcp.types import CallTool, ListTools

from support.kitchen import INSTRUCTIONS, KITCHEN, Listener, kitchen_env, open_face

pytestmark = pytest.mark.anyio


async def test_kitchen_sink_answers_the_same_raw_through_mcp_and_through_step():
    report = await fidelity_diff(
        KITCHEN,
        calls=[("echo", {"text": "hi"}), ("fail", {})],
        resources=["kitchen://item/7", "kitchen://item/x", "kitchen://nope"],
        prompts=[("greet", {"name": "ann"}), ("greet", {})],
        completions=[
            (PromptReference(type="ref/prompt", name="greet"), {"name": "name", "value": "al"}),
            (ResourceTemplateReference(type="ref/resource", uri="kitchen://item/{id}"), {"name": "id", "value": ""}),
        ],
    )
    assert report.ok, report.text()
    for request in (
        "initialize",
        "tools/list",
        "tools/call echo",
        "tools/call fail",
        "resources/templates/list",
        "resources/read kitchen://item/x",
        "prompts/get greet",
        "prompts/get openenv-fidelity-no-such-prompt",
        "completion/complete greet",
    ):
        assert request in report.requests
    assert report.normalized == {
        "initialize.serverInfo",
        "initialize.capabilities.logging",
        "resources/list.task",
        "prompts/list.task",
        "step.resources-prompts",
    }


async def test_mcp_face_keeps_instructions_capabilities_templates_and_server_errors():
    environment = load_environment(KITCHEN)
    async with AsyncExitStack() as stack:
        mcp, init = await open_face(stack, environment)
        assert init.instructions == INSTRUCTIONS
        assert init.capabilities.tools is not None and init.capabilities.tools.list_changed is True
        assert init.capabilities.completions is not None
        assert init.capabilities.logging is None  # not passed through, so not advertised
        templates = (await mcp.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["kitchen://item/{id}"]
        with pytest.raises(MCPError) as bad_id:
            await mcp.read_resource("kitchen://item/x")
        assert (bad_id.value.code, bad_id.value.message) == (-31999, "item id must be a number, got 'x'")
        assert bad_id.value.error.data == {"id": "x"}
        with pytest.raises(MCPError) as no_name:
            await mcp.get_prompt("greet", {})
        assert (no_name.value.code, no_name.value.message) == (-32602, "greet needs a 'name' argument")
        with pytest.raises(MCPError) as unknown:
            await mcp.get_prompt("nope", {})
        assert unknown.value.message == "the kitchen has no prompt called 'nope'"
        done = await mcp.complete(PromptReference(type="ref/prompt", name="greet"), {"name": "name", "value": "al"})
        assert done.completion.values == ["alice", "alfred"]


async def test_instructions_are_composed_with_the_description_and_each_servers_name(tmp_path):
    folder = kitchen_env(tmp_path, description="Cook something.", servers=("left", "right"))
    environment = load_environment(folder)
    async with AsyncExitStack() as stack:
        _, init = await open_face(stack, environment)
    expected = f"Cook something.\n\n## left\n{INSTRUCTIONS}\n\n## right\n{INSTRUCTIONS}"
    assert init.instructions == expected
    assert compose_instructions("Cook something.", [("left", INSTRUCTIONS), ("right", None)]) == (
        f"Cook something.\n\n{INSTRUCTIONS}"
    )
    assert compose_instructions("", [("only", INSTRUCTIONS)]) == INSTRUCTIONS


async def test_a_tool_list_change_refreshes_step_and_the_mcp_face_and_notifies_the_client():
    environment = load_environment(KITCHEN)
    env = AsyncEnv(environment)
    try:
        await env.reset()
        obs = await env.step(CallTool(name="grow", arguments={}))
        assert obs.result is not None and not obs.result.is_error
        tools = (await env.step(ListTools())).tools or []
        assert "extra" in [t.name for t in tools]
        extra = await env.step(CallTool(name="extra", arguments={}))
        assert extra.result is not None and extra.result.content[0].text == "extra ran"  # type: ignore[union-attr]
    finally:
        await env.close()

    listener = Listener()
    async with AsyncExitStack() as stack:
        mcp, _ = await open_face(stack, load_environment(KITCHEN), listener)
        before = [t.name for t in (await mcp.list_tools()).tools]
        assert "extra" not in before
        await mcp.call_tool("grow", {})
        await wait_for(lambda: listener.changed >= 1, timeout=10)
        after = [t.name for t in (await mcp.list_tools()).tools]
        assert after == [*before, "extra"]
        assert (await mcp.call_tool("extra", {})).content[0].text == "extra ran"  # type: ignore[union-attr]


async def test_a_tool_that_requires_task_execution_is_listed_and_its_call_says_why():
    env = AsyncEnv(load_environment(KITCHEN))
    try:
        obs = await env.reset()
        job = next(t for t in obs.tools or [] if t.name == "long_job")
        assert job.execution is not None and job.execution.task_support == "required"
        result = (await env.step(CallTool(name="long_job", arguments={}))).result
        assert result is not None and result.is_error
        assert result.content[0].text == task_required_message("long_job")  # type: ignore[union-attr]
        assert result.content[0].text == (  # type: ignore[union-attr]
            "Tool 'long_job' requires task-augmented execution (its execution.taskSupport is 'required'); "
            "openenv-mcp does not run MCP tasks yet, so this tool cannot be called through the environment"
        )
    finally:
        await env.close()


async def test_fidelity_diff_names_each_field_that_differs(tmp_path):
    """The helper is not blind: output cut at a small ``output_bytes`` limit differs from the raw
    answer on both faces, field by field; a namespaced server with a description is normalized."""
    folder = kitchen_env(tmp_path, env="")
    text = (folder / "env.toml").read_text() + "limits = { output_bytes = 40 }\n"
    (folder / "env.toml").write_text(text)
    report = await fidelity_diff(folder, calls=[("echo", {"text": "z" * 100})])
    assert not report.ok
    fields = {(d.request, d.face, d.path) for d in report.differences}
    # the official client refuses a result that lost the structuredContent its outputSchema requires
    assert ("tools/call echo", "mcp", "refused") in fields
    assert ("tools/call echo", "step", "result.content") in fields
    assert ("tools/call echo", "step", "result.structuredContent") in fields
    assert "tools/call echo [mcp] refused: raw None != 'RuntimeError: Tool echo has an output schema" in report.text()

    named = kitchen_env(tmp_path / "named", description="Cook.", servers=("a", "b"))
    report = await fidelity_diff(named, server="a", calls=[("echo", {"text": "x"})])
    assert report.ok, report.text()
    assert {"tools/list.name", "initialize.instructions"} <= report.normalized


FASTMCP_SERVER = """
from fastmcp import FastMCP

mcp = FastMCP("notes", instructions="Notes: read notes://{name}.")


@mcp.tool
def add(a: int, b: int) -> int:
    return a + b


@mcp.resource("notes://{name}")
def note(name: str) -> str:
    return f"note {name}"
"""


async def test_an_in_process_fastmcp_server_keeps_its_instructions_and_templates(tmp_path):
    (tmp_path / "notes_server.py").write_text(FASTMCP_SERVER)
    (tmp_path / "env.toml").write_text(
        '[env]\nname = "notes"\n\n[[tool_servers]]\nname = "notes"\nnamespace = ""\nobject = "notes_server:mcp"\n'
    )
    report = await fidelity_diff(tmp_path, calls=[("add", {"a": 2, "b": 3})], resources=["notes://x"])
    # the one difference: an in-process server's tool-list changes are not passed through yet
    # (docs/protocol.md), so the face does not claim tools.listChanged for it
    assert [str(d) for d in report.differences] == ["initialize [mcp] tools.listChanged: raw True != False"]
    assert {"initialize", "tools/call add", "resources/templates/list", "resources/read notes://x"} <= set(
        report.requests
    )

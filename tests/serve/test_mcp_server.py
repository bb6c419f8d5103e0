"""Deploying what was trained: the task on the MCP face in simulation, the same names everywhere."""

from __future__ import annotations

import json

import httpx
import pytest
from mcp.client.client import Client

from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.serve.mcp_server import TASK_PROMPT, TASK_URI
from openenv_mcp.testing import serving

pytestmark = pytest.mark.anyio


async def test_an_attached_mcp_client_reads_the_task_as_a_prompt_and_a_resource_without_grader_fields():
    environment = load_environment("files")
    async with serving(create_app(environment)) as url:
        async with httpx.AsyncClient() as http:
            created = (await http.post(url + "/episodes", json={"seed": 0, "task_id": "rename-notes"})).json()
        async with Client(created["mcp_url"]) as client:
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == [TASK_PROMPT]
            got = await client.get_prompt(TASK_PROMPT)
            assert [(m.role, m.content.text) for m in got.messages] == [
                ("user", "Rename the file `notes.txt` to `meeting-notes.txt`. Keep its content unchanged.")
            ]
            resources = (await client.list_resources()).resources
            assert [str(r.uri) for r in resources] == [TASK_URI]
            read = await client.read_resource(TASK_URI)
            task = json.loads(read.contents[0].text)
            assert task == {
                "id": "rename-notes",
                "data": {},
                "prompt": "Rename the file `notes.txt` to `meeting-notes.txt`. Keep its content unchanged.",
            }
            raw = read.contents[0].text + got.model_dump_json()
            for secret in ("goals", "keep", "same_as_seed", "todo.md"):  # grader-only: never on a face
                assert secret not in raw
            # the agent solves it over MCP; the trainer still reads the reward on the control plane
            await client.call_tool("fs_move", {"source": "notes.txt", "destination": "meeting-notes.txt"})
        async with httpx.AsyncClient() as http:
            state = (
                await http.get(
                    f"{url}/episodes/{created['episode_id']}/state",
                    headers={"OpenEnv-Episode-Key": created["episode_key"]},
                )
            ).json()
        assert (state["state"]["cumulative_reward"], state["state"]["done"]) == (1.0, True)


@pytest.mark.parametrize(("module", "env", "server"), [("filesystem", "files", "fs")])
async def test_a_reference_server_run_standalone_lists_the_names_the_environment_trained_with(
    tmp_path, module, env, server
):
    import sys

    from mcp import StdioServerParameters

    import openenv_mcp

    with openenv_mcp.make(env) as trained:
        expected = {t.name: t for t in trained.reset(seed=0).tools}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", f"openenv_mcp.tool_servers.{module}", "--root", str(tmp_path)]
    )
    async with Client(params, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == set(expected)
        for name, tool in tools.items():
            assert (tool.description, tool.input_schema) == (expected[name].description, expected[name].input_schema)
        written = await client.call_tool(f"{server}_write", {"path": "a.txt", "content": "x"})
        assert not written.is_error, written
    assert (tmp_path / "a.txt").read_text() == "x"


def test_sql_in_production_without_a_database_says_so_at_start(monkeypatch, capsys):  # sync: the CLI runs its loop
    from openenv_mcp.cli.app import main

    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert main(["stdio", "sql", "--mode", "prod"]) == 2
    assert (
        "sql in production uses the database at $DATABASE_URL (tool servers ['sql']): give --database-url URL "
        "or set DATABASE_URL"
    ) in " ".join(capsys.readouterr().err.split())
    assert main(["stdio", "sql", "--database-url", "postgresql://nobody@127.0.0.1:1/db"]) == 2
    assert "--database-url is for production (--mode prod)" in " ".join(capsys.readouterr().err.split())


async def test_sql_in_production_serves_the_database_at_database_url_with_the_simulation_tools(postgres_server):
    import sys

    from mcp import StdioServerParameters

    import openenv_mcp

    with openenv_mcp.make("sql") as sim:
        expected = {t.name: t for t in sim.reset(seed=0).tools}
    params = StdioServerParameters(
        command=sys.executable,
        env={"PATH": "/usr/bin:/bin"},
        args=["-m", "openenv_mcp.cli", "stdio", "sql", "--mode", "prod", "--database-url", postgres_server.url],
    )
    async with Client(params, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == set(expected)
        for name, tool in tools.items():
            assert (tool.description, tool.input_schema) == (expected[name].description, expected[name].input_schema)
        result = await client.call_tool("query", {"sql": "SELECT 40 + 2 AS answer"})
        assert not result.is_error and "42" in result.content[0].text, result


@pytest.mark.parametrize("name", ["files", "sql"])
async def test_a_harness_over_stdio_gets_annotated_tools_without_fastmcp_meta_and_instructions_naming_them(name):
    """What Claude Code, Codex, Gemini CLI and opencode put in front of their model: the instructions told it to
    use `list`, `read`, `edit` (no such tools: they are fs_list...), each tool carried FastMCP's
    `_meta: {"fastmcp": {"tags": []}}`, and no tool said it was safe to run unattended."""
    import re
    import sys

    from mcp import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, env={"PATH": "/usr/bin:/bin"}, args=["-m", "openenv_mcp.cli", "stdio", name]
    )
    async with Client(params, mode="legacy") as client:
        instructions = client.instructions
        listed = (await client.list_tools()).tools
    wire = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
    names = {t["name"] for t in wire}
    assert all("_meta" not in t for t in wire), [t.get("_meta") for t in wire]
    assert all(t.get("title") and len(t.get("annotations", {})) == 5 for t in wire), wire
    named = set(re.findall(r"`([a-z_]+)`", instructions or ""))
    assert named and named <= names, (named - names, instructions)

"""``openenv-mcp mcp-config``: the printed entry works as an MCP client starts it, with an empty environment."""

from __future__ import annotations

import json
import os

import pytest
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from openenv_mcp.cli.app import main

pytestmark = pytest.mark.anyio


def mcp_config(capsys, *argv: str) -> dict:
    assert main(["mcp-config", *argv]) == 0
    return json.loads(capsys.readouterr().out)["mcpServers"]


async def test_the_printed_entry_edits_the_users_project_in_place_with_the_simulation_tool_names(
    capsys, monkeypatch, tmp_path
):
    import openenv_mcp

    project = tmp_path / "my project"
    project.mkdir()
    (project / "config.ini").write_text("[server]\nport = 80\n")
    servers = mcp_config(capsys, "files", "--mode", "prod", "--workspace", str(project))
    assert list(servers) == ["openenv-files"]
    server = servers["openenv-files"]
    assert os.path.isabs(server["command"])
    assert server["args"][-4:] == ["--mode", "prod", "--workspace", str(project.resolve())]
    with openenv_mcp.make("files") as sim:  # the names the policy was trained with
        sim_tools = {t.name: t for t in sim.reset(seed=0).tools}
    # What the SDK's stdio client would pass on from this process (HOME, PATH, ...): nothing.
    for key in DEFAULT_INHERITED_ENV_VARS:
        monkeypatch.delenv(key, raising=False)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    params = StdioServerParameters(command=server["command"], args=server["args"], env=server["env"], cwd=cwd)
    async with Client(params, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == set(sim_tools)
        for name, tool in tools.items():
            assert (tool.description, tool.input_schema) == (sim_tools[name].description, sim_tools[name].input_schema)
        listing = await client.call_tool("fs_list", {})
        assert listing.content[0].text == "config.ini (19 bytes)", listing  # the user's files, no task seed
        result = await client.call_tool("fs_edit", {"path": "config.ini", "old_text": "80", "new_text": "8080"})
        assert not result.is_error, result
        assert (await client.list_prompts()).prompts == []  # production: no task to offer
    # the user's own file changed, in place; closing the server removed nothing
    assert (project / "config.ini").read_text() == "[server]\nport = 8080\n"
    assert sorted(p.name for p in project.iterdir()) == ["config.ini"]


def said(capsys) -> str:
    """stderr with rich's line wrapping undone."""
    return " ".join(capsys.readouterr().err.split())


def test_production_on_a_folder_says_what_it_needs_at_start(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")  # sql's database is given
    assert main(["mcp-config", "files", "--mode", "prod"]) == 2
    assert (
        "files works on a folder in production: give --workspace DIR (the folder its tools may see and "
        "change; add --read-only to forbid changes)"
    ) in said(capsys)
    assert main(["mcp-config", "echo", "--mode", "prod", "--workspace", str(tmp_path)]) == 2
    assert "echo does not work on a folder in production (its tools use no workspace); drop --workspace" in said(capsys)
    assert main(["stdio", "sql", "--mode", "prod", "--workspace", str(tmp_path)]) == 2
    assert (
        "sql does not work on a folder in production (its tools use no workspace); drop --workspace and "
        "give --database-url or $DATABASE_URL"
    ) in said(capsys)
    assert main(["mcp-config", "files", "--workspace", str(tmp_path)]) == 2
    assert "--workspace and --read-only are for production (--mode prod)" in said(capsys)
    assert main(["stdio", "files", "--mode", "prod", "--workspace", str(tmp_path / "missing")]) == 2
    # (rich may wrap inside the long path: compare without white space)
    assert f"--workspace {str(tmp_path / 'missing')!r} is not a folder".replace(" ", "") in said(capsys).replace(
        " ", ""
    )


def test_a_path_becomes_absolute_and_an_unknown_env_is_refused(capsys, monkeypatch, tmp_path):
    from support import ROOT

    monkeypatch.chdir(ROOT)
    servers = mcp_config(capsys, "envs/echo")
    assert servers["openenv-echo"]["args"][3] == str(ROOT / "envs" / "echo")
    assert main(["mcp-config", "nope"]) == 2
    assert "unknown environment 'nope'" in capsys.readouterr().err


URL = "http://127.0.0.1:8000/mcp"
# Each client's own shape of a stdio and an HTTP entry (the demo's entry lacked "type": "http"; VS Code reads
# `servers`; Codex reads TOML; opencode a command list; Gemini CLI `httpUrl`).
HTTP_ENTRIES = {
    "claude": {"mcpServers": {"openenv-echo": {"type": "http", "url": URL}}},
    "vscode": {"servers": {"openenv-echo": {"type": "http", "url": URL}}},
    "cursor": {"mcpServers": {"openenv-echo": {"url": URL}}},
    "codex": {"mcp_servers": {"openenv-echo": {"url": URL}}},
    "opencode": {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {"openenv-echo": {"type": "remote", "url": URL, "enabled": True}},
    },
    "gemini": {"mcpServers": {"openenv-echo": {"httpUrl": URL}}},
}


def _printed(capsys, client: str, *argv: str) -> dict:
    import tomllib

    assert main(["mcp-config", "echo", "--client", client, *argv]) == 0
    out = capsys.readouterr().out
    return tomllib.loads(out) if client == "codex" else json.loads(out)


@pytest.mark.parametrize("client", sorted(HTTP_ENTRIES))
def test_each_clients_entry_is_in_its_own_format(capsys, client):
    assert _printed(capsys, client, "--url", URL) == HTTP_ENTRIES[client]
    stdio = mcp_config(capsys, "echo")["openenv-echo"]  # the claude form, started for real above
    command = [stdio["command"], *stdio["args"]]
    got = _printed(capsys, client)
    if client == "opencode":
        assert got["mcp"] == {"openenv-echo": {"type": "local", "command": command, "environment": {}, "enabled": True}}
        return
    key = {"vscode": "servers", "codex": "mcp_servers"}.get(client, "mcpServers")
    (entry,) = got[key].values()
    assert [entry["command"], *entry["args"]] == command
    assert entry.get("type") == ("stdio" if client == "vscode" else None)

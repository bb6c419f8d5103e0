"""``openenv-mcp mcp-config``: the printed entry works as an MCP client starts it, with an empty environment."""

from __future__ import annotations

import json
import os

import pytest
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from openenv_mcp.cli.main import main

pytestmark = pytest.mark.anyio


def mcp_config(capsys, *argv: str) -> dict:
    assert main(["mcp-config", *argv]) == 0
    return json.loads(capsys.readouterr().out)["mcpServers"]


async def test_the_printed_entry_serves_the_env_under_an_empty_environment(capsys, monkeypatch, tmp_path):
    workspaces = tmp_path / "workspaces"
    servers = mcp_config(capsys, "files", "--mode", "prod", "--workspace", str(workspaces))
    assert list(servers) == ["openenv-files"]
    server = servers["openenv-files"]
    assert os.path.isabs(server["command"])
    assert server["args"][-2:] == ["--mode", "prod"]
    # What the SDK's stdio client would pass on from this process (HOME, PATH, ...): nothing.
    for key in DEFAULT_INHERITED_ENV_VARS:
        monkeypatch.delenv(key, raising=False)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    params = StdioServerParameters(command=server["command"], args=server["args"], env=server["env"], cwd=cwd)
    async with Client(params, mode="legacy") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert {"fs_list", "fs_read", "fs_write"} <= set(names)
        result = await client.call_tool("fs_write", {"path": "hello.txt", "content": "hi"})
        assert not result.is_error, result
        # the episode's workspace lives in --workspace
        assert [p.read_text() for p in workspaces.glob("*/hello.txt")] == ["hi"]


def test_a_path_becomes_absolute_and_an_unknown_env_is_refused(capsys, monkeypatch, tmp_path):
    from conftest import ROOT

    monkeypatch.chdir(ROOT)
    servers = mcp_config(capsys, "envs/echo")
    assert servers["openenv-echo"]["args"][3] == str(ROOT / "envs" / "echo")
    assert main(["mcp-config", "nope"]) == 2
    assert "unknown environment 'nope'" in capsys.readouterr().err

"""The MCP Inspector CLI (Node 22, ``@modelcontextprotocol/inspector``) as a real client.

``tools/list`` and ``tools/call`` over both transports: streamable HTTP against
``openenv-mcp serve echo`` (the shared ``/mcp`` face and an episode's own MCP address) and
stdio against ``openenv-mcp stdio echo``. Every test reads the printed result, not just
the exit code (older CLIs exit 0 on an ``isError`` result; the pinned 2.12 exits 5).
"""

from __future__ import annotations

import sys

import httpx
import pytest

from openenv_mcp.conformance import nodetools
from openenv_mcp.conformance.nodetools import inspector, served_env
from openenv_mcp.testing import need

STDIO = [sys.executable, "-m", "openenv_mcp.cli", "stdio", "echo"]


@pytest.fixture(scope="module")
def tooling():
    need(nodetools.available(), f"Node 22 MCP tooling missing: {nodetools.INSTALL_HINT}")


@pytest.fixture(scope="module")
def served(tooling):
    with served_env("echo") as base:
        yield base


def _texts(result: dict) -> list[str]:
    return [c["text"] for c in result["content"] if c["type"] == "text"]


def _http(base: str) -> list[str]:
    return [base + "/mcp"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_tools_list(transport, served):
    target = _http(served) if transport == "http" else STDIO
    r = inspector(target, "tools/list", transport=transport)
    assert r.returncode == 0, r.stderr
    tools = {t["name"]: t for t in r.output["tools"]}
    assert list(tools) == ["echo"]
    assert tools["echo"]["inputSchema"]["properties"]["text"]["type"] == "string"
    assert tools["echo"]["inputSchema"]["required"] == ["text"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_tools_call(transport, served):
    target = _http(served) if transport == "http" else STDIO
    r = inspector(target, "tools/call", transport=transport, tool_name="echo", tool_args={"text": "hello inspector"})
    assert r.returncode == 0, r.stderr
    assert r.output["isError"] is False
    assert _texts(r.output) == ["hello inspector"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_tools_call_with_bad_arguments_is_an_error_result(transport, served):
    target = _http(served) if transport == "http" else STDIO
    r = inspector(target, "tools/call", transport=transport, tool_name="echo", tool_args={"wrong": "x"})
    assert r.output["isError"] is True, r.stdout
    assert r.returncode == 5 and '"code":"tool_is_error"' in r.stderr
    assert _texts(r.output) == [
        "Invalid arguments for tool 'echo': Additional properties are not allowed ('wrong' was unexpected)"
    ]


def _create_episode(base: str) -> dict:
    r = httpx.post(base + "/episodes", json={"seed": 0})
    assert r.status_code == 201, r.text
    return r.json()


def _key(created: dict) -> dict:
    return {"OpenEnv-Episode-Key": created["episode_key"]}


def _state(base: str, created: dict) -> dict:
    r = httpx.get(f"{base}/episodes/{created['episode_id']}/state", headers=_key(created))
    assert r.status_code == 200, r.text
    return r.json()["state"]


def test_attach_inspector_drives_an_episode_the_trainer_created(served):
    """The trainer creates an episode, the Inspector calls its tool at the episode's MCP address,
    the trainer reads the step on the control plane."""
    created = _create_episode(served)
    assert created["mcp_url"].startswith(f"{served}/episodes/{created['episode_id']}/")
    r = inspector(
        [created["mcp_url"]], "tools/call", transport="http", tool_name="echo", tool_args={"text": "attached"}
    )
    assert r.returncode == 0, r.stderr
    assert _texts(r.output) == ["attached"]
    assert _state(served, created)["step_count"] == 1
    httpx.delete(f"{served}/episodes/{created['episode_id']}", headers=_key(created))


def test_meta_key_names_the_episode_on_the_shared_endpoint(served):
    """``_meta["openenv/episode"]`` with the episode's key, sent by the Inspector (``--metadata``), routes a
    call on ``/mcp``."""
    created = _create_episode(served)
    agent_key = created["mcp_path"].split("/")[3]
    r = inspector(
        _http(served),
        "tools/call",
        transport="http",
        tool_name="echo",
        tool_args={"text": "meta"},
        metadata={"openenv/episode": created["episode_id"], "openenv/episode_key": agent_key},
    )
    assert r.returncode == 0, r.stderr
    assert _texts(r.output) == ["meta"]
    assert _state(served, created)["step_count"] == 1
    httpx.delete(f"{served}/episodes/{created['episode_id']}", headers=_key(created))

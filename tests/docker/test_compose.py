"""compose.yaml: the environment server and its tool server as separate containers.

Brings the stack up with Debian's ``docker-compose`` (v1) under a unique
project name and a free host port, drives it through ``/mcp`` (the official SDK
client) and the HTTP control plane, checks the tool server is reachable only on
the internal network, and tears everything down (no container left).
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid

import anyio
import httpx
import pytest

from openenv_mcp.sdkcompat import mcp_http_client
from openenv_mcp.testing import free_port

from support import ROOT, need_docker

pytestmark = pytest.mark.docker
TOKEN = uuid.uuid4().hex
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def stack():
    """``docker-compose up`` on a free port; yields (base URL, project name); always ``down``."""
    need_docker("tools", "server", cli="docker-compose")
    project = f"openenvmcptest{uuid.uuid4().hex[:8]}"
    port = free_port()
    env = {**os.environ, "OPENENV_MCP_PORT": str(port), "OPENENV_MCP_TOKEN": TOKEN}
    compose = ["docker-compose", "-p", project, "-f", str(ROOT / "compose.yaml")]
    try:
        subprocess.run(
            [*compose, "up", "-d", "--no-build"], check=True, env=env, cwd=ROOT, timeout=300, capture_output=True
        )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                logs = subprocess.run(
                    [*compose, "logs", "--tail", "40"], env=env, cwd=ROOT, capture_output=True, text=True
                ).stdout
                pytest.fail(f"the compose stack did not become healthy in 90 s:\n{logs}")
            time.sleep(0.2)
        yield base, project
    finally:
        subprocess.run(
            [*compose, "down", "-v", "--remove-orphans", "-t", "2"], env=env, cwd=ROOT, timeout=300, capture_output=True
        )
        import docker

        left = docker.from_env().containers.list(all=True, filters={"label": f"com.docker.compose.project={project}"})
        assert left == [], f"compose left containers behind: {left}"


def test_mcp_face_through_the_env_server_reaches_the_tool_container(stack):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    base, _ = stack

    async def main() -> tuple[list[str], object]:
        async with (
            mcp_http_client(headers=AUTH) as client,
            streamable_http_client(base + "/mcp", http_client=client) as streams,
        ):
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                tools = [t.name for t in (await session.list_tools()).tools]
                result = await session.call_tool("echo", {"text": "through two containers"})
                return tools, result

    tools, result = anyio.run(main)
    assert tools == ["echo"]
    assert not result.is_error and result.structured_content == {"result": "through two containers"}


def test_control_plane_episode_and_attach_over_mcp(stack):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    base, _ = stack
    with httpx.Client(base_url=base, timeout=30) as http:
        refused = http.post("/episodes", json={"seed": 0})  # through Docker's port forwarding: not a local peer
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        http.headers.update(AUTH)
        created = http.post("/episodes", json={"seed": 0})
        assert created.status_code == 201
        episode = created.json()
        http.headers["OpenEnv-Episode-Key"] = episode[
            "episode_key"
        ]  # the trainer's capability (HTTP has no connection)
        assert [t["name"] for t in episode["observation"]["tools"]] == ["echo"]
        step = http.post(
            f"/episodes/{episode['episode_id']}/step",
            json={"action": {"type": "call_tool", "name": "echo", "arguments": {"text": "step"}}},
        )
        assert step.status_code == 200
        assert step.json()["observation"]["result"]["structuredContent"] == {"result": "step"}

        async def attach() -> object:
            async with streamable_http_client(episode["mcp_url"]) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    return await session.call_tool("echo", {"text": "attached"})

        result = anyio.run(attach)
        assert result.structured_content == {"result": "attached"}
        state = http.get(f"/episodes/{episode['episode_id']}/state").json()["state"]
        assert state["episode_id"] == episode["episode_id"] and state["step_count"] >= 1
        assert http.delete(f"/episodes/{episode['episode_id']}").json() == {"closed": True}


def test_the_tool_server_is_only_on_the_internal_network(stack):
    import docker

    _, project = stack
    client = docker.from_env()
    (tools,) = client.containers.list(
        filters={"label": [f"com.docker.compose.project={project}", "com.docker.compose.service=tools"]}
    )
    (server,) = client.containers.list(
        filters={"label": [f"com.docker.compose.project={project}", "com.docker.compose.service=server"]}
    )
    assert tools.attrs["NetworkSettings"]["Ports"] in ({}, None)
    assert list(tools.attrs["NetworkSettings"]["Networks"]) == [f"{project}_backend"]
    assert client.networks.get(f"{project}_backend").attrs["Internal"] is True
    assert sorted(server.attrs["NetworkSettings"]["Networks"]) == [f"{project}_backend", f"{project}_frontend"]
    for container in (tools, server):
        host = container.attrs["HostConfig"]
        assert host["ReadonlyRootfs"] is True and host["CapDrop"] == ["ALL"]
        assert container.attrs["Config"]["User"] == "65534:65534"

"""The remote boundary: a streamable-HTTP MCP server reached by URL, one session per episode."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

import openenv_mcp
from openenv_mcp import BoundaryError, CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.testing import free_port

SERVER = """
import sys
from fastmcp import FastMCP
server = FastMCP("counter")
state = {"n": 0}

@server.tool
def bump() -> int:
    state["n"] += 1
    return state["n"]

server.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)
"""


@pytest.fixture(scope="module")
def url():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, "the test HTTP server died"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def _env(url: str) -> openenv_mcp.Env:
    return openenv_mcp.make(
        EnvSpec(name="remote", max_steps=None, tool_servers=[ToolServerSpec(name="c", namespace="", url=url)])
    )


def test_remote_server_tools_are_called_over_one_session(url):
    with _env(url) as env:
        obs = env.reset(seed=0)
        assert [t.name for t in obs.tools] == ["bump"]
        first = env.step(CallTool(name="bump", arguments={})).result.structured_content["result"]
        second = env.step(CallTool(name="bump", arguments={})).result.structured_content["result"]
        assert second == first + 1


def test_unreachable_remote_server_is_a_boundary_error():
    port = free_port()
    with _env(f"http://127.0.0.1:{port}/mcp") as env, pytest.raises(BoundaryError) as info:
        env.reset(seed=0)
    assert str(info.value) == "tool server 'c' failed to start: ConnectError: All connection attempts failed"

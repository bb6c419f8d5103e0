"""The in-process boundary bounds time: a sync tool past ``call_timeout`` returns the timeout result at
once, and the event loop (``/health``, other episodes) keeps answering while the tool's thread runs on."""

from __future__ import annotations

import time

import anyio
import httpx
import pytest

from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.testing import serving
from openenv_mcp.types import CallTool

pytestmark = pytest.mark.anyio

TOOLS = '''
import time
from fastmcp import FastMCP

server = FastMCP("slow")

@server.tool
def nap(seconds: float) -> str:
    """Sleep (a blocking call, like a read from a pipe nobody writes)."""
    time.sleep(seconds)
    return "rested"

@server.tool
def spin(seconds: float) -> str:
    """Busy pure-Python loop."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return "spun"

@server.tool
async def hello() -> str:
    """An async tool stays on the caller's loop."""
    return "hi"
'''


@pytest.fixture
def slow_env(tmp_path):
    (tmp_path / "slow_tools.py").write_text(TOOLS)
    (tmp_path / "env.toml").write_text(
        '[env]\nname = "slow"\ndescription = "slow sync tools"\n\n'
        '[[tool_servers]]\nname = "slow"\nobject = "slow_tools:server"\n\n'
        "[tool_servers.limits]\ncall_timeout = 1\n"
    )
    return load_environment(tmp_path)


@pytest.mark.parametrize("tool", ["nap", "spin"])
async def test_a_sync_tool_past_call_timeout_returns_the_timeout_result_while_health_answers(slow_env, tool):
    episode = await slow_env.new_episode(seed=0)
    worst = 0.0
    try:
        async with serving(create_app(load_environment("echo"))) as url, httpx.AsyncClient() as http:
            result = None

            async def call() -> None:
                nonlocal result
                result = (await episode.act(CallTool(name=f"slow_{tool}", arguments={"seconds": 8}))).result

            started = time.monotonic()
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                while result is None and time.monotonic() - started < 20:
                    asked = time.monotonic()
                    assert (await http.get(url + "/health", timeout=10)).status_code == 200
                    worst = max(worst, time.monotonic() - asked)
                    await anyio.sleep(0.05)
            took = time.monotonic() - started
        assert result is not None and result.is_error
        assert result.content[0].text == f"Tool 'slow_{tool}' timed out after 1 s"
        assert took < 4, f"the call returned after {took:.1f} s, not at its 1 s limit"
        assert worst < 1, f"/health took {worst:.2f} s while the tool ran"
        ok = (await episode.act(CallTool(name="slow_hello", arguments={}))).result
        assert not ok.is_error and ok.content[0].text == "hi"  # the episode goes on
    finally:
        await episode.close()


TAGGED = '''
from fastmcp import FastMCP

server = FastMCP("tagged")

@server.tool(tags={"internal"}, meta={"vendor/x": 1}, annotations={"readOnlyHint": True})
def look() -> str:
    """Look."""
    return "seen"

@server.prompt(tags={"internal"})
def brief() -> str:
    """A prompt."""
    return "brief"
'''


async def test_fastmcps_own_meta_never_reaches_the_faces_but_the_servers_meta_does(tmp_path):
    """Every in-process tool carried FastMCP's bookkeeping `_meta: {"fastmcp": {"tags": []}}` onto both faces,
    and a harness puts tool definitions in front of its model as listed."""
    (tmp_path / "tagged_tools.py").write_text(TAGGED)
    (tmp_path / "env.toml").write_text(
        '[env]\nname = "tagged"\n\n[[tool_servers]]\nname = "t"\nnamespace = ""\nobject = "tagged_tools:server"\n'
    )
    episode = await load_environment(tmp_path).new_episode(seed=0)
    try:
        (tool,) = episode.tools
        assert tool.meta == {"vendor/x": 1}
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        (served,) = await episode.server_tools()
        assert served.meta == {"vendor/x": 1}
        prompts = {p.name: p for p in await episode.connections[0].list_prompts()}
        assert prompts["brief"].meta is None
    finally:
        await episode.close()

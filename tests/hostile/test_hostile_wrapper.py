"""A wrapped tool server is not trusted either: what it hands the wrapper through the paths
the faithful wrapper opened (instructions, error messages, tool-list changes) is bounded, and
a changed tool list can never expose a control-plane name. Each attack is the kitchen-sink
fixture server behaving badly, driven through ``step()`` or the served ``/mcp``."""

from __future__ import annotations

import time
from contextlib import AsyncExitStack

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from openenv_mcp.client.env import AsyncEnv
from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.episode import REFRESH_INTERVAL
from openenv_mcp.definitions.surface import ERROR_MESSAGE_LIMIT, INSTRUCTIONS_LIMIT
from openenv_mcp.types import CallTool, ListTools

from support.kitchen import KITCHEN, Listener, kitchen_env, open_face

pytestmark = pytest.mark.anyio


async def test_hostile_server_cannot_add_a_control_plane_tool_by_changing_its_list():
    env = AsyncEnv(load_environment(KITCHEN))
    try:
        first = [t.name for t in (await env.reset()).tools or []]
        grown = await env.step(CallTool(name="grow_reset", arguments={}))
        assert grown.result is not None and not grown.result.is_error
        await anyio.sleep(0.2)  # the server's notification has arrived
        after = [t.name for t in (await env.step(ListTools())).tools or []]
        assert after == first and "reset" not in after  # the refused list leaves the old one in place
        called = (await env.step(CallTool(name="reset", arguments={}))).result
        assert called is not None and called.is_error
        assert called.content[0].text == "Unknown tool: 'reset'"  # type: ignore[union-attr]
        echo = (await env.step(CallTool(name="echo", arguments={"text": "still here"}))).result
        assert echo is not None and echo.structured_content == {"text": "still here"}
        assert (await env.state()).step_count == 3
    finally:
        await env.close()


async def test_hostile_server_flooding_list_changed_gets_one_refresh_per_interval():
    listener = Listener()
    async with AsyncExitStack() as stack:
        mcp, _ = await open_face(stack, load_environment(KITCHEN), listener)
        await mcp.call_tool("grow", {})  # a real change: the client hears it
        deadline = time.monotonic() + 10
        while listener.changed < 1 and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        assert listener.changed == 1
        before = int((await mcp.call_tool("lists", {})).content[0].text)  # type: ignore[union-attr]
        started = time.monotonic()
        flooded = await mcp.call_tool("flood", {})  # 50 notifications, no change
        assert flooded.content[0].text == "flooded"  # type: ignore[union-attr]
        await anyio.sleep(2.5)
        listed = int((await mcp.call_tool("lists", {})).content[0].text)  # type: ignore[union-attr]
        window = time.monotonic() - started
        assert listed - before <= window / REFRESH_INTERVAL + 1  # one refresh per interval, not 50
        assert listener.changed == 1  # an unchanged list is not announced
        tools = [t.name for t in (await mcp.list_tools()).tools]
        assert "extra" in tools and "reset" not in tools
        assert (await mcp.call_tool("echo", {"text": "ok"})).structured_content == {"text": "ok"}


async def test_hostile_server_huge_instructions_are_cut_at_the_limit(tmp_path):
    folder = kitchen_env(tmp_path, env='KITCHEN_INSTRUCTIONS_REPEAT = "20000"')
    async with AsyncExitStack() as stack:
        mcp, init = await open_face(stack, load_environment(folder))
        assert init.instructions is not None
        assert len(init.instructions) < INSTRUCTIONS_LIMIT + 200
        assert init.instructions.endswith(
            f"[instructions truncated: 1820000 characters, the limit is {INSTRUCTIONS_LIMIT}]"
        )
        assert (await mcp.call_tool("echo", {"text": "ok"})).structured_content == {"text": "ok"}


async def test_hostile_server_huge_error_message_is_cut_and_its_data_dropped():
    async with AsyncExitStack() as stack:
        mcp, _ = await open_face(stack, load_environment(KITCHEN))
        with pytest.raises(MCPError) as huge:
            await mcp.read_resource("kitchen://huge-error")
        assert huge.value.code == -32002
        assert huge.value.message == "x" * ERROR_MESSAGE_LIMIT + (
            f"\n[error message truncated: 1000000 characters, the limit is {ERROR_MESSAGE_LIMIT}]"
        )
        assert huge.value.error.data is None
        assert (await mcp.call_tool("echo", {"text": "ok"})).structured_content == {"text": "ok"}

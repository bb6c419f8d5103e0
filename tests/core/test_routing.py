"""Composition: namespaces, collisions, reserved names, timeouts, tools that raise."""

from __future__ import annotations

import anyio
import pytest
from fastmcp import FastMCP

import openenv_mcp
from openenv_mcp import CallTool, EnvSpec, ToolNameError, ToolServerSpec


def _server(*names: str, body=None) -> FastMCP:
    server = FastMCP("t")
    for name in names:

        async def tool(x: int = 0) -> int:
            return x

        server.tool(tool, name=name)
    return server


def _env(*servers: ToolServerSpec, **kw) -> openenv_mcp.Env:
    return openenv_mcp.make(EnvSpec(name="t", tool_servers=list(servers), **kw))


def test_namespaces_prefix_tool_names_and_route_calls():
    env = _env(ToolServerSpec(name="a", object=_server("get")), ToolServerSpec(name="b", object=_server("get")))
    with env:
        obs = env.reset(seed=0)
        assert [t.name for t in obs.tools] == ["a_get", "b_get"]
        assert env.step(CallTool(name="b_get", arguments={"x": 4})).result.structured_content == {"result": 4}


def test_duplicate_names_after_namespacing_are_a_load_error():
    env = _env(
        ToolServerSpec(name="a", namespace="", object=_server("get")),
        ToolServerSpec(name="b", namespace="", object=_server("get")),
    )
    with pytest.raises(ToolNameError, match=r"duplicate tool name 'get' \(from tool servers 'a' and 'b'\)"):
        env.reset()


@pytest.mark.parametrize("name", ["reset", "step", "state", "close", "Reset"])
def test_control_plane_names_can_never_be_tools(name):
    env = _env(ToolServerSpec(name="a", namespace="", object=_server(name)))
    with pytest.raises(ToolNameError, match="control-plane names .* can never be tools"):
        env.reset()


def test_a_namespaced_reset_is_just_a_tool():
    with _env(ToolServerSpec(name="db", object=_server("reset"))) as env:
        assert [t.name for t in env.reset().tools] == ["db_reset"]


def test_tool_that_raises_is_an_error_result():
    server = FastMCP("t")

    @server.tool
    async def boom() -> str:
        raise RuntimeError("kaput")

    with _env(ToolServerSpec(name="s", namespace="", object=server)) as env:
        env.reset()
        result = env.step(CallTool(name="boom")).result
        assert result.is_error and result.content[0].text == "Error calling tool 'boom': kaput"


def test_tool_over_its_time_limit_is_an_error_result_and_the_episode_goes_on():
    server = FastMCP("t")

    @server.tool
    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "done"

    spec = ToolServerSpec(name="s", namespace="", object=server, limits={"call_timeout": 0.2})
    with _env(spec) as env:
        env.reset()
        result = env.step(CallTool(name="slow", arguments={"seconds": 5})).result
        assert result.is_error and result.content[0].text == "Tool 'slow' timed out after 0.2 s"
        assert env.step(CallTool(name="slow", arguments={"seconds": 0})).result.content[0].text == "done"


def test_call_timeout_option_overrides_the_spec():
    server = FastMCP("t")

    @server.tool
    async def slow() -> str:
        await anyio.sleep(5)
        return "done"

    env = openenv_mcp.make(EnvSpec(name="t", tool_servers=[ToolServerSpec(name="s", object=server)]), call_timeout=0.1)
    with env:
        env.reset()
        assert env.step(CallTool(name="s_slow")).result.content[0].text == "Tool 's_slow' timed out after 0.1 s"


def test_per_episode_factory_gives_each_episode_its_own_server_state():
    def factory(ctx):
        server = FastMCP("counter")
        count = {"n": 0}

        @server.tool
        async def bump() -> int:
            count["n"] += 1
            return count["n"]

        return server

    with _env(ToolServerSpec(name="c", namespace="", object=factory)) as env:
        env.reset()
        env.step(CallTool(name="bump"))
        assert env.step(CallTool(name="bump")).result.structured_content == {"result": 2}
        env.reset()
        assert env.step(CallTool(name="bump")).result.structured_content == {"result": 1}


def test_spec_needs_exactly_one_server_kind():
    with pytest.raises(ValueError, match="needs exactly one of object, command, url, image"):
        ToolServerSpec(name="x", command=["a"], url="http://x")


# -- issue 10: atomic step budget, reward errors, grader-only task fields ------------------------
def _io_env(**kw) -> openenv_mcp.Env:
    server = FastMCP("io")

    @server.tool
    async def fetch(ms: int = 5) -> str:
        await anyio.sleep(ms / 1000)
        return "fetched"

    return _env(ToolServerSpec(name="io", namespace="", object=server), **kw)


@pytest.mark.anyio
async def test_concurrent_steps_never_exceed_max_steps():
    episode = await _io_env(max_steps=3, reward=lambda ctx: 0.0).unwrapped.environment.new_episode(seed=0)
    outcomes: list[str] = []

    async def one() -> None:
        try:
            await episode.act(CallTool(name="fetch", arguments={"ms": 20}))
            outcomes.append("ok")
        except openenv_mcp.EpisodeEnded:
            outcomes.append("ended")

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(one)
    assert sorted(outcomes) == ["ended"] * 5 + ["ok"] * 3
    assert (episode.state().step_count, episode.state().truncated, len(episode.history)) == (3, True, 3)
    await episode.close()


def test_a_reward_that_raises_is_reported_and_the_episode_goes_on():
    def reward(ctx):
        if ctx.action is not None and ctx.action.arguments.get("ms") == 1:
            raise ValueError("cannot grade this")
        return 0.5 if ctx.action is not None else 0.0

    env = _io_env(reward=reward)
    env.reset(seed=0)
    bad = env.step(CallTool(name="fetch", arguments={"ms": 1}))
    assert (bad.reward, bad.done, bad.info["score"]) == (0.0, False, 0.0)
    assert bad.info["reward_error"] == (
        "the reward function raised ValueError: cannot grade this; this step's reward "
        "is 0.0 (the score is unchanged) and the episode goes on"
    )
    good = env.step(CallTool(name="fetch", arguments={"ms": 2}))
    assert (good.reward, good.info["score"], "reward_error" in good.info) == (0.5, 0.5, False)
    assert (env.state().step_count, env.state().reward_errors, env.state().cumulative_reward) == (2, 1, 0.5)
    env.close()


def test_grader_only_task_fields_reach_the_reward_but_no_observation():
    seen = []

    def reward(ctx):
        seen.append((ctx.task.answer, ctx.task.data))
        return 0.0

    tasks = [
        {
            "id": "t",
            "prompt": "p",
            "answer": "the-answer-xyzzy",
            "private": ["rubric"],
            "data": {"hint": "h", "expected": [1], "rubric": "r"},
        }
    ]
    env = _io_env(tasks=tasks, private_task_fields=["expected"], reward=reward)
    first = env.reset(seed=0)
    step = env.step(CallTool(name="fetch", arguments={"ms": 1}))
    listed = env.step(openenv_mcp.ListTools())
    for obs in (first, step, listed):
        assert obs.task.data == {"hint": "h"} and obs.task.answer is None
        assert "xyzzy" not in obs.model_dump_json() and "rubric" not in obs.model_dump_json()
    assert seen[-1] == ("the-answer-xyzzy", {"hint": "h", "expected": [1], "rubric": "r"})
    env.close()

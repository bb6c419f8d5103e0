"""The contract: make(), reset/step/state/close, errors, truncation, the sync twin.

Every test that makes an environment runs twice (the ``make`` fixture): on the
local ``Env`` and on the remote one, ``make("http://...")`` against a real
``openenv-mcp serve echo`` on a free port (same interface, same errors).
"""

from __future__ import annotations

import pytest

import openenv_mcp
from openenv_mcp import CallTool, EpisodeEnded, ListTools, ResetNeeded, UnknownEnvironment
from openenv_mcp.testing import running_server


@pytest.fixture(scope="module")
def echo_server():
    with running_server("echo") as url:
        yield url


@pytest.fixture(params=["local", "remote"])
def where(request):
    return request.param


@pytest.fixture
def make(where, request):
    """``openenv_mcp.make`` (local) or the same call aimed at the served echo environment (remote)."""
    if where == "local":
        return openenv_mcp.make
    url = request.getfixturevalue("echo_server")

    def make_remote(name, **options):
        assert name == "echo"
        return openenv_mcp.make(url, **options)

    return make_remote


@pytest.fixture
def make_async(where, request):
    if where == "local":
        return openenv_mcp.make_async
    url = request.getfixturevalue("echo_server")

    def make_remote(name, **options):
        assert name == "echo"
        return openenv_mcp.make_async(url, **options)

    return make_remote


def test_step_before_reset_raises_reset_needed(make):
    with make("echo") as env:
        with pytest.raises(ResetNeeded, match=r"call reset\(\) before step\(\) or state\(\)"):
            env.step(ListTools())
        with pytest.raises(ResetNeeded):
            env.state()


def test_errors_share_one_root():
    for err in (ResetNeeded, EpisodeEnded, UnknownEnvironment, openenv_mcp.ToolNameError):
        assert issubclass(err, openenv_mcp.OpenEnvError)


def test_unknown_environment_names_the_builtins():
    with pytest.raises(UnknownEnvironment, match="unknown environment 'nope'; registered: .*echo"):
        openenv_mcp.make("nope")


def test_reset_returns_tools_and_task(make):
    with make("echo") as env:
        obs = env.reset(seed=3)
        assert [t.name for t in obs.tools] == ["echo"]
        assert obs.task is not None and obs.task.prompt.startswith("Use the echo tool")
        assert (obs.reward, obs.done, obs.truncated) == (0.0, False, False)
        state = env.state()
        assert (state.step_count, state.seed, state.task_id) == (0, 3, obs.task.id)


def test_same_seed_same_task_and_different_seeds_cover_tasks(make):
    with make("echo") as env:
        first = env.reset(seed=11).task.id
        assert env.reset(seed=11).task.id == first
        assert len({env.reset(seed=s).task.id for s in range(40)}) > 1


def test_task_id_selects_the_task(make):
    with make("echo") as env:
        assert env.reset(task_id="echo-05").task.id == "echo-05"


def test_observation_json_uses_mcp_wire_names(make):
    with make("echo") as env:
        obs = env.reset(seed=1)
        wire = obs.model_dump(mode="json", by_alias=True)
        assert "inputSchema" in wire["tools"][0]
        obs = env.step(CallTool(name="echo", arguments={"text": "x"}))
        wire = obs.model_dump(mode="json", by_alias=True)
        assert wire["result"]["isError"] is False
        assert wire["result"]["structuredContent"] == {"result": "x"}


def test_reward_done_and_step_after_end_is_a_named_error(make):
    with make("echo") as env:
        obs = env.reset(seed=1)
        obs = env.step(CallTool(name="echo", arguments={"text": obs.task.data["phrase"]}))
        assert (obs.reward, obs.done) == (1.0, True)
        assert env.state().cumulative_reward == 1.0
        with pytest.raises(EpisodeEnded, match=r"has ended \(done\); call reset\(\) to start a new one"):
            env.step(CallTool(name="echo", arguments={"text": "again"}))


def test_max_steps_truncates(make):
    with make("echo", max_steps=2) as env:
        env.reset(seed=1)
        assert env.step(CallTool(name="echo", arguments={"text": "a"})).truncated is False
        obs = env.step(CallTool(name="echo", arguments={"text": "b"}))
        assert (obs.truncated, obs.done, obs.reward) == (True, False, 0.0)
        with pytest.raises(EpisodeEnded, match=r"\(truncated\)"):
            env.step(CallTool(name="echo", arguments={"text": "c"}))


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (CallTool(name="nope", arguments={}), "Unknown tool: 'nope'"),
        (CallTool(name="echo", arguments={}), "Invalid arguments for tool 'echo': 'text' is a required property"),
        (
            CallTool(name="echo", arguments={"text": 3}),
            "Invalid arguments for tool 'echo' at 'text': 3 is not of type 'string'",
        ),
        (
            CallTool(name="echo", arguments={"text": "a", "x": 1}),
            "Invalid arguments for tool 'echo': Additional properties are not allowed ('x' was unexpected)",
        ),
    ],
)
def test_agent_errors_are_error_results_and_the_episode_goes_on(action, message, make):
    with make("echo") as env:
        obs = env.reset(seed=1)
        bad = env.step(action)
        assert bad.result.is_error is True
        assert bad.result.content[0].text == message
        good = env.step(CallTool(name="echo", arguments={"text": obs.task.data["phrase"]}))
        assert good.done is True
        assert env.state().step_count == 2


def test_list_tools_is_not_a_step(make):
    with make("echo") as env:
        env.reset(seed=1)
        obs = env.step(ListTools())
        assert [t.name for t in obs.tools] == ["echo"]
        assert env.state().step_count == 0


def test_dict_actions_are_accepted(make):
    with make("echo") as env:
        env.reset(seed=1)
        obs = env.step({"type": "call_tool", "name": "echo", "arguments": {"text": "hi"}})
        assert obs.result.content[0].text == "hi"


def test_close_is_idempotent_and_reset_after_close_works(make):
    env = make("echo")
    env.reset(seed=1)
    env.close()
    env.close()
    assert env.reset(seed=2).task is not None
    env.close()


@pytest.mark.anyio
async def test_async_core_mirrors_the_sync_twin(make_async):
    async with make_async("echo") as env:
        obs = await env.reset(seed=1)
        obs = await env.step(CallTool(name="echo", arguments={"text": obs.task.data["phrase"]}))
        assert obs.done is True
        assert (await env.state()).cumulative_reward == 1.0
    sync_names = [n for n in vars(openenv_mcp.Env) if n in ("reset", "step", "state", "close")]
    async_names = [n for n in vars(openenv_mcp.AsyncEnv) if n in ("reset", "step", "state", "close")]
    assert sync_names == async_names == ["reset", "step", "state", "close"]

"""Remote clients against a real `openenv-mcp serve`: make(URL), the vector client, token, errors."""

from __future__ import annotations

import httpx
import pytest

import openenv_mcp
from openenv_mcp import CallTool, ListTools, ResetNeeded
from openenv_mcp.client.remote import AsyncVectorEnv, RemoteAsyncEnv, VectorEnv, ws_url
from openenv_mcp.errors import BoundaryError, ConfigError, EpisodeEnded, UnknownEpisode
from openenv_mcp.serve.manager import EPISODE_KEY_HEADER
from openenv_mcp.testing import running_server


@pytest.fixture(scope="module")
def server():
    with running_server("echo", "--max-episodes", "64") as url:
        yield url


def test_ws_url_forms():
    assert ws_url("http://127.0.0.1:8000") == "ws://127.0.0.1:8000/ws"
    assert ws_url("https://h.example/base/") == "wss://h.example/base/ws"
    assert ws_url("ws://h:1/ws") == "ws://h:1/ws"
    with pytest.raises(ConfigError, match="not a server URL"):
        ws_url("ftp://h")


def test_vector_env_steps_many_episodes_in_one_message(server):
    with VectorEnv(server, num_envs=6) as venv:
        with pytest.raises(ResetNeeded):
            venv.step([ListTools()] * 6)
        observations = venv.reset(seeds=range(6))
        assert [o.info["step"] for o in observations] == [0] * 6
        assert len(set(venv.unwrapped.episode_ids)) == 6
        phrases = [o.task.data["phrase"] for o in observations]
        actions = [
            CallTool(name="echo", arguments={"text": p if i % 2 == 0 else "wrong"}) for i, p in enumerate(phrases)
        ]
        stepped = venv.step(actions)
        assert [o.done for o in stepped] == [True, False] * 3
        assert [s.cumulative_reward for s in venv.state()] == [1.0, 0.0] * 3
        with pytest.raises(EpisodeEnded, match=r"^episode 0: episode .* has ended \(done\)"):
            venv.step(actions)
        mixed = venv.step(actions, return_exceptions=True)
        assert isinstance(mixed[0], EpisodeEnded) and mixed[1].done is False
        again = venv.reset(seeds=range(6))  # same ids, fresh worlds
        assert [o.info["step"] for o in again] == [0] * 6
        with pytest.raises(ConfigError, match=r"give one action per episode \(6\), got 1"):
            venv.step([ListTools()])


@pytest.mark.anyio
async def test_async_vector_env_and_episode_mcp_urls(server):
    async with AsyncVectorEnv(server, num_envs=3, max_steps=1) as venv:
        await venv.reset()
        assert all(u.startswith(server + "/episodes/") and u.endswith("/mcp") for u in venv.mcp_urls)
        stepped = await venv.step([{"type": "call_tool", "name": "echo", "arguments": {"text": "x"}}] * 3)
        assert [o.truncated for o in stepped] == [True] * 3
    assert venv.episode_ids is None


def test_remote_env_errors_and_mcp_url(server):
    env = openenv_mcp.make(server)
    obs = env.reset(seed=1)
    remote = env.unwrapped
    assert isinstance(remote, RemoteAsyncEnv) and env.name == "echo"
    assert remote.mcp_url.startswith(f"{server}/episodes/{remote.episode_id}/") and remote.mcp_url.endswith("/mcp")
    assert remote.episode_key and remote.episode_key not in remote.mcp_url
    assert obs.tools[0].name == "echo"
    env.close()
    with pytest.raises(ResetNeeded):
        env.state()
    with pytest.raises(ConfigError, match="only in sim mode"):
        openenv_mcp.make(server, mode="prod")


def test_remote_unknown_episode_and_unreachable_server(server):
    env = openenv_mcp.make(server)
    env.reset(seed=1)
    remote = env.unwrapped
    episode = remote.episode_id  # closed behind the client's back (another trainer, the HTTP face)
    closed = httpx.delete(f"{server}/episodes/{episode}", headers={EPISODE_KEY_HEADER: remote.episode_key})
    assert closed.status_code == 200, closed.text
    with pytest.raises(UnknownEpisode, match=f"unknown episode '{episode}'"):
        env.step(ListTools())
    env.close()
    with pytest.raises(BoundaryError, match=r"cannot open the control plane at ws://127.0.0.1:1/ws"):
        openenv_mcp.make("http://127.0.0.1:1").reset()


def test_remote_with_token():
    with running_server("echo", token="tok") as url:
        with pytest.raises(BoundaryError, match="--token"):
            openenv_mcp.make(url).reset()
        with openenv_mcp.make(url, token="tok") as env:
            assert env.reset(seed=2).task is not None


@pytest.mark.anyio
async def test_the_remote_client_carries_its_episode_key_and_other_connections_see_nothing(server):
    from openenv_mcp.client.remote import ControlConnection

    env = RemoteAsyncEnv(server)
    other = ControlConnection(server)
    try:
        await env.reset(seed=1)
        assert env.episode_key and env.episode_key not in env.mcp_url
        assert (await other.request({"op": "list"})) == {"episodes": []}
        with pytest.raises(UnknownEpisode, match=f"^unknown episode '{env.episode_id}'"):
            await other.request({"op": "state", "episode_id": env.episode_id})
        # The key is the capability: whoever the trainer hands it to reaches the episode.
        state = await other.request({"op": "state", "episode_id": env.episode_id, "episode_key": env.episode_key})
        assert state["state"]["episode_id"] == env.episode_id
        assert (await env.step(CallTool(name="echo", arguments={"text": "x"}))).info["step"] == 1
    finally:
        await other.close()
        await env.close()


def test_remote_fork_and_vector_fork(server):
    with openenv_mcp.make(server) as env:
        obs = env.reset(seed=2)
        phrase = obs.task.data["phrase"]
        env.step(CallTool(name="echo", arguments={"text": "warm up"}))
        left, right = env.fork(2)
        assert len({left.state().episode_id, right.state().episode_id, env.state().episode_id}) == 3
        assert left.unwrapped.mcp_url != env.unwrapped.mcp_url
        done = left.step(CallTool(name="echo", arguments={"text": phrase}))
        assert (done.reward, done.done, left.state().step_count) == (1.0, True, 2)
        assert env.state().step_count == 1 and not env.state().done  # the original goes on unchanged
        left.close()  # closes the fork's episode only: the shared connection stays open
        assert right.state().step_count == 1
        assert env.step(CallTool(name="echo", arguments={"text": phrase})).done
    with VectorEnv(server, num_envs=2) as venv:
        venv.reset(seeds=[0, 1])
        venv.step([CallTool(name="echo", arguments={"text": "a"})] * 2)
        forked = venv.fork(3)
        assert forked.num_envs == 6
        states = forked.state()
        originals = venv.state()
        assert [s.seed for s in states] == [0, 0, 0, 1, 1, 1]
        assert all(s.step_count == 1 for s in states)
        assert not {s.episode_id for s in states} & {s.episode_id for s in originals}
        forked.close()
        assert [s.step_count for s in venv.state()] == [1, 1]

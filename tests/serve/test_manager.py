"""The episode manager: O(1) lookups, the cap answering clearly, idle reaping, owners."""

from __future__ import annotations

import anyio
import httpx
import pytest
from fastmcp import FastMCP

from openenv_mcp import CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.environment import Environment
from openenv_mcp.errors import EpisodeLimit, UnknownEpisode
from openenv_mcp.serve.app import create_app
from openenv_mcp.serve.manager import EpisodeManager
from openenv_mcp.serve.metrics import Metrics
from openenv_mcp.testing import serving

pytestmark = pytest.mark.anyio


async def test_cap_answers_clearly_and_frees_room_on_close():
    manager = EpisodeManager(load_environment("echo"), max_episodes=2)
    async with manager.running():
        a = await manager.create(seed=1)
        await manager.create(seed=2)
        with pytest.raises(
            EpisodeLimit,
            match=r"^the server is full: 2 live episodes, the cap is 2 \(--max-episodes\); "
            r"close episodes you no longer need, or retry later$",
        ):
            await manager.create(seed=3)
        assert await manager.close(a.id) is True
        assert (await manager.create(seed=3)).seed == 3
    assert len(manager) == 0  # closed on exit


async def test_cap_over_http_is_503_with_the_code():
    app = create_app(load_environment("echo"), max_episodes=1)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        assert (await http.post("/episodes", json={})).status_code == 201
        full = await http.post("/episodes", json={})
        assert full.status_code == 503
        assert full.json()["error"]["code"] == "episode_limit"
        assert "(--max-episodes)" in full.json()["error"]["message"]
        assert app.state.metrics.rejected == {"episode_limit": 1}


async def test_idle_episodes_are_reaped_and_lookups_say_why():
    metrics = Metrics()
    manager = EpisodeManager(load_environment("echo"), idle_timeout=0.2, metrics=metrics)
    async with manager.running():
        idle = await manager.create(seed=1)
        busy = await manager.create(seed=2)
        with anyio.fail_after(10):
            while idle.id in manager:
                manager.get(busy.id)  # using an episode keeps it alive
                await anyio.sleep(0.02)
        assert busy.id in manager and idle.closed is True
        with pytest.raises(
            UnknownEpisode,
            match=rf"^episode '{idle.id}' was closed after 0.2 s idle \(--idle-timeout\); "
            "create a new episode$",
        ):
            manager.get(idle.id)
    assert metrics.episodes_closed["idle"] >= 1


SLOW = FastMCP("slow")
RELEASE: list[tuple[anyio.Event, anyio.Event]] = []  # (started, release) of the current test


@SLOW.tool
async def wait() -> str:
    """Answers when the test releases it: a tool call in flight for as long as the test needs."""
    started, release = RELEASE[-1]
    started.set()
    await release.wait()
    return "released"


async def test_reap_skips_an_episode_in_the_middle_of_a_call():
    spec = EnvSpec(name="slow", tool_servers=[ToolServerSpec(name="slow", namespace="", object=SLOW)])
    manager = EpisodeManager(Environment(spec), idle_timeout=0.05)
    episode = await manager.create(seed=1)
    started, release = anyio.Event(), anyio.Event()
    RELEASE.append((started, release))
    results = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _record(results, episode.act(CallTool(name="wait", arguments={}))))
        with anyio.fail_after(10):
            await started.wait()
        episode.last_used -= 10  # idle far past the timeout, but its call has not answered
        assert await manager.reap() == 0 and episode.id in manager
        release.set()
    assert results[0].result.content[0].text == "released"
    episode.last_used -= 10
    assert await manager.reap() == 1
    assert len(manager) == 0


async def _record(into: list, awaitable) -> None:
    into.append(await awaitable)


async def test_owners_and_reset_keep_the_id():
    manager = EpisodeManager(load_environment("echo"))
    a = await manager.create(seed=1, owner="conn-1")
    b = await manager.create(seed=2, owner="conn-1")
    c = await manager.create(seed=3, owner="conn-2")
    fresh = await manager.reset(a.id, seed=5, max_steps=1)
    assert fresh.id == a.id and fresh is not a and a.closed and fresh.seed == 5 and fresh.env.max_steps == 1
    assert manager.owned("conn-1") == {a.id, b.id}
    assert await manager.close_owner("conn-1") == 2
    assert manager.ids() == [c.id]
    await manager.close_all()


# -- issue 10: capabilities and the default cap ---------------------------------------------------
async def test_only_the_owner_the_trainer_key_or_the_admin_reach_an_episode():
    manager = EpisodeManager(load_environment("echo"))
    async with manager.running():
        mine = await manager.create(seed=1, owner="ws:a")
        other = await manager.create(seed=2)
        trainer_key, agent_key = manager.keys(other.id)
        assert trainer_key != agent_key and len(trainer_key) >= 32
        assert manager.authorize(mine.id, owner="ws:a") is mine
        assert manager.authorize(other.id, key=trainer_key) is other
        assert manager.authorize(other.id, admin=True) is other
        for attempt in ({"owner": "ws:a"}, {"key": agent_key}, {"key": "guess"}, {}):
            with pytest.raises(UnknownEpisode, match=f"^unknown episode '{other.id}'"):
                manager.authorize(other.id, **attempt)
        assert manager.agent_episode(other.id, agent_key) is other
        with pytest.raises(UnknownEpisode):
            manager.agent_episode(other.id, manager.keys(mine.id)[1])  # another episode's agent key
        assert manager.visible(owner="ws:a") == [mine.id]
        assert manager.visible(key=trainer_key) == [other.id]
        assert manager.visible() == [] and sorted(manager.visible(admin=True)) == sorted([mine.id, other.id])
        reset = await manager.reset(other.id, seed=3)
        assert manager.keys(reset.id)[0] == trainer_key and manager.keys(reset.id)[1] != agent_key
        assert not manager.capability_ok(reset.id, agent_key)  # the previous agent's address is dead


def test_default_max_episodes_is_sized_from_the_machine():
    from openenv_mcp.serve.manager import default_max_episodes

    assert default_max_episodes(cpus=2, memory_bytes=8 << 30) == 64
    assert default_max_episodes(cpus=64, memory_bytes=16 << 30) == 256
    assert default_max_episodes(cpus=1, memory_bytes=256 << 20) == 16
    assert default_max_episodes(cpus=512, memory_bytes=1 << 40) == 4096
    assert 16 <= default_max_episodes() <= 4096

"""openenv_mcp.ray on a real local Ray cluster: a head (no CPUs, so replicas land on workers) and two
worker nodes started with ``ray start`` as separate processes, with the custom resources ``node_a`` and
``node_b`` so placement is observable. The node-failure test kills every process of worker A mid-episode.

The module shares one cluster (starting one takes 10-60 s on two busy cores); the failure test runs last.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import secrets
import time

import pytest
from conftest import REQUIRE_ALL

# Ray's token authentication with a token of this run only: the nodes, this driver and the front doors
# (child processes) share it through the environment, so no ~/.ray/auth_token of another run is used (nor
# written). Set before Ray is imported: the driver reads it then.
os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)

MISSING = "the ray extra is not installed: pip install 'openenv-mcp[ray]'"
if importlib.util.find_spec("ray") is None:  # an optional extra; CI (OPENENV_MCP_REQUIRE_ALL=1) must have it
    if REQUIRE_ALL:
        pytest.fail(MISSING + " (OPENENV_MCP_REQUIRE_ALL=1)", pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

import httpx
import ray
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from raycluster import LocalRayCluster
from servers import running_server

import openenv_mcp
from openenv_mcp.client.remote import AsyncVectorEnv
from openenv_mcp.errors import EpisodeLost
from openenv_mcp.ray import RayPool
from openenv_mcp.types import CallTool

pytestmark = pytest.mark.timeout(300)  # the first test also starts the cluster

ECHO = CallTool(name="echo", arguments={"text": "hello"})


@pytest.fixture(scope="module")
def cluster():
    c = LocalRayCluster()
    try:
        c.start_head()
        c.wait_started("head")
        for name in ("a", "b"):  # one after the other: two raylets starting at once starve two cores
            c.add_worker(name, {f"node_{name}": 1})
            c.wait_started(name)
        ray.init(address=c.address, log_to_driver=False, logging_level=logging.WARNING)
        c.wait_for_nodes(3)
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        stuck = c.stop()
        c.remove()
        assert not stuck, f"processes of the Ray cluster still alive after it stopped: {stuck}"


def _pool(num_replicas: int, num_cpus: float = 0.5) -> RayPool:
    return RayPool(
        "echo",
        num_replicas=num_replicas,
        num_cpus=num_cpus,
        request_timeout=15.0,
        health_timeout=3.0,
        start_timeout=60.0,
    )


def _text(obs) -> str:
    return obs.result.content[0].text


async def _mcp_tools(url: str) -> list[str]:
    async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        called = await session.call_tool("echo", {"text": "over mcp"})
        assert called.content[0].text == "over mcp"
        return [t.name for t in listed.tools]


def test_episodes_spread_over_both_worker_nodes_and_stay_pinned(cluster):
    async def main():
        async with _pool(num_replicas=2) as pool:
            nodes = {r.node_id for r in pool.replicas}
            assert nodes == {cluster.node_with("node_a"), cluster.node_with("node_b")}
            venv = await pool.vector(4, seeds=range(4))
            try:
                assert {e.replica.node_id for e in venv.envs} == nodes  # least-loaded: both workers serve
                results = await venv.step([ECHO] * 4)
                assert [_text(o) for o in results] == ["hello"] * 4
                for env in venv.envs:  # the MCP address on the replica's node, for an attached MCP client
                    assert env.mcp_url.startswith(env.replica.url + f"/episodes/{env.episode_id}/")
                assert await _mcp_tools(venv.envs[0].mcp_url) == ["echo"]
                states = await venv.state()
                assert [s.step_count for s in states] == [2, 1, 1, 1]  # the MCP call was a step of episode 0
                replica = venv.envs[0].replica
                await venv.envs[0].reset(seed=9)  # a reset stays on its replica
                assert venv.envs[0].replica is replica
            finally:
                await venv.close()

    asyncio.run(main())


def test_make_ray_url_gives_an_episode_on_the_cluster(cluster):
    env = openenv_mcp.make(f"ray://{cluster.address}/echo?num_replicas=1&num_cpus=0.5")
    try:
        obs = env.reset(seed=1)
        assert [t.name for t in obs.tools] == ["echo"]
        assert _text(env.step(ECHO)) == "hello"
        assert env.state().step_count == 1
        assert env.unwrapped.replica.node_id in {cluster.node_with("node_a"), cluster.node_with("node_b")}
    finally:
        env.close()
        pool = env.unwrapped.pool
        openenv_mcp.client.env._Portal.get().call(pool.aclose)


def test_front_door_serves_both_faces_and_routes_each_episode_to_its_replica(cluster):
    token = "front-door-token"
    args = ("--ray", cluster.address, "--replicas", "2", "--replica-cpus", "0.5")
    with running_server("echo", *args, token=token, timeout=150) as url:
        health = httpx.get(url + "/health").json()
        assert {r["node_id"] for r in health["replicas"]} == {
            cluster.node_with("node_a"),
            cluster.node_with("node_b"),
        }

        async def main():
            async with AsyncVectorEnv(url, num_envs=4, token=token) as venv:
                await venv.reset(seeds=range(4))
                assert [_text(o) for o in await venv.step([ECHO] * 4)] == ["hello"] * 4
                assert all(u.startswith(url + "/episodes/") for u in venv.mcp_urls)
                assert await _mcp_tools(venv.mcp_urls[0]) == ["echo"]  # no token: the agent key is the credential
                assert [s.step_count for s in await venv.state()] == [2, 1, 1, 1]

        asyncio.run(main())


def test_hostile_agent_key_for_an_episode_on_one_replica_opens_nothing_on_another(cluster):
    token = "front-door-token"
    args = ("--ray", cluster.address, "--replicas", "2", "--replica-cpus", "0.5")
    with running_server("echo", *args, token=token, timeout=150) as url:

        async def main():
            async with AsyncVectorEnv(url, num_envs=2, token=token) as venv:
                await venv.reset(seeds=[1, 2])
                replicas = httpx.get(url + "/health").json()["replicas"]
                assert sorted(r["episodes"] for r in replicas) == [1, 1]  # one episode per replica
                (id_a, key_a), (id_b, _) = [u.split("/episodes/", 1)[1].split("/")[:2] for u in venv.mcp_urls]
                body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
                headers = {"Accept": "application/json, text/event-stream"}
                async with httpx.AsyncClient() as http:
                    # the agent of episode A names episode B with its own key: refused by B's replica
                    r = await http.post(f"{url}/episodes/{id_b}/{key_a}/mcp", json=body, headers=headers)
                    assert r.status_code == 401, r.text
                    # no key, no token: refused at the front door
                    r = await http.post(f"{url}/episodes/{id_b}/mcp", json=body, headers=headers)
                    assert r.status_code == 401
                    r = await http.post(f"{url}/mcp", json=body, headers=headers)
                    assert r.status_code == 401
                    # DNS rebinding: a foreign Host is refused before any routing
                    r = await http.post(
                        f"{url}/episodes/{id_a}/{key_a}/mcp", json=body, headers={**headers, "Host": "evil.example"}
                    )
                    assert r.status_code == 421
                    # the replica's own address is no bypass: it wants the cluster token the agent never sees
                    replica_url = replicas[0]["url"]
                    r = await http.post(f"{replica_url}/episodes", json={}, headers=headers)
                    assert r.status_code == 401
                    r = await http.post(
                        f"{replica_url}/episodes", json={}, headers={"Authorization": f"Bearer {token}"}
                    )
                    assert r.status_code == 401
                # the episode still answers its own agent
                assert await _mcp_tools(venv.mcp_urls[0]) == ["echo"]

        asyncio.run(main())


def test_a_node_killed_mid_episode_fails_its_episodes_with_episode_lost_and_is_replaced(cluster):
    node_a, node_b = cluster.node_with("node_a"), cluster.node_with("node_b")
    token = "front-door-token"
    door_args = ("--ray", cluster.address, "--replicas", "2", "--replica-cpus", "0.2")

    async def main(door: str):
        async with (
            _pool(num_replicas=2, num_cpus=0.25) as pool,
            AsyncVectorEnv(door, num_envs=2, token=token) as door_venv,
        ):
            venv = await pool.vector(4, seeds=range(4))
            await door_venv.reset(seeds=[1, 2])
            door_replicas = {r["url"]: r["node_id"] for r in httpx.get(door + "/health").json()["replicas"]}
            assert set(door_replicas.values()) == {node_a, node_b}
            try:
                await venv.step([ECHO] * 4)
                on_a = [e for e in venv.envs if e.replica.node_id == node_a]
                on_b = [e for e in venv.envs if e.replica.node_id == node_b]
                assert on_a and on_b
                lost_id = on_a[0].episode_id
                cluster.kill("a")  # mid-episode: the raylet, its workers and the replicas' servers die at once
                started = time.monotonic()
                with pytest.raises(EpisodeLost) as caught:
                    await on_a[0].step(ECHO)
                assert time.monotonic() - started < 20  # bounded: never a hang
                message = str(caught.value)
                assert message.startswith(f"episode {lost_id} was lost: its replica at ")
                assert f"(Ray node {node_a})" in message
                assert message.endswith("start a new episode (reset()) to continue on a healthy replica")
                # through the front door: the episode on A fails with episode_lost, the one on B answers
                started = time.monotonic()
                results = await door_venv.step([ECHO, ECHO], return_exceptions=True)
                assert time.monotonic() - started < 20
                lost = [r for r in results if isinstance(r, Exception)]
                assert len(lost) == 1 and isinstance(lost[0], EpisodeLost), results
                assert "was lost: its replica at " in str(lost[0])
                assert [_text(r) for r in results if not isinstance(r, Exception)] == ["hello"]
                # the episodes on the healthy node carry on
                assert [_text(await e.step(ECHO)) for e in on_b] == ["hello"] * len(on_b)
                # the lost replica is replaced (on the node that is left) and new episodes succeed
                await pool.wait_for_replicas(2, timeout=60)
                assert pool.replaced >= 1
                assert {r.node_id for r in pool.live()} == {node_b}
                fresh = await pool.vector(3, seeds=[5, 6, 7])
                assert [_text(o) for o in await fresh.step([ECHO] * 3)] == ["hello"] * 3
                await fresh.close()
                # the lost episode's slot starts over on a healthy replica
                await on_a[0].reset(seed=3)
                assert on_a[0].replica.node_id == node_b
                # the front door sends new episodes to live replicas too
                async with AsyncVectorEnv(door, num_envs=2, token=token) as again:
                    await again.reset(seeds=[8, 9])
                    assert [_text(o) for o in await again.step([ECHO] * 2)] == ["hello"] * 2
            finally:
                await venv.close()

    with running_server("echo", *door_args, token=token, timeout=150) as door:
        asyncio.run(main(door))
    assert cluster.leftovers("a") == []  # nothing of worker A survived its node

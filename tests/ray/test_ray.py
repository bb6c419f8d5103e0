"""openenv_mcp.ray on a real local Ray cluster: a head (no CPUs, so replicas land on workers) and two
worker nodes started with ``ray start`` as separate processes, with the custom resources ``node_a`` and
``node_b`` so placement is observable. The node-failure test kills every process of worker A mid-episode;
the last test stops everything this module started and checks that nothing of it is left.

The module shares one cluster and one front door (starting them takes 10-60 s on two busy cores); the
tests run in file order (the failure test and the leftover check last).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import secrets
import subprocess
import sys
import time

import pytest

from openenv_mcp.testing import REQUIRE_ALL

MISSING = "the ray extra is not installed: pip install 'openenv-mcp[ray]'"
if importlib.util.find_spec("ray") is None:  # an optional extra; CI (OPENENV_MCP_REQUIRE_ALL=1) must have it
    if REQUIRE_ALL:
        pytest.fail(MISSING + " (OPENENV_MCP_REQUIRE_ALL=1)", pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

# Ray's token authentication with a token of this run only: the nodes, this driver and the front door
# (a child process) share it through the environment, so no ~/.ray/auth_token of another run is used (nor
# written). Set before Ray is imported (the driver reads it then); restored when the module's cluster stops.
_SAVED_ENV = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)

import httpx
import ray
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from websockets.asyncio.client import connect

import openenv_mcp
from openenv_mcp.client.remote import AsyncVectorEnv
from openenv_mcp.errors import EpisodeLost, ResetNeeded
from openenv_mcp.ray import RayPool
from openenv_mcp.ray.address import pool_for
from openenv_mcp.serve.manager import EPISODE_KEY_HEADER
from openenv_mcp.types import CallTool

from support.raycluster import FrontDoorProcess, LocalRayCluster

pytestmark = pytest.mark.timeout(300)  # the first test also starts the cluster

ECHO = CallTool(name="echo", arguments={"text": "hello"})
TOKEN = "front-door-token"
_INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


@pytest.fixture(scope="module")
def cluster():
    c = LocalRayCluster()
    try:
        c.start_head()
        c.wait_started("head")
        for name in ("a", "b"):  # one after the other: two raylets starting at once starve two busy cores
            c.add_worker(name, {f"node_{name}": 1})
            c.wait_started(name)
        ray.init(address=c.address, log_to_driver=False, logging_level=logging.WARNING)
        c.wait_for_nodes(3)
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.stop()
        c.remove()
        for key, value in _SAVED_ENV.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def door(cluster):
    """One front door for the module: ``serve echo --ray ADDRESS`` with a replica on each worker."""
    d = FrontDoorProcess("echo", "--ray", cluster.address, "--replicas", "2", "--replica-cpus", "0.2", token=TOKEN)
    try:
        d.start()
        yield d
    finally:
        d.stop()


def _pool(num_replicas: int | None = None, num_cpus: float = 0.5, **options) -> RayPool:
    return RayPool(
        "echo",
        num_replicas=num_replicas,
        num_cpus=num_cpus,
        request_timeout=15.0,
        health_timeout=3.0,
        start_timeout=60.0,
        **options,
    )


def _text(obs) -> str:
    return obs.result.content[0].text


async def _mcp_tools(url: str) -> list[str]:
    """What an attached MCP client (the official SDK's) sees at an episode's MCP address; calls echo once."""
    async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        called = await session.call_tool("echo", {"text": "over mcp"})
        assert called.content[0].text == "over mcp"
        return [t.name for t in listed.tools]


def _gone(pids, timeout: float = 15.0) -> list[int]:
    """The ``pids`` still running after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and _state(p) != "Z"]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


@pytest.mark.parametrize("resources", ["[1]", '{"node_a": "one"}', '{"node_a": -1}', "{not json"])
def test_serve_ray_rejects_bad_replica_resources_with_a_clear_error(resources):
    done = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "serve", "echo", "--ray", "127.0.0.1:1"]
        + ["--replica-resources", resources],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert done.returncode == 2
    assert (
        "error: --replica-resources must be a JSON object of resource names to amounts >= 0, "
        f"e.g. '{{\"env_node\": 1}}' (got {resources!r})"
    ) in done.stderr
    assert "Traceback" not in done.stderr


def test_episodes_spread_over_both_worker_nodes_and_stay_pinned(cluster):
    async def main():
        async with _pool(num_replicas=2) as pool:
            nodes = {r.node_id for r in pool.replicas}
            assert nodes == {cluster.node_with("node_a"), cluster.node_with("node_b")}
            async with await pool.vector(4, seeds=range(4)) as venv:
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
            pids = [r.pid for r in pool.replicas]
        assert _gone(pids) == []  # a closed pool's replica processes exit

    asyncio.run(main())


def test_make_ray_url_gives_an_episode_on_the_cluster(cluster):
    url = f"ray://{cluster.address}/echo?num_replicas=1&num_cpus=0.5"
    env = openenv_mcp.make(url)
    try:
        obs = env.reset(seed=1)
        assert [t.name for t in obs.tools] == ["echo"]
        assert _text(env.step(ECHO)) == "hello"
        assert env.state().step_count == 1
        assert env.unwrapped.replica.node_id in {cluster.node_with("node_a"), cluster.node_with("node_b")}
        pids = [r.pid for r in pool_for(url).replicas]
    finally:
        env.close()
        openenv_mcp.ray.shutdown()
    assert _gone(pids) == []


def test_pool_autoscales_between_its_bounds_and_stops_idle_replicas(cluster):
    async def main():
        async with _pool(min_replicas=1, max_replicas=2, episodes_per_replica=2, num_cpus=0.25) as pool:
            assert len(pool.replicas) == 1
            first = pool.replicas[0]
            venv = await pool.vector(2, seeds=[0, 1])  # fits the one replica
            assert len(pool.replicas) == 1 and {e.replica.url for e in venv.envs} == {first.url}
            more = await pool.vector(3, seeds=[2, 3, 4])  # the first is full: one more replica, and no more
            assert len(pool.replicas) == 2
            second = next(r for r in pool.replicas if r is not first)
            assert sorted(e.replica.url == second.url for e in more.envs) == [False, True, True]
            assert [_text(o) for o in await more.step([ECHO] * 3)] == ["hello"] * 3
            await pool.check()  # both hold episodes: nothing stops
            assert len(pool.replicas) == 2
            await more.close()
            await pool.check()  # the second is idle again, above min_replicas: stopped
            assert pool.live() == [first]
            assert _gone([second.pid]) == []  # its server process ended
            assert [_text(o) for o in await venv.step([ECHO] * 2)] == ["hello"] * 2  # the rest carry on
            await venv.close()
            await pool.check()  # never below min_replicas
            assert len(pool.live()) == 1

    asyncio.run(main())


def _fs(name: str, **arguments) -> CallTool:
    return CallTool(name=f"fs_{name}", arguments=arguments)


def test_a_pool_episode_forks_on_its_replica_into_independent_worlds_and_the_vector_forks_in_order(cluster):
    """Through ``make("ray://...")`` (the sync ``Env`` over a pool episode): forks of a ``files`` episode
    after a write and a rewarded move see both, carry the step count and cumulative reward, and change
    nothing of the original or of each other; the pool's vector forks episode ``i`` at ``i*n .. i*n+n-1``;
    the replica refuses a fork asked with an agent key."""
    # health_interval: no background health check refreshes the replica's load figure mid-test
    url = f"ray://{cluster.address}/files?num_replicas=1&num_cpus=0.5&health_interval=600"
    env = openenv_mcp.make(url)
    try:
        with pytest.raises(ResetNeeded):
            env.fork()
        env.reset(task_id="archive-old-reports")
        env.step(_fs("write", path="scratch.txt", content="before the fork"))
        assert env.step(_fs("move", source="report-2022.csv", destination="archive/report-2022.csv")).reward == 0.5
        pool, replica = pool_for(url), env.unwrapped.replica
        assert replica.episodes == 1
        left, right = env.fork(2)
        assert [f.unwrapped.replica for f in (left, right)] == [replica, replica]
        assert replica.episodes == 3  # the forks count in the replica's load
        assert left.unwrapped.remote.connection is env.unwrapped.remote.connection  # one connection
        original = env.state()
        for forked in (left, right):
            state = forked.state()
            assert state.episode_id != original.episode_id
            assert (state.step_count, state.cumulative_reward, state.task_id, state.seed) == (
                2,
                0.5,
                original.task_id,
                original.seed,
            )
            assert _text(forked.step(_fs("read", path="scratch.txt"))) == "before the fork"
        done = left.step(_fs("move", source="report-2023.csv", destination="archive/report-2023.csv"))
        assert (done.reward, done.done, left.state().cumulative_reward) == (0.5, True, 1.0)
        for other in (env, right):  # the move in one fork is in neither the original nor the other fork
            assert "report-2023.csv" in _text(other.step(_fs("list", path=".")))
            assert other.state().cumulative_reward == 0.5 and not other.state().done
        # an agent key (in the fork's MCP address) cannot fork, even with the pool's cluster token
        agent_key = right.unwrapped.mcp_url.split("/")[-2]
        fork_url = f"{replica.url}/episodes/{right.unwrapped.episode_id}/fork"
        for headers, body in [
            ({"Authorization": f"Bearer {pool.token}"}, {"episode_key": agent_key}),
            ({"Authorization": f"Bearer {pool.token}", EPISODE_KEY_HEADER: agent_key}, {}),
            ({EPISODE_KEY_HEADER: agent_key}, {"episode_key": agent_key}),
        ]:
            refused = httpx.post(fork_url, json=body, headers=headers, timeout=30)
            assert refused.status_code in (401, 404), refused.text
        assert ray.get(replica.actor.ping.remote(), timeout=30) == 3  # no fork was made
        trainer = {"Authorization": f"Bearer {pool.token}", EPISODE_KEY_HEADER: right.unwrapped.remote.episode_key}
        made = httpx.post(fork_url, json={}, headers=trainer, timeout=30)  # the trainer key on the same route does
        assert made.status_code == 201, made.text
        (extra,) = made.json()["forks"]
        extra_key = {"Authorization": f"Bearer {pool.token}", EPISODE_KEY_HEADER: extra["episode_key"]}
        assert httpx.delete(f"{replica.url}/episodes/{extra['episode_id']}", headers=extra_key, timeout=30).is_success
        assert ray.get(replica.actor.ping.remote(), timeout=30) == 3
        left.close()
        right.close()
        assert replica.episodes == 1

        venv = env.run_async(pool.vector, 2, task_ids=["archive-old-reports"] * 2)
        for i, episode in enumerate(venv.envs):
            env.run_async(episode.step, _fs("write", path="who.txt", content=f"episode {i}"))
        forked_venv = env.run_async(venv.fork, 2)
        assert forked_venv.num_envs == 4 and replica.episodes == 7
        reads = env.run_async(forked_venv.step, [_fs("read", path="who.txt")] * 4)
        assert [_text(o) for o in reads] == ["episode 0", "episode 0", "episode 1", "episode 1"]
        assert [s.step_count for s in env.run_async(forked_venv.state)] == [2, 2, 2, 2]
        env.run_async(forked_venv.close)
        assert [s.step_count for s in env.run_async(venv.state)] == [1, 1]  # the originals go on unchanged
        (orphan,) = env.run_async(venv.envs[0].fork)
        (grandchild,) = env.run_async(orphan.fork)  # a fork of a fork: the same connection
        assert replica.episodes == 5
        env.run_async(venv.close)  # closing an original's connection ends its forks (and theirs)
        assert replica.episodes == 1
        deadline = time.monotonic() + 15  # the replica closes a connection's episodes once it sees it close
        while ray.get(replica.actor.ping.remote(), timeout=30) != 1:
            assert time.monotonic() < deadline, "the replica kept the forks of a closed connection"
            time.sleep(0.1)
        for ended in (orphan, grandchild):
            with pytest.raises(ResetNeeded):
                env.run_async(ended.step, _fs("read", path="who.txt"))
            env.run_async(ended.close)
        assert replica.episodes == 1  # each ended fork was uncounted once
    finally:
        env.close()
        openenv_mcp.ray.shutdown()


def test_a_vector_fork_that_fails_on_one_episode_closes_the_forks_it_made_and_names_the_episode():
    from openenv_mcp.ray import PoolVectorEnv

    closed: list[str] = []

    class Forked:
        def __init__(self, name: str) -> None:
            self.name = name

        async def close(self) -> None:
            closed.append(self.name)

    class Original:
        def __init__(self, i: int) -> None:
            self.i = i

        async def fork(self, n: int, strategy=None) -> list[Forked]:
            if self.i == 1:
                raise EpisodeLost("its replica is gone")
            return [Forked(f"{self.i}.{k}") for k in range(n)]

    venv = PoolVectorEnv.__new__(PoolVectorEnv)
    venv.num_envs, venv.envs = 3, [Original(i) for i in range(3)]
    with pytest.raises(EpisodeLost, match=r"^episode 1: its replica is gone$"):
        asyncio.run(venv.fork(2))
    assert sorted(closed) == ["0.0", "0.1", "2.0", "2.1"]  # no half vector is left open


def test_front_door_serves_both_faces_and_routes_each_episode_to_its_replica(cluster, door):
    health = httpx.get(door.url + "/health").json()
    assert {r["node_id"] for r in health["replicas"]} == {cluster.node_with("node_a"), cluster.node_with("node_b")}

    async def main():
        async with AsyncVectorEnv(door.url, num_envs=4, token=TOKEN) as venv:
            await venv.reset(seeds=range(4))
            assert [_text(o) for o in await venv.step([ECHO] * 4)] == ["hello"] * 4
            assert all(u.startswith(door.url + "/episodes/") for u in venv.mcp_urls)
            assert await _mcp_tools(venv.mcp_urls[0]) == ["echo"]  # no token: the agent key is the credential
            assert [s.step_count for s in await venv.state()] == [2, 1, 1, 1]

    asyncio.run(main())


def test_hostile_agent_key_for_an_episode_on_one_replica_opens_nothing_on_another(door):
    url = door.url

    async def main():
        async with AsyncVectorEnv(url, num_envs=2, token=TOKEN) as venv:
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
                r = await http.post(f"{replica_url}/episodes", json={}, headers={"Authorization": f"Bearer {TOKEN}"})
                assert r.status_code == 401
            # the episode still answers its own agent
            assert await _mcp_tools(venv.mcp_urls[0]) == ["echo"]

    asyncio.run(main())


ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def _opened(response: httpx.Response) -> bool:
    """Whether a response gave the caller anything: a 2xx, or a redirect (a route matched)."""
    return response.status_code < 400


async def _refused_ws(url: str, headers: dict[str, str]) -> bool:
    try:
        async with connect(url, additional_headers=headers, open_timeout=30) as ws:
            await ws.send(json.dumps({"id": 1, "op": "create"}))
            reply = json.loads(await ws.recv())
            return "error" in reply
    except Exception:  # noqa: BLE001 - a refused handshake, in whichever form the client reports it
        return True


def test_an_agent_address_through_the_front_door_opens_no_control_route_and_no_other_replicas_episode(door):
    """The agent of one episode holds only its MCP address and the replica URLs ``/health`` lists. Through the
    front door and on both replicas it tries every control route (the WebSocket control plane, the HTTP
    control routes, OpenEnv's ``/reset``/``/step``/``/state``, ``/metrics``), the other replica's episode
    (by id, by ``_meta``, its own key in every place a key goes), and addresses whose key segment smuggles a
    path (``..``, ``?``, ``#``, percent-encoded): nothing opens, the other episode is untouched."""
    url = door.url

    async def main():
        async with AsyncVectorEnv(url, num_envs=2, token=TOKEN) as venv:
            await venv.reset(seeds=[1, 2])
            await venv.step([ECHO, ECHO])
            async with httpx.AsyncClient(timeout=30) as http:
                replicas = (await http.get(url + "/health")).json()["replicas"]
                assert sorted(r["episodes"] for r in replicas) == [1, 1]  # one episode on each replica
                (id_a, key_a), (id_b, _) = [u.split("/episodes/", 1)[1].split("/")[:2] for u in venv.mcp_urls]
                forms = [
                    {"Authorization": f"Bearer {key_a}"},
                    {EPISODE_KEY_HEADER: key_a},
                    {"Authorization": f"Bearer {key_a}", EPISODE_KEY_HEADER: key_a},
                ]
                routes = [
                    ("POST", "/episodes", {}),
                    ("GET", "/episodes", None),
                    *[
                        (m, f"/episodes/{i}{r}", b)
                        for i in (id_a, id_b)
                        for m, r, b in [
                            ("POST", "/step", {"action": ECHO.model_dump(mode="json"), "episode_key": key_a}),
                            ("POST", "/reset", {"episode_key": key_a}),
                            ("POST", "/fork", {"episode_key": key_a}),
                            ("GET", "/state", None),
                            ("DELETE", "", None),
                        ]
                    ],  # fmt: skip
                    ("POST", "/reset", {}),
                    ("POST", "/step", {"action": ECHO.model_dump(mode="json")}),
                    ("GET", "/state", None),
                    ("GET", "/metrics", None),
                    ("POST", "/mcp", INIT),
                    ("POST", f"/episodes/{id_b}/mcp", INIT),
                    ("POST", f"/episodes/{id_b}/{key_a}/mcp", INIT),
                ]
                # the key segment of its own address smuggling a path to a control route of the replica
                for smuggled in ("..", ".", "step%3F", "state%3F", "reset%3F", "%3F", "%23", "%2E%2E", "..%3F"):
                    for target in (id_a, id_b):
                        routes.append(("POST", f"/episodes/{target}/{smuggled}/mcp", {"episode_key": key_a}))
                        routes.append(("GET", f"/episodes/{target}/{smuggled}/mcp", None))
                opened = []
                for base in [url, *[r["url"] for r in replicas]]:
                    for method, path, body in routes:
                        for headers in [{}, *forms]:
                            r = await http.request(
                                method, base + path, json=body, headers={**ACCEPT, **headers}, follow_redirects=False
                            )
                            if _opened(r):
                                opened.append(
                                    f"{method} {base}{path} {sorted(headers)} -> {r.status_code} {r.text[:120]}"
                                )
                    for headers in [{}, *forms]:
                        ws = base.replace("http://", "ws://") + "/ws"
                        if not await _refused_ws(ws, headers):
                            opened.append(f"WS {ws} {sorted(headers)} created an episode")
                assert opened == []
                trainer = {"Authorization": f"Bearer {TOKEN}"}  # what does open the control plane
                assert not await _refused_ws(url.replace("http://", "ws://") + "/ws", trainer)
                # its own address, naming the other episode in _meta: refused
                own = f"{url}/episodes/{id_a}/{key_a}/mcp"
                r = await http.post(own, json=INIT, headers=ACCEPT)
                assert r.status_code == 200, r.text
                session = {"mcp-session-id": r.headers["mcp-session-id"]} if "mcp-session-id" in r.headers else {}
                call = {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {
                        "name": "echo",
                        "arguments": {"text": "x"},
                        "_meta": {"openenv/episode": id_b, "openenv/episode_key": key_a},
                    },
                }
                r = await http.post(own, json=call, headers={**ACCEPT, **session})
                assert '"isError":false' not in r.text.replace(" ", ""), r.text
            # the other episode is untouched, and both still answer their trainer
            states = await venv.state()
            assert [s.step_count for s in states] == [1, 1]
            assert [o.result.content[0].text for o in await venv.step([ECHO, ECHO])] == ["hello", "hello"]

    asyncio.run(main())


def test_a_node_killed_mid_episode_fails_its_episodes_with_episode_lost_and_is_replaced(cluster, door):
    node_a, node_b = cluster.node_with("node_a"), cluster.node_with("node_b")

    async def main():
        async with (
            _pool(num_replicas=2, num_cpus=0.25) as pool,
            AsyncVectorEnv(door.url, num_envs=2, token=TOKEN) as door_venv,
        ):
            venv = await pool.vector(4, seeds=range(4))
            await door_venv.reset(seeds=[1, 2])
            door_nodes = {r["node_id"] for r in httpx.get(door.url + "/health").json()["replicas"]}
            assert door_nodes == {node_a, node_b}
            try:
                await venv.step([ECHO] * 4)
                on_a = [e for e in venv.envs if e.replica.node_id == node_a]
                on_b = [e for e in venv.envs if e.replica.node_id == node_b]
                assert on_a and on_b
                lost_id = on_a[0].episode_id
                door_urls = list(door_venv.mcp_urls)  # one of them is on A: seen below

                cluster.kill("a")  # mid-episode: the raylet, its workers and the replicas' servers die at once

                # new episodes right away, before anything noticed: they start on the live node (least
                # loaded first: of two new episodes, one is sent to A first and must go to B instead)
                started = time.monotonic()
                async with AsyncVectorEnv(door.url, num_envs=2, token=TOKEN) as again:
                    await again.reset(seeds=[8, 9])
                    assert [_text(o) for o in await again.step([ECHO] * 2)] == ["hello"] * 2
                    assert await _mcp_tools(again.mcp_urls[0]) == ["echo"]  # attachable, on a live replica
                for _ in range(2):  # new MCP sessions at the front door's /mcp (a trainer's token) too
                    r = httpx.post(
                        door.url + "/mcp",
                        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": _INIT},
                        headers={"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"},
                        timeout=30,
                    )
                    assert r.status_code == 200, r.text
                fresh = await pool.vector(2, seeds=[5, 6])
                assert {e.replica.node_id for e in fresh.envs} == {node_b}
                assert [_text(o) for o in await fresh.step([ECHO] * 2)] == ["hello"] * 2
                assert time.monotonic() - started < 30

                # the episodes on A fail with EpisodeLost, promptly (never a hang)
                started = time.monotonic()
                with pytest.raises(EpisodeLost) as caught:
                    await on_a[0].step(ECHO)
                assert time.monotonic() - started < 10
                message = str(caught.value)
                assert message.startswith(f"episode {lost_id} was lost: its replica at ")
                assert f"(Ray node {node_a})" in message
                assert message.endswith("start a new episode (reset()) to continue on a healthy replica")
                # through the front door: the episode on A fails with episode_lost, the one on B answers
                started = time.monotonic()
                results = await door_venv.step([ECHO, ECHO], return_exceptions=True)
                assert time.monotonic() - started < 10
                lost = [r for r in results if isinstance(r, Exception)]
                assert len(lost) == 1 and isinstance(lost[0], EpisodeLost), results
                assert "was lost: its replica at " in str(lost[0]) and f"(Ray node {node_a})" in str(lost[0])
                assert [_text(r) for r in results if not isinstance(r, Exception)] == ["hello"]
                # the lost episode's MCP address answers episode_lost (HTTP 502) at once; the live one answers
                lost_url = door_urls[results.index(lost[0])]
                live_url = door_urls[1 - results.index(lost[0])]
                async with httpx.AsyncClient(timeout=10) as http:
                    r = await http.post(
                        lost_url,
                        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                        headers={"Accept": "application/json, text/event-stream"},
                    )
                assert r.status_code == 502 and r.json()["error"]["code"] == "episode_lost", r.text
                assert r.json()["error"]["message"].startswith(f"episode {lost_url.split('/')[-3]} was lost")
                async with httpx.AsyncClient(timeout=10) as http:  # another key learns nothing of it
                    forged = lost_url.rsplit("/", 2)[0] + "/" + "x" * 43 + "/mcp"
                    r = await http.post(forged, json={}, headers={"Accept": "application/json, text/event-stream"})
                assert r.status_code == 401, r.text
                assert await _mcp_tools(live_url) == ["echo"]
                # the episodes on the healthy node carry on
                assert [_text(await e.step(ECHO)) for e in on_b] == ["hello"] * len(on_b)

                # the lost replicas are replaced (on the node that is left), in the pool and behind the door
                await pool.wait_for_replicas(2, timeout=60)
                assert pool.replaced >= 1
                assert {r.node_id for r in pool.live()} == {node_b}
                deadline = time.monotonic() + 60
                while len(httpx.get(door.url + "/health").json()["replicas"]) < 2:
                    assert time.monotonic() < deadline, "the front door did not replace its lost replica"
                    await asyncio.sleep(0.2)
                assert {r["node_id"] for r in httpx.get(door.url + "/health").json()["replicas"]} == {node_b}
                # the lost episode's slot starts over on a healthy replica
                await on_a[0].reset(seed=3)
                assert on_a[0].replica.node_id == node_b
                await fresh.close()
            finally:
                await venv.close()

    asyncio.run(main())
    assert cluster.leftovers("a") == []  # nothing of worker A survived its node


def test_nothing_the_module_started_is_left_behind(cluster, door):
    """Stopping the front door and the cluster ends every process they started: raylets, GCS, Ray
    workers, the replicas' environment servers, the front door."""
    pids = [int(line.split(":", 1)[0]) for line in cluster.leftovers() + door.leftovers()]
    assert pids  # they were running
    door.stop()
    assert door.leftovers() == []
    ray.shutdown()
    assert cluster.stop() == []  # nothing escaped its node's processes or outlived its raylet
    assert cluster.leftovers() == []
    assert _gone(pids, timeout=0) == []

"""No episode without a credential: who reaches which route of ``openenv-mcp serve``, with and without --token.

The untrusted party is a real process that is not the trainer: the system Python as uid 65534
(``setpriv``), or as root inside a bubblewrap sandbox that shares the network (its own mount
namespace). It runs ``tests/support/untrusted_client.py`` (stdlib only). The trainer is this test
process, or a process of its own uid, with no argument: the same-machine paths docs/security.md
promises.
"""

from __future__ import annotations

import json
import os
import shutil
import socket

import anyio
import httpx
import pytest

import openenv_mcp
from openenv_mcp.cli.app import build_parser
from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.serve.peer import PeerJudge, loopback, socket_owner
from openenv_mcp.testing import need, running_server, serving

from support import ROOT

pytestmark = pytest.mark.anyio
WHO = [pytest.param("other-uid"), pytest.param("sandboxed", marks=pytest.mark.sandbox)]

CLIENT = (ROOT / "tests" / "support" / "untrusted_client.py").read_text()
SYSTEM_PYTHON = "/usr/bin/python3"
CONTROL_PROBES = [
    ("POST", "/episodes", {}),
    ("GET", "/episodes", None),
    ("POST", "/reset", {}),
    ("POST", "/step", {"action": {"type": "list_tools"}}),
    ("GET", "/state", None),
    ("GET", "/metrics", None),
]


def untrusted(how: str):
    """The command prefix that starts a process which is not the trainer."""
    need(os.path.exists(SYSTEM_PYTHON), f"{SYSTEM_PYTHON} (the system Python) runs the untrusted client")
    if how == "other-uid":
        need(os.geteuid() == 0 and shutil.which("setpriv") is not None, "run as root with setpriv (util-linux)")
        return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SYSTEM_PYTHON]
    need(shutil.which("bwrap") is not None, "install bubblewrap (apt-get install bubblewrap)")
    return ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--", SYSTEM_PYTHON]


async def probe(how: str, url: str, probes: list[dict]) -> list[dict]:
    """Run the probes from an untrusted process; their results."""
    done = await anyio.run_process([*untrusted(how), "-c", CLIENT, url, json.dumps(probes)], check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return json.loads(done.stdout)


def episode_probes(episode_id: str, headers: dict[str, str] | None = None) -> list[dict]:
    """Every control route an agent knowing its episode's id might try, plus the WebSocket."""
    probes = [{"do": "http", "method": m, "path": p, "body": b, "headers": headers} for m, p, b in CONTROL_PROBES]
    for method, tail in [("POST", "/reset"), ("POST", "/step"), ("POST", "/fork"), ("GET", "/state"), ("DELETE", "")]:
        probes.append(
            {"do": "http", "method": method, "path": f"/episodes/{episode_id}{tail}", "body": {}, "headers": headers}
        )
    openenv_create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    probes.append({"do": "http", "method": "POST", "path": "/mcp", "body": openenv_create, "headers": headers})
    probes.append({"do": "ws", "path": "/ws"})
    return probes


def echo_app(**options):
    return create_app(load_environment("echo"), **options)


@pytest.mark.parametrize("how", WHO)
async def test_an_agent_address_holder_cannot_create_episodes_or_reach_the_control_plane_without_a_token(how):
    app = echo_app(max_episodes=8)
    manager = app.state.manager
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as trainer:
        created = await trainer.post("/episodes", json={})  # the trainer: this process, no argument
        assert created.status_code == 201, created.text
        episode = created.json()
        agent = episode["mcp_path"]
        probes = [
            *episode_probes(episode["episode_id"]),
            {"do": "init", "path": agent},
            {"do": "list", "path": agent, "of": len(CONTROL_PROBES) + 7},
        ]
        results = await probe(how, url, probes)
        control, (ws, init, listed) = results[:-3], results[-3:]
        for sent, got in zip(probes, control, strict=False):
            assert got["status"] == 403, (sent, got)
            assert "untrusted_peer" in json.dumps(got["body"]) and "--token" in json.dumps(got["body"]), got
        assert ws["status"] == 403  # the WebSocket handshake is refused before accept
        assert init["status"] == 200 and init["session"]  # its own MCP address still works
        assert [t["name"] for t in listed["body"]["result"]["tools"]] == ["echo"]
        assert manager.ids() == [episode["episode_id"]]  # nothing created, nothing closed
        mine = {"OpenEnv-Episode-Key": episode["episode_key"]}
        assert (await trainer.get(f"/episodes/{episode['episode_id']}/state", headers=mine)).status_code == 200


@pytest.mark.sandbox
async def test_bare_mcp_episodes_stop_at_their_cap_while_the_trainer_still_creates_episodes():
    app = echo_app(max_episodes=4, max_mcp_episodes=2)
    manager = app.state.manager
    async with serving(app) as url:
        probes = [{"do": "init", "path": "/mcp"} for _ in range(3)]
        probes += [{"do": "list", "path": "/mcp", "of": i} for i in range(2)]
        results = await probe("sandboxed", url, probes)
        first, second, third, *lists = results
        assert first["status"] == second["status"] == 200
        assert all([t["name"] for t in r["body"]["result"]["tools"]] == ["echo"] for r in lists)
        assert third["status"] == 429 and third["body"]["error"]["data"]["code"] == "session_limit"
        assert "(--max-mcp-episodes)" in third["body"]["error"]["message"]
        assert len(manager) == 2
        env = await anyio.to_thread.run_sync(openenv_mcp.make, url)  # the trainer's documented path
        try:
            obs = await anyio.to_thread.run_sync(env.reset)
            assert [t.name for t in obs.tools] == ["echo"]
            async with httpx.AsyncClient(base_url=url, timeout=60) as trainer:
                assert (await trainer.post("/episodes", json={})).status_code == 201  # the trainer's fourth
                full = await trainer.post("/episodes", json={})
                assert full.status_code == 503 and "(--max-episodes)" in full.json()["error"]["message"]
        finally:
            await anyio.to_thread.run_sync(env.close)


async def test_an_agent_cannot_hold_more_sessions_on_its_address_than_the_cap_and_ending_one_frees_a_place():
    app = echo_app(max_sessions_per_episode=2)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as trainer:
        agent = (await trainer.post("/episodes", json={})).json()["mcp_path"]
        refused = {"do": "http", "method": "POST", "path": agent, "body": {"jsonrpc": "2.0", "id": 1, "method": "nope"}}
        probes = [refused, refused] + [{"do": "init", "path": agent} for _ in range(3)]
        probes += [{"do": "end", "path": agent, "of": 2}, {"do": "init", "path": agent}]
        bad, worse, first, second, third, ended, again = await probe("other-uid", url, probes)
        assert bad["status"] == worse["status"] == 400  # refused openings keep no place: two inits still fit
        assert first["status"] == second["status"] == 200
        assert third["status"] == 429 and "(--max-sessions-per-episode)" in third["body"]["error"]["message"]
        assert ended["status"] == 200
        assert again["status"] == 200 and again["session"]


@pytest.mark.parametrize("how", WHO)
async def test_with_a_token_an_agent_address_holder_reaches_only_its_episode_and_its_session_cap_holds(how):
    app = echo_app(token="s3cret", max_sessions_per_episode=1)
    auth = {"Authorization": "Bearer s3cret"}
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60, headers=auth) as trainer:
        episode = (await trainer.post("/episodes", json={})).json()
        agent = episode["mcp_path"]
        probes = [*episode_probes(episode["episode_id"]), {"do": "init", "path": "/mcp"}]
        probes += [{"do": "init", "path": agent}, {"do": "init", "path": agent}]
        results = await probe(how, url, probes)
        refused, (ws, bare, init, more) = results[:-4], results[-4:]
        assert all(r["status"] == 401 and "bearer token" in json.dumps(r["body"]) for r in refused), refused
        assert ws["status"] == 403 and bare["status"] == 401
        assert init["status"] == 200 and more["status"] == 429
        assert app.state.manager.ids() == [episode["episode_id"]]
        async with httpx.AsyncClient(base_url=url, timeout=60) as same_uid_without_token:
            assert (await same_uid_without_token.post("/episodes", json={})).status_code == 401  # the token rules


@pytest.mark.sandbox
def test_serve_without_token_trusts_another_process_of_its_uid_and_refuses_a_sandboxed_one():
    with running_server("echo", "--max-mcp-episodes", "1", "--max-sessions-per-episode", "1") as url:
        with openenv_mcp.make(url) as env:  # the server is another process of this uid: trusted
            assert [t.name for t in env.reset(seed=1).tools] == ["echo"]
            created = httpx.post(url + "/episodes", json={}, timeout=60).json()
        probes = [
            *episode_probes(created["episode_id"]),
            {"do": "init", "path": "/mcp"},
            {"do": "init", "path": "/mcp"},
        ]
        results = anyio.run(probe, "sandboxed", url, probes)
        assert all(r["status"] == 403 for r in results[:-2]), results[:-2]  # the control routes and /ws
        assert results[-2]["status"] == 200 and results[-1]["status"] == 429
        assert "(--max-mcp-episodes)" in results[-1]["body"]["error"]["message"]


def test_serve_help_names_the_credential_and_the_caps(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--token", "--max-mcp-episodes", "--max-sessions-per-episode", "own user (or root)"):
        assert flag in text, flag


def test_the_peer_judge_finds_the_socket_owner_of_a_loopback_connection_in_both_address_families():
    assert loopback("127.0.0.5") and loopback("::1") and loopback("::ffff:127.0.0.1")
    assert not loopback("10.0.0.1") and not loopback("testclient")
    for family, host in [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")]:
        try:
            server = socket.socket(family)
            server.bind((host, 0))
        except OSError:
            continue  # no IPv6 loopback on this host
        with server:
            server.listen()
            with socket.create_connection(server.getsockname()[:2]) as client:
                accepted, peer = server.accept()
                with accepted:
                    found = socket_owner(peer[:2], server.getsockname()[:2])
                    assert found == (os.geteuid(), os.fstat(client.fileno()).st_ino)
                    assert PeerJudge().owner(peer[:2], server.getsockname()[:2]) == found
    assert PeerJudge().owner(("10.1.2.3", 5000), ("127.0.0.1", 80)) is None  # not loopback: never trusted

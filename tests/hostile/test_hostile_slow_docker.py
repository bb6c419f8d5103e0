"""The Docker engine turns slow (every API request answered a second late: a proxy on the engine's socket,
as when dockerd is overloaded) while episodes run: closing them, closing them while they are still
starting, and an environment server that exits right after closing, still remove every container they
started (found by label), within a bounded time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import EnvSpec, ToolServerSpec

from support import ROOT, need_docker, replay_size
from support.containment import FIXTURE, call

pytestmark = pytest.mark.docker

ENGINE = "/var/run/docker.sock"
DELAY = 1.0
"""Seconds the proxy holds each API request before passing it on."""
_METHODS = (b"GET ", b"POST ", b"PUT ", b"DELETE ", b"HEAD ")


class SlowEngine:
    """A unix socket in front of the engine's that delays each HTTP request (not the attached streams)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.folder = tempfile.mkdtemp(prefix="oem-slow-", dir="/tmp")
        self.path = os.path.join(self.folder, "docker.sock")
        self.requests = 0
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(128)
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"unix://{self.path}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            engine.connect(ENGINE)
            threading.Thread(target=self._pipe, args=(client, engine, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(engine, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket, delayed: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if delayed and chunk.startswith(_METHODS):
                    self.requests += 1
                    time.sleep(self.delay)
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, target):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._server.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="module")
def slow_engine() -> Iterator[SlowEngine]:
    need_docker("tools")
    engine = SlowEngine(DELAY)
    saved = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = engine.address
    try:
        yield engine
    finally:
        if saved is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = saved
        engine.close()


def _ours(marker: str) -> list[str]:
    """Containers (any state) whose command carries ``marker``, asked of the engine directly (not slowed)."""
    out = subprocess.run(
        ["docker", "-H", f"unix://{ENGINE}", "ps", "-aq", "--no-trunc", "--filter", "label=openenv-mcp=1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not out:
        return []
    inspected = subprocess.run(
        ["docker", "-H", f"unix://{ENGINE}", "inspect", "--format", "{{.Id}} {{json .Config.Cmd}}", *out],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [line.split()[0] for line in inspected.splitlines() if marker in line]


def _left(marker: str, within: float) -> list[str]:
    deadline = time.monotonic() + within
    while (left := _ours(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def _spec(tmp_path: Path, marker: str) -> EnvSpec:
    seed = tmp_path / f"seed-{marker[-8:]}"
    seed.mkdir(exist_ok=True)
    shutil.copy(FIXTURE, seed / "hostile_server.py")
    server = ToolServerSpec(
        name="h",
        namespace="",
        isolation="docker",
        workspace=seed.name,
        command=["python3", "{workspace}/hostile_server.py", "--marker", marker],
    )
    return EnvSpec(name="slow-docker", max_steps=None, tool_servers=[server], base_dir=tmp_path)


REMOVED_WITHIN = 120.0
"""Seconds every container of closed episodes may take to go, with each API request a second late."""


def test_closing_episodes_under_a_slow_docker_engine_removes_every_container(tmp_path, slow_engine):
    from openenv_mcp.isolation.boundaries.docker import wait_removed

    marker = f"openenv-mcp-test-{uuid.uuid4().hex}"
    envs = [openenv_mcp.make(_spec(tmp_path, marker)) for _ in range(replay_size(1, 6))]
    try:
        for env in envs:
            env.reset(seed=0)
            assert call(env, "counter") == ("1", False)
        assert len(_ours(marker)) == len(envs)
    finally:
        started = time.monotonic()
        for env in envs:
            env.close()
        closed = time.monotonic() - started
    assert wait_removed(REMOVED_WITHIN)
    assert _left(marker, 5) == []
    assert closed < REMOVED_WITHIN


_EXITS_AFTER_CLOSE = """
import asyncio, sys, time
import openenv_mcp
from openenv_mcp import EnvSpec, ToolServerSpec
server = ToolServerSpec(name="h", namespace="", isolation="docker", workspace=sys.argv[2],
                        command=["python3", "{workspace}/hostile_server.py", "--marker", sys.argv[3]])
spec = EnvSpec(name="slow-docker", max_steps=None, tool_servers=[server], base_dir=sys.argv[1])

async def main():
    env = openenv_mcp.make_async(spec)
    starting = asyncio.ensure_future(env.reset(seed=0))
    await asyncio.sleep(float(sys.argv[4]))  # the container is being created, attached or started
    print("still starting" if not starting.done() else "started", flush=True)
    await env.close()
    starting.cancel()
    await asyncio.gather(starting, return_exceptions=True)
    print("closed", flush=True)

asyncio.run(main())
"""


AFTER = [2.5, 1.5, 3.5][: replay_size(1, 3)]
"""Seconds into the start the episode is closed (each engine request a second late: listing the containers
to reap, creating, attaching and starting this one take a second each)."""


@pytest.mark.parametrize("after", AFTER)
def test_a_server_closing_an_episode_that_is_still_starting_then_exiting_leaves_no_container(
    tmp_path, slow_engine, after
):
    marker = f"openenv-mcp-test-{uuid.uuid4().hex}"
    _spec(tmp_path, marker)  # the workspace seed
    seed = f"seed-{marker[-8:]}"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    done = subprocess.run(
        [sys.executable, "-c", _EXITS_AFTER_CLOSE, str(tmp_path), seed, marker, str(after)],
        capture_output=True,
        text=True,
        timeout=REMOVED_WITHIN + 60,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0] == "still starting", done.stdout  # closed mid-start, not after
    assert _left(marker, 10) == [], "a container of the closed episode outlived its environment server"


def test_the_slow_engine_is_slow(slow_engine):
    """The proxy really delays the engine's API (else the tests above prove nothing about a slow one)."""
    from openenv_mcp.isolation.containers.engine import docker_client

    before = slow_engine.requests
    started = time.monotonic()
    docker_client().ping()
    assert time.monotonic() - started >= DELAY
    assert slow_engine.requests > before

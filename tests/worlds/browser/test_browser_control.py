"""The state channel: only a process outside the applications' PID namespace is answered, and the
grader refuses any answer from another process than the one it seeded."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openenv_mcp.testing import need
from openenv_mcp.worlds.browser import CONTROL_SOCKET, WORLD_DIR
from openenv_mcp.worlds.browser.control import WorldClient, WorldTampered, WorldUnavailable

SERVER = """
import asyncio, sys
from openenv_mcp.worlds.browser.control import serve_control
async def main():
    async def handle(request):
        return {"ok": True, "state": {"who": sys.argv[2]}}
    server = await serve_control(sys.argv[1], handle)
    print("ready", flush=True)
    async with server:
        await asyncio.Event().wait()
asyncio.run(main())
"""


def start(folder: Path, name: str, *, own_pid_namespace: bool = True) -> subprocess.Popen[str]:
    argv = [sys.executable, "-c", SERVER, str(folder / WORLD_DIR / CONTROL_SOCKET), name]
    if own_pid_namespace:  # as the sandbox runs the applications: in a PID namespace of their own
        argv = ["unshare", "--pid", "--fork", "--kill-child", *argv]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    """Kill the server and its namespace's process (its own process group), and wait for it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)
    assert proc.stdout is not None
    proc.stdout.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    need(
        os.geteuid() == 0 and shutil.which("unshare") is not None,
        "needs root and unshare(1) (util-linux) for a PID namespace",
    )
    (tmp_path / WORLD_DIR).mkdir()
    return tmp_path


@pytest.mark.anyio
async def test_the_grader_reads_the_state_of_the_process_it_seeded(workspace: Path):
    proc = start(workspace, "first")
    try:
        client = WorldClient(workspace)
        await client.wait_ready(timeout=10)
        await client.seed({})
        assert await client.state() == {"who": "first"}
    finally:
        stop(proc)


@pytest.mark.anyio
async def test_a_replaced_process_is_refused_as_tampering(workspace: Path):
    proc = start(workspace, "first")
    client = WorldClient(workspace)
    await client.seed({})
    stop(proc)
    (workspace / WORLD_DIR / CONTROL_SOCKET).unlink()
    impostor = start(workspace, "impostor")  # the same path, another process: what an agent with code could do
    try:
        with pytest.raises(WorldTampered, match="not by the applications seeded at the start"):
            await client.state()
    finally:
        stop(impostor)


@pytest.mark.anyio
async def test_a_caller_inside_the_applications_pid_namespace_gets_no_answer(tmp_path: Path):
    (tmp_path / WORLD_DIR).mkdir()
    proc = start(tmp_path, "same-namespace", own_pid_namespace=False)  # the caller's pid is visible: refused
    try:
        with pytest.raises(WorldUnavailable, match="closed the state socket without an answer"):
            await WorldClient(tmp_path).seed({})
    finally:
        stop(proc)


@pytest.mark.anyio
async def test_state_before_any_seed_is_refused(workspace: Path):
    proc = start(workspace, "first")
    try:
        with pytest.raises(WorldTampered, match="never seeded"):
            await WorldClient(workspace).state()
    finally:
        stop(proc)


@pytest.mark.anyio
async def test_no_socket_is_a_clear_error(tmp_path: Path):
    (tmp_path / WORLD_DIR).mkdir()
    started = time.monotonic()
    with pytest.raises(WorldUnavailable, match="state socket in .* does not answer"):
        await WorldClient(tmp_path).wait_ready(timeout=0.2)
    assert time.monotonic() - started < 10

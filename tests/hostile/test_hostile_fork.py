"""The hostile agent against fork: it cannot make a fork share state with its original.

The agent runs code in the sandbox (the coding environment's shell and python servers behind
bubblewrap) and plants what could tie two worlds together: a hard link, a file the interpreter
holds open with a background thread that keeps writing to it after the call returned (the shell
server kills what a command leaves behind; a live interpreter does not), a FIFO, a socket. The
fork (by replay, as coding declares, and by snapshot) must hold none of it: its files are new
inodes, the parent's writer never reaches them, the fork's writes never reach the parent; a
socket refuses a snapshot with a clear error and the parent goes on.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.errors import ForkError

from support import need_boundaries


def spec_with(python_fork: str) -> EnvSpec:
    """The coding environment's shell and python servers (sandboxed); ``python_fork``: how the python
    server's interpreter forks (coding declares ``replay``; ``snapshot`` clones a live writer's files)."""

    def server(name: str, fork: str) -> ToolServerSpec:
        command = ["python", "-m", f"openenv_mcp.tool_servers.{name}", "--root", "{workspace}", "--lean"]
        return ToolServerSpec(name=name, command=command, isolation="sandbox", fork=fork)

    servers = [server("shell", "snapshot"), server("python", python_fork)]
    return EnvSpec(name="hostile-fork", max_steps=None, tool_servers=servers, base_dir=Path.cwd())


def run(env, name: str, **arguments) -> str:
    result = env.step(CallTool(name=name, arguments=arguments)).result
    assert not result.is_error, result
    return result.structured_content["stdout"]


def sh(env, command: str) -> str:
    return run(env, "shell_run", command=command)


def workspace(env) -> Path:
    return env.unwrapped.episode.workspace.path


def make(python_fork: str = "replay"):
    spec = spec_with(python_fork)
    need_boundaries(spec)
    env = openenv_mcp.make(spec)
    env.reset()
    return env


@pytest.fixture
def env():
    with make() as made:
        yield made


def size(path: Path) -> int:
    return path.stat().st_size


WRITER = """
import threading, time, uuid
token = uuid.uuid4().hex  # this world's writer: a fork's own writer (replay) writes another token
held = open("f.txt", "a", buffering=1)  # held open by the interpreter across calls
def write():
    while True:
        held.write(token + "\\n")
        time.sleep(0.05)
threading.Thread(target=write, daemon=True).start()
"""


@pytest.mark.parametrize("python_fork", ["snapshot", "replay"])
def test_hard_links_open_files_and_a_background_writer_never_reach_the_fork(python_fork):
    with make(python_fork) as env:
        sh(env, "echo base > f.txt && ln f.txt hard.txt && mkfifo pipe")
        run(env, "python_run", code=WRITER)
        parent = workspace(env)
        grown = size(parent / "f.txt")
        deadline = time.monotonic() + 10
        while size(parent / "f.txt") == grown and time.monotonic() < deadline:
            time.sleep(0.05)
        assert size(parent / "f.txt") > grown, "the planted writer is not running: the test proves nothing"
        (forked,) = env.fork(strategy=None)
        with forked:
            assert forked.unwrapped.episode.forked_from == (env.unwrapped.episode.id, 2)
            child = workspace(forked)
            assert (child / "f.txt").stat().st_ino == (child / "hard.txt").stat().st_ino  # a link inside the fork
            assert (child / "f.txt").stat().st_ino != (parent / "f.txt").stat().st_ino
            assert (parent / "f.txt").stat().st_nlink == 2  # no link across the two worlds
            assert (child / "pipe").is_fifo()
            parent_tokens = set((parent / "f.txt").read_text().split()[1:])
            time.sleep(0.5)
            later = set((parent / "f.txt").read_text().split()[1:])
            assert len((parent / "f.txt").read_text().split()) > len(parent_tokens)  # the writer goes on ...
            seen = set((child / "f.txt").read_text().split()[1:])
            if python_fork == "replay":  # the fork's own writer (the code re-run) writes its own token
                assert not seen & later, "the parent's writer reached the fork"
            else:  # a snapshot copies the files, not the interpreter: nothing writes in the fork
                assert seen <= parent_tokens and size(child / "f.txt") == size(child / "hard.txt")
                time.sleep(0.3)
                assert set((child / "f.txt").read_text().split()[1:]) == seen
            sh(forked, "echo from-the-fork >> hard.txt")
            assert "from-the-fork" in sh(forked, "cat f.txt")
            assert "from-the-fork" not in sh(env, "cat f.txt")


def test_a_socket_in_the_workspace_refuses_the_fork_and_the_parent_goes_on(env):
    with make("snapshot") as snapshot_env:  # every server snapshot: the clone meets the socket
        sh(snapshot_env, "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('agent.sock')\"")
        with pytest.raises(ForkError, match=r"cannot copy the socket agent\.sock"):
            snapshot_env.fork()
        assert sh(snapshot_env, "echo still here") == "still here\n"
    assert sh(env, "echo still here") == "still here\n"

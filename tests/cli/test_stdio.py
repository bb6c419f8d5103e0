"""``openenv-mcp stdio``: the front answers ``initialize`` before the environment is up, and nothing is lost.

A harness (Codex) sent ``initialize`` and did not wait the 1.2-2.6 s the environment took to start: its
first model request offered no tools. The gated environment below cannot start until the test opens
its gate, so an answer that arrives while the gate is closed was given without the environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support import ROOT

GATED_SERVER = """
import asyncio, os, sys, time
from pathlib import Path

gate = Path(os.environ["OPENENV_TEST_GATE"])
while not gate.exists():  # the environment cannot start before the test opens the gate
    time.sleep(0.05)

from openenv_mcp.tool_servers.lean import Reply, hints, serve

async def ping(arguments):
    return Reply("pong")

tool = {"name": "ping", "title": "Ping", "description": "Answer pong.", "annotations": hints("Ping", read_only=True,
        destructive=False, idempotent=True, open_world=False), "inputSchema": {"type": "object", "properties": {}}}
asyncio.run(serve({"name": "gated", "instructions": "Call `ping`."}, [tool], {"ping": ping}))
"""

NOISY_SERVER = """
from fastmcp import FastMCP

print("noise at import, on what was the wire")
server = FastMCP("noisy")

@server.tool
def shout() -> str:
    print("noise from a tool, on what was the wire")
    return "shouted"
"""

ENV_TOML = """
[env]
name = "gated"
description = "A gated world."

[[tool_servers]]
name = "gated"
command = ["{python}", "{{env_dir}}/gated.py"]
isolation = "process"
pass_env = ["OPENENV_TEST_GATE"]

[[tool_servers]]
name = "noisy"
object = "noisy:server"
"""

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


@pytest.fixture
def gate():
    """A file the gated server waits for, where the process boundary's episode uid can look (not tmp_path)."""
    folder = Path(tempfile.mkdtemp(prefix="openenv-test-gate-"))
    folder.chmod(0o755)
    try:
        yield folder / "open"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _env(tmp_path: Path) -> Path:
    folder = tmp_path / "gated"
    folder.mkdir()
    (folder / "gated.py").write_text(GATED_SERVER)
    (folder / "noisy.py").write_text(NOISY_SERVER)
    (folder / "env.toml").write_text(ENV_TOML.format(python=sys.executable))
    return folder


class Session:
    """``openenv-mcp stdio FOLDER`` as a harness starts it (the console script's entry point)."""

    def __init__(self, folder: Path, cache: Path, gate: Path) -> None:
        env = {**os.environ, "OPENENV_MCP_CACHE": str(cache), "OPENENV_TEST_GATE": str(gate)}
        code = "import sys; from openenv_mcp.cli import main; sys.exit(main())"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, "stdio", str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def receive(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the server closed its stdout; stderr: {self.stderr()}"
        return json.loads(line)  # a stray print on the wire would fail here

    def stderr(self) -> str:
        self.proc.kill()
        return self.proc.communicate(timeout=60)[1].decode(errors="replace")

    def close(self) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")


def _play(session: Session, gate: Path, *, open_gate_after_initialize: bool) -> tuple[dict, dict, dict]:
    if not open_gate_after_initialize:
        gate.touch()
    session.send(INITIALIZE)
    init = session.receive()
    gate.touch()
    session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    session.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    listed = session.receive()
    session.send(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "noisy_shout", "arguments": {}}}
    )
    called = session.receive()
    return init, listed, called


def test_initialize_is_answered_before_the_environment_starts_and_the_session_goes_on(tmp_path, gate):
    folder, cache = _env(tmp_path), tmp_path / "cache"
    first = Session(folder, cache, gate)
    init, listed, called = _play(first, gate, open_gate_after_initialize=False)  # answers once up, keeps it
    first_stderr = first.close()
    assert list(cache.glob("stdio/*.json")), first_stderr
    gate.unlink()

    second = Session(folder, cache, gate)
    early, listed_again, called_again = _play(second, gate, open_gate_after_initialize=True)
    second.close()
    assert early == init  # given while the gate was closed: the environment could not have started
    assert "Call `gated_ping`." in early["result"]["instructions"]
    assert [t["name"] for t in listed_again["result"]["tools"]] == ["gated_ping", "noisy_shout"]
    assert listed_again == listed
    assert called_again["id"] == 3 and called_again["result"]["content"][0]["text"] == "shouted"
    assert called == called_again
    assert "noise at import" in first_stderr  # stray output goes to stderr, never onto the wire


def test_a_broken_or_stale_cached_answer_is_replaced_by_the_real_one(tmp_path, gate):
    folder, cache = _env(tmp_path), tmp_path / "cache"
    gate.touch()
    first = Session(folder, cache, gate)
    init, _, _ = _play(first, gate, open_gate_after_initialize=False)
    first.close()
    (path,) = cache.glob("stdio/*.json")

    path.write_text("{not json")  # broken: ignored, the real server answers
    session = Session(folder, cache, gate)
    assert _play(session, gate, open_gate_after_initialize=False)[0] == init
    session.close()
    assert json.loads(path.read_text()) == init["result"]

    stale = {**init["result"], "instructions": "Use `list`."}  # a previous start's answer
    path.write_text(json.dumps(stale))
    session = Session(folder, cache, gate)
    assert _play(session, gate, open_gate_after_initialize=False)[0]["result"] == stale  # at most one start late
    session.close()
    assert json.loads(path.read_text()) == init["result"]

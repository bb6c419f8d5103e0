"""Peer server for the benchmarks: OpenEnv 0.10 serving an MCP echo environment.

Runs in the benchmark's own virtualenv (``.cache/bench-openenv``, OpenEnv from PyPI):
``python bench/_openenv_server.py PORT``. The environment is OpenEnv's ``MCPEnvironment``
around the same FastMCP tools (``bench/echo_env/tools.py``), written the way OpenEnv's own
MCP echo environment is: a sync ``reset``, tools called through ``step(CallToolAction)``.
Its WebSocket ``/ws`` takes ``{"type": "reset"|"step", "data": {...}}``, one episode per
connection.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from uuid import uuid4

import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State

MAX_SESSIONS = 100_000


def load_tools():
    path = Path(__file__).resolve().parent / "echo_env" / "tools.py"
    spec = importlib.util.spec_from_file_location("bench_echo_tools", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class EchoMCPEnvironment(MCPEnvironment):
    """OpenEnv MCP echo environment: one FastMCP server per episode, like OpenEnv's echo_env."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        tools = load_tools()
        super().__init__(tools.server)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(self, action, timeout_s=None, **kwargs) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": f"unknown action {type(action).__name__}"})

    async def step_async(self, action, timeout_s=None, **kwargs) -> Observation:
        self._state.step_count += 1
        return await super().step_async(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> State:
        return self._state


app = create_app(
    EchoMCPEnvironment, CallToolAction, CallToolObservation, env_name="bench_echo", max_concurrent_envs=MAX_SESSIONS
)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=8192)

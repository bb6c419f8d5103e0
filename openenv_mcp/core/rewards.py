"""Command rewards: ``reward = { command = [...] }`` in an env file, no Python needed.

The command runs after every step (and once at the start of an episode)
*inside the boundary of a tool server* (``server``, default: the first one):
same uid, limits and namespaces, the episode's workspace as its working
directory, ``{workspace}`` / ``{env_dir}`` expanded as in the server's command.
It gets ``OPENENV_TASK_ID``, ``OPENENV_TASK_JSON`` (the task as every face shows
it: **without** ``answer`` and the private ``data`` keys) and ``OPENENV_STEP``, and
prints the score on its last line of stdout: a number, or a JSON object
``{"score": 0.5, "done": false, "info": {...}}``.

Why the public task only: the command runs where agent code runs (same uid, same
PID namespace for ``process``), so agent code left running in the background can
read the command's environment, arguments and pipes (``/proc/PID/environ``), and
anything given to it is the agent's. A reward that needs the answer is a Python
reward (``reward = "module:function"``): it runs in the environment server, out of
the agent's reach, and can still inspect the workspace (``ctx.workspace``,
``ctx.call_tool``).

A command that exits non-zero, prints no number or runs past ``timeout`` is
an error of the environment (raised as :class:`OpenEnvError` with its stderr):
a reward must never fail silently.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from openenv_mcp.errors import ConfigError, OpenEnvError
from openenv_mcp.types import Score

__all__ = ["CommandReward", "RewardCommand"]


class RewardCommand(BaseModel):
    """The ``reward = { ... }`` table."""

    model_config = ConfigDict(extra="forbid")

    command: list[str]
    """Program and arguments; ``{workspace}`` and ``{env_dir}`` are expanded."""
    server: str | None = None
    """Name of the tool server whose boundary runs it (default: the first)."""
    timeout: float = 30.0
    """Seconds the command may take."""


class CommandReward:
    """A reward function that runs a :class:`RewardCommand` in the episode's boundary."""

    def __init__(self, table: dict[str, Any], server_names: list[str], env_name: str) -> None:
        try:
            self.config = RewardCommand.model_validate(table)
        except ValidationError as e:
            raise ConfigError(
                f"{env_name}: invalid reward table: {e.errors()[0]['msg']} at {e.errors()[0]['loc']}"
            ) from e
        if not self.config.command:
            raise ConfigError(f"{env_name}: reward.command is empty")
        if self.config.server is not None and self.config.server not in server_names:
            raise ConfigError(
                f"{env_name}: reward.server {self.config.server!r} is not a tool server "
                f"(known: {', '.join(server_names)})"
            )
        self.server = self.config.server or server_names[0]

    async def __call__(self, ctx: Any) -> float | Score:
        episode = ctx.episode
        conn = next(c for c in episode.connections if c.spec.name == self.server)
        public = episode.public_task  # never the grader-only fields: agent code can read this process
        env = {
            "OPENENV_TASK_ID": public.id,
            "OPENENV_TASK_JSON": public.model_dump_json(),
            "OPENENV_STEP": str(ctx.step),
        }
        code, out, err = await conn.run_command(list(self.config.command), env, self.config.timeout)
        shown = " ".join(self.config.command)
        if code != 0:
            raise OpenEnvError(f"reward command `{shown}` exited with code {code}; stderr: {err.strip()[-500:]}")
        lines = [line.strip() for line in out.splitlines() if line.strip()]
        last = lines[-1] if lines else ""
        try:
            value = json.loads(last)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
            value = None
        if isinstance(value, bool) or not isinstance(value, (int, float, dict)):
            printed = last if len(last) <= 100 else f"{last[:100]}... ({len(last)} characters)"
            raise OpenEnvError(
                f'reward command `{shown}` printed {printed!r} last, expected a number or {{"score": ..., "done": ...}}'
            )
        if isinstance(value, dict):
            try:
                return Score.model_validate(value)
            except ValidationError as e:
                raise OpenEnvError(
                    f"reward command `{shown}` printed an invalid score object: {e.errors()[0]['msg']}"
                ) from e
        return float(value)

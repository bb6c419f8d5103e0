"""A loaded environment: its spec resolved, ready to create episodes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..types import CallTool, Task, action_from_json
from .episode import Episode
from .spec import EnvSpec, ToolServerSpec, load_module, load_object
from .tasks import TaskSet, load_tasks
from .warm import WarmPool, World

__all__ = ["Environment"]


class Environment:
    """An environment definition, loaded once and shared by its episodes.

    Args:
        spec: the environment's definition.
        mode: ``sim`` (rewards, episodes) or ``prod`` (tools only, production
            variants of the tool servers, no reward).
        call_timeout: overrides every tool server's per-call time limit.
        max_steps: overrides the spec's step budget (``0`` for none).
        workdir: where episode workspaces are created (default: the temp dir,
            or ``$OPENENV_MCP_WORKDIR``).
        warm_pool: pre-started worlds kept ready for fast resets (overrides
            the spec's ``warm_pool``; see :mod:`openenv_mcp.core.warm`).
    """

    def __init__(self, spec: EnvSpec, *, mode: str = "sim", call_timeout: float | None = None,
                 max_steps: int | None = None, workdir: Path | None = None, warm_pool: int | None = None) -> None:
        if mode not in ("sim", "prod"):
            raise ConfigError(f"mode must be 'sim' or 'prod', got {mode!r}")
        self.spec = spec
        self.mode = mode
        self.call_timeout = call_timeout
        self.max_steps = spec.max_steps if max_steps is None else (max_steps or None)
        if mode == "prod":
            self.max_steps = None
        self.workdir = workdir
        self.servers: list[ToolServerSpec] = [s.variant(mode) for s in spec.tool_servers]
        self.tasks = TaskSet(load_tasks(spec.tasks, spec.base_dir))
        self.private_fields = frozenset(spec.private_task_fields)
        """Grader-only ``data`` keys of every task (never shown on any face)."""
        reward = spec.reward
        if isinstance(reward, str):
            reward = load_object(reward, spec.base_dir)
        elif isinstance(reward, dict):  # reward = { command = [...] }: run inside a boundary
            from .rewards import CommandReward

            reward = CommandReward(reward, [s.name for s in spec.tool_servers], spec.name)
        if reward is not None and not callable(reward):
            raise ConfigError(f"{spec.name}: reward must be 'module:function' or a callable, got {reward!r}")
        self.reward_fn: Callable[..., Any] | None = reward
        self.warm_pool_size = getattr(spec, "warm_pool", 0) if warm_pool is None else warm_pool
        self._pool: WarmPool | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def server_env(self, server: ToolServerSpec) -> dict[str, str]:
        """Variables a tool server gets: declared ones only, nothing else from the host."""
        env = {k: os.environ[k] for k in server.pass_env if k in os.environ}
        env.update(server.env)
        return env

    def warm_world(self, task: Task) -> World | None:
        """A pre-started world from the warm pool (``None``: start one cold)."""
        if self.warm_pool_size <= 0:
            return None
        if self._pool is None:
            self._pool = WarmPool(self, self.warm_pool_size)
        return self._pool.take(task)

    async def warm_up(self, timeout: float = 60) -> bool:
        """Fill the warm pool now and wait for it (``False`` if it could not)."""
        if self.warm_pool_size <= 0:
            return False
        if self._pool is None:
            self._pool = WarmPool(self, self.warm_pool_size)
        return await self._pool.wait_ready(timeout)

    async def aclose(self) -> None:
        """Stop the warm pool's servers (episodes are closed by their owners)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def new_episode(self, seed: int | None = None, task_id: str | None = None,
                          episode_id: str | None = None) -> Episode:
        """Create and start an episode (its own workspace and tool servers)."""
        task, seed = self.tasks.pick(seed, task_id)
        episode = Episode(self, task, seed, episode_id)
        await episode.start()
        return episode

    # -- scripted trajectories ------------------------------------------------
    def _solutions(self) -> Any:
        if not self.spec.solutions:
            return None
        if self.spec.solutions.endswith(".json"):  # no Python: {task_id: {"reference": [...], "wrong": [...]}}
            return _JsonSolutions(self.spec.path(self.spec.solutions))
        return load_module(self.spec.solutions, self.spec.base_dir)

    def has_solutions(self) -> bool:
        return self._solutions() is not None

    def trajectory(self, task: Task, kind: str = "reference") -> list[CallTool]:
        """The scripted ``reference`` (solves) or ``wrong`` (does not) trajectory for ``task``."""
        module = self._solutions()
        if module is None or not hasattr(module, kind):
            raise ConfigError(f"environment {self.name!r} has no scripted {kind!r} solutions")
        task = self.tasks.full(task)  # a task read off an observation lacks its grader-only fields
        actions = []
        for item in getattr(module, kind)(task):
            if isinstance(item, dict):
                item = action_from_json({"type": "call_tool", **item})
            actions.append(item)
        return actions


class _JsonSolutions:
    """Scripted trajectories from a JSON file: ``{task_id: {"reference": [...], "wrong": [...]}}``,
    each action ``{"name": ..., "arguments": {...}}``."""

    def __init__(self, path: Path) -> None:
        import json

        try:
            self.data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"solutions file {str(path)!r}: {e}") from e
        if not isinstance(self.data, dict):
            raise ConfigError(f"solutions file {str(path)!r}: expected an object keyed by task id")

    def _get(self, task: Task, kind: str) -> list[Any]:
        if task.id not in self.data or kind not in self.data[task.id]:
            raise ConfigError(f"solutions file has no {kind!r} trajectory for task {task.id!r}")
        return list(self.data[task.id][kind])

    def reference(self, task: Task) -> list[Any]:
        return self._get(task, "reference")

    def wrong(self, task: Task) -> list[Any]:
        return self._get(task, "wrong")

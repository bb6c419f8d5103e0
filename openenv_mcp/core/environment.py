"""A loaded environment: its spec resolved, ready to create episodes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openenv_mcp.core.episode import Episode
from openenv_mcp.core.scripts import Script, call_solution
from openenv_mcp.core.warm import WarmPool, World
from openenv_mcp.definitions.spec import EnvSpec, ToolServerSpec, load_module, load_object
from openenv_mcp.definitions.surface import Surface
from openenv_mcp.definitions.tasks import TaskSet, parse_tasks_value, resolve_tasks
from openenv_mcp.errors import ConfigError
from openenv_mcp.isolation.host.workspace import UserWorkspace
from openenv_mcp.types import CallTool, Mode, Task

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
        tasks: the tasks to play instead of the env file's default set: a named set of
            the env file (``"eval"``), a JSONL file or dataset path, a list of tasks, or a
            ``datasets.Dataset`` (mapped with the env file's ``[tasks]`` columns).
        split: the dataset split to load instead of the env file's.
        workspace: production only: the user's folder the tools work on, in place
            (see :func:`check_user_workspace`).
        read_only: production only: the tools may read ``workspace`` but not change it.
    """

    def __init__(
        self,
        spec: EnvSpec,
        *,
        mode: Mode = "sim",
        call_timeout: float | None = None,
        max_steps: int | None = None,
        workdir: Path | None = None,
        warm_pool: int | None = None,
        tasks: Any = None,
        split: str | None = None,
        workspace: str | Path | None = None,
        read_only: bool = False,
    ) -> None:
        if mode not in ("sim", "prod"):
            raise ConfigError(f"mode must be 'sim' or 'prod', got {mode!r}")
        self.user_workspace: UserWorkspace | None = check_user_workspace(spec, mode, workspace, read_only)
        """The user's folder in production (``None``: each episode gets a private one)."""
        self.read_only = read_only
        self.spec = spec
        self.mode = mode
        self.call_timeout = call_timeout
        self.max_steps = spec.max_steps if max_steps is None else (max_steps or None)
        if mode == "prod":
            self.max_steps = None
        self.workdir = workdir
        self.servers: list[ToolServerSpec] = [s.variant(mode) for s in spec.tool_servers]
        self.tasks = TaskSet(resolve_tasks(spec.tasks, spec.base_dir, tasks, split))
        self.private_fields = frozenset(spec.private_task_fields) | frozenset(parse_tasks_value(spec.tasks)[2])
        """Grader-only ``data`` keys of every task (never shown on any face)."""
        reward = spec.reward
        if isinstance(reward, str):
            reward = load_object(reward, spec.base_dir)
        elif isinstance(reward, dict) and "criteria" in reward:  # [reward] + [[reward.criteria]]: a rubric
            from openenv_mcp.core.rubric import Rubric

            reward = Rubric(reward, [s.name for s in spec.tool_servers], spec.name, spec.base_dir)
        elif isinstance(reward, dict):  # reward = { command = [...] }: run inside a boundary
            from openenv_mcp.core.rewards import CommandReward

            reward = CommandReward(reward, [s.name for s in spec.tool_servers], spec.name)
        if reward is not None and not callable(reward):
            raise ConfigError(f"{spec.name}: reward must be 'module:function' or a callable, got {reward!r}")
        self.reward_fn: Callable[..., Any] | None = reward
        setup = load_object(spec.setup, spec.base_dir) if spec.setup else None
        if setup is not None and not callable(setup):
            raise ConfigError(f"{spec.name}: setup must name a function ('module:function'), got {spec.setup!r}")
        self.setup_fn: Callable[..., Any] | None = setup
        """Prepares each simulation episode's world (``[env] setup``), or ``None``."""
        self.warm_pool_size = getattr(spec, "warm_pool", 0) if warm_pool is None else warm_pool
        if self.user_workspace is not None:
            self.warm_pool_size = 0  # the folder is the user's: no world is started on it ahead of time
        self._pool: WarmPool | None = None
        self.surface: Surface | None = None
        """What the MCP face declares (instructions, capabilities), learnt when the first episode
        started (see :mod:`openenv_mcp.definitions.surface`); ``None`` until then."""

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

    async def new_episode(
        self, seed: int | None = None, task_id: str | None = None, episode_id: str | None = None
    ) -> Episode:
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

    def script(self, task: Task, kind: str = "reference", seed: int | None = None) -> Script:
        """The scripted ``reference`` (solves) or ``wrong`` (does not) policy for ``task`` played with
        ``seed``: a fixed trajectory or an interactive script (see :mod:`openenv_mcp.core.scripts`)."""
        module = self._solutions()
        if module is None or not hasattr(module, kind):
            raise ConfigError(f"environment {self.name!r} has no scripted {kind!r} solutions")
        task = self.tasks.full(task)  # a task read off an observation lacks its grader-only fields
        return Script(call_solution(getattr(module, kind), task, seed))

    def trajectory(self, task: Task, kind: str = "reference") -> list[CallTool]:
        """The scripted ``reference`` (solves) or ``wrong`` (does not) trajectory for ``task``, as a list
        (a :class:`ConfigError` when the solution is an interactive script: use :meth:`script`)."""
        return self.script(task, kind).actions()

    def samples(self, task: Task) -> list[CallTool]:
        """Calls known to work on ``task``'s start state (``samples(task)`` in the solutions module), for an
        environment whose solutions are interactive scripts: what the conformance suite replays instead."""
        module = self._solutions()
        if module is None or not hasattr(module, "samples"):
            return []
        return Script(module.samples(self.tasks.full(task))).actions()

    def probes(self, task: Task, seed: int | None = None) -> dict[str, Script]:
        """The environment's own reward-hacking probes for ``task`` (``probes(task[, seed])`` in its
        solutions module, returning ``{name: actions or generator}``): each must score 0."""
        module = self._solutions()
        if module is None or not hasattr(module, "probes"):
            return {}
        found = call_solution(module.probes, self.tasks.full(task), seed) or {}
        return {str(name): Script(produced) for name, produced in found.items()}


IN_PLACE_BOUNDARIES = ("inprocess", "remote")
"""Boundaries that can work on a user's folder in place. Process-level ones (process, sandbox,
docker) hand each episode's workspace to an unprivileged uid, which would change the owner of
the user's files: they refuse a user's folder until they can run as its owner."""


def check_user_workspace(
    spec: EnvSpec, mode: str, workspace: str | Path | None, read_only: bool
) -> UserWorkspace | None:
    """The user's folder for production, or a :class:`ConfigError` saying why this
    environment cannot run on it (raised when the environment loads, i.e. at start)."""
    name = spec.name
    if mode == "prod" and not os.environ.get("DATABASE_URL"):
        needs = [s.name for s in spec.tool_servers if "DATABASE_URL" in s.variant("prod").pass_env]
        if needs:
            raise ConfigError(
                f"{name} in production uses the database at $DATABASE_URL (tool servers {needs}): "
                "give --database-url URL or set DATABASE_URL, e.g. postgresql://user@host:5432/db"
            )
    if mode != "prod":
        if workspace is not None or read_only:
            raise ConfigError(
                f"{name}: --workspace and --read-only are for production (--mode prod); a simulation "
                "episode always works on a private copy of its task's files"
            )
        return None
    if workspace is None:
        if spec.prod_workspace == "required":
            raise ConfigError(
                f"{name} works on a folder in production: give --workspace DIR (the folder its "
                "tools may see and change; add --read-only to forbid changes)"
            )
        if read_only:
            raise ConfigError(f"{name}: --read-only needs --workspace DIR")
        return None
    if spec.prod_workspace == "none":
        raise ConfigError(
            f"{name} does not work on a folder in production (its tools use no workspace); "
            "drop --workspace"
            + (
                " and give --database-url or $DATABASE_URL"
                if any("DATABASE_URL" in s.variant("prod").pass_env for s in spec.tool_servers)
                else ""
            )
        )
    path = Path(workspace).expanduser()
    if not path.is_dir():
        raise ConfigError(f"--workspace {str(path)!r} is not a folder; create it or give an existing one")
    walled = [
        f"{s.name} ({s.isolation})"
        for s in (t.variant("prod") for t in spec.tool_servers)
        if s.isolation not in IN_PLACE_BOUNDARIES
    ]
    if walled:
        raise ConfigError(
            f"{name} cannot run on a user's folder yet: tool servers {', '.join(walled)} run behind a "
            "process-level boundary, which gives the workspace to an unprivileged uid and would "
            "change the owner of your files; serve it in simulation mode, or on a copy of the folder"
        )
    return UserWorkspace(path, read_only=read_only)


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

"""Episodes: one agent's isolated world, and the one dispatch path.

An :class:`Episode` owns a private workspace and one started connection per
tool server. :meth:`Episode.act` is *the* per-episode function: ``step()`` on
the Python API, ``step`` on the control plane and ``tools/call`` on the MCP
face all go through it, so the two faces cannot disagree. Its parts: the routes
to its servers (:mod:`~openenv_mcp.core.routing`), scoring
(:mod:`~openenv_mcp.core.scoring`) and CodeAct runs (:mod:`~openenv_mcp.core.codeact`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from mcp.types import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)

from openenv_mcp.core.codeact import RUN_CODE, RUN_CODE_TOOL, grader_files, run_code
from openenv_mcp.core.fork import fork_episode
from openenv_mcp.core.routing import RESERVED_TOOL_NAMES, Routes, task_required_message
from openenv_mcp.core.scoring import RewardContext, evaluate, reward_failed
from openenv_mcp.core.warm import prepare
from openenv_mcp.definitions.surface import Surface, name_tools, server_surface
from openenv_mcp.errors import BoundaryError, EpisodeEnded, ToolNameError
from openenv_mcp.isolation import Connection
from openenv_mcp.isolation.codeact.interpreter import CodeInterpreter
from openenv_mcp.isolation.host.workspace import Workspace
from openenv_mcp.types import CallTool, ListTools, Observation, RunCode, State, Task, error_result

if TYPE_CHECKING:
    from openenv_mcp.core.environment import Environment

__all__ = ["RESERVED_TOOL_NAMES", "Episode", "RewardContext"]

log = logging.getLogger("openenv_mcp.core.episode")

REFRESH_INTERVAL = 1.0
"""Seconds between two refreshes of an episode's tool list: a server that floods
``notifications/tools/list_changed`` gets one refresh per interval (the rest coalesce)."""


class Episode:
    """One isolated world: workspace, tool-server connections, task and counters."""

    def __init__(self, env: Environment, task: Task, seed: int | None, episode_id: str | None = None) -> None:
        self.env = env
        self.id = episode_id or uuid.uuid4().hex
        self.task = task
        """The full task, grader-only fields included: for rewards, never for a face."""
        self.public_task = task.public(env.private_fields)
        """The task as every face shows it (no ``answer``, no private ``data`` keys)."""
        self.seed = seed
        self.step_count = 0
        self.score = 0.0
        self.cumulative_reward = 0.0
        self.reward_errors = 0
        """Steps whose reward function raised (see ``info["reward_error"]``)."""
        self.done = False
        self.truncated = False
        self.history: list[tuple[CallTool, CallToolResult]] = []
        self.workspace = Workspace(env.workdir)
        self.connections: list[Connection] = []
        self.routes = Routes(self.connections)
        """The composed tool list and where each name goes (composed again when a server's list changes)."""
        self._tools_stale = False
        self._refresh_lock = anyio.Lock()
        self._last_refresh = 0.0
        self._notify_task: asyncio.Task[None] | None = None
        self.tool_listeners: set[Callable[[], Awaitable[None]]] = set()
        """Called after the tool list changed (the MCP face sends ``notifications/tools/list_changed``)."""
        self._lock = anyio.Lock(fast_acquire=True)  # no checkpoint when uncontended (hot path)
        self.created = self.last_used = time.monotonic()
        self.closed = False
        self.interpreter: CodeInterpreter | None = None
        """The CodeAct interpreter, started by the first :class:`RunCode`."""
        self.world: Any = None
        """What the environment's ``setup`` returned (``RewardContext.world``)."""
        self.forked_from: tuple[str, int] | None = None
        """``(episode id, step count)`` of the episode this one is a fork of (``None``: not a fork)."""

    # -- lifecycle ---------------------------------------------------------
    async def start(self, *, cloned: bool = False) -> None:
        """Seed the workspace, start every tool server, compose the tool list.

        ``cloned``: the workspace already holds a copy of another episode's (a fork by snapshot):
        it is not seeded, and neither ``setup`` nor the first score runs (the fork takes the
        original's)."""
        try:
            world = None if cloned else self.env.warm_world(self.task)  # pre-started by the warm pool, or None
            if world is None:
                world = await prepare(self.env, self.id, self.task, self.workspace, seed=not cloned)
            else:
                self.workspace.remove()
            self.workspace, self.connections = world.workspace, world.connections
            for conn in self.connections:
                conn.on_tools_changed = self._tools_changed
            await self._compose()
            if self.env.surface is None:
                self.env.surface = self.surface()
            if cloned:
                return
            if self.env.setup_fn is not None and self.env.mode == "sim":
                value = self.env.setup_fn(self._context(None, None))
                self.world = await value if inspect.isawaitable(value) else value
            if self.env.reward_fn is not None and self.env.mode == "sim":
                self.score = await self._score(None, None)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.close()
            raise

    async def _compose(self) -> None:
        reserved = RESERVED_TOOL_NAMES | ({RUN_CODE} if self.env.spec.codeact else set())
        self.routes = await Routes.compose(self.connections, reserved)

    @property
    def tools(self) -> list[Tool]:
        """The tools this episode exposes (namespaced names), ``run_code`` aside (see :attr:`mcp_tools`)."""
        return self.routes.tools

    def surface(self) -> Surface:
        """What the MCP face declares for this episode's servers (instructions, capabilities)."""
        own: dict[int, list[str]] = {}  # a server's own tool names, for its instructions
        for conn, name, _ in self.routes.calls.values():
            own.setdefault(id(conn), []).append(name)
        return server_surface(
            self.env.spec.description,
            [
                (c.spec.name, name_tools(c.instructions, c.spec.prefix, own.get(id(c), [])), c.capabilities)
                for c in self.connections
            ],
        )

    # -- tool-list changes -----------------------------------------------------
    def _tools_changed(self) -> None:
        """A server sent ``notifications/tools/list_changed``: refresh soon, then tell the listeners."""
        self._tools_stale = True
        if self.closed or (self._notify_task is not None and not self._notify_task.done()):
            return
        if self.tool_listeners:
            self._notify_task = asyncio.get_running_loop().create_task(self._refresh_and_notify())

    async def _refresh_and_notify(self) -> None:
        try:
            if await self.refresh_tools():
                for listener in list(self.tool_listeners):
                    try:
                        await listener()
                    except Exception:  # a gone client must not stop the others
                        self.tool_listeners.discard(listener)
        except Exception as e:  # noqa: BLE001 - logged; the next list or call tries again
            log.warning("refreshing the tools of episode %s failed: %s", self.id, e)

    async def refresh_tools(self) -> bool:
        """Compose the tool list again if a server said it changed (at most once per
        :data:`REFRESH_INTERVAL`); ``True`` if the list changed.

        A new list that breaks the composition rules (a control-plane name, a duplicate)
        is refused: the episode keeps its previous list and the refusal is logged."""
        if not self._tools_stale:
            return False
        async with self._refresh_lock:
            if not self._tools_stale or self.closed:
                return False
            wait = self._last_refresh + REFRESH_INTERVAL - time.monotonic()
            if wait > 0:
                await anyio.sleep(wait)
            self._tools_stale = False
            self._last_refresh = time.monotonic()
            before = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in self.tools]
            try:
                await self._compose()  # replaces the routes only when the new list composes
            except ToolNameError as e:
                log.warning("episode %s keeps its tool list: the changed list is refused: %s", self.id, e)
                return False
            return before != [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in self.tools]

    async def server_tools(self) -> list[Tool]:
        """Every server's tools as it lists them now (asked again, whatever it announced),
        namespaced as the episode composes them: what :attr:`tools` would be if every change
        had been announced."""
        out: list[Tool] = []
        for conn in self.connections:
            prefix = conn.spec.prefix
            for tool in await conn.list_tools_now():
                out.append(tool.model_copy(update={"name": f"{prefix}_{tool.name}"}) if prefix else tool)
        return out

    # -- forks -----------------------------------------------------------------
    async def fork(self, n: int = 1, strategy: str | None = None) -> list[Episode]:
        """``n`` new, started episodes equal to this one now (workspace, every server's state, step
        count, task, score, cumulative reward, trajectory), each with its own id; this one goes on
        unchanged. ``strategy``: ``snapshot`` | ``replay`` | ``None`` (snapshot when every server
        allows it). See :mod:`openenv_mcp.core.fork`; a server that can do neither raises
        :class:`~openenv_mcp.errors.ForkError`."""
        return await fork_episode(self, n, strategy, lambda: Episode(self.env, self.task, self.seed))

    @property
    def step_lock(self) -> anyio.Lock:
        """Held while an action runs: whoever holds it sees the episode between two steps."""
        return self._lock

    async def close(self) -> None:
        """Stop every tool server and remove the workspace (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self.tool_listeners.clear()
        if self._notify_task is not None and not self._notify_task.done():
            self._notify_task.cancel()
        if self.interpreter is not None:
            await self.interpreter.close()
        for conn in reversed(self.connections):
            try:
                await conn.close()
            except Exception:  # closing must not fail halfway and leak the rest
                pass
        self.workspace.remove()

    def tool_label(self, name: Any) -> str:
        """``name`` if this episode lists that tool, else ``(unknown)``: the bounded metrics label."""
        if isinstance(name, str) and (name in self.routes.calls or (name == RUN_CODE and self.env.spec.codeact)):
            return name
        return "(unknown)"

    # -- the one dispatch path ---------------------------------------------
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Validate and route one call; errors the agent causes are error results."""
        await self.refresh_tools()
        route = self.routes.calls.get(name)
        if route is None:
            return error_result(f"Unknown tool: {name!r}")
        conn, original, validator = route
        if self.routes.task_required(name):
            return error_result(task_required_message(name))
        problem = validator.error(name, arguments)
        if problem is not None:
            return error_result(problem)
        timeout = self.env.call_timeout or conn.spec.limits.call_timeout
        try:
            with anyio.fail_after(timeout):
                return await conn.call_tool(original, arguments, name)
        except TimeoutError:
            await conn.interrupted()
            return error_result(f"Tool {name!r} timed out after {timeout:g} s")
        except BoundaryError as e:
            return error_result(f"Tool {name!r} failed: {e}")

    async def act(self, action: CallTool | ListTools | RunCode) -> Observation:
        """Take one action: the function both faces share."""
        if self.closed:
            raise EpisodeEnded(f"episode {self.id} is closed; call reset() to start a new one")
        self.last_used = time.monotonic()
        if isinstance(action, ListTools):
            await self.refresh_tools()
            return Observation(tools=self.tools, task=self.public_task, info=self._info())
        async with self._lock:  # the end check, the call and the count are one atomic step
            if self.closed:
                raise EpisodeEnded(f"episode {self.id} is closed; call reset() to start a new one")
            if self.done or self.truncated:
                why = "done" if self.done else "truncated"
                raise EpisodeEnded(f"episode {self.id} has ended ({why}); call reset() to start a new one")
            started = time.perf_counter()
            if isinstance(action, RunCode):
                result, reward, extra = await self._run_code(action.code)
            else:
                result, reward, extra = await self._step(action)
            info = self._info()
            info["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 3)
            info.update(extra)
            return Observation.model_construct(
                tools=None,
                result=result,
                task=self.public_task,
                reward=reward,
                done=self.done,
                truncated=self.truncated,
                info=info,
            )

    async def _step(self, action: CallTool) -> tuple[CallToolResult, float, dict[str, Any]]:
        """One tool call as one step: call, count, history, reward, ``max_steps`` (lock held)."""
        result = await self.call_tool(action.name, action.arguments)
        self.step_count += 1
        self.history.append((action, result))
        reward, extra = 0.0, {}
        if self.env.mode == "sim":
            if self.env.reward_fn is not None:
                try:
                    score = await self._score(action, result, extra)
                except Exception as e:  # agent-made input must not break the episode (see _reward_failed)
                    score = self._reward_failed(e, extra)
                reward, self.score = score - self.score, score
                self.cumulative_reward += reward
            self._check_truncation()
        return result, reward, extra

    def _check_truncation(self) -> None:
        max_steps = self.env.max_steps
        if self.env.mode == "sim" and max_steps is not None and self.step_count >= max_steps and not self.done:
            self.truncated = True

    async def _run_code(self, code: str) -> tuple[CallToolResult, float, dict[str, Any]]:
        """A :class:`RunCode` (lock held): each call from the code is a :meth:`_step` (see core/codeact.py)."""
        if self.interpreter is None:
            self.interpreter = CodeInterpreter(
                self.id,
                self.tools,
                self.env.spec.base_dir,
                limits=self.env.spec.code_limits,
                workdir=self.env.workdir,
                grader_files=grader_files(self.env.spec),
            )
        result, reward, extra, made = await run_code(
            self.interpreter, code, self._step, lambda: self.done or self.truncated or self.closed
        )
        if not made:  # a run with no tool call still spends one step of the budget
            self.step_count += 1
            self._check_truncation()
        return result, reward, extra

    @property
    def busy(self) -> bool:
        """Whether an action is in flight (a tool call holds the episode's step lock): an idle reaper
        must not close the episode under it."""
        return self._lock.locked()

    @property
    def mcp_tools(self) -> list[Tool]:
        """The tools the MCP face lists: the episode's, plus ``run_code`` when the env opts in."""
        return [*self.tools, RUN_CODE_TOOL] if self.env.spec.codeact else self.tools

    async def _score(
        self, action: CallTool | None, result: CallToolResult | None, extra: dict[str, Any] | None = None
    ) -> float:
        ctx = self._context(action, result)
        reward_fn = self.env.reward_fn
        assert reward_fn is not None, "only an environment with a reward function is scored"  # callers check
        value, done = await evaluate(reward_fn, ctx, self.env.spec.name, extra)
        self.done = done if done is not None else value >= self.env.spec.success_score
        return value

    def _context(self, action: CallTool | None, result: CallToolResult | None) -> RewardContext:
        return RewardContext(
            task=self.task,
            step=self.step_count,
            action=action,
            result=result,
            history=self.history,
            episode=self,
            world=self.world,
        )

    def _reward_failed(self, error: Exception, extra: dict[str, Any]) -> float:
        """A reward that raised on this step: the score stays where it was (the step's
        reward is 0.0), the episode goes on, and ``info["reward_error"]`` says why."""
        extra.clear()
        extra["reward_error"] = reward_failed(error, self.env.spec.name, self.step_count, self.id)
        self.reward_errors += 1
        return self.score

    def _info(self) -> dict[str, Any]:
        return {"episode_id": self.id, "step": self.step_count, "score": self.score}

    # -- views ---------------------------------------------------------------
    def first_observation(self) -> Observation:
        return Observation(tools=self.tools, task=self.public_task, info=self._info())

    def state(self) -> State:
        return State(
            episode_id=self.id,
            step_count=self.step_count,
            task_id=self.task.id,
            seed=self.seed,
            cumulative_reward=self.cumulative_reward,
            done=self.done,
            truncated=self.truncated,
            max_steps=self.env.max_steps,
            reward_errors=self.reward_errors,
        )

    def per_episode_values(self) -> dict[str, str]:
        """What the framework makes different in this episode (its id, each boundary's
        workspace path, HOME, uid, ...), by what it is: see
        :meth:`~openenv_mcp.isolation.base.Connection.per_episode_values`."""
        values = {"the episode id": self.id}
        for conn in self.connections:
            for label, value in conn.per_episode_values().items():
                if value and value not in values.values():
                    values[label if label not in values else f"{label} of {conn.spec.name}"] = value
        return values

    # -- resources and prompts (MCP face): see Routes ------------------------------
    async def list_resources(self) -> list[Resource]:
        return await self.routes.list_resources()

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return await self.routes.read_resource(uri)

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return await self.routes.list_resource_templates()

    async def complete(self, ref: Any, argument: dict[str, str], context: dict[str, str] | None) -> CompleteResult:
        return await self.routes.complete(ref, argument, context)

    async def list_prompts(self) -> list[Prompt]:
        return await self.routes.list_prompts()

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
        return await self.routes.get_prompt(name, arguments)

"""Starting an episode's world, and a pool of pre-started ones for fast resets.

:func:`prepare` is how every episode's world is made: a fresh workspace seeded
from the tool servers' seed folders (and the task's), then one started
connection per tool server. Starting a server takes from milliseconds
(in-process) to seconds (a Python MCP server in a sandbox), so an
environment may keep a :class:`WarmPool` of worlds prepared in the
background (``warm_pool = N`` in ``[env]``): ``reset()`` takes a ready one —
costing only the swap — and a replacement starts behind it.

Correctness: a pooled world was made exactly like a cold one and has never
been used (no tool call, no agent); it is handed out once and closed with the
episode. A task with its own workspace seed is started cold, so servers
always start on their final workspace. Worlds never outlive the pool
(:meth:`WarmPool.close`) nor the process (servers die with their parent).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from openenv_mcp.isolation import Connection, ServerContext, connect
from openenv_mcp.isolation.host.workspace import Workspace
from openenv_mcp.types import Task

if TYPE_CHECKING:
    from openenv_mcp.core.environment import Environment

__all__ = ["WarmPool", "World", "prepare"]

log = logging.getLogger("openenv_mcp.core.warm")


@dataclass
class World:
    """A seeded workspace and one started connection per tool server."""

    workspace: Workspace
    connections: list[Connection] = field(default_factory=list)
    episode_id: str = ""

    async def close(self) -> None:
        """Stop every server and remove the workspace (never raises)."""
        with anyio.CancelScope(shield=True):
            for conn in reversed(self.connections):
                try:
                    await conn.close()
                except Exception:  # closing must not fail halfway and leak the rest
                    log.debug("closing %s failed", conn.spec.name, exc_info=True)
            self.workspace.remove()


async def prepare(
    env: Environment,
    episode_id: str,
    task: Task | None = None,
    workspace: Workspace | None = None,
    *,
    seed: bool = True,
) -> World:
    """Seed a workspace (unless ``seed`` is false: it holds a fork's copy) and start every tool
    server of ``env`` on it."""
    spec = env.spec
    user = env.user_workspace  # production on the user's folder: used in place, never seeded
    if user is not None and workspace is not None:
        workspace.remove()  # the lazily made private folder is not used
    world = World(user or workspace or Workspace(env.workdir), episode_id=episode_id)
    try:
        seeds = [spec.path(s.workspace) for s in spec.tool_servers if s.workspace]
        if task is not None and task.workspace and env.mode == "sim":
            seeds.append(spec.path(task.workspace))
        if (
            seeds and user is None and seed
        ):  # copying a large seed must not stall the event loop (other episodes, the MCP face)
            await anyio.to_thread.run_sync(world.workspace.seed, *seeds)
        for server in env.servers:
            ctx = ServerContext(
                episode_id=episode_id,
                workspace=world.workspace,
                mode=env.mode,
                env=env.server_env(server),
                read_only=env.read_only,
                user_workspace=user is not None,
                task=task,
            )
            world.connections.append(connect(server, ctx, spec.base_dir))
        await start_all(world.connections)
    except BaseException:
        await world.close()
        raise
    return world


async def start_all(connections: list[Connection]) -> None:
    """Start the connections at the same time (a sandboxed server's start is mostly waiting
    on its child process); the first failure is raised as itself, after all have finished."""
    if len(connections) == 1:
        await connections[0].start()
        return
    errors: list[Exception] = []

    async def start(conn: Connection) -> None:
        try:
            await conn.start()
        except Exception as e:  # noqa: BLE001 - re-raised below, unwrapped
            errors.append(e)

    async with anyio.create_task_group() as tg:
        for conn in connections:
            tg.start_soon(start, conn)
    if errors:
        raise errors[0]


class WarmPool:
    """Up to ``size`` pre-started worlds of one environment, refilled in the background."""

    def __init__(self, env: Environment, size: int) -> None:
        self.env = env
        self.size = size
        self._ready: list[World] = []
        self._filling: asyncio.Task[None] | None = None
        self._closed = False
        self.failures = 0

    def take(self, task: Task) -> World | None:
        """A ready world for an episode of ``task`` (``None``: start cold), and refill."""
        world = None
        if not task.workspace and self._ready:
            world = self._ready.pop(0)
        self.fill()
        return world

    def fill(self) -> None:
        """Start preparing worlds in the background until ``size`` are ready."""
        if self._closed or self.failures >= 3 or (self._filling is not None and not self._filling.done()):
            return
        if len(self._ready) < self.size:
            self._filling = asyncio.get_running_loop().create_task(self._fill(), name=f"warm:{self.env.name}")

    async def _fill(self) -> None:
        while not self._closed and len(self._ready) < self.size:
            try:
                world = await prepare(self.env, f"warm-{uuid.uuid4().hex}")
            except Exception:
                self.failures += 1
                log.warning("warm pool of %r: preparing a world failed", self.env.name, exc_info=True)
                return
            if self._closed:
                await world.close()
                return
            self._ready.append(world)

    async def wait_ready(self, timeout: float = 60) -> bool:
        """Wait until the pool is full (benchmarks and tests)."""
        self.fill()
        with anyio.move_on_after(timeout):
            while len(self._ready) < self.size and self.failures < 3:
                if self._filling is not None and not self._filling.done():
                    await asyncio.wait({self._filling})
                else:
                    self.fill()
                    await anyio.sleep(0.01)
        return len(self._ready) >= self.size

    async def close(self) -> None:
        """Stop filling and close every unused world."""
        self._closed = True
        filling, self._filling = self._filling, None
        with anyio.CancelScope(shield=True):
            if filling is not None and not filling.done():
                filling.cancel()
                await asyncio.wait({filling})
            ready, self._ready = self._ready, []
            for world in ready:
                await world.close()

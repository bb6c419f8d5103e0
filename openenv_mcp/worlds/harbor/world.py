"""An episode's world: the task's container, started fresh from its cached image.

:func:`start_world` builds the image when the engine lacks it (:mod:`.images`), then creates the
container (or the compose project, :mod:`.compose`) with the task's limits: memory (no swap),
CPUs, a pids cap, no network unless the task allows it, a fixed hostname, ``no-new-privileges``
and a reduced capability set; its command is ``sleep infinity`` (as Harbor's), so the agent's
commands are ``exec``\\ s into it. The container carries the docker boundary's labels
(``openenv-mcp=1``, ``openenv-mcp.episode``, ``openenv-mcp.owner``), so the boundary's reaper and
``shutdown.clean`` find it; it is removed when the episode closes.

Live worlds are kept by episode id (:func:`world_of`): the tools and the reward of one episode
reach its world, and nothing else.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from openenv_mcp.errors import BoundaryError
from openenv_mcp.isolation.containers.engine import (
    LABEL,
    docker_client,
    owner_label,
    reap_once,
    remove,
    remove_in_background,
)
from openenv_mcp.worlds.harbor.container import TaskContainer
from openenv_mcp.worlds.harbor.images import ensure_image
from openenv_mcp.worlds.harbor.taskformat import EnvironmentDef, TaskDefinition

__all__ = ["HOSTNAME", "World", "container_config", "start_world", "world_of"]

log = logging.getLogger("openenv_mcp.worlds.harbor")

HOSTNAME = "openenv"
"""The hostname in every task container (the same in every episode)."""
DROPPED_CAPABILITIES = ["NET_RAW", "MKNOD", "AUDIT_WRITE", "SETFCAP"]
"""Removed from Docker's default set (the rest, CHOWN, SETUID, KILL..., stay: tasks about
permissions and processes need them). ``no-new-privileges`` is set too."""
SLEEP = ["sh", "-c", "sleep infinity"]

_worlds: dict[str, World] = {}


@dataclass
class World:
    """One episode's task container(s) and what the grader needs to know about them."""

    episode_id: str
    task: TaskDefinition
    image: str
    container: TaskContainer
    started: float = field(default_factory=time.monotonic)
    compose: Any = None
    """The :class:`~.compose.ComposeProject` of a compose task (``None``: a single container)."""
    agent_ids: tuple[int, int] = (0, 0)
    """uid and gid of the agent's user in the container (owner of the files it writes)."""
    grade: Any = None
    """The :class:`~.verifier.Grade` once graded (the episode ends then)."""
    closed: bool = False
    solution_written: bool = False
    """The oracle copied ``solution/`` into ``/solution`` (only the reference trajectory does)."""

    def remaining(self) -> float:
        """Seconds left of the task's agent timeout."""
        return self.task.agent_timeout - (time.monotonic() - self.started)

    async def close(self) -> None:
        """Remove the container(s) (idempotent; the removal goes on in the background)."""
        if self.closed:
            return
        self.closed = True
        _worlds.pop(self.episode_id, None)
        with anyio.CancelScope(shield=True):
            if self.compose is not None:
                await anyio.to_thread.run_sync(self.compose.down)
            else:
                remove_in_background(self.container.handle)


def world_of(episode_id: str) -> World | None:
    """The live world of an episode (``None``: not a Harbor episode, or closed)."""
    return _worlds.get(episode_id)


async def start_world(task: TaskDefinition, episode_id: str) -> World:
    """Build (when needed) and start the task's container for one episode."""
    client = await anyio.to_thread.run_sync(docker_client)
    if task.environment.kind == "compose":
        from openenv_mcp.worlds.harbor.compose import start_compose

        world = await start_compose(client, task, episode_id)
    else:
        report = await anyio.to_thread.run_sync(ensure_image, client, task.environment, task.name)
        container = await anyio.to_thread.run_sync(create_container, client, task, report.tag, episode_id)
        world = World(episode_id, task, report.tag, container)
    _worlds[episode_id] = world
    try:
        world.agent_ids = await anyio.to_thread.run_sync(user_ids, world.container, task.agent_user)
        if task.environment.healthcheck is not None:
            await healthcheck(world)
    except BaseException:
        await world.close()
        raise
    return world


def container_config(
    client: Any, env: EnvironmentDef, image: str, episode_id: str, role: str = "agent"
) -> dict[str, Any]:
    """``containers.create`` arguments for a task container (limits, network, labels)."""
    import docker.types

    limits = env.resources
    ncpu = float(_engine_cpus(client))
    config: dict[str, Any] = dict(
        image=image,
        command=SLEEP,
        hostname=HOSTNAME,
        network_mode="none" if env.network == "none" else "bridge",
        mem_limit=f"{limits.memory_mb}m",
        memswap_limit=f"{limits.memory_mb}m",
        nano_cpus=int(min(limits.cpus, ncpu) * 1e9),
        pids_limit=limits.pids,
        cap_drop=DROPPED_CAPABILITIES,
        security_opt=["no-new-privileges"],
        ulimits=[docker.types.Ulimit(name="core", soft=0, hard=0)],
        environment=dict(env.env),
        labels=labels(episode_id, role),
        detach=True,
    )
    if env.workdir:
        config["working_dir"] = env.workdir
    return config


def labels(episode_id: str, role: str) -> dict[str, str]:
    return {
        LABEL: "1",
        f"{LABEL}.episode": episode_id,
        f"{LABEL}.server": f"harbor-{role}",
        f"{LABEL}.owner": owner_label(),
        f"{LABEL}.world": "harbor",
    }


_ncpu: list[int] = []


def _engine_cpus(client: Any) -> int:
    if not _ncpu:
        try:
            _ncpu.append(int(client.info().get("NCPU") or os.cpu_count() or 1))
        except Exception:
            _ncpu.append(os.cpu_count() or 1)
    return _ncpu[0]


def create_container(
    client: Any, task: TaskDefinition, image: str, episode_id: str, role: str = "agent"
) -> TaskContainer:
    """Create and start a container of ``image`` for ``task`` (blocking)."""
    import docker.errors

    reap_once()
    env = task.environment if role == "agent" else (task.verifier.environment or task.environment)
    if role == "verifier":
        from dataclasses import replace

        env = replace(env, network=task.verifier.network)
    config = container_config(client, env, image, episode_id, role)
    try:
        handle = client.containers.create(**config)
    except docker.errors.ImageNotFound:
        raise BoundaryError(f"task {task.name!r}: image {image!r} is not on this Docker engine") from None
    except docker.errors.APIError as e:
        raise BoundaryError(f"task {task.name!r}: cannot create its container: {e.explanation or e}") from None
    try:
        handle.start()
        handle.reload()
    except docker.errors.APIError as e:
        remove(handle)
        raise BoundaryError(f"task {task.name!r}: its container did not start: {e.explanation or e}") from None
    if handle.status != "running":
        logs = handle.logs(tail=20).decode(errors="replace")
        remove(handle)
        raise BoundaryError(
            f"task {task.name!r}: its container exited at once (its image needs `sh` and `sleep`): {logs[-300:]}"
        )
    return wrap(client, handle, task, role)


def wrap(client: Any, handle: Any, task: TaskDefinition, role: str = "agent") -> TaskContainer:
    """A :class:`TaskContainer` for a started container handle."""
    config = handle.attrs.get("Config") or {}
    env_list = config.get("Env") or []
    env = dict(item.split("=", 1) for item in env_list if "=" in item)
    user = task.agent_user if role == "agent" else task.verifier.user
    return TaskContainer(
        client,
        handle,
        workdir=config.get("WorkingDir") or "/",
        user=user if user is not None else (config.get("User") or None),
        env=env,
    )


def user_ids(container: TaskContainer, user: str | None) -> tuple[int, int]:
    """uid and gid of ``user`` (a name or a number, ``None``: the container's user) in the container,
    read from its ``/etc/passwd`` (nothing run inside)."""
    name = user if user is not None else (container.user or "root")
    uid_part, _, gid_part = name.partition(":")
    if uid_part.isdigit():
        return int(uid_part), int(gid_part) if gid_part.isdigit() else int(uid_part)
    passwd = container.read("/etc/passwd", 1 << 20)
    for line in passwd.data.decode(errors="replace").splitlines():
        fields = line.split(":")
        if len(fields) >= 4 and fields[0] == uid_part and fields[2].isdigit() and fields[3].isdigit():
            return int(fields[2]), int(fields[3])
    if uid_part == "root":
        return 0, 0
    raise BoundaryError(f"user {name!r} is not in the task container's /etc/passwd")


async def healthcheck(world: World) -> None:
    """Run the task's ``[environment.healthcheck]`` until it passes ``retries`` times in a row
    after the start period, or fail the start."""
    check = world.task.environment.healthcheck
    assert check is not None
    container = world.container
    deadline = time.monotonic() + check.start_period_sec + check.retries * (check.interval_sec + check.timeout_sec)
    await anyio.sleep(check.start_period_sec)
    failures = 0
    while True:
        result = await anyio.to_thread.run_sync(
            lambda: container.exec([*container.shell(), check.command], timeout=check.timeout_sec)
        )
        if result.exit_code == 0:
            return
        failures += 1
        if failures >= check.retries or time.monotonic() > deadline:
            raise BoundaryError(
                f"task {world.task.name!r}: its healthcheck `{check.command}` failed {failures} time(s): "
                f"{(result.stderr or result.stdout)[-300:]}"
            )
        await anyio.sleep(check.interval_sec)

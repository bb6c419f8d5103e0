"""Docker boundary: the tool server in a container, one per episode (Docker SDK).

The container runs with ``--network none`` (unless the spec says
``network = "host"``, which here means the default bridge: outbound allowed,
host loopback still unreachable), memory (no swap), pids and CPU limits,
per-process CPU-time and file-size (``limits.file_mb``) ulimits, a read-only root
filesystem, private tmpfs ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm`` of
``limits.tmpfs_mb`` each (charged to the container's memory limit), all
capabilities dropped, ``no-new-privileges``, an unprivileged user, and the
episode's workspace bind-mounted at ``/workspace``.

Transports:

- ``stdio`` (default): MCP over the container's attached stdin/stdout (the
  attach socket's multiplexed frames are split into stdout, which carries
  JSON-RPC lines, and stderr, kept for error messages).
- ``http``: the image's entrypoint serves streamable HTTP on port 8000 (or
  ``env.PORT``) at ``/mcp``; the container joins an internal network the host
  can reach (``network = "none"``) or the default bridge.

What runs: ``image = "..."`` runs the image's own entrypoint; ``command = [...]``
with ``isolation = "docker"`` runs that command in :data:`DEFAULT_IMAGE`
(``openenv-mcp/tools``, override with ``OPENENV_MCP_DOCKER_IMAGE``).
Images are never pulled implicitly; build them (``docker/*.Dockerfile``).

Every container carries labels (``openenv-mcp.episode=<id>``,
``openenv-mcp.server``, ``openenv-mcp.owner=<host>:<pid>:<start time>``) so leaks can be
listed (:func:`list_containers`); it is removed when its call times out or
its server dies (synchronously, before a new one starts) and on close (in a
background thread, off the reset path: :func:`wait_removed` waits for it, and
the interpreter does at exit). :func:`reap` removes containers whose owning
process died without cleaning up (run at the first start in each process).

The engine side (client, labels, listing, reaping, removal) is in :mod:`openenv_mcp.isolation.containers.engine`; one
container run and its transports in :mod:`openenv_mcp.isolation.containers.container`; this module is the connection.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.errors import BoundaryError
from openenv_mcp.isolation.base import ServerContext
from openenv_mcp.isolation.containers.container import Container
from openenv_mcp.isolation.containers.engine import (
    LABEL,
    docker_client,
    list_containers,
    owner_label,
    reap,
    wait_removed,
)
from openenv_mcp.isolation.host.launch import file_size_limit
from openenv_mcp.isolation.host.uids import chown_tree
from openenv_mcp.isolation.transport.mcpsession import McpConnection, SessionHost

__all__ = ["DEFAULT_IMAGE", "LABEL", "DockerConnection", "docker_client", "list_containers", "reap", "wait_removed"]

DEFAULT_IMAGE = os.environ.get("OPENENV_MCP_DOCKER_IMAGE", "openenv-mcp/tools")
"""Image that runs a ``command`` spec with ``isolation = "docker"``."""
WORKSPACE = "/workspace"
"""Where the episode workspace is mounted in the container."""
ENV_DIR = "/env"
"""Where the environment's folder is mounted (read-only) when the command uses ``{env_dir}``."""
HOSTNAME = "openenv"
"""The hostname inside every container: the same in every episode."""
UNPRIVILEGED = (65534, 65534)
"""uid:gid the server runs as when the environment server runs as root."""


class _DockerHost(SessionHost):
    def __init__(self, name: str, container: Container) -> None:
        transport = container.http if container.spec.transport == "http" else container.stdio
        super().__init__(name, transport)
        self.container = container

    def why(self) -> str | None:
        return self.container.why()

    def stderr(self) -> str:
        return self.container.stderr_text()


class DockerConnection(McpConnection):
    """One container serving MCP for one episode's tool server."""

    boundary = "docker"

    def __init__(self, spec: ToolServerSpec, ctx: ServerContext, base_dir: Path | None = None) -> None:
        super().__init__(spec, ctx)
        self.base_dir = Path(base_dir or Path.cwd()).resolve()

    @property
    def image(self) -> str:
        return self.spec.image or DEFAULT_IMAGE

    @property
    def container(self) -> Any:
        """The running container's SDK handle (``None`` between runs)."""
        host = self.host
        return host.container.handle if isinstance(host, _DockerHost) else None

    def _new_host(self) -> SessionHost:
        return _DockerHost(self.spec.name, Container(self))

    async def interrupted(self) -> None:
        """A call hit its time limit: remove the container and start a fresh one now
        (a container start takes about a second: not at the expense of the next call's
        time limit). A failed start is reported by the next call."""
        await super().interrupted()
        if not self.closed:
            with anyio.CancelScope(shield=True):
                try:
                    await self._ensure()
                except BoundaryError:
                    pass

    def uses_env_dir(self) -> bool:
        """Whether the command names ``{env_dir}`` (then the env folder is mounted read-only
        at ``/env``; otherwise nothing of the host but the workspace is visible)."""
        return any("{env_dir}" in a for a in [*(self.spec.command or []), *self.ctx.env.values()])

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The container's variables: ``HOME``/``TMPDIR``, the spec's (placeholders expanded), then
        ``extra`` as given (a command reward's task data is never rewritten)."""
        env = self.ctx.env
        return {
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            **dict(zip(env, self.expand(list(env.values())), strict=True)),
            **(extra or {}),
        }

    def expand(self, argv: list[str]) -> list[str]:
        """``{workspace}`` and ``{env_dir}`` as the container sees them."""
        return [a.replace("{workspace}", WORKSPACE).replace("{env_dir}", ENV_DIR) for a in argv]

    async def run_command(self, argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        """Run ``argv`` inside the server's container (``docker exec``: same user,
        limits, network and mounts), in ``/workspace``, killed after ``timeout``."""
        if any("{env_dir}" in a for a in argv) and not self.uses_env_dir():
            raise BoundaryError(
                f"tool server {self.spec.name!r}: {{env_dir}} is mounted in the container only when "
                "the server's command uses it"
            )
        host = await self._ensure()
        assert isinstance(host, _DockerHost)  # the only kind _new_host makes
        handle = host.container.handle
        uid, gid = self.user()
        full = ["timeout", "-s", "KILL", f"{timeout:g}", *self.expand(argv)]

        def run() -> tuple[int, bytes | None, bytes | None]:
            code, (out, err) = handle.exec_run(
                full,
                environment=self.environment(env),
                workdir=WORKSPACE,
                user=f"{uid}:{gid}",
                demux=True,
            )
            return code, out, err

        with anyio.fail_after(timeout + 10):
            code, out, err = await anyio.to_thread.run_sync(run)
        cut = 65536
        return code, (out or b"")[:cut].decode(errors="replace"), (err or b"")[:cut].decode(errors="replace")

    def per_episode_values(self) -> dict[str, str]:
        return {}  # /workspace, HOME, TMPDIR and the hostname are the same in every container

    def user(self) -> tuple[int, int]:
        """uid:gid in the container: this user, or nobody when running as root."""
        uid = os.getuid()
        return UNPRIVILEGED if uid == 0 else (uid, os.getgid())

    def prepare_workspace(self) -> None:
        """As root, give the workspace to the container's unprivileged user."""
        if os.getuid() != 0:
            return
        chown_tree(self.ctx.workspace, *self.user())

    def config(self, network: str) -> dict[str, Any]:
        """``containers.create`` arguments: limits, mounts, user, labels."""
        import docker.types

        limits = self.spec.limits
        uid, gid = self.user()
        command = self.expand(list(self.spec.command)) if self.spec.command else None
        volumes = {str(self.ctx.workspace): {"bind": WORKSPACE, "mode": "rw"}}
        if self.uses_env_dir():
            volumes[str(self.base_dir)] = {"bind": ENV_DIR, "mode": "ro"}
        ulimits = [
            docker.types.Ulimit(name="nofile", soft=1024, hard=1024),
            docker.types.Ulimit(name="core", soft=0, hard=0),
        ]
        if limits.cpu_seconds:
            ulimits.append(docker.types.Ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds + 1))
        size = file_size_limit(limits.file_mb)
        ulimits.append(docker.types.Ulimit(name="fsize", soft=size, hard=size))
        tmpfs = f"size={limits.tmpfs_mb}m"
        config: dict[str, Any] = dict(
            image=self.image,
            command=command,
            stdin_open=self.spec.transport == "stdio",
            tty=False,
            user=f"{uid}:{gid}",
            environment=self.environment(),
            working_dir=WORKSPACE,
            hostname=HOSTNAME,  # the same in every episode (Docker's default is the container id)
            network_mode=network,
            read_only=True,
            tmpfs={
                "/tmp": f"rw,nosuid,nodev,{tmpfs},mode=1777",
                "/var/tmp": f"rw,nosuid,nodev,{tmpfs},mode=1777",
                "/run": f"rw,nosuid,nodev,{tmpfs},mode=0755",
            },
            shm_size=f"{limits.tmpfs_mb}m",
            volumes=volumes,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            nano_cpus=int(float(os.environ.get("OPENENV_MCP_DOCKER_CPUS", "1")) * 1e9),
            ulimits=ulimits,
            labels={
                LABEL: "1",
                f"{LABEL}.episode": self.ctx.episode_id,
                f"{LABEL}.server": self.spec.name,
                f"{LABEL}.owner": owner_label(),
            },
        )
        if limits.memory_mb:
            config["mem_limit"] = f"{limits.memory_mb}m"
            config["memswap_limit"] = f"{limits.memory_mb}m"
        if limits.processes:
            config["pids_limit"] = limits.processes
        return config

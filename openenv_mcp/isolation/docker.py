"""Docker boundary: the tool server in a container, one per episode (Docker SDK).

The container runs with ``--network none`` (unless the spec says
``network = "host"``, which here means the default bridge: outbound allowed,
host loopback still unreachable), memory (no swap), pids and CPU limits, a
per-process CPU-time ulimit, a read-only root filesystem, a private tmpfs
``/tmp``, all capabilities dropped, ``no-new-privileges``, an unprivileged
user, and the episode's workspace bind-mounted at ``/workspace``.

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
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.shared.message import SessionMessage

from ..core.spec import ToolServerSpec
from ..core.workspace import process_start_time
from ..errors import BoundaryError, ConfigError
from .base import ServerContext
from .mcpsession import McpConnection, SessionHost

__all__ = ["DEFAULT_IMAGE", "LABEL", "DockerConnection", "docker_client", "list_containers", "reap", "wait_removed"]

STDERR_TAIL = 4096
LINE_SLACK = 65536

DEFAULT_IMAGE = os.environ.get("OPENENV_MCP_DOCKER_IMAGE", "openenv-mcp/tools")
"""Image that runs a ``command`` spec with ``isolation = "docker"``."""
LABEL = "openenv-mcp"
"""Label prefix; every container carries ``openenv-mcp=1``."""
WORKSPACE = "/workspace"
"""Where the episode workspace is mounted in the container."""
ENV_DIR = "/env"
"""Where the environment's folder is mounted (read-only) when the command uses ``{env_dir}``."""
HOSTNAME = "openenv"
"""The hostname inside every container: the same in every episode."""
INTERNAL_NETWORK = "openenv-mcp-internal"
"""Internal network (no outbound route) for ``transport = "http"`` containers."""
UNPRIVILEGED = (65534, 65534)
"""uid:gid the server runs as when the environment server runs as root."""

_client: Any = None
_reaped = False


log = logging.getLogger("openenv_mcp.isolation")


def docker_client() -> Any:
    """The Docker SDK client (``DOCKER_HOST`` or the local socket), checked once."""
    global _client
    if _client is not None:
        return _client
    try:
        import docker
    except ImportError:
        raise ConfigError(
            "isolation 'docker' needs the Docker SDK for Python: pip install 'openenv-mcp[docker]'"
        ) from None
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as e:
        raise BoundaryError(
            f"cannot reach the Docker engine ({os.environ.get('DOCKER_HOST') or 'unix:///var/run/docker.sock'}): "
            f"{e}. Start it (e.g. `dockerd &`, or .ci/docker-setup.sh) or set DOCKER_HOST"
        ) from None
    _client = client
    return client


def list_containers(episode_id: str | None = None, all: bool = True) -> list[Any]:
    """Containers this framework started (optionally of one episode), running or not."""
    labels = [f"{LABEL}=1"] + ([f"{LABEL}.episode={episode_id}"] if episode_id else [])
    return docker_client().containers.list(all=all, filters={"label": labels})


def _owner() -> str:
    """``<host>:<pid>:<start time>``: the start time tells a dead server from a reused pid."""
    return f"{socket.gethostname()}:{os.getpid()}:{process_start_time(os.getpid())}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner_alive(pid: int, start: str) -> bool:
    """Whether the server that labelled a container still runs (a reused pid has another start time)."""
    return _alive(pid) and (not start or start == process_start_time(pid))


def reap() -> int:
    """Remove containers of this host whose owning process is gone; how many."""
    host = socket.gethostname()
    removed = 0
    for container in list_containers():
        name, pid, start = (container.labels.get(f"{LABEL}.owner", "").split(":") + ["", "", ""])[:3]
        if name == host and pid.isdigit() and not _owner_alive(int(pid), start):
            with contextlib.suppress(Exception):
                container.remove(force=True)
                removed += 1
    return removed


class Container:
    """One container run: created, attached, started; its stderr, exit and removal.

    A fresh one per server start (:class:`DockerConnection` restarts by
    discarding its session host, which removes the container).
    """

    def __init__(self, conn: DockerConnection) -> None:
        self.conn = conn
        self.spec = conn.spec
        self.handle: Any = None
        self.stderr_tail = bytearray()
        self.exit: str | None = None
        self.problem: str | None = None

    # -- messages
    def why(self) -> str | None:
        return self.problem or self.exit

    def stderr_text(self) -> str:
        return self.stderr_tail.decode(errors="replace").strip()[-500:]

    # -- blocking Docker API calls (run in threads)
    def create(self, network: str) -> None:
        global _reaped
        import docker.errors

        client = docker_client()
        if not _reaped:
            _reaped = True
            reap()
        self.conn.prepare_workspace()
        try:
            self.handle = client.containers.create(**self.conn.config(network))
        except docker.errors.ImageNotFound:
            raise BoundaryError(
                f"tool server {self.spec.name!r}: image {self.conn.image!r} is not on this Docker engine (images "
                "are never pulled implicitly): build it, e.g. `docker build -f docker/tools.Dockerfile "
                f"-t openenv-mcp/tools .`, or `docker pull {self.conn.image}`"
            ) from None
        except docker.errors.APIError as e:
            raise BoundaryError(
                f"tool server {self.spec.name!r}: cannot create a container from {self.conn.image!r}: "
                f"{e.explanation or e}"
            ) from None

    def attach(self) -> socket.socket:
        wrapped = self.handle.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        raw = getattr(wrapped, "_sock", wrapped)
        sock = raw.dup()
        with contextlib.suppress(Exception):
            wrapped.close()
        return sock

    def start(self) -> None:
        import docker.errors

        try:
            self.handle.start()
        except docker.errors.APIError as e:
            raise BoundaryError(
                f"tool server {self.spec.name!r}: container from {self.conn.image!r} did not start: "
                f"{e.explanation or e}"
            ) from None

    def finish(self) -> None:
        """Record why the container ended, then remove it (killing it if running)."""
        import docker.errors

        handle = self.handle
        if handle is None:
            return
        with contextlib.suppress(docker.errors.APIError, docker.errors.NotFound):
            handle.reload()
            state = handle.attrs.get("State", {})
            if state.get("OOMKilled"):
                self.exit = f"was killed at its memory limit ({self.spec.limits.memory_mb} MB)"
            elif not state.get("Running") and not str(state.get("FinishedAt", "0001")).startswith("0001"):
                code = state.get("ExitCode")
                self.exit = "was killed by SIGKILL" if code == 137 else f"exited with code {code}"
        if self.conn.closed:
            _remove_in_background(handle)  # the episode is over: keep its close off the reset path
        elif not _remove(handle):  # a restart: the old server must be gone before the new one starts
            _remove_in_background(handle)  # never left running: go on trying

    # -- the stdio transport as the SDK expects it
    @contextlib.asynccontextmanager
    async def stdio(self) -> AsyncIterator[tuple[Any, Any]]:
        network = "none" if self.spec.network == "none" else "bridge"
        stream: anyio.abc.ByteStream | None = None
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](16)
        try:
            await anyio.to_thread.run_sync(self.create, network)
            sock = await anyio.to_thread.run_sync(self.attach)
            if sock.family == socket.AF_UNIX:
                stream = await anyio.abc.UNIXSocketStream.from_socket(sock)
            else:
                stream = await anyio.abc.SocketStream.from_socket(sock)
            await anyio.to_thread.run_sync(self.start)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump_out, stream, read_writer)
                tg.start_soon(self._pump_in, stream, write_reader)
                try:
                    yield read_stream, write_stream
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if stream is not None:
                    with contextlib.suppress(Exception):
                        await stream.aclose()
                await anyio.to_thread.run_sync(self.finish)
                for s in (read_writer, read_stream, write_stream, write_reader):
                    await s.aclose()

    async def _pump_in(self, stream: anyio.abc.ByteStream, write_reader: Any) -> None:
        try:
            async for message in write_reader:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stream.send(data.encode() + b"\n")
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def _pump_out(self, stream: anyio.abc.ByteStream, read_writer: Any) -> None:
        """Split Docker's multiplexed attach frames; stdout lines become messages.

        A line longer than ``2 * limits.output_bytes + 64 KiB`` or one that is
        not JSON-RPC ends the session (:attr:`problem` says why); the container
        pays for huge outputs, not the environment server.
        """
        limit = 2 * self.spec.limits.output_bytes + LINE_SLACK
        buffered = BufferedByteReceiveStream(stream)
        line = bytearray()
        try:
            while True:
                header = await buffered.receive_exactly(8)
                size = int.from_bytes(header[4:8], "big")
                payload = await buffered.receive_exactly(size) if size else b""
                if header[0] == 2:
                    self.stderr_tail += payload
                    del self.stderr_tail[:-STDERR_TAIL]
                    continue
                line += payload
                while (end := line.find(b"\n")) >= 0:
                    raw = bytes(line[:end])
                    del line[: end + 1]
                    if not raw.strip():
                        continue
                    try:
                        message = mcp_types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
                    except ValueError:
                        shown = raw[:200].decode(errors="replace")
                        self.problem = f"wrote non-JSON-RPC output to stdout: {shown!r}"
                        return
                    await read_writer.send(SessionMessage(message))
                if len(line) > limit:
                    self.problem = f"wrote a message over {limit} bytes to stdout (limit: 2 x output_bytes + 64 KiB)"
                    return
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            await read_writer.aclose()  # the session sees the end; its host removes the container

    # -- HTTP entrypoints
    @contextlib.asynccontextmanager
    async def http(self) -> AsyncIterator[tuple[Any, Any]]:
        from mcp.client.streamable_http import streamable_http_client

        internal = self.spec.network == "none"
        network = INTERNAL_NETWORK if internal else "bridge"
        try:
            if internal:
                await anyio.to_thread.run_sync(_internal_network)
            await anyio.to_thread.run_sync(self.create, network)
            await anyio.to_thread.run_sync(self.start)
            await anyio.to_thread.run_sync(self.handle.reload)
            ip = self.handle.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]
            port = int(self.conn.ctx.env.get("PORT", "8000"))
            await self._wait_port(ip, port)
            async with streamable_http_client(f"http://{ip}:{port}/mcp") as streams:
                yield streams[0], streams[1]
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.finish)

    async def _wait_port(self, ip: str, port: int) -> None:
        deadline = time.monotonic() + self.spec.limits.start_timeout
        while True:
            try:
                stream = await anyio.connect_tcp(ip, port)
                await stream.aclose()
                return
            except OSError:
                await anyio.to_thread.run_sync(self.handle.reload)
                if self.handle.status not in ("created", "running"):
                    logs = await anyio.to_thread.run_sync(lambda: self.handle.logs(tail=20))
                    self.stderr_tail += logs
                    raise BoundaryError(
                        f"tool server {self.spec.name!r}: the container stopped before serving HTTP on port {port}; "
                        f"output: {self.stderr_text()}"
                    ) from None
                if time.monotonic() > deadline:
                    raise BoundaryError(
                        f"tool server {self.spec.name!r}: nothing listens on port {port} in the container"
                    ) from None
                await anyio.sleep(0.05)


REMOVE_WAIT = 30.0
"""How long a restart waits for the old container to go (then the removal goes on in the background)."""
BACKGROUND_REMOVE_WAIT = 600.0
"""How long removals go on being retried in the background (a slow or restarting engine)."""


def _remove(handle: Any, wait: float = REMOVE_WAIT) -> bool:
    """Kill and remove a container, retried (backing off) on any engine error or timeout until it
    is gone or ``wait`` seconds have passed; whether it is gone."""
    import docker.errors

    deadline = time.monotonic() + wait
    delay = 0.1
    while True:
        try:
            handle.remove(force=True)
            return True
        except docker.errors.NotFound:
            return True
        except Exception as e:  # noqa: BLE001 - an API error, or a slow engine's timeout / dropped connection
            problem = e
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            log.warning("container %s is not removed yet: %s", getattr(handle, "short_id", "?"), problem)
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 2.0)


_removals: set[threading.Thread] = set()
_removals_lock = threading.Lock()


def _remove_in_background(handle: Any) -> None:
    """:func:`_remove` in a (non-daemon) thread: the interpreter waits for it at exit."""

    def run() -> None:
        try:
            if not _remove(handle, BACKGROUND_REMOVE_WAIT):
                log.error(
                    "container %s could not be removed within %g s; it is removed at the next start "
                    "(its server is dead then)",
                    getattr(handle, "short_id", "?"),
                    BACKGROUND_REMOVE_WAIT,
                )
        finally:
            with _removals_lock:
                _removals.discard(thread)

    thread = threading.Thread(target=run, name="openenv-mcp-docker-remove", daemon=False)
    with _removals_lock:
        _removals.add(thread)
    thread.start()


def wait_removed(timeout: float = 30.0) -> bool:
    """Wait until the containers of closed connections are removed; whether all are."""
    deadline = time.monotonic() + timeout
    while True:
        with _removals_lock:
            pending = list(_removals)
        if not pending:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        pending[0].join(remaining)


def _internal_network() -> None:
    client = docker_client()
    if not client.networks.list(names=[INTERNAL_NETWORK]):
        with contextlib.suppress(Exception):  # a concurrent creator wins
            client.networks.create(INTERNAL_NETWORK, driver="bridge", internal=True, labels={LABEL: "1"})


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
        uid, gid = self.user()
        root = self.ctx.workspace
        os.chown(root, uid, gid)
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                with contextlib.suppress(OSError):
                    os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)

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
            tmpfs={"/tmp": "rw,nosuid,nodev,size=64m,mode=1777"},
            volumes=volumes,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            nano_cpus=int(float(os.environ.get("OPENENV_MCP_DOCKER_CPUS", "1")) * 1e9),
            ulimits=ulimits,
            labels={
                LABEL: "1",
                f"{LABEL}.episode": self.ctx.episode_id,
                f"{LABEL}.server": self.spec.name,
                f"{LABEL}.owner": _owner(),
            },
        )
        if limits.memory_mb:
            config["mem_limit"] = f"{limits.memory_mb}m"
            config["memswap_limit"] = f"{limits.memory_mb}m"
        if limits.processes:
            config["pids_limit"] = limits.processes
        return config

"""The Docker engine side of the docker boundary: the SDK client, and our containers on the engine.

Every container the boundary starts carries labels (``openenv-mcp=1``, ``openenv-mcp.episode=<id>``,
``openenv-mcp.server``, ``openenv-mcp.owner=<host>:<pid>:<start time>``), so they can be listed
(:func:`list_containers`) and those whose owning process died reaped (:func:`reap`, run once per
process at the first start: :func:`reap_once`). A container is removed by :func:`remove` (retried on
a slow engine) or :func:`remove_in_background` (off the reset path; :func:`wait_removed` waits for
those, and the interpreter does at exit).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from typing import Any

from openenv_mcp.errors import BoundaryError, ConfigError
from openenv_mcp.isolation.host.workspace import process_start_time

__all__ = [
    "INTERNAL_NETWORK",
    "LABEL",
    "docker_client",
    "ensure_internal_network",
    "list_containers",
    "owner_label",
    "reap",
    "reap_once",
    "remove",
    "remove_in_background",
    "wait_removed",
]

LABEL = "openenv-mcp"
"""Label prefix; every container carries ``openenv-mcp=1``."""
INTERNAL_NETWORK = "openenv-mcp-internal"
"""Internal network (no outbound route) for ``transport = "http"`` containers."""

_clients: dict[str, Any] = {}
"""The SDK client of each engine address reached (``DOCKER_HOST``, or the local socket)."""
_reaped = False


log = logging.getLogger("openenv_mcp.isolation")


def docker_client() -> Any:
    """The Docker SDK client of the engine ``DOCKER_HOST`` names (else the local socket), checked
    once per address."""
    address = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    client = _clients.get(address)
    if client is not None:
        return client
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
            f"cannot reach the Docker engine ({address}): "
            f"{e}. Start it (e.g. `dockerd &`, or .ci/docker-setup.sh) or set DOCKER_HOST"
        ) from None
    _clients[address] = client
    return client


def list_containers(episode_id: str | None = None, all: bool = True) -> list[Any]:
    """Containers this framework started (optionally of one episode), running or not. One removed
    while it is listed (by another environment server on the host) is left out, not an error."""
    labels = [f"{LABEL}=1"] + ([f"{LABEL}.episode={episode_id}"] if episode_id else [])
    return docker_client().containers.list(all=all, filters={"label": labels}, ignore_removed=True)


def owner_label() -> str:
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


def reap_once() -> None:
    """:func:`reap`, the first time this process starts a container."""
    global _reaped
    if not _reaped:
        _reaped = True
        reap()


REMOVE_WAIT = 30.0
"""How long a restart waits for the old container to go (then the removal goes on in the background)."""
BACKGROUND_REMOVE_WAIT = 600.0
"""How long removals go on being retried in the background (a slow or restarting engine)."""


def remove(handle: Any, wait: float = REMOVE_WAIT) -> bool:
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


def remove_in_background(handle: Any) -> None:
    """:func:`remove` in a (non-daemon) thread: the interpreter waits for it at exit."""

    def run() -> None:
        try:
            if not remove(handle, BACKGROUND_REMOVE_WAIT):
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


def ensure_internal_network() -> None:
    client = docker_client()
    if not client.networks.list(names=[INTERNAL_NETWORK]):
        with contextlib.suppress(Exception):  # a concurrent creator wins
            client.networks.create(INTERNAL_NETWORK, driver="bridge", internal=True, labels={LABEL: "1"})

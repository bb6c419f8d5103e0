"""Isolation: where a tool server runs and how it is reached, one folder per concept (lowest last).

``connect(spec, ctx, base_dir)`` returns an unstarted :class:`Connection` for the spec's ``isolation``.

* :mod:`openenv_mcp.isolation.codeact` — the CodeAct interpreter (it runs inside the sandbox boundary);
* :mod:`openenv_mcp.isolation.boundaries` — the boundaries, one a module: ``inprocess``, ``process``,
  ``sandbox`` (bubblewrap), ``docker``, ``remote``;
* :mod:`openenv_mcp.isolation.faststart` — fast sandboxed starts (zygotes forking each episode's server);
* :mod:`openenv_mcp.isolation.containers` — the Docker engine and one tool server's container;
* :mod:`openenv_mcp.isolation.transport` — a child's stdio and its JSON-lines framing, the MCP client
  session every MCP-speaking boundary shares, one-shot commands;
* :mod:`openenv_mcp.isolation.host` — host plumbing: launch, uids, process trees, cgroups, runtimes,
  folder exposure, workspaces;
* :mod:`openenv_mcp.isolation.base` — the interface every boundary implements (:class:`ServerContext`,
  :class:`Connection`).

A folder imports only the ones below it (the import contract in ``pyproject.toml`` checks it).
"""

from __future__ import annotations

from pathlib import Path

from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.errors import ConfigError
from openenv_mcp.isolation.base import Connection, ServerContext

__all__ = ["Connection", "ServerContext", "connect", "finish_removals"]


def finish_removals(timeout: float = 60.0) -> None:
    """Block until closed episodes' workspaces are deleted and their containers removed (at
    shutdown: a server stopped by a signal may never run ``atexit``)."""
    import sys

    from openenv_mcp.isolation.host.workspace import drain_removals

    drain_removals()
    engine = sys.modules.get("openenv_mcp.isolation.containers.engine")
    if engine is not None:  # only when this process started containers
        engine.wait_removed(timeout)


def connect(spec: ToolServerSpec, ctx: ServerContext, base_dir: Path | None = None) -> Connection:
    """An unstarted connection to ``spec`` behind its boundary."""
    kind = spec.isolation
    if kind == "inprocess":
        from openenv_mcp.isolation.boundaries.inprocess import InProcessConnection

        return InProcessConnection(spec, ctx, base_dir)
    if kind == "process":
        from openenv_mcp.isolation.boundaries.process import ProcessConnection

        return ProcessConnection(spec, ctx, base_dir)
    if kind == "sandbox":
        from openenv_mcp.isolation.boundaries.sandbox import SandboxConnection

        return SandboxConnection(spec, ctx, base_dir)
    if kind == "remote":
        from openenv_mcp.isolation.boundaries.remote import RemoteConnection

        return RemoteConnection(spec, ctx, base_dir)
    if kind == "docker":
        from openenv_mcp.isolation.boundaries.docker import DockerConnection

        return DockerConnection(spec, ctx, base_dir)
    raise ConfigError(f"tool server {spec.name!r}: isolation {kind!r} is not available in this build")

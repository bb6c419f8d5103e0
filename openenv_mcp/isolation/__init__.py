"""Isolation boundaries, one backend per module.

``connect(spec, ctx, base_dir)`` returns an unstarted :class:`Connection` for
the spec's ``isolation``.

The boundaries: :mod:`.inprocess`, :mod:`.process`, :mod:`.sandbox` (and the CodeAct
:mod:`.interpreter` in it), :mod:`.docker`, :mod:`.remote`; all but ``inprocess`` speak MCP through
:mod:`.mcpsession`. What they share, one concept a module: :mod:`.base` (the interface),
:mod:`.launch`, :mod:`.uids`, :mod:`.stdio` and :mod:`.jsonlines` (a child's stdio transport and its
framing), :mod:`.proctree`, :mod:`.exposure`, :mod:`.runtime`, :mod:`.cgroup`, :mod:`.commands`;
the docker boundary's :mod:`.dockerengine` and :mod:`.dockercontainer`.
"""

from __future__ import annotations

from pathlib import Path

from ..core.spec import ToolServerSpec
from ..errors import ConfigError
from .base import Connection, ServerContext

__all__ = ["Connection", "ServerContext", "connect", "finish_removals"]


def finish_removals(timeout: float = 60.0) -> None:
    """Block until closed episodes' workspaces are deleted and their containers removed (at
    shutdown: a server stopped by a signal may never run ``atexit``)."""
    import sys

    from ..core.workspace import drain_removals

    drain_removals()
    engine = sys.modules.get(f"{__name__}.dockerengine")
    if engine is not None:  # only when this process started containers
        engine.wait_removed(timeout)


def connect(spec: ToolServerSpec, ctx: ServerContext, base_dir: Path | None = None) -> Connection:
    """An unstarted connection to ``spec`` behind its boundary."""
    kind = spec.isolation
    if kind == "inprocess":
        from .inprocess import InProcessConnection

        return InProcessConnection(spec, ctx, base_dir)
    if kind == "process":
        from .process import ProcessConnection

        return ProcessConnection(spec, ctx, base_dir)
    if kind == "sandbox":
        from .sandbox import SandboxConnection

        return SandboxConnection(spec, ctx, base_dir)
    if kind == "remote":
        from .remote import RemoteConnection

        return RemoteConnection(spec, ctx, base_dir)
    if kind == "docker":
        from .docker import DockerConnection

        return DockerConnection(spec, ctx, base_dir)
    raise ConfigError(f"tool server {spec.name!r}: isolation {kind!r} is not available in this build")

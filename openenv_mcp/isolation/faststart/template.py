"""Fast sandboxed starts: one fork server (zygote) per sandboxed tool server, forking each episode's server.

A sandboxed tool server normally costs a ``bwrap`` and a Python interpreter importing the
server, per episode. With fast starts, the first episode starts a *zygote* (:mod:`openenv_mcp.isolation.faststart.zygote_main`)
inside a template of that server's sandbox (the same ``bwrap`` command minus the episode's
workspace and uid: same read-only host, masks, binds, network policy); it imports the tool
server once. Every episode then gets a child forked from it, which makes its own mount, PID,
IPC, UTS, cgroup (and network) namespaces, mounts the episode's workspace at ``/workspace``
and fresh ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm``, ``/dev/pts`` and ``/proc``, sets the
server's limits, drops every capability and becomes the episode's unprivileged uid (the one
leased by :data:`~openenv_mcp.isolation.boundaries.process.UIDS`, whose guard kills all its processes at close) before any
episode code runs. What episodes share is read-only: the host files the template shows and
the imported code's pages (copy-on-write). See ``docs/env-file.md``, "Fast starts".

Used only where it changes nothing the boundary guarantees: ``isolation = "sandbox"``, the
environment server running as root, a command ``python -m openenv_mcp.tool_servers.<name>``
(the framework's own servers: their import runs as root in the zygote, so third-party code is
never imported there), no ``PYTHON*`` variables, ``fast_start`` not turned off (env file) and
``OPENENV_MCP_FAST_START`` not ``0``. A zygote that cannot start or dies is replaced on the next
episode; if it cannot be started the episode starts the ordinary way (a warning says why).

This module decides where fast starts apply and builds the zygote's sandbox template
(:func:`fast_process`, :func:`template_for`); :mod:`openenv_mcp.isolation.faststart.zygote` runs the zygotes and
:mod:`openenv_mcp.isolation.faststart.forked` is an episode's forked server.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from openenv_mcp.isolation.faststart.forked import ZygoteProcess
from openenv_mcp.isolation.faststart.zygote import Zygote, close_zygotes, shared_processes, zygote_count, zygote_pids
from openenv_mcp.isolation.host.launch import rlimits_for, tmpfs_inodes

__all__ = [
    "ZYGOTE_CAPS",
    "Zygote",
    "ZygoteProcess",
    "close_zygotes",
    "fast_process",
    "fast_starts_enabled",
    "shared_processes",
    "template_for",
    "zygote_count",
    "zygote_pids",
]

ZYGOTE_SCRIPT = str(Path(__file__).with_name("zygote_main.py"))
ZYGOTE_CAPS = "CAP_SYS_ADMIN,CAP_SETUID,CAP_SETGID,CAP_SETPCAP,CAP_NET_ADMIN"
"""What the zygote keeps (to build a child's namespaces and drop it to its uid); children keep nothing."""
MODULE_PREFIX = "openenv_mcp.tool_servers."


def fast_starts_enabled() -> bool:
    """``OPENENV_MCP_FAST_START=0`` turns fast starts off for the whole process."""
    return os.environ.get("OPENENV_MCP_FAST_START", "1").strip().lower() not in ("0", "false", "no", "off")


_TEMPLATES: dict[tuple[int, tuple[str, ...]], tuple[Any, list[str] | None]] = {}


def template_for(conn: Any, argv: list[str]) -> list[str] | None:
    """The zygote's sandbox: the server's own ``bwrap`` command without the episode's workspace, uid
    (``setpriv``) and PID namespace (each child makes its own), keeping the capabilities a child's
    set-up needs (:data:`ZYGOTE_CAPS`). The same for every episode of a spec, so built once per spec."""
    key = (id(conn.spec), tuple(argv))
    cached = _TEMPLATES.get(key)
    if cached is not None and cached[0] is conn.spec:
        return cached[1]
    args = conn.bwrap_args(argv)
    template: list[str] | None = None
    try:
        cut = args.index("--") - 2  # the root's --remount-ro /, the last of bwrap's own arguments
        if args[cut : cut + 2] != ["--remount-ro", "/"]:
            raise ValueError("not a sandbox command line")
        ws = args.index("--bind", args.index("--hostname"))
        while args[ws + 2] != "/workspace":
            ws = args.index("--bind", ws + 1)
    except (ValueError, IndexError):
        pass
    else:
        head = [a for a in args[:ws] if a not in ("--unshare-pid", "--die-with-parent")]  # its socket ties it to us
        head = [ZYGOTE_CAPS if a == "CAP_SETUID,CAP_SETGID" else a for a in head]
        rest = [a for i, a in enumerate(args[ws + 3 : cut]) if a != "--chdir" and args[ws + 2 + i] != "--chdir"]
        template = [*head, "--dir", "/workspace", *rest, "--remount-ro", "/", "--", sys.executable, "-I"]
    _TEMPLATES[key] = (conn.spec, template)
    return template


def fast_process(conn: Any, argv: list[str], plain: Any, line_limit: int, output_limit: int,
                 kill_uid: bool) -> ZygoteProcess | None:  # fmt: skip
    """A :class:`ZygoteProcess` for a sandbox connection's server, or ``None`` where fast starts do not apply.
    ``plain()`` makes the ordinary :class:`Launch` (used when no zygote can start)."""
    spec = conn.spec
    if not (fast_starts_enabled() and getattr(spec, "fast_start", True) and conn.privileged):
        return None
    if conn.expose is not None or len(argv) < 3 or argv[1] != "-m" or not argv[2].startswith(MODULE_PREFIX):
        return None
    if os.path.realpath(argv[0]) != os.path.realpath(sys.executable):
        return None
    env = conn.child_env(argv[0])
    if any(k.startswith("PYTHON") for k in env):
        return None
    template = template_for(conn, argv)
    if template is None:
        return None
    template = [*template, ZYGOTE_SCRIPT]
    child = {
        "module": argv[2],
        "args": argv[3:],
        "uid": conn.uid,
        "env": env,
        "rlimits": [[w, s, h] for w, (s, h) in rlimits_for(spec, True)],
        "net": spec.network != "host",
        "hostname": "openenv-sandbox",
        "tmpfs_mb": spec.limits.tmpfs_mb,
        "nr_inodes": tmpfs_inodes(spec.limits.tmpfs_mb),
        "cgroup_path": conn.group(),  # the server's cgroup (see .cgroup), or None where cgroup v2 is unusable
    }
    zygote_env = {k: v for k, v in env.items() if k in ("PATH", "LANG")}
    return ZygoteProcess(
        spec.name,
        plain,
        (template, zygote_env, argv[2]),
        child,
        str(conn.ctx.workspace),
        line_limit,
        output_limit,
        kill_uid,
    )

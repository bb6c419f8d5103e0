"""Launching a server: its argv, scrubbed environment, limits and the drop to its uid.

A :class:`Launch` is everything needed to spawn one server; :meth:`Launch.command` puts a small
launcher in front of it that runs as root between spawn and the server: the ``setrlimit`` calls
(:func:`rlimits_for`: data, CPU, open files, processes, file size), joining the server's cgroup,
dropping to its uid (no groups), the parent-death signal, then ``exec``. Also here: finding a command's program (:func:`resolve_executable`) and
expanding the ``{workspace}`` / ``{env_dir}`` placeholders of a command and its variables.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys

from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.errors import BoundaryError

__all__ = [
    "INODES_PER_MB",
    "SYSTEM_PATH",
    "Launch",
    "expand",
    "expand_env",
    "file_size_limit",
    "resolve_executable",
    "rlimits_for",
    "tmpfs_inodes",
]

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""System folders on every server's ``PATH`` (after the command's own folder)."""

_LAUNCHER = """import ctypes, json, os, resource, sys
cfg = json.loads(sys.argv[1])
for which, soft, hard in cfg["rlimits"]:
    resource.setrlimit(which, (soft, hard))
if cfg.get("cgroup"):
    try:
        with open(cfg["cgroup"], "w") as f:
            f.write("0")
    except OSError as e:
        sys.stderr.write("could not join the server's cgroup %s: %s\\n" % (cfg["cgroup"], e.strerror)); os._exit(126)
if cfg["uid"] is not None:
    os.setgroups([]); os.setgid(cfg["uid"]); os.setuid(cfg["uid"])
    if os.getuid() != cfg["uid"] or os.geteuid() != cfg["uid"] or os.getgroups():
        sys.stderr.write("could not drop to uid %d\\n" % cfg["uid"]); os._exit(126)
ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)
if cfg["parent"] and os.getppid() != cfg["parent"]:
    os._exit(1)
try:
    os.execv(sys.argv[2], sys.argv[2:])
except OSError as e:
    sys.stderr.write("could not start %s: %s\\n" % (sys.argv[2], e.strerror)); os._exit(127)
"""
"""Run as root between spawn and the server: limits, drop to the uid (no groups), parent-death
signal, then exec. A separate program rather than ``preexec_fn``/``user=`` (which uvloop rejects)."""


class Launch:
    """Everything needed to spawn one server: argv, environment, cwd, uid, limits."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        uid: int | None,
        rlimits: list[tuple[int, tuple[int, int]]],
        wrap: list[str] | None = None,
        cgroup: str | None = None,
    ) -> None:
        self.argv, self.env, self.cwd, self.uid, self.rlimits = argv, env, cwd, uid, rlimits
        self.wrap = wrap or []
        """A command the launcher runs inside (as root), e.g. a mount namespace exposing the runtime."""
        self.cgroup = cgroup
        """A ``cgroup.procs`` file the launcher joins first (see :mod:`openenv_mcp.isolation.host.cgroup`)."""

    def command(self) -> list[str]:
        """The argv actually spawned: the launcher (limits, uid, parent-death signal), then ``argv``."""
        config = {
            "rlimits": [[w, s, h] for w, (s, h) in self.rlimits],
            "uid": self.uid,
            "parent": 0 if self.wrap else os.getpid(),
            "cgroup": self.cgroup,
        }
        return [*self.wrap, sys.executable, "-S", "-I", "-c", _LAUNCHER, json.dumps(config), *self.argv]


def rlimits_for(spec: ToolServerSpec, limit_processes: bool) -> list[tuple[int, tuple[int, int]]]:
    """The ``setrlimit`` calls for ``spec.limits``."""
    limits = spec.limits
    out: list[tuple[int, tuple[int, int]]] = [(resource.RLIMIT_CORE, (0, 0))]
    if limits.memory_mb:
        size = limits.memory_mb * 1024 * 1024
        out.append((resource.RLIMIT_DATA, (size, size)))
    if limits.cpu_seconds:
        out.append((resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1)))
    open_files = getattr(limits, "open_files", None) or 1024
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY:
        open_files = min(open_files, hard)
    out.append((resource.RLIMIT_NOFILE, (open_files, open_files)))
    if limit_processes and limits.processes:
        out.append((resource.RLIMIT_NPROC, (limits.processes, limits.processes)))
    size = file_size_limit(limits.file_mb)
    out.append((resource.RLIMIT_FSIZE, (size, size)))
    return out


INODES_PER_MB = 128
"""Files a sandbox's memory-backed folder holds per MiB of its size (32768 in the default 256 MiB)."""


def tmpfs_inodes(tmpfs_mb: int) -> int:
    """``nr_inodes`` of a memory-backed folder of ``tmpfs_mb`` MiB: empty files cost kernel memory too."""
    return max(1024, tmpfs_mb * INODES_PER_MB)


def file_size_limit(file_mb: int) -> int:
    """``RLIMIT_FSIZE`` in bytes for ``file_mb``, or the lower limit this process already has."""
    size = file_mb * 1024 * 1024
    for inherited in resource.getrlimit(resource.RLIMIT_FSIZE):
        if inherited != resource.RLIM_INFINITY:
            size = min(size, inherited)
    return size


def resolve_executable(name: str, server: str) -> str:
    """``python``/``python3`` -> this interpreter; a bare name -> found on the host's ``PATH``."""
    if name in ("python", "python3"):
        return sys.executable
    if os.sep in name:
        return name
    found = shutil.which(name)
    if found is None:
        raise BoundaryError(f"tool server {server!r} could not start: command {name!r} not found on PATH")
    return found


def expand(argv: list[str], values: dict[str, str]) -> list[str]:
    """Replace ``{workspace}`` and ``{env_dir}`` placeholders in ``argv``."""
    out = []
    for arg in argv:
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def expand_env(env: dict[str, str], values: dict[str, str]) -> dict[str, str]:
    """Replace ``{workspace}`` and ``{env_dir}`` placeholders in the values of ``env``."""
    return dict(zip(env, expand(list(env.values()), values), strict=True))

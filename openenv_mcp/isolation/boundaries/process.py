"""Process boundary: a stdio MCP server in any language, as a limited child process.

What the boundary enforces (see ``docs/env-file.md``, "Isolation"):

* **One persistent MCP session** per episode and tool server, through the
  official SDK ``ClientSession`` over our own stdio transport (below).
* **Resource limits** (``setrlimit`` in the child): memory (``RLIMIT_DATA``,
  ``limits.memory_mb``), CPU time (``RLIMIT_CPU``, ``limits.cpu_seconds``),
  open files (``RLIMIT_NOFILE``, ``limits.open_files``), no core dumps.
* **Process count** (``RLIMIT_NPROC``, ``limits.processes``): the kernel
  ignores it for root, so when the environment server runs as root each
  episode's servers run as an unprivileged uid of their own
  (:data:`UID_BASE` + n, no supplementary groups). That also keeps episodes
  from signalling or reading each other. As a non-root user the server runs
  as that user and the process count is not limited (use ``sandbox``).
* **A scrubbed environment**: only the spec's ``env`` and the declared
  ``pass_env`` variables, plus ``PATH`` (the command's folder and the system
  folders), ``HOME`` and ``TMPDIR`` (a private folder per server), ``LANG``
  (``C.UTF-8``).
* **A private workspace** (the episode's; the server's working directory,
  owned by the server's uid) and a private home/tmp folder.
* **Its own session and process group; the whole tree is killed on close**
  (the process group, and every process of the server's uid), and the child
  gets ``PR_SET_PDEATHSIG``: nothing outlives the environment server.
* **Bounded reads**: one stdout message may take at most
  ``2 * limits.output_bytes + 64 KiB``; a longer one is cut, never buffered
  whole, and the call gets the start of its text and a visible marker.
  stderr keeps only its last 4 KiB (shown in error messages).

A server that cannot start, exits, writes something that is not JSON-RPC to
stdout or never answers ``initialize`` raises :class:`BoundaryError` with the
reason (exit status, stderr tail, offending line); the episode turns it into
an error result and the next call starts the server again.

What it does not do: hide the host's files or network (every world-readable
file can be read, loopback reached). Use ``sandbox`` for that.

This module is the connection; its parts are their own modules: :mod:`openenv_mcp.isolation.host.launch` (argv, environment,
limits, the drop to the uid), :mod:`openenv_mcp.isolation.host.uids` (the episodes' uids), :mod:`openenv_mcp.isolation.transport.stdio` (the child's stdio
transport), :mod:`openenv_mcp.isolation.host.proctree` (finding and killing its processes), :mod:`openenv_mcp.isolation.host.exposure` (what a uid can
reach, and exposing a private runtime) and :mod:`openenv_mcp.isolation.transport.commands` (one-shot commands).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
import anyio.to_thread

from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.errors import ConfigError
from openenv_mcp.isolation.base import ServerContext
from openenv_mcp.isolation.host import cgroup
from openenv_mcp.isolation.host.cgroup import Group
from openenv_mcp.isolation.host.exposure import exposing_wrap, private_ancestor, reachable_by_others
from openenv_mcp.isolation.host.exposure import outermost as outermost
from openenv_mcp.isolation.host.launch import SYSTEM_PATH, Launch, expand, expand_env, resolve_executable, rlimits_for
from openenv_mcp.isolation.host.proctree import kill_uid as kill_uid
from openenv_mcp.isolation.host.proctree import uid_processes as uid_processes
from openenv_mcp.isolation.host.runtime import command_paths
from openenv_mcp.isolation.host.uids import UID_BASE, UIDS, chown_tree
from openenv_mcp.isolation.host.workspace import owner_tag, remove_tree
from openenv_mcp.isolation.transport.commands import run_launch
from openenv_mcp.isolation.transport.jsonlines import LINE_SLACK
from openenv_mcp.isolation.transport.mcpsession import McpConnection, SessionHost
from openenv_mcp.isolation.transport.stdio import StdioProcess

__all__ = ["SYSTEM_PATH", "UID_BASE", "Launch", "ProcessConnection", "StdioProcess"]
# ``outermost``, ``kill_uid`` and ``uid_processes`` (``X as X`` above) lived here before the isolation
# layer was split: still importable from here for callers not moved yet (the conformance shutdown rule,
# the sandbox zygote's branch). New code imports them from :mod:`openenv_mcp.isolation.host.exposure` and :mod:`openenv_mcp.isolation.host.proctree`.

_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        logging.getLogger("openenv_mcp.isolation").warning(message)


# -- the connection -----------------------------------------------------------------------
MISSING_RUNTIME = re.compile(
    r"Cannot find module|ERR_MODULE_NOT_FOUND|No module named|ModuleNotFoundError|No such file or directory"
    r"|error while loading shared libraries|can't open file"
)
"""What a server's stderr says when part of its runtime is not there (a boundary adds how to bind it)."""


class _ProcessHost(SessionHost):
    def __init__(self, name: str, process: StdioProcess, hint: str | None = None) -> None:
        super().__init__(name, process.streams)
        self.process = process
        self.hint = hint
        """Appended to the stderr tail when it says a module or file is missing."""

    def why(self) -> str | None:
        process = self.process
        if process.problem:
            return process.problem
        if process.proc is not None and process.proc.returncode is not None:
            return process.status()
        return None

    def stderr(self) -> str:
        text = self.process.stderr_text()
        hint = self.hint if self.hint and MISSING_RUNTIME.search(text) else ""
        return text[-500:] + hint


class ProcessConnection(McpConnection):
    """A stdio MCP server (``command``) as a limited child process of its own."""

    boundary = "process"

    def __init__(self, spec: ToolServerSpec, ctx: ServerContext, base_dir: Path | None = None) -> None:
        super().__init__(spec, ctx)
        if not spec.command:
            raise ConfigError(f"tool server {spec.name!r}: isolation {self.boundary!r} needs a command")
        self.base_dir = Path(base_dir or Path.cwd()).resolve()
        self.executable = resolve_executable(self.named()[0], spec.name)
        self.uid: int | None = None
        self.expose: str | None = None
        """``bwrap``, when the runtime sits in a private folder and a mount namespace exposes it."""
        if os.geteuid() == 0:
            if spec.run_as_root:
                warn_once(
                    self.executable,
                    (
                        f"tool server {spec.name!r} runs as root (run_as_root = true): nothing holds its process "
                        "count, and it can read, write and kill anything on the host"
                    ),
                )
            elif not self.can_drop_to_uid():
                self.expose = shutil.which("bwrap")
                if self.expose is None:
                    private = self.unreachable() or self.executable
                    raise ConfigError(
                        f"tool server {spec.name!r}: {private} is not reachable by an unprivileged uid (a "
                        f"parent folder is private: {private_ancestor(private) or private}) and bubblewrap is "
                        "not installed to expose it, so the server would run as root: install its runtime in a "
                        "world-readable place, install bubblewrap (`apt-get install bubblewrap`), use isolation = "
                        '"sandbox", or set run_as_root = true in the env file to run it as root on purpose'
                    )
            if not spec.run_as_root:
                self.uid = UIDS.acquire(ctx.episode_id)
        self._private: Path | None = None
        self.cgroup: Group | None = None
        """This server's cgroup (every process it starts, killed on close), where cgroup v2 is usable."""

    def named(self) -> list[str]:
        """The command with ``{env_dir}`` expanded (``{workspace}`` needs the workspace: see :meth:`command`)."""
        return expand(list(self.spec.command or []), {"env_dir": str(self.base_dir)})

    def can_drop_to_uid(self) -> bool:
        """Whether the server can run as an unprivileged uid (it must reach its program)."""
        return self.unreachable() is None

    def unreachable(self, argv: list[str] | None = None) -> str | None:
        """The first path a command (the server's by default) needs (its program, the files it names,
        their runtime: a virtualenv, a script's interpreter, a Node package) that an unprivileged uid
        cannot reach."""
        full = argv or [self.executable, *self.named()[1:]]
        for path in [full[0], *command_paths(full, self.base_dir)]:
            if path != str(self.base_dir) and private_ancestor(path) is not None:
                return path
        return None if reachable_by_others(full[0]) else full[0]

    # -- hooks for the sandbox
    def workspace_path(self) -> str:
        """The workspace as the server sees it."""
        return str(self.ctx.workspace)

    def private_dir(self) -> Path:
        """A folder only this server may use (its ``HOME`` and ``TMPDIR``)."""
        if self._private is None:
            self._private = Path(
                tempfile.mkdtemp(prefix=f"openenv-mcp-home-{owner_tag()}-", dir=self.ctx.workspace.parent)
            )
            if self.uid is not None:
                os.chown(self._private, self.uid, self.uid)
        return self._private

    def per_episode_values(self) -> dict[str, str]:
        values = {"the workspace path": self.workspace_path()}
        if self._private is not None:
            values["HOME/TMPDIR"] = str(self._private)
        if self.uid is not None:
            values["the episode's uid"] = str(self.uid)
        return values

    def child_env(self, executable: str) -> dict[str, str]:
        home = str(self.private_dir())
        folder = os.path.dirname(executable)
        env = {
            "PATH": f"{folder}:{SYSTEM_PATH}" if folder else SYSTEM_PATH,
            "HOME": home,
            "TMPDIR": home,
            "LANG": "C.UTF-8",
        }
        env.update(self.placeholders(self.ctx.env))
        return env

    def placeholders(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with ``{workspace}`` and ``{env_dir}`` expanded as the server sees them."""
        return expand_env(env, {"workspace": self.workspace_path(), "env_dir": str(self.base_dir)})

    def launch(self, argv: list[str], executable: str | None = None) -> Launch:
        """Turn a command into a :class:`Launch` (the sandbox wraps it)."""
        executable = executable or self.executable
        full = [executable, *argv[1:]]
        wrap = None
        expose = self.expose
        if expose is None and self.uid is not None and self.unreachable(full) is not None:
            expose = shutil.which("bwrap")  # e.g. a reward command under a private env folder
        if expose is not None:
            wrap = exposing_wrap(
                expose,
                command_paths(full, self.base_dir) + command_paths([sys.executable], self.base_dir),
                [str(self.ctx.workspace), str(self.private_dir())],
            )
        return Launch(
            full,
            self.child_env(executable),
            str(self.ctx.workspace),
            self.uid,
            rlimits_for(self.spec, self.uid is not None),
            wrap,
            self.group(),
        )

    def group(self) -> str | None:
        """The ``cgroup.procs`` of this server's cgroup (made on first use), if cgroups are usable."""
        if self.cgroup is None:
            self.cgroup = cgroup.create()
        return None if self.cgroup is None else self.cgroup.procs

    async def run_command(self, argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        """Run ``argv`` as the server runs: same uid, limits and (sandbox) namespaces."""
        argv = expand(argv, {"workspace": self.workspace_path(), "env_dir": str(self.base_dir)})
        launch = self.launch(argv, resolve_executable(argv[0], self.spec.name))
        launch.env.update(env)  # as given: task data in it is never rewritten
        return await run_launch(launch, timeout)

    def command(self) -> list[str]:
        values = {"workspace": self.workspace_path(), "env_dir": str(self.base_dir)}
        return expand(list(self.spec.command or []), values)

    async def start(self) -> None:
        if self.uid is not None:  # the workspace becomes the server's (off the event loop: it may be large)
            await anyio.to_thread.run_sync(chown_tree, self.ctx.workspace, self.uid)
        await super().start()

    def _new_host(self) -> SessionHost:
        launch = self.launch(self.command())
        limit = self.spec.limits.output_bytes
        process = StdioProcess(
            self.spec.name, launch, 2 * limit + LINE_SLACK, limit, kill_uid=UIDS.exclusive(self.ctx.episode_id)
        )
        return _ProcessHost(self.spec.name, process, self.missing_hint())

    def missing_hint(self) -> str | None:
        """What to do when the server's runtime is missing (the sandbox says how to bind it)."""
        return None

    async def close(self) -> None:
        if self.closed:
            return
        host = self.host
        if isinstance(host, _ProcessHost) and self.uid is not None:
            host.process.kill_uid = False  # the uid's guard kills every process of it on release, below
        try:
            await super().close()
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled close still frees what the server held
                if self.cgroup is not None:  # every process the server started, however it detached
                    await anyio.to_thread.run_sync(self.cgroup.remove)
                if self.uid is not None:
                    # the last server of the episode kills the whole uid (waits for its guard: off the event loop)
                    await anyio.to_thread.run_sync(UIDS.release, self.ctx.episode_id)
                    self.uid = None
            if self._private is not None:
                remove_tree(self._private)
                self._private = None

"""Shutdown rule: closing an episode leaves no process or container behind."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from openenv_mcp.conformance.base import Context, fail_if, rule

SHUTDOWN_GRACE = 5.0
"""Seconds a closed episode's processes and containers have to disappear."""
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37


def _children() -> dict[int, int]:
    """pid -> ppid of every process (Linux /proc)."""
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                out[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return out


def _descendants(root: int) -> set[int]:
    table = _children()
    found, frontier = set(), [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in table.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                frontier.append(pid)
    return found


def _uid_members(uids: set[int]) -> set[int]:
    """Live processes of the episode's uids (each episode's servers run as a uid of their own)."""
    from openenv_mcp.isolation.host.proctree import uid_processes

    return {pid for uid in uids for pid in uid_processes(uid)}


@contextlib.contextmanager
def _subreaper() -> Iterator[None]:
    """Make this process the child subreaper while the episode runs: a daemon that a server (even
    an in-process one) double-forks away, ``setsid`` and ``chdir /`` included, is re-parented to us
    rather than to init, so it stays a descendant. Survivors are killed and reaped by the rule."""
    libc = ctypes.CDLL(None, use_errno=True)
    was = ctypes.c_int(0)
    libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, was.value, 0, 0, 0)


def _kill_and_reap(pids: set[int]) -> None:
    """Stop what a failed shutdown left behind (the check itself must leak nothing)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in pids:  # re-parented to us by the subreaper: ours to reap
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _describe(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    return f"pid {pid} ({cmd[:200]})"


def _docker_containers(label: str) -> set[str] | None:
    try:
        import docker  # type: ignore[import-not-found]

        client = docker.from_env()
        return {c.name for c in client.containers.list(all=True, filters={"label": label}) if c.name}
    except Exception:
        return None


@rule(
    "shutdown.clean",
    "error",
    "closing an episode leaves no process or container behind",
    needs=("episodes", "local"),
    timeout=60,
)
async def check_shutdown(ctx: Context) -> None:
    from openenv_mcp.isolation.faststart.template import shared_processes

    with _subreaper():
        before = _descendants(os.getpid())
        handle = await ctx.subject.new_episode(seed=ctx.seed)
        episode_id = getattr(handle.episode, "id", "")
        # membership: every process of the episode's uids and of its servers' cgroups (process,
        # sandbox), the container label (docker), and every descendant of this process (the
        # subreaper keeps escaped daemons ours)
        connections = getattr(handle.episode, "connections", []) or []
        groups: list[Any] = []
        uids = {uid for conn in connections if isinstance(uid := getattr(conn, "uid", None), int)}
        try:
            from openenv_mcp.conformance.replay import actions_for, replay

            await replay(handle, (await actions_for(ctx, handle))[:4])
            uids |= {uid for conn in connections if isinstance(uid := getattr(conn, "uid", None), int)}
            groups = [g for conn in connections if (g := getattr(conn, "cgroup", None)) is not None]
        finally:
            await handle.close()
        label = f"openenv-mcp.episode={episode_id}"
        uses_docker = ctx.subject.environment is not None and any(
            s.isolation == "docker" for s in ctx.subject.environment.servers
        )
        leaked: set[int] = set()
        containers: set[str] | None = None
        with anyio.move_on_after(SHUTDOWN_GRACE):  # removal may finish just after close() returns
            while True:
                members = (_descendants(os.getpid()) - before) | _uid_members(uids)
                members |= {pid for group in groups for pid in group.members()}
                members -= shared_processes()  # fast-start zygotes: shared by the server's episodes, owned by none
                leaked = {p for p in members if p != os.getpid() and _alive(p)}
                containers = await anyio.to_thread.run_sync(_docker_containers, label) if uses_docker else None
                if not leaked and not containers:
                    break
                await anyio.sleep(0.1)
        problems = [f"{_describe(p)} still running {SHUTDOWN_GRACE:g} s after close()" for p in sorted(leaked)]
        if leaked:
            await anyio.to_thread.run_sync(_kill_and_reap, leaked)
    if containers:
        problems.append(f"containers {sorted(containers)} still exist {SHUTDOWN_GRACE:g} s after close()")
    fail_if(problems)

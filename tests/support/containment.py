"""Shared helpers for the containment tests: the hostile server, leak checks, listeners."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import openenv_mcp
from openenv_mcp import CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.isolation.host.exposure import reachable_by_others

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hostile_server.py"
# The hostile server needs only the standard library: prefer an interpreter an
# unprivileged uid can run (the process-count limit needs that when root).
PYTHON = "/usr/bin/python3" if reachable_by_others("/usr/bin/python3") else sys.executable
IS_ROOT = os.geteuid() == 0
DROPS_UID = IS_ROOT and reachable_by_others(PYTHON)
"""The hostile server runs as an unprivileged uid (so RLIMIT_NPROC holds)."""


def hostile_spec(
    isolation: str,
    *flags: str,
    name: str = "h",
    workspace: str | None = None,
    base_dir: Path | None = None,
    python: str = PYTHON,
    script: Path = FIXTURE,
    env: dict[str, str] | None = None,
    pass_env: list[str] | None = None,
    **limits,
) -> tuple[EnvSpec, str]:
    """An environment around the hostile server, and the marker found in its processes' argv.

    ``script`` is the hostile server's file (a copy of it elsewhere runs the same); ``env``/``pass_env`` are
    the server's variables; the other keywords are its ``limits``."""
    marker = f"openenv-mcp-test-{uuid.uuid4().hex}"
    server = ToolServerSpec(
        name=name,
        namespace="",
        command=[python, str(script), "--marker", marker, *flags],
        isolation=isolation,
        workspace=workspace,
        env=env or {},
        pass_env=pass_env or [],
        limits=limits,
    )
    spec = EnvSpec(name="hostile", max_steps=None, tool_servers=[server], base_dir=base_dir or Path.cwd())
    return spec, marker


def hostile_env(isolation: str, *flags: str, options: dict | None = None, **spec) -> tuple[openenv_mcp.Env, str]:
    """A sync Env around the hostile server (``spec``: the arguments of :func:`hostile_spec`) and the
    marker found in its processes' argv; ``options`` go to ``make()`` (``warm_pool``, ``tasks``, ...)."""
    env_spec, marker = hostile_spec(isolation, *flags, **spec)
    return openenv_mcp.make(env_spec, **(options or {})), marker


def call(env: openenv_mcp.Env, name: str, **arguments):
    """One step; returns ``(text, is_error)``."""
    result = env.step(CallTool(name=name, arguments=arguments)).result
    return "".join(getattr(c, "text", "") for c in result.content), result.is_error


def marked_processes(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


def survivors(marker: str, within: float = 5.0) -> list[int]:
    """Processes of the test server still alive after ``within`` s (killed ones need a moment to exit)."""
    deadline = time.monotonic() + within
    while (alive := marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def assert_no_leak(marker: str, within: float = 5.0) -> None:
    """Every process of the test server is gone."""
    alive = survivors(marker, within)
    assert alive == [], f"leaked processes: {alive}"


_ORPHAN_SCRIPT = """
import sys, time
sys.path.insert(0, sys.argv[2])
from support.containment import call, hostile_env
env, marker = hostile_env(sys.argv[1])
env.reset(seed=0)
call(env, "spawn_orphan")
print(marker, flush=True)
time.sleep(120)
"""


def survivors_of_killed_server(isolation: str) -> list[int]:
    """SIGKILL an environment server (a child Python) whose tool server runs behind
    ``isolation``; the pids of its tool servers (and their detached children) still alive
    afterwards — there must be none."""
    import signal
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN_SCRIPT, isolation, str(Path(__file__).parents[1])],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        marker = child.stdout.readline().strip()
        assert marker.startswith("openenv-mcp-test-"), f"the environment server did not start ({child.poll()})"
        assert len(marked_processes(marker)) >= 2  # the server and its detached grandchild
        child.send_signal(signal.SIGKILL)
        child.wait()
        return survivors(marker)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@contextlib.contextmanager
def world_dir():
    """A host folder anyone may read and write (so only the boundary can keep a server out)."""
    path = Path(tempfile.mkdtemp(prefix="openenv-mcp-world-", dir="/tmp"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class Listener:
    """A TCP listener on host loopback that records whether anyone connected."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.port = self.sock.getsockname()[1]
        self.connected = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        self.connected.set()
        conn.sendall(b"secret-banner")
        conn.close()

    def close(self) -> None:
        self.sock.close()


def runtime_mount_points() -> set[str]:
    """What a sandbox's private ``/tmp`` may show: the first folder under the host's ``/tmp`` of each
    runtime folder bound there (the virtualenv, the package's folders, the base interpreter) when the
    checkout or the virtualenv lives under ``/tmp``; nothing else of the host (no workdir, no env folder)."""
    from openenv_mcp.isolation.host.runtime import package_dirs

    out = set()
    for folder in [sys.prefix, sys.base_prefix, *package_dirs()]:
        path = Path(os.path.realpath(folder))
        if path.is_relative_to("/tmp") and path != Path("/tmp"):
            out.add(path.relative_to("/tmp").parts[0])
    return out

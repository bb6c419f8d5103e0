"""A throw-away PostgreSQL server for tests: ``initdb`` + ``postgres`` in a temp dir.

Uses Debian's server binaries (``/usr/lib/postgresql/<version>/bin`` or PATH),
listens on 127.0.0.1 at a free port with ``trust`` auth and no unix socket, and
runs as an unprivileged user when the tests run as root (PostgreSQL refuses
root). Stopped with a fast shutdown and removed afterwards.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from openenv_mcp.testing import free_port

__all__ = ["TempPostgres", "find_bindir"]

UNPRIVILEGED = 65534  # nobody


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``, or ``None``."""
    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True):
        if os.path.exists(os.path.join(cand, "initdb")) and os.path.exists(os.path.join(cand, "postgres")):
            return Path(cand)
    initdb = shutil.which("initdb")
    if initdb and shutil.which("postgres"):
        return Path(os.path.realpath(initdb)).parent
    return None


class _PortTaken(Exception):
    pass


class TempPostgres:
    """Start with :meth:`start`, stop with :meth:`stop` (or use as a context manager)."""

    def __init__(self, bindir: Path | None = None) -> None:
        self.bindir = bindir or find_bindir()
        if self.bindir is None:
            raise RuntimeError("PostgreSQL server binaries not found: apt-get install postgresql")
        self.root = Path(tempfile.mkdtemp(prefix="openenv-pg-"))
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.process: subprocess.Popen[bytes] | None = None

    def _user(self) -> dict[str, int]:
        return {"user": UNPRIVILEGED, "group": UNPRIVILEGED} if os.geteuid() == 0 else {}

    def url_for(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def start(self, timeout: float = 30.0) -> TempPostgres:
        """initdb and start; on failure everything is cleaned up and the error raised."""
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> TempPostgres:
        self.root.chmod(0o755)
        data = self.root / "data"
        data.mkdir()
        if os.geteuid() == 0:
            os.chown(data, UNPRIVILEGED, UNPRIVILEGED)
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
        init = subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=self.root,
            **self._user(),
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed: {init.stderr.strip()[-2000:]}")
        for _attempt in range(3):  # a free port may be taken before postgres binds it: retry on another
            try:
                return self._serve(data, env, timeout)
            except _PortTaken:
                self.port = free_port()
                self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        raise RuntimeError("postgres could not bind a free port in 3 attempts")

    def _serve(self, data: Path, env: dict[str, str], timeout: float) -> TempPostgres:
        import psycopg

        log = open(self.root / "postgres.log", "wb")
        self.process = subprocess.Popen(
            [
                str(self.bindir / "postgres"),
                "-D",
                str(data),
                "-p",
                str(self.port),
                "-h",
                "127.0.0.1",
                "-k",
                "",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.root,
            **self._user(),
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                text = (self.root / "postgres.log").read_text()
                if "could not bind" in text or "Address already in use" in text:
                    raise _PortTaken()
                raise RuntimeError(f"postgres exited: {text[-2000:]}")
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return self
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not accept connections within {timeout:g} s") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown: disconnects clients
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> TempPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""One task container, driven from outside through the Docker engine (exec, archive, diff, restart).

Nothing here runs inside the image but the commands it is asked to run: files are read and
written with the engine's archive API, so an image without Python (or without a shell, for the
file operations) works. Every method blocks; callers run them in worker threads
(``anyio.to_thread``). A command is bounded in time twice: inside, by ``timeout -s KILL`` when the
image has it (which kills the command's whole process group), and from outside, by a deadline on
the exec stream, after which the stream is closed and the call returns as timed out.
"""

from __future__ import annotations

import base64
import contextlib
import json
import posixpath
import socket
import time
from dataclasses import dataclass
from typing import Any

from openenv_mcp.errors import BoundaryError
from openenv_mcp.worlds.harbor.archive import Entry, FileRead, list_entries, read_member, single_file_tar

__all__ = ["ExecResult", "TaskContainer", "join_path"]

CUT = "\n[... truncated: {n} more bytes of {stream} not shown; redirect to a file and read it in parts ...]\n"
DIFF_KINDS = {0: "changed", 1: "added", 2: "deleted"}


@dataclass
class ExecResult:
    exit_code: int | None
    """``None`` when the command timed out."""
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "timed_out": self.timed_out,
            "truncated": self.truncated,
        }


def join_path(workdir: str, path: str) -> str:
    """``path`` in the container: absolute as given, else relative to ``workdir``; normalized."""
    if not path:
        return workdir or "/"
    full = path if path.startswith("/") else posixpath.join(workdir or "/", path)
    return posixpath.normpath(full) if full not in ("/", "//") else "/"


class _Stream:
    """Keeps the first ``cap`` bytes of one output stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self, name: str) -> str:
        out = self.kept.decode("utf-8", errors="replace")
        return out + CUT.format(n=self.dropped, stream=name) if self.dropped else out


class TaskContainer:
    """A started container of a task (the ``main`` service of a compose task)."""

    def __init__(self, client: Any, handle: Any, *, workdir: str, user: str | None, env: dict[str, str]) -> None:
        self.client = client
        self.handle = handle
        self.id: str = handle.id
        self.workdir = workdir or "/"
        self.user = user
        """Who the agent's commands run as (``None``: the image's user)."""
        self.env = env
        self._has: dict[str, bool] = {}

    # -- commands -----------------------------------------------------------------------------
    def exec(
        self,
        argv: list[str],
        *,
        timeout: float,
        user: str | None = None,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
        output_bytes: int = 50_000,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run ``argv`` to its end or ``timeout`` seconds; stdout and stderr each kept up to
        ``output_bytes``."""
        api = self.client.api
        wrapped = self._bounded(argv, timeout)
        started = time.monotonic()
        try:
            created = api.exec_create(
                self.id,
                wrapped,
                stdout=True,
                stderr=True,
                stdin=stdin is not None,
                tty=False,
                user=(user if user is not None else self.user) or "",
                environment={**self.env, **(env or {})},
                workdir=workdir or self.workdir,
            )
            sock = api.exec_start(created["Id"], socket=True)
        except Exception as e:  # the container is gone, or the engine refused
            raise BoundaryError(f"cannot run a command in the task container: {_explain(e)}") from None
        raw: socket.socket = getattr(sock, "_sock", sock)
        out, err = _Stream(output_bytes), _Stream(output_bytes)
        try:
            if stdin is not None:
                raw.sendall(stdin)
                with contextlib.suppress(OSError):
                    raw.shutdown(socket.SHUT_WR)
            timed_out = not self._pump(raw, created["Id"], out, err, started + timeout + 2.0)
        finally:
            with contextlib.suppress(Exception):
                raw.close()
        code = None
        if not timed_out:
            info = api.exec_inspect(created["Id"])
            code = info.get("ExitCode")
            timed_out = code == 137 and "timeout" in wrapped[:1] and time.monotonic() - started >= timeout
        return ExecResult(
            exit_code=None if timed_out else code,
            stdout=out.text("stdout"),
            stderr=err.text("stderr"),
            timed_out=timed_out,
            truncated=bool(out.dropped or err.dropped),
            seconds=time.monotonic() - started,
        )

    def _bounded(self, argv: list[str], timeout: float) -> list[str]:
        if self.has_file("/usr/bin/timeout") or self.has_file("/bin/timeout"):
            return ["timeout", "-s", "KILL", f"{max(timeout, 0.1):g}", *argv]
        return argv

    def _pump(self, raw: socket.socket, exec_id: str, out: _Stream, err: _Stream, deadline: float) -> bool:
        """Read the exec's multiplexed frames until it ends; ``False`` at the deadline. Once the
        command has exited, a background process still holding the stream gets 1 s more."""
        buffer = b""
        exited_at: float | None = None
        while True:
            now = time.monotonic()
            if now >= deadline:
                return False
            if exited_at is not None and now - exited_at > 1.0:
                return True
            raw.settimeout(min(0.25, deadline - now))
            try:
                chunk = raw.recv(65536)
            except TimeoutError:
                if exited_at is None and not self.client.api.exec_inspect(exec_id).get("Running", False):
                    exited_at = time.monotonic()
                continue
            except OSError:
                return True
            if not chunk:
                return True
            buffer += chunk
            while len(buffer) >= 8:
                size = int.from_bytes(buffer[4:8], "big")
                if len(buffer) < 8 + size:
                    break
                (err if buffer[0] == 2 else out).add(buffer[8 : 8 + size])
                buffer = buffer[8 + size :]

    def shell(self) -> list[str]:
        """The shell to run a command line with: bash where the image has it, else sh."""
        return ["/bin/bash", "-c"] if self.has_file("/bin/bash") else ["/bin/sh", "-c"]

    def has_file(self, path: str) -> bool:
        if path not in self._has:
            self._has[path] = self.stat(path) is not None
        return self._has[path]

    # -- files ----------------------------------------------------------------------------------
    def stat(self, path: str) -> dict[str, Any] | None:
        """The engine's stat of ``path`` (``name``, ``size``, ``mode``, ``linkTarget``), ``None``
        when it does not exist. (A HEAD request: the SDK has no public call for it.)"""
        api = self.client.api
        try:
            response = api.head(api._url("/containers/{0}/archive", self.id), params={"path": path})
        except Exception as e:
            raise BoundaryError(f"cannot reach the task container: {_explain(e)}") from None
        if response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise BoundaryError(f"the engine refused to stat {path!r}: HTTP {response.status_code}")
        header = response.headers.get("X-Docker-Container-Path-Stat")
        return json.loads(base64.b64decode(header)) if header else {}

    def read(self, path: str, limit: int) -> FileRead:
        """``path``'s first ``limit`` bytes when it is a regular file (else what it is)."""
        try:
            chunks, _ = self.client.api.get_archive(self.id, path, chunk_size=65536)
        except Exception as e:
            return FileRead(kind="missing" if "404" in str(e) or "No such" in str(e) else "error", data=str(e).encode())
        try:
            return read_member(chunks, limit)
        finally:
            with contextlib.suppress(Exception):
                chunks.close()

    def list(self, path: str, *, max_entries: int, max_depth: int, byte_limit: int) -> tuple[list[Entry], bool] | None:
        """The entries below folder ``path`` (``None``: no such folder)."""
        try:
            chunks, _ = self.client.api.get_archive(self.id, path, chunk_size=65536)
        except Exception:
            return None
        try:
            return list_entries(chunks, max_entries=max_entries, max_depth=max_depth, byte_limit=byte_limit)
        finally:
            with contextlib.suppress(Exception):
                chunks.close()

    def write(self, path: str, data: bytes, *, mode: int = 0o644, uid: int = 0, gid: int = 0) -> None:
        """Write ``data`` to ``path``, creating missing parent folders (owned by ``uid:gid``)."""
        parent = posixpath.dirname(path) or "/"
        existing = parent
        missing: list[str] = []
        while existing != "/" and self.stat(existing) is None:
            missing.insert(0, posixpath.basename(existing))
            existing = posixpath.dirname(existing) or "/"
        dirs = ["/".join(missing[: i + 1]) for i in range(len(missing))]
        name = "/".join([*missing, posixpath.basename(path)])
        self.put(existing, single_file_tar(name, data, mode, uid, gid, dirs))

    def put(self, folder: str, archive: bytes) -> None:
        """Extract ``archive`` in ``folder`` (which must exist)."""
        try:
            ok = self.client.api.put_archive(self.id, folder, archive)
        except Exception as e:
            raise BoundaryError(f"cannot copy into the task container at {folder!r}: {_explain(e)}") from None
        if not ok:
            raise BoundaryError(f"the engine refused to copy into {folder!r}")

    def get_tree(self, path: str, limit: int) -> bytes | None:
        """The archive of ``path`` (a file or a folder), at most ``limit`` bytes (``None``: missing)."""
        try:
            chunks, _ = self.client.api.get_archive(self.id, path, chunk_size=65536)
        except Exception:
            return None
        data = bytearray()
        try:
            for chunk in chunks:
                data += chunk
                if len(data) > limit:
                    raise BoundaryError(f"{path!r} is larger than {limit >> 20} MiB")
        finally:
            with contextlib.suppress(Exception):
                chunks.close()
        return bytes(data)

    # -- the container as a whole -------------------------------------------------------------------
    def diff(self) -> list[tuple[str, str]]:
        """Paths changed against the image: ``(path, "changed" | "added" | "deleted")``."""
        try:
            changes = self.handle.diff() or []
        except Exception as e:
            raise BoundaryError(f"cannot read the container's changes: {_explain(e)}") from None
        return [(c["Path"], DIFF_KINDS.get(c.get("Kind"), "changed")) for c in changes]

    def restart(self) -> None:
        """Kill every process in the container and start its command again (the files stay)."""
        try:
            self.handle.restart(timeout=0)
        except Exception as e:
            raise BoundaryError(f"cannot restart the task container: {_explain(e)}") from None

    def running(self) -> bool:
        try:
            self.handle.reload()
        except Exception:
            return False
        return self.handle.status == "running"


def _explain(e: Exception) -> str:
    return str(getattr(e, "explanation", None) or e)

"""``openenv-mcp stdio ENV``: one episode as an MCP server over stdin/stdout, answering at once.

Harnesses start the command and send ``initialize`` right away; some do not wait long (Codex's first
model request then offers no tools). Loading an environment and starting its tool servers takes a
second or more, so this front imports only the standard library before it can answer: it takes the
wire (the client's stdin and stdout; fd 0 then reads ``/dev/null`` and fd 1 goes to stderr, so no stray
print or child reaches the wire), answers ``initialize`` from the answer the same command gave last
time (:class:`AnswerCache`), and starts the environment meanwhile. Everything the client sends is
then handed, in order, to the real MCP server (``initialize`` included, whose answer is dropped when
the client already has one): the session is the real server's. When that answer differs from the
cached one (an env file or a server changed), the cache takes the new one for the next start, so a
cached answer is at most one start out of date; the first start of a command answers when the
environment is up. ``OPENENV_MCP_STDIO_CACHE=off`` never answers early.

The cache lives under ``$OPENENV_MCP_CACHE`` (else ``$XDG_CACHE_HOME/openenv-mcp``), ``stdio/``, one
file per command line, working folder, requested protocol version and the stat of the environment's
own files and of the installed package's (an upgrade or an edit starts afresh); it holds only what ``initialize`` answered (no task, no grading data).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["AnswerCache", "Wire", "add_arguments", "add_prod_flags", "main"]

MAX_ANSWER_BYTES = 1 << 20
"""A cached answer larger than this is ignored (instructions are bounded far below it)."""


def add_prod_flags(p: argparse.ArgumentParser) -> None:
    """``--workspace``, ``--read-only``, ``--database-url`` (``serve`` and ``stdio``)."""
    p.add_argument(
        "--workspace",
        default=None,
        metavar="DIR",
        help="production: the folder the tools work on, in place (bound at /workspace in a sandbox)",
    )
    p.add_argument("--read-only", action="store_true", help="production: the tools may read --workspace, not change it")
    p.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="production: the database of SQL tool servers (default: $DATABASE_URL)",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``stdio`` command's arguments."""
    p.add_argument("env", help="environment name, env.toml path or folder")
    p.add_argument(
        "--mode",
        choices=["sim", "prod"],
        default="sim",
        help="sim: the episode's tools on a seeded task; prod: the production tool servers (default sim)",
    )
    p.add_argument("--seed", type=int, default=None, help="seed of the episode (picks its task unless --task)")
    p.add_argument("--task", default=None, help="task id of the episode")
    add_prod_flags(p)


def _cache_root() -> Path:
    if os.environ.get("OPENENV_MCP_CACHE"):
        return Path(os.environ["OPENENV_MCP_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "openenv-mcp"


def _stat_files(folder: Path, depth: int = 1) -> list[tuple[str, int, int]]:
    """``(name, mtime_ns, size)`` of the files in ``folder`` (and ``depth`` levels below), sorted."""
    out: list[tuple[str, int, int]] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return out
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        try:
            if entry.is_file():
                st = entry.stat()
                out.append((entry.path, st.st_mtime_ns, st.st_size))
            elif depth > 0 and entry.is_dir():
                out.extend(_stat_files(Path(entry.path), depth - 1))
        except OSError:
            continue
    return out


def _env_folder(target: str) -> Path | None:
    """The folder of ``target`` when it is found without loading anything: a path, or a built-in name."""
    path = Path(target).expanduser()
    if path.is_file():
        return path.parent
    if path.is_dir():
        return path
    import importlib.util

    envs = importlib.util.find_spec("openenv_mcp.envs")
    if envs is None or not envs.submodule_search_locations:
        return None
    folder = Path(list(envs.submodule_search_locations)[0]) / target
    return folder if (folder / "env.toml").is_file() else None


def _fingerprint(target: str) -> list[Any]:
    """What an ``initialize`` answer depends on besides the command line: the env's files and the tool servers'."""
    import importlib.util

    parts: list[Any] = [os.environ.get("OPENENV_MCP_ENVS", "")]
    folder = _env_folder(target)
    if folder is not None:
        parts.append(_stat_files(folder))
    for package in ("openenv_mcp", "openenv_mcp.tool_servers"):  # an upgrade or an edit of the code
        found = importlib.util.find_spec(package)
        if found is not None and found.submodule_search_locations:
            parts.append(_stat_files(Path(list(found.submodule_search_locations)[0])))
    return parts


class AnswerCache:
    """The ``initialize`` answers of one command line, one file per requested protocol version."""

    def __init__(self, argv: list[str], target: str, root: Path | None = None) -> None:
        key = json.dumps([os.getcwd(), argv, _fingerprint(target)], sort_keys=True, default=str)
        self.key = hashlib.sha256(key.encode()).hexdigest()[:32]
        self.folder = (root or _cache_root()) / "stdio"

    def _path(self, protocol_version: Any) -> Path:
        version = hashlib.sha256(json.dumps(protocol_version).encode()).hexdigest()[:12]
        return self.folder / f"{self.key}-{version}.json"

    def get(self, protocol_version: Any) -> dict[str, Any] | None:
        """The cached answer (the ``result`` object), or ``None``."""
        path = self._path(protocol_version)
        try:
            if path.stat().st_size > MAX_ANSWER_BYTES:
                return None
            answer = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        ok = isinstance(answer, dict) and isinstance(answer.get("protocolVersion"), str)
        return answer if ok and isinstance(answer.get("capabilities"), dict) else None

    def put(self, protocol_version: Any, answer: dict[str, Any]) -> None:
        """Store ``answer`` (atomically; a folder only this user can read). Failing to is not an error."""
        path = self._path(protocol_version)
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(answer, f, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            pass


class Wire:
    """The client's stdin and stdout, taken from fd 0 and 1 (which then point at ``/dev/null`` and stderr).

    A thread reads lines into a queue from the start; the first ``initialize`` is answered by
    ``answer_early`` (``None``: not answered). :meth:`lines` and :meth:`write` are what the SDK's
    ``stdio_server(stdin, stdout)`` reads and writes; the answer the real server gives to an
    ``initialize`` already answered is not written twice."""

    def __init__(self, answer_early: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        self._in = os.fdopen(os.dup(0), "rb")
        self._out = os.fdopen(os.dup(1), "wb")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        self._answer_early = answer_early
        self._lock = threading.Lock()
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self.initialize: dict[str, Any] | None = None
        """The client's ``initialize`` request, once read."""
        self.early: dict[str, Any] | None = None
        """The answer given from the cache, if any."""
        self.on_answer: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
        """Called with (request, result) when the real server answers the client's ``initialize``."""
        threading.Thread(target=self._read, name="openenv-mcp-stdin", daemon=True).start()

    def _send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            self._out.write(data)
            self._out.flush()

    def _read(self) -> None:
        try:
            for line in self._in:
                if self.initialize is None:
                    self._first(line)
                self._queue.put(line)
        except (OSError, ValueError):
            pass
        finally:
            self._queue.put(None)

    def _first(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or message.get("method") != "initialize" or "id" not in message:
            return
        self.initialize = message
        try:
            early = self._answer_early(message)
        except Exception:  # noqa: BLE001 - a broken cache never stops the server: the real one answers
            early = None
        if early is not None:
            self.early = early
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": early})

    async def lines(self) -> Any:
        """The client's lines, as text, as the SDK's stdio transport reads them."""
        import anyio.to_thread

        while (line := await anyio.to_thread.run_sync(self._queue.get, abandon_on_cancel=True)) is not None:
            yield line.decode("utf-8", errors="replace")

    async def write(self, text: str) -> None:
        """One JSON-RPC line from the real server."""
        request = self.initialize
        if request is not None and '"result"' in text:
            try:
                message = json.loads(text)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("id") == request.get("id") and "result" in message:
                self.initialize = {}  # only once: ids may be reused after initialize
                if self.on_answer is not None:
                    self.on_answer(request, message["result"])
                if self.early is not None:
                    return  # the client has it already
        with self._lock:
            self._out.write(text.encode())

    async def flush(self) -> None:
        with self._lock:
            self._out.flush()


def main(argv: list[str]) -> int:
    """``openenv-mcp stdio ARGS``: the front described above."""
    p = argparse.ArgumentParser(prog="openenv-mcp stdio", description="serve one episode as an MCP server over stdio")
    add_arguments(p)
    args = p.parse_args(argv)
    cache = AnswerCache(argv, args.env)
    early = os.environ.get("OPENENV_MCP_STDIO_CACHE", "on") != "off"
    wire = Wire(lambda request: cache.get((request.get("params") or {}).get("protocolVersion")) if early else None)

    def remember(request: dict[str, Any], result: dict[str, Any]) -> None:
        if wire.early != result:
            cache.put((request.get("params") or {}).get("protocolVersion"), result)

    wire.on_answer = remember
    return _serve(args, wire)


def _serve(args: argparse.Namespace, wire: Wire) -> int:
    import anyio

    from openenv_mcp.cli.app import _prod_options, err_console
    from openenv_mcp.errors import OpenEnvError
    from openenv_mcp.serve.run import serve_stdio

    try:
        options = _prod_options(args)
        anyio.run(
            lambda: serve_stdio(
                args.env, mode=args.mode, seed=args.seed, task_id=args.task, streams=(wire.lines(), wire), **options
            )
        )
    except OpenEnvError as e:
        err_console.print(f"[red]error:[/red] {e}")
        return 2
    except KeyboardInterrupt:
        return 130
    return 0

"""The agent's tools in a task container: a shell and file tools, run through the engine from outside.

One FastMCP server per episode (:func:`create_server`, the environment's in-process tool server
factory): starting it starts the episode's world (:mod:`.world`), closing it removes the world.
The server is trusted code; everything the agent asks for happens inside the task's container:

* ``shell_run``: ``bash -c`` (``sh`` where bash is missing) as the task's agent user, in the
  image's working folder; output capped; killed at its timeout. Processes it starts in the
  background keep running (a task may ask for a service), until the episode is graded.
* ``fs_read`` / ``fs_write`` / ``fs_edit`` / ``fs_list``: through the engine's archive API, so
  they work in images without Python (or a shell). Relative paths are relative to the working folder.
* ``submit``: the agent is done; the episode is graded now (see :mod:`.reward`) and ends.

The tools are the same names and result shapes as the ``coding`` environment's (``shell_run``,
``fs_*``), so a policy moves between the two.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools.base import ToolResult
from pydantic import Field

from openenv_mcp.worlds.harbor.container import join_path
from openenv_mcp.worlds.harbor.dataset import definition_of
from openenv_mcp.worlds.harbor.world import World, start_world

__all__ = ["ANNOTATIONS", "INSTRUCTIONS", "SUBMIT", "create_server"]

SUBMIT = "submit"
MAX_TIMEOUT = 900.0
DEFAULT_TIMEOUT = 60.0
OUTPUT_BYTES = 50_000
READ_LIMIT = 1_000_000
WRITE_LIMIT = 8_000_000
MAX_COMMAND = 100_000

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "exit_code": {
            "type": ["integer", "null"],
            "description": "The command's exit status; null when it timed out.",
        },
        "stdout": {"type": "string", "description": "Standard output (UTF-8), cut with a marker past the cap."},
        "stderr": {"type": "string", "description": "Standard error, same rules."},
        "timed_out": {"type": "boolean", "description": "Whether the command was killed at its timeout."},
        "truncated": {"type": "boolean", "description": "Whether stdout or stderr was cut."},
    },
    "required": ["exit_code", "stdout", "stderr", "timed_out", "truncated"],
}
"""The ``shell_run`` result: the same shape as the ``coding`` environment's ``shell_run``."""

INSTRUCTIONS = (
    "You work in a Linux container (the task's). `shell_run` runs a command with bash (or sh) in "
    "the working folder; each call is a fresh shell (`cd` does not carry over), background "
    "processes keep running. `fs_read`, `fs_write`, `fs_edit` and `fs_list` work on files "
    "(paths absolute, or relative to the working folder). Call `submit` when the task is done: "
    "it is graded then and the episode ends."
)


def _hints(title: str, read_only: bool, destructive: bool, idempotent: bool) -> dict[str, Any]:
    return {
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": False,  # the task's container, without a network
    }


ANNOTATIONS: dict[str, dict[str, Any]] = {
    "shell_run": _hints("Run a shell command", read_only=False, destructive=True, idempotent=False),
    "fs_read": _hints("Read a file", read_only=True, destructive=False, idempotent=True),
    "fs_write": _hints("Write a file", read_only=False, destructive=True, idempotent=True),
    "fs_edit": _hints("Edit a file", read_only=False, destructive=True, idempotent=False),
    "fs_list": _hints("List a folder", read_only=True, destructive=False, idempotent=True),
    SUBMIT: _hints("Submit the task", read_only=False, destructive=False, idempotent=False),
}
"""Each tool's MCP annotations (all four hints explicit: a harness running unattended trusts only those)."""


def create_server(ctx: Any) -> Any:
    """An async factory: the episode's world, then its tool server (see the module doc)."""
    return _start(ctx)


async def _start(ctx: Any) -> FastMCP:
    task = getattr(ctx, "task", None)
    if task is None:
        raise ToolError("a Harbor episode needs its task to start (the world is the task's container)")
    world = await start_world(definition_of(task), ctx.episode_id)
    server = _server(world)
    server.openenv_close = world.close  # type: ignore[attr-defined]  # InProcessConnection calls it at close
    return server


def _check_time(world: World) -> None:
    if world.grade is not None:
        raise ToolError("the task has been submitted and graded; the episode is over")
    if world.remaining() <= 0:
        raise ToolError(
            f"the task's time ({world.task.agent_timeout:g} s) is up: it is graded as it stands; the episode is over"
        )


def _server(world: World) -> FastMCP:
    """The episode's tools, registered with their schemas; the bodies are the module's ``_TOOL`` functions."""
    server = FastMCP("terminal", instructions=INSTRUCTIONS)

    @server.tool(
        name="shell_run",
        title=ANNOTATIONS["shell_run"]["title"],
        annotations=ANNOTATIONS["shell_run"],
        description="Run a shell command in the task's container; returns exit_code, stdout, stderr. "
        "Each call is a new shell in the working folder; output past the cap is cut with a marker.",
        output_schema=OUTPUT_SCHEMA,
    )
    async def shell_run(
        command: Annotated[str, Field(description="The command line, run with bash -c (or sh -c).")],
        timeout: Annotated[
            float | None,
            Field(
                gt=0, description=f"Seconds before it is killed (default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g})."
            ),
        ] = None,
    ) -> ToolResult:
        return await _shell_run(world, command, timeout)

    @server.tool(
        name="fs_read",
        title=ANNOTATIONS["fs_read"]["title"],
        annotations=ANNOTATIONS["fs_read"],
        description="Read a text file of the container (UTF-8), or any file as base64.",
    )
    async def fs_read(
        path: Annotated[str, Field(description="Absolute, or relative to the working folder.")],
        encoding: Annotated[Literal["text", "base64"], Field(description="text (default) or base64")] = "text",
    ) -> str:
        return await _fs_read(world, path, encoding)

    @server.tool(
        name="fs_write",
        title=ANNOTATIONS["fs_write"]["title"],
        annotations=ANNOTATIONS["fs_write"],
        description="Write a file (creating missing folders); replaces its content.",
    )
    async def fs_write(
        path: Annotated[str, Field(description="Absolute, or relative to the working folder.")],
        content: Annotated[str, Field(description="The new content (text, or base64 with encoding='base64').")],
        encoding: Annotated[Literal["text", "base64"], Field(description="text (default) or base64")] = "text",
        mode: Annotated[str | None, Field(description="Octal permissions, e.g. '755' (default 644).")] = None,
    ) -> str:
        return await _fs_write(world, path, content, encoding, mode)

    @server.tool(
        name="fs_edit",
        title=ANNOTATIONS["fs_edit"]["title"],
        annotations=ANNOTATIONS["fs_edit"],
        description="Replace old_text by new_text in a text file; old_text must occur exactly once "
        "(or give replace_all=true).",
    )
    async def fs_edit(
        path: Annotated[str, Field(description="Absolute, or relative to the working folder.")],
        old_text: Annotated[str, Field(min_length=1, description="The text to replace (exact).")],
        new_text: Annotated[str, Field(description="What to put instead.")],
        replace_all: Annotated[bool, Field(description="Replace every occurrence.")] = False,
    ) -> str:
        return await _fs_edit(world, path, old_text, new_text, replace_all)

    @server.tool(
        name="fs_list",
        title=ANNOTATIONS["fs_list"]["title"],
        annotations=ANNOTATIONS["fs_list"],
        description="List a folder of the container (names, kinds, sizes).",
    )
    async def fs_list(
        path: Annotated[str, Field(description="Absolute, or relative to the working folder.")] = ".",
        depth: Annotated[int, Field(ge=1, le=5, description="Levels below the folder (default 1).")] = 1,
    ) -> str:
        return await _fs_list(world, path, depth)

    @server.tool(
        name=SUBMIT,
        title=ANNOTATIONS[SUBMIT]["title"],
        annotations=ANNOTATIONS[SUBMIT],
        description="Submit: the task is done as it stands. It is graded now and the episode ends.",
    )
    async def submit() -> str:
        return await _submit(world)

    return server


async def _shell_run(world: World, command: str, timeout: float | None) -> ToolResult:
    """``shell_run``: the command in a fresh shell of the container, killed at its timeout (capped by the time left)."""
    container = world.container
    _check_time(world)
    if not command.strip():
        raise ToolError("command is empty; give a shell command such as 'ls -la'")
    if len(command) > MAX_COMMAND:
        raise ToolError(f"command is {len(command)} characters; the limit is {MAX_COMMAND}: write a script file")
    seconds = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    if seconds > MAX_TIMEOUT:
        raise ToolError(f"timeout {seconds:g} s is above the limit of {MAX_TIMEOUT:g} s")
    seconds = max(0.1, min(seconds, world.remaining()))
    result = await anyio.to_thread.run_sync(
        lambda: container.exec([*container.shell(), command], timeout=seconds, output_bytes=OUTPUT_BYTES)
    )
    data = result.to_json()
    return ToolResult(content=render(data, seconds), structured_content=data, is_error=result.timed_out)


async def _fs_read(world: World, path: str, encoding: str) -> str:
    """``fs_read``: a file (links followed inside the container) as text, or any file as base64."""
    container = world.container
    _check_time(world)
    full = join_path(container.workdir, path)
    got = await anyio.to_thread.run_sync(lambda: _follow(container, full))
    if got.kind != "file":
        raise ToolError(_not_a_file(full, got))
    if encoding == "base64":
        text = base64.b64encode(got.data).decode()
    else:
        if b"\0" in got.data[:8192]:
            raise ToolError(f"{full} looks binary ({got.size} bytes): read it with encoding='base64'")
        text = got.data.decode("utf-8", errors="replace")
    if got.truncated:
        text += f"\n[... truncated: the file has {got.size} bytes; the first {len(got.data)} are shown ...]"
    return text


async def _fs_write(world: World, path: str, content: str, encoding: str, mode: str | None) -> str:
    """``fs_write``: replace a file's content, owned by the task's agent user."""
    container = world.container
    _check_time(world)
    full = join_path(container.workdir, path)
    data = _decode(content, encoding)
    bits = _mode(mode)
    uid, gid = world.agent_ids
    await anyio.to_thread.run_sync(lambda: container.write(full, data, mode=bits, uid=uid, gid=gid))
    return f"wrote {len(data)} bytes to {full}"


async def _fs_edit(world: World, path: str, old_text: str, new_text: str, replace_all: bool) -> str:
    """``fs_edit``: replace ``old_text`` (exactly once unless ``replace_all``), keeping the file's mode."""
    container = world.container
    _check_time(world)
    full = join_path(container.workdir, path)
    got = await anyio.to_thread.run_sync(lambda: _follow(container, full))
    if got.kind != "file" or got.truncated:
        raise ToolError(_not_a_file(full, got) if got.kind != "file" else f"{full} is too large to edit")
    text = got.data.decode("utf-8", errors="strict") if _utf8(got.data) else None
    if text is None:
        raise ToolError(f"{full} is not UTF-8 text")
    count = text.count(old_text)
    if count == 0:
        raise ToolError(f"old_text does not occur in {full}")
    if count > 1 and not replace_all:
        raise ToolError(f"old_text occurs {count} times in {full}: give more context, or replace_all=true")
    updated = text.replace(old_text, new_text).encode()
    uid, gid = world.agent_ids
    await anyio.to_thread.run_sync(lambda: container.write(full, updated, mode=got.mode & 0o7777, uid=uid, gid=gid))
    return f"replaced {count if replace_all else 1} occurrence(s) in {full}"


async def _fs_list(world: World, path: str, depth: int) -> str:
    """``fs_list``: a folder's entries down to ``depth`` levels, sorted by path, cut at 1000."""
    container = world.container
    _check_time(world)
    full = join_path(container.workdir, path)
    listed = await anyio.to_thread.run_sync(
        lambda: container.list(full, max_entries=1000, max_depth=depth, byte_limit=64 << 20)
    )
    if listed is None:
        raise ToolError(f"no such folder: {full}")
    entries, cut = listed
    lines = [_entry_line(e) for e in sorted(entries, key=lambda e: e.path)]
    if cut:
        lines.append("[... the listing was cut: list a deeper folder, or use shell_run with find ...]")
    return f"{full}:\n" + ("\n".join(lines) if lines else "(empty)")


async def _submit(world: World) -> str:
    """``submit``: refused once the task is graded; the grading itself follows the call (see :mod:`.reward`)."""
    if world.grade is not None:
        raise ToolError("already submitted")
    return "Submitted: the task is graded now; the episode ends."


def render(result: dict[str, Any], timeout: float) -> str:
    """The text form of a ``shell_run`` result: a status line, then the non-empty streams."""
    if result["timed_out"]:
        head = f"timed out after {timeout:g} s: the command was killed (exit_code null)"
    else:
        head = f"exit_code: {result['exit_code']}"
    parts = [head] + [f"--- {name} ---\n{result[name]}" for name in ("stdout", "stderr") if result[name]]
    if not result["stdout"] and not result["stderr"]:
        parts.append("(no output)")
    return "\n".join(parts)


def _follow(container: Any, path: str, hops: int = 8) -> Any:
    """Read ``path``, following symlinks inside the container (at most ``hops``)."""
    import posixpath

    got = container.read(path, READ_LIMIT)
    while got.kind == "symlink" and hops > 0:
        target = got.link_target
        path = target if target.startswith("/") else posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        got = container.read(path, READ_LIMIT)
        hops -= 1
    return got


def _not_a_file(path: str, got: Any) -> str:
    if got.kind == "missing":
        return f"no such file: {path}"
    if got.kind == "dir":
        return f"{path} is a folder: use fs_list"
    if got.kind == "symlink":
        return f"{path}: too many levels of symbolic links"
    if got.kind == "error":
        return f"cannot read {path}: {got.data.decode(errors='replace')[:200]}"
    return f"{path} is not a regular file (a device, FIFO or socket)"


def _decode(content: str, encoding: str) -> bytes:
    if encoding == "base64":
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise ToolError("content is not valid base64") from None
    else:
        data = content.encode()
    if len(data) > WRITE_LIMIT:
        raise ToolError(f"content is {len(data)} bytes; the limit is {WRITE_LIMIT}")
    return data


def _mode(mode: str | None) -> int:
    if mode is None:
        return 0o644
    try:
        bits = int(mode, 8)
    except ValueError:
        raise ToolError(f"mode {mode!r} is not octal (e.g. '644' or '755')") from None
    if not 0 <= bits <= 0o777:
        raise ToolError(f"mode {mode!r}: give permission bits only (0..777; no set-id bits)")
    return bits


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _entry_line(entry: Any) -> str:
    if entry.kind == "dir":
        return f"d {entry.path}/"
    if entry.kind == "symlink":
        return f"l {entry.path} -> {entry.link_target}"
    if entry.kind == "file":
        return f"f {entry.path} ({entry.size} bytes, mode {entry.mode & 0o7777:o})"
    return f"? {entry.path}"

"""The filesystem tool server's core (no MCP imports): list, read, write, edit, move, delete, search.

Every path an agent gives is relative to one root folder (the episode's
workspace, or ``--root`` when run standalone) and is opened relative to a
descriptor of that folder, never by host path (:mod:`.fdpath`: ``openat2``
with ``RESOLVE_BENEATH``, or a component-by-component ``O_NOFOLLOW`` walk).
A path that leads outside the root (``..``, an absolute path, a symlink or a
symlinked folder pointing out) is refused with :data:`OUTSIDE` naming the path,
and no race (a folder swapped for a symlink while a call runs) can make it
touch anything outside: what was checked is the descriptor that is used.
FIFOs, sockets and devices are refused (opened non-blocking, checked with
``fstat``). Files and folders the server creates can be handed to an owner
(``fchown`` on the new descriptor), never by name.

Every call is bounded: reads stream and stop at what they return, edits
compute the result's size before building it, walks are iterative with a
depth and an entry budget, and regular-expression search runs on RE2 (linear
time: no pattern makes it backtrack for minutes). The tools are plain
functions, so an in-process host runs them off its event loop.

Outputs never contain the root's host path, so two episodes seeded alike see
byte-identical results (the parity test relies on it).

The tools that only look are in :mod:`.reading`, those that change the folder in
:mod:`.changing`; how a path is read and a call refused is :mod:`.refusals`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..lean import hints
from .changing import CHANGING_TOOLS, READ_ONLY, changing_tools, refusing
from .fdpath import Root
from .reading import reading_tools
from .refusals import NOT_REGULAR, OUTSIDE, Refused

__all__ = [
    "ANNOTATIONS",
    "CHANGING_TOOLS",
    "DEFAULT_LIMITS",
    "INSTRUCTIONS",
    "NOT_REGULAR",
    "OUTSIDE",
    "READ_ONLY",
    "Refused",
    "make_tools",
    "root_of",
]

DEFAULT_LIMITS: dict[str, int] = {
    "max_read_chars": 100_000,  # read: characters returned before the cut marker
    "max_read_scan_bytes": 64_000_000,  # read: bytes scanned at most to find and measure the lines asked for
    "max_write_chars": 5_000_000,  # write/edit: largest file content accepted
    "max_list_entries": 1_000,  # list: entries shown before the cut marker
    "max_walk_entries": 100_000,  # list/search: entries visited at most
    "max_depth": 64,  # list/search: folders deeper than this are not entered
    "max_search_results": 200,  # search: matching lines shown at most
    "max_search_file_bytes": 2_000_000,  # search: larger files are skipped (and counted)
    "max_line_chars": 300,  # search: a matching line is clipped to this
}

INSTRUCTIONS = (
    "Files of one workspace folder. Every path is relative to the workspace root "
    "('.' is the root); paths leading outside it are refused. Use `list` to look around, "
    "`read` to see a file, `search` to find text across files, `edit` for small exact "
    "replacements, `write` to create or overwrite, `move` to move or rename, `delete` to remove."
)
"""Tool names are in backticks: an environment (or ``--namespace``) that prefixes the tools renames them
here too, so the text names the tools the agent is offered (``fs_list``...)."""

ANNOTATIONS: dict[str, dict[str, Any]] = {
    "list": hints("List a folder", read_only=True, destructive=False, idempotent=True, open_world=False),
    "read": hints("Read a file", read_only=True, destructive=False, idempotent=True, open_world=False),
    "write": hints("Write a file", read_only=False, destructive=True, idempotent=True, open_world=False),
    "edit": hints("Edit a file", read_only=False, destructive=True, idempotent=False, open_world=False),
    "move": hints("Move or rename", read_only=False, destructive=True, idempotent=False, open_world=False),
    "delete": hints("Delete a file or folder", read_only=False, destructive=True, idempotent=True, open_world=False),
    "search": hints("Search file contents", read_only=True, destructive=False, idempotent=True, open_world=False),
}
"""Each tool's MCP annotations (its ``title`` is the tool's title too): the workspace is the whole world
(closed), only ``list``, ``read`` and ``search`` change nothing; ``write`` and ``delete`` repeated change
nothing more, ``edit`` and ``move`` repeated do (or fail)."""


def root_of(ctx: Any) -> Path:
    """The root folder of ``ctx`` (a ServerContext's ``workspace``, or a path), checked to be a folder."""
    where = getattr(ctx, "workspace", ctx)
    root = Path(os.path.realpath(Path(where).expanduser()))
    if not root.is_dir():
        raise NotADirectoryError(f"filesystem root {str(root)!r} is not a directory; create it or pass another --root")
    return root


def make_tools(ctx: Any, *, owner: tuple[int, int] | str | None = None, **limits: int) -> dict[str, Callable[..., str]]:
    """The seven tools for the root folder of ``ctx``, as plain functions raising :class:`Refused`.

    Args:
        ctx: an :class:`openenv_mcp.isolation.ServerContext` (its ``workspace``
            is the root) or a plain path (``str`` / ``Path``).
        owner: ``(uid, gid)`` to give every file and folder the tools create (by
            ``fchown`` on the new descriptor, never by name); ``"root"`` for the
            workspace folder's owner at that moment; ``None`` leaves them to the
            server's user.
        **limits: overrides of :data:`DEFAULT_LIMITS` (e.g. ``max_read_chars=1000``).
    """
    unknown = set(limits) - set(DEFAULT_LIMITS)
    if unknown:
        raise TypeError(f"unknown limit(s) {sorted(unknown)}; known: {sorted(DEFAULT_LIMITS)}")
    cap = {**DEFAULT_LIMITS, **limits}
    tree = Root(str(root_of(ctx)), owner=owner)

    made = {**reading_tools(tree, cap), **changing_tools(tree, cap)}
    tools = {name: made[name] for name in ("list", "read", "write", "edit", "move", "delete", "search")}
    if getattr(ctx, "read_only", False):  # production --read-only: same tools, changes refused
        for name in CHANGING_TOOLS:
            tools[name] = refusing(tools[name], name)
    return tools

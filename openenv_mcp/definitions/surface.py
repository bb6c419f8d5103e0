"""What an environment's MCP face declares at ``initialize``, composed from its tool servers.

A wrapped server's ``instructions`` and capabilities are kept (see ``docs/protocol.md``,
"What the wrapper keeps"): :func:`compose_instructions` joins the environment's
description and each server's instructions deterministically, and :class:`Surface`
says which optional capabilities the face really passes through.

A wrapped server is not trusted: every text it hands the face is cut by :func:`bounded`.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ERROR_MESSAGE_LIMIT",
    "INSTRUCTIONS_LIMIT",
    "Surface",
    "bounded",
    "compose_instructions",
    "name_tools",
    "server_surface",
]

INSTRUCTIONS_LIMIT = 16_384
"""Characters of one tool server's ``instructions`` passed through (the rest is cut, with a marker)."""

ERROR_MESSAGE_LIMIT = 2_048
"""Characters of a tool server's error message passed through (the rest is cut, with a marker)."""


def bounded(text: str, limit: int, what: str) -> str:
    """``text`` cut to ``limit`` characters, with a visible marker naming ``what`` was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[{what} truncated: {len(text)} characters, the limit is {limit}]"


def name_tools(text: str | None, prefix: str, tools: Collection[str]) -> str | None:
    """``text`` with every backticked tool name of a namespaced server (`` `list` ``) given the name the
    agent is offered (`` `fs_list` ``): a server's instructions then name the tools that exist.

    Only a whole backticked name of one of ``tools`` changes; without a ``prefix`` the text is kept."""
    if not text or not prefix or not tools:
        return text
    names = "|".join(re.escape(t) for t in sorted(tools, key=len, reverse=True))
    return re.sub(rf"`({names})`", lambda m: f"`{prefix}_{m[1]}`", text)


def compose_instructions(description: str, servers: list[tuple[str, str | None]]) -> str | None:
    """The face's ``instructions``: the environment's ``description``, then each server's.

    ``servers`` is ``(name, instructions)`` in env-file order. One server with
    instructions and no description: its text verbatim. Otherwise the parts are
    joined by a blank line; when more than one server has instructions, each
    server's part starts with a ``## <name>`` heading line so the agent knows
    whose they are. ``None`` when there is nothing to say.
    """
    given = [(name, text) for name, text in servers if text]
    parts = [description.strip()] if description and description.strip() else []
    if len(given) == 1:
        parts.append(given[0][1])
    else:
        parts.extend(f"## {name}\n{text}" for name, text in given)
    return "\n\n".join(parts) if parts else None


@dataclass(frozen=True)
class Surface:
    """What the MCP face declares, learnt from the first episode's tool servers.

    Attributes:
        instructions: composed by :func:`compose_instructions` (``None``: none).
        tools_list_changed: some server declared ``tools.listChanged``: the face refreshes
            the episode's tool list and sends ``notifications/tools/list_changed``.
        completions: some server declared ``completions``: ``completion/complete``
            is routed to the server owning the prompt or resource template.
    """

    instructions: str | None = None
    tools_list_changed: bool = False
    completions: bool = False


def server_surface(description: str, servers: list[tuple[str, str | None, Any]]) -> Surface:
    """The :class:`Surface` of servers given as ``(name, instructions, ServerCapabilities | None)``."""
    tools_changed = completions = False
    for _, _, caps in servers:
        if caps is None:
            continue
        tools = getattr(caps, "tools", None)
        tools_changed = tools_changed or bool(tools is not None and getattr(tools, "list_changed", False))
        completions = completions or getattr(caps, "completions", None) is not None
    return Surface(
        instructions=compose_instructions(description, [(name, text) for name, text, _ in servers]),
        tools_list_changed=tools_changed,
        completions=completions,
    )

"""A wrapped server, started the way the environment will start it: behind the boundary ``init`` writes.

The command is untrusted, so ``init`` never runs it on the host with the user's environment: it starts
the server through the written tool server's own boundary (the ``sandbox`` by default: no network, a
read-only root, an unprivileged uid, a throwaway workspace), lists its tools, then tries calls to find
the first task's arguments: values generated from each tool's input schema, then with the examples
its descriptions quote (``'America/New_York'``). The first call that succeeds becomes the worked task;
each failed try is kept, so ``init`` can say why no tool answered.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv_mcp.errors import ConfigError, OpenEnvError

__all__ = ["Survey", "examples_of", "survey"]

TRIES_PER_TOOL = 3
MAX_TRIES = 12
_QUOTED = re.compile(r"'([^'\s][^']{0,60})'|\"([^\"\s][^\"]{0,60})\"|`([^`\s][^`]{0,60})`")


@dataclass
class Survey:
    """What the server showed: its tools, the first call that worked, and the tries that failed."""

    tools: list[Any]
    worked: tuple[str, dict[str, Any]] | None = None
    failures: list[str] = field(default_factory=list)


def examples_of(schema: Any) -> list[str]:
    """The strings a schema's descriptions quote as examples (``e.g. 'Europe/London'``), in order."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            text = node.get("description")
            if isinstance(text, str):
                for m in _QUOTED.finditer(text):
                    word = next(g for g in m.groups() if g)
                    if word not in found:
                        found.append(word)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return found


def _candidates(tool: Any) -> list[dict[str, Any]]:
    from openenv_mcp.conformance.argsgen import generate_arguments

    words = examples_of(tool.input_schema or {})
    out: list[dict[str, Any]] = []
    for seed, vocabulary in ((0, None), (0, words), (1, words), (2, words)):
        if vocabulary == []:
            continue
        args = generate_arguments(tool, random.Random(seed), vocabulary)
        if args not in out:
            out.append(args)
    return out[:TRIES_PER_TOOL]


def _text(result: Any) -> str:
    text = " ".join(getattr(c, "text", "") or "" for c in result.content).strip()
    return " ".join(text.split())[:300] or "(no text)"


async def _connection(spec: Any, base_dir: Path) -> tuple[Any, Any]:
    from openenv_mcp.isolation import ServerContext, connect
    from openenv_mcp.isolation.host.workspace import Workspace

    workspace = Workspace()
    ctx = ServerContext(episode_id=f"init-{uuid.uuid4().hex[:12]}", workspace=workspace.path, env=dict(spec.env))
    return connect(spec, ctx, base_dir), workspace


async def _call(spec: Any, base_dir: Path, name: str, arguments: dict[str, Any]) -> Any:
    """One call in a fresh start of the server (an episode of its own), as the first step of a task."""
    conn, workspace = await _connection(spec, base_dir)
    try:
        await conn.start()
        return await conn.call_tool(name, arguments, name)
    finally:
        await conn.close()
        workspace.remove()


async def survey(spec: Any, base_dir: Path, try_calls: bool = True) -> Survey:
    """Start ``spec``'s server behind its boundary, list its tools, and (``try_calls``) find a call that works."""
    where = " ".join(spec.command or [spec.url or spec.image or spec.name])
    conn, workspace = await _connection(spec, base_dir)
    try:
        await conn.start()
        tools = list(await conn.list_tools())
    except OpenEnvError as e:
        raise ConfigError(f"cannot read the tools of the MCP server '{where}' behind {spec.isolation}: {e}") from None
    finally:
        await conn.close()
        workspace.remove()
    found = Survey(tools)
    if not try_calls:
        return found
    tries = 0
    for tool in tools:
        for arguments in _candidates(tool):
            if tries >= MAX_TRIES:
                return found
            tries += 1
            try:
                result = await _call(spec, base_dir, tool.name, arguments)
            except OpenEnvError as e:
                found.failures.append(f"{tool.name}({json.dumps(arguments)}): {e}")
                continue
            if not result.is_error:
                found.worked = (tool.name, arguments)
                return found
            found.failures.append(f"{tool.name}({json.dumps(arguments)}): {_text(result)}")
    return found

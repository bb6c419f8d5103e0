"""The chat-completions form of an episode: MCP tools as function schemas, the model's
tool calls read back (ids filled in, arguments parsed) and MCP results as tool messages."""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.types import Tool

from openenv_mcp.text import result_text
from openenv_mcp.types import error_result

__all__ = ["error_result", "function_name", "normalize_message", "parse_arguments", "result_text", "tools_to_functions"]

# -- tools as function schemas ----------------------------------------------------
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]")


def function_name(tool: str) -> str:
    """MCP tool name ``tool`` as a function name model servers take (before making it unique)."""
    return _NAME_OK.sub("_", tool)[:64] or "tool"


def tools_to_functions(tools: list[Tool]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """MCP tools as chat-completions ``tools`` entries, and a map back to MCP names.

    Function names must match ``^[A-Za-z0-9_-]{1,64}$`` for most model servers:
    other characters become ``_`` (made unique), and the map translates the
    model's calls back to the MCP tool names.
    """
    functions: list[dict[str, Any]] = []
    back: dict[str, str] = {}
    for tool in tools:
        name = function_name(tool.name)
        base, n = name, 2
        while name in back:
            suffix = f"_{n}"
            name, n = base[: 64 - len(suffix)] + suffix, n + 1
        back[name] = tool.name
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        function: dict[str, Any] = {"name": name, "parameters": schema}
        description = tool.description or tool.title or ""
        if description:
            function["description"] = description
        functions.append({"type": "function", "function": function})
    return functions, back


def normalize_message(message: dict[str, Any], turn: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The assistant message as stored and sent back, and its tool calls (ids filled in)."""
    calls: list[dict[str, Any]] = []
    for i, call in enumerate(message.get("tool_calls") or []):
        call = call if isinstance(call, dict) else {}
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):  # some servers send an object; keep the wire form a string
            arguments = json.dumps(arguments)
        calls.append(
            {
                "id": str(call.get("id") or f"call_{turn}_{i}"),
                "type": "function",
                "function": {"name": str(function.get("name") or ""), "arguments": arguments},
            }
        )
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("reasoning_content"):
        out["reasoning_content"] = message["reasoning_content"]
    if calls:
        out["tool_calls"] = calls
    return out, calls


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    if raw.strip() == "":
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        return None, f"arguments are not valid JSON ({e})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None

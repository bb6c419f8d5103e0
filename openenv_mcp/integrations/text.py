"""What a text-only policy reads of an MCP result (shared by the TRL and Gymnasium adapters)."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents

__all__ = ["result_text", "tools_text"]


def result_text(result: CallToolResult) -> str:
    """The text of ``result``: its text blocks joined by newlines.

    Text resources count as text; other blocks (images, audio, binary
    resources) become a one-line ``[image content: image/png]`` note. A result
    with no content but structured content reads as that JSON. An error result
    (``isError``) reads ``Error: <text>`` unless its text already starts with
    "error", so the model can tell a failed call from output.
    """
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
            parts.append(block.resource.text)
        else:
            mime = getattr(block, "mime_type", None) or getattr(getattr(block, "resource", None), "mime_type", None)
            parts.append(f"[{block.type} content{': ' + mime if mime else ''}]")
    text = "\n".join(parts)
    if not parts and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)
    if result.is_error and not text.lstrip().lower().startswith("error"):
        text = f"Error: {text}"
    return text


def tools_text(tools: list[Any]) -> str:
    """The tool list as one JSON text: ``[{"name", "description", "inputSchema"}, ...]`` (MCP wire names)."""
    rows = [{"name": t.name, "description": t.description or "", "inputSchema": t.input_schema} for t in tools]
    return json.dumps(rows, ensure_ascii=False, sort_keys=True)

"""What a text-only model reads of an MCP tool result.

One rendering, shared by the rollout loop (the ``tool`` message of a
trajectory), the CodeAct loop and the TRL and Gymnasium adapters, so a model
reads the same text for the same result whichever stack drives it.
"""

from __future__ import annotations

import json

from mcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

__all__ = ["result_text"]


def result_text(result: CallToolResult) -> str:
    """The text a model sees for an MCP tool result.

    Text parts are joined by newlines; images and audio become a short
    ``[image: image/png, N bytes]`` placeholder; embedded text resources are
    inlined (other resources become ``[resource URI: MIME]``); resource links
    read ``[resource link URI]``. A result with only ``structuredContent``
    shows it as JSON. An error result (``isError``) reads ``Error: <text>``
    unless its text already starts with "error", so the model can tell a
    failed call from output.
    """
    parts: list[str] = []
    for item in result.content:
        if isinstance(item, TextContent):
            parts.append(item.text)
        elif isinstance(item, ImageContent | AudioContent):
            parts.append(f"[{item.type}: {item.mime_type}, {len(item.data) * 3 // 4} bytes]")
        elif isinstance(item, EmbeddedResource):
            res = item.resource
            text = res.text if isinstance(res, TextResourceContents) else None
            parts.append(text or f"[resource {res.uri}: {res.mime_type or ''}]")
        elif isinstance(item, ResourceLink):
            parts.append(f"[resource link {item.uri}]")
        else:
            parts.append(f"[{getattr(item, 'type', '')}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if result.is_error and not text.lstrip().lower().startswith("error"):
        text = f"Error: {text}"
    return text

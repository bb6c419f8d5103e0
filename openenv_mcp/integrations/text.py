"""What a text-only policy reads of an MCP result (shared by the TRL and Gymnasium adapters).

:func:`result_text` is :func:`openenv_mcp.text.result_text` (the one rendering the rollout loop uses too).
"""

from __future__ import annotations

import json
from typing import Any

from openenv_mcp.text import result_text

__all__ = ["result_text", "tools_text"]


def tools_text(tools: list[Any]) -> str:
    """The tool list as one JSON text: ``[{"name", "description", "inputSchema"}, ...]`` (MCP wire names)."""
    rows = [{"name": t.name, "description": t.description or "", "inputSchema": t.input_schema} for t in tools]
    return json.dumps(rows, ensure_ascii=False, sort_keys=True)

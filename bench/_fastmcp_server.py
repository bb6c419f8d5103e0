"""Peer server for the benchmarks: plain FastMCP serving ``bench/echo_env/tools.py`` over streamable HTTP.

``python bench/_fastmcp_server.py PORT`` (uvicorn, one process, MCP endpoint ``/mcp``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import uvicorn


def load_tools():
    path = Path(__file__).resolve().parent / "echo_env" / "tools.py"
    spec = importlib.util.spec_from_file_location("bench_echo_tools", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


if __name__ == "__main__":
    app = load_tools().http_app(path="/mcp")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=8192)

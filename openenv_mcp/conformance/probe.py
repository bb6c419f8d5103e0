"""The containment probe: a stdlib-only stdio MCP server started behind an environment's boundary.

It runs with any ``python3`` (it is passed as ``python3 -c SOURCE``, no file to
mount), and offers two tools the containment rules call from inside the
boundary: ``read_file(path)`` and ``connect(host, port)``. Each answers what it
managed to do; the rules decide whether that broke containment.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PROBE_SOURCE"]

PROBE_SOURCE = r"""
import json, socket, sys
TOOLS = [
    {"name": "read_file", "description": "Read a file.", "inputSchema": {"type": "object",
     "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "connect", "description": "Open a TCP connection and read a line.", "inputSchema": {"type": "object",
     "properties": {"host": {"type": "string"}, "port": {"type": "integer"}}, "required": ["host", "port"]}},
]
def call(name, args):
    try:
        if name == "read_file":
            with open(args["path"]) as f:
                return "read: " + f.read(200)
        if name == "connect":
            with socket.create_connection((args["host"], int(args["port"])), timeout=3) as s:
                return "connected: " + s.recv(200).decode(errors="replace")
    except Exception as e:
        return "blocked: %s: %s" % (type(e).__name__, e)
    return "unknown tool"
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    mid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
    if mid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-11-25"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "openenv-conformance-probe", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": call(params.get("name"), params.get("arguments") or {})}]}
    elif method == "ping":
        result = {}
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n")
    sys.stdout.flush()
"""


if __name__ == "__main__":  # pragma: no cover - run by hand: python -m openenv_mcp.conformance.probe
    exec(compile(PROBE_SOURCE, str(Path(__file__)), "exec"))

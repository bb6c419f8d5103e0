"""The containment probe: a stdlib-only stdio MCP server started behind an environment's boundary.

It runs with any ``python3`` (it is passed as ``python3 -c SOURCE``, no file to
mount), and offers two tools the containment rules call from inside the
boundary: ``read_file(path)`` and ``connect(host, port)``. Each answers what it
managed to do; the rules decide whether that broke containment.

A ``docker`` server is probed in its own container, from outside (nothing is
needed inside its image): :func:`probe_from_outside`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from openenv_mcp.conformance.base import Skipped

__all__ = ["PROBE_SOURCE", "probe_from_outside"]

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


_CONNECT = """import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3) as s:
        print("connected: " + s.recv(200).decode(errors="replace"))
except Exception as e:
    print("blocked: %s: %s" % (type(e).__name__, e))
"""


def probe_from_outside(pid: int, tool: str, arguments: dict[str, Any]) -> str:
    """The probe's tools, run from the host against a container's own namespaces (nothing needed
    inside its image): a file is read through ``/proc/<pid>/root`` (what the container's mount
    namespace shows at that path), a connection is opened from its network namespace (``nsenter``)."""
    if tool == "read_file":
        try:
            with open(f"/proc/{pid}/root{arguments['path']}") as f:
                return "read: " + f.read(200)
        except OSError as e:
            return f"blocked: {type(e).__name__}: {e.strerror} (in the container: {arguments['path']})"
    nsenter = shutil.which("nsenter")
    if nsenter is None:
        raise Skipped("the network probe of a docker server runs nsenter (util-linux) on the host: install util-linux")
    argv = [nsenter, f"--target={pid}", "--net", "--", sys.executable, "-S", "-I", "-c", _CONNECT]
    done = subprocess.run(
        [*argv, str(arguments["host"]), str(arguments["port"])], capture_output=True, text=True, timeout=30
    )
    return (done.stdout or done.stderr).strip()


if __name__ == "__main__":  # pragma: no cover - run by hand: python -m openenv_mcp.conformance.containment_probe
    exec(compile(PROBE_SOURCE, str(Path(__file__)), "exec"))

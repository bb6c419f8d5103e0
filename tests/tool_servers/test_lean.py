"""The dependency-free MCP stdio loop (``tool_servers/lean.py``) spoken to byte by byte.

The official SDK client's view is in ``test_shell_server`` / ``test_python_server``
(``--lean`` runs); here: the raw JSON-RPC lines, version negotiation, errors,
concurrency, and that it starts without importing any MCP library.
"""

from __future__ import annotations

import json
import subprocess
import sys

from support import ROOT


def _session(tmp_path, *lines: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.tool_servers.shell", "--root", str(tmp_path), "--lean"],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_handshake_list_call_ping_and_errors(tmp_path):
    replies = _session(
        tmp_path,
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "run", "arguments": {"command": "echo hi"}},
            }
        ),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "resources/list"}),
        "this is not json",
    )
    by_id = {r.get("id"): r for r in replies}
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[1]["result"]["serverInfo"]["name"] == "shell"
    assert by_id[1]["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert by_id[2]["result"] == {}
    assert [t["name"] for t in by_id[3]["result"]["tools"]] == ["run"]
    assert by_id[4]["result"] == {
        "content": [{"type": "text", "text": "exit_code: 0\n--- stdout ---\nhi\n"}],
        "structuredContent": {"exit_code": 0, "stdout": "hi\n", "stderr": "", "timed_out": False, "truncated": False},
        "isError": False,
    }
    assert by_id[5]["result"] == {"content": [{"type": "text", "text": "Unknown tool: 'nope'"}], "isError": True}
    assert by_id[6]["error"] == {"code": -32601, "message": "Method not found: resources/list"}
    assert by_id[None]["error"] == {"code": -32700, "message": "Parse error: not JSON"}
    assert len(replies) == 7  # the notification got no answer


def test_an_unknown_protocol_version_gets_the_newest_handshake_version(tmp_path):
    [reply] = _session(
        tmp_path,
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "1999-01-01", "capabilities": {}},
            }
        ),
    )
    assert reply["result"]["protocolVersion"] == "2025-11-25"


def test_calls_run_concurrently(tmp_path):
    replies = _session(
        tmp_path,
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "slow",
                "method": "tools/call",
                "params": {"name": "run", "arguments": {"command": "sleep 1; echo slow"}},
            }
        ),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "fast",
                "method": "tools/call",
                "params": {"name": "run", "arguments": {"command": "echo fast"}},
            }
        ),
        json.dumps({"jsonrpc": "2.0", "id": "ping", "method": "ping"}),
    )
    # the slow call does not hold the others up; every request is answered before the server exits
    ids = [r["id"] for r in replies]
    assert sorted(ids[:2]) == ["fast", "ping"] and ids[2] == "slow"
    assert replies[2]["result"]["structuredContent"]["stdout"] == "slow\n"


def test_lean_mode_imports_no_mcp_library(tmp_path):
    code = (
        "import asyncio, sys\n"
        "from openenv_mcp.tool_servers.shell.core import serve_lean\n"
        "from openenv_mcp.tool_servers.python.core import serve_lean as py\n"
        "import openenv_mcp.tool_servers.lean\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'fastmcp', 'pydantic', 'mcp_types')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr

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


# -- annotations: what a harness running unattended decides by --------------------------
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _reference_listings(tmp_path) -> dict[str, list[dict]]:
    """Every reference tool as MCP lists it: the FastMCP servers and the lean definitions."""
    import anyio

    from openenv_mcp.tool_servers import echo
    from openenv_mcp.tool_servers.filesystem.server import create_server as filesystem
    from openenv_mcp.tool_servers.filesystem.stdio import TOOLS_FILE
    from openenv_mcp.tool_servers.python.core import limits as python_limits
    from openenv_mcp.tool_servers.python.core import tool_definitions as python_tools
    from openenv_mcp.tool_servers.shell.core import limits as shell_limits
    from openenv_mcp.tool_servers.shell.core import tool_definitions as shell_tools
    from openenv_mcp.tool_servers.shell.server import create_server as shell
    from openenv_mcp.tool_servers.sql.server import build_server
    from openenv_mcp.tool_servers.sql.sqlite import SQLiteBackend

    async def fastmcp(server) -> list[dict]:
        return [
            t.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True) for t in await server.list_tools()
        ]

    async def main() -> dict[str, list[dict]]:
        backend = SQLiteBackend(tmp_path / "db.sqlite")
        try:
            return {
                "filesystem": await fastmcp(filesystem(tmp_path)),
                "filesystem --lean": json.loads(TOOLS_FILE.read_text()),
                "shell": await fastmcp(shell(tmp_path)),
                "shell --lean": shell_tools(shell_limits({})),
                "python --lean": python_tools(python_limits({})),
                "sql": await fastmcp(build_server(backend)),
                "echo": await fastmcp(echo.server),
            }
        finally:
            await backend.close()

    return anyio.run(main)


def test_every_reference_tool_has_a_title_and_all_four_hints(tmp_path):
    """Codex under approval_policy "never" refused every call of the reference servers: they marked nothing
    (MCP's defaults say destructive and open-world), only sql's reads were marked."""
    listings = _reference_listings(tmp_path)
    missing = [
        f"{server}: {tool['name']} {tool.get('annotations')}"
        for server, tools in listings.items()
        for tool in tools
        if not isinstance(tool.get("annotations"), dict)
        or any(not isinstance(tool["annotations"].get(h), bool) for h in HINTS)
        or not tool.get("title")
        or tool["annotations"].get("title") != tool["title"]
    ]
    assert not missing, missing
    hints = {(server, t["name"]): t["annotations"] for server, tools in listings.items() for t in tools}
    for read_only in [("filesystem", "read"), ("filesystem", "list"), ("filesystem", "search"), ("sql", "query")]:
        assert hints[read_only]["readOnlyHint"] is True and hints[read_only]["destructiveHint"] is False, read_only
    for changing in [("filesystem", "write"), ("filesystem", "delete"), ("shell", "run"), ("sql", "execute")]:
        assert hints[changing]["readOnlyHint"] is False and hints[changing]["destructiveHint"] is True, changing
    assert hints[("shell", "run")]["openWorldHint"] is True  # arbitrary commands reach whatever the boundary lets

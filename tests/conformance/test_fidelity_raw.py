"""fidelity_diff on a raw third-party-style server (stdlib JSON-RPC over stdio, tools only): what the
corpus servers (server-memory, mcp-server-time...) showed about the comparison itself."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from openenv_mcp.testing import fidelity_diff

pytestmark = pytest.mark.anyio

SERVER = r"""
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "raw", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "data_dir", "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        here = os.path.realpath(os.environ.get("DATA_DIR", "?")) == os.path.realpath(os.getcwd())
        result = {"content": [{"type": "text", "text": "the workspace" if here else "elsewhere"}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}),
              flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


@pytest.fixture
def raw_env():
    # a folder the process boundary's unprivileged uid can read (pytest's tmp_path is private to root)
    folder = Path(tempfile.mkdtemp(prefix="openenv-fidelity-raw-"))
    folder.chmod(0o755)
    yield from _written(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _written(tmp_path: Path):
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "env.toml").write_text(
        """[env]
name = "raw-tools-only"
description = "A raw server with tools only; its data folder comes from {workspace} in env."

[[tool_servers]]
name = "raw"
namespace = ""
command = ["/usr/bin/python3", "{env_dir}/server.py"]
isolation = "process"
env = { DATA_DIR = "{workspace}" }
"""
    )
    yield tmp_path


async def test_fidelity_expands_workspace_in_the_raw_servers_env_values_as_the_faces_do(raw_env: Path) -> None:
    report = await fidelity_diff(raw_env, calls=[("data_dir", {})])
    assert [str(d) for d in report.differences if d.request.startswith("tools/call")] == []


async def test_fidelity_of_a_server_without_resources_or_prompts_compares_only_the_listed_items(
    raw_env: Path,
) -> None:
    # the raw server answers resources/list and prompts/list with "Method not found"; what it lists is
    # nothing, and the face's result fields (cacheScope, ttlMs, resultType) are no difference of the server's
    report = await fidelity_diff(raw_env)
    assert [str(d) for d in report.differences if d.request.startswith(("resources/", "prompts/"))] == []
    assert report.ok, report.text()

"""The shell tool server: exit codes, timeouts, output caps, stdin, cleanup, and every way it runs.

In-process tests use fastmcp's in-memory client; the standalone tests start
``python -m openenv_mcp.tool_servers.shell`` (FastMCP over stdio and HTTP, and ``--lean``
stdio) and connect with the official SDK client; the sandbox test runs it
behind the ``sandbox`` boundary as the ``coding`` environment does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import anyio
import pytest
from fastmcp import Client as FastMCPClient
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from openenv_mcp.isolation import ServerContext
from openenv_mcp.testing import http_tool_server
from openenv_mcp.tool_servers.shell import OUTPUT_SCHEMA, create_server
from openenv_mcp.tool_servers.shell.core import TRUNCATED, limits, tool_definitions

from support import ROOT
from support.standalone import sandboxed_lean_server

pytestmark = pytest.mark.anyio


async def run(client, **arguments):
    result = await client.call_tool("run", arguments, raise_on_error=False)
    return result


@pytest.fixture
async def shell(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    async with FastMCPClient(create_server(ServerContext(episode_id="t", workspace=tmp_path))) as client:
        yield client


async def test_the_tool_is_described_and_structured(shell):
    tools = await shell.list_tools()
    assert [t.name for t in tools] == ["run"]
    tool = tools[0]
    assert tool.output_schema == OUTPUT_SCHEMA
    for name, prop in tool.input_schema["properties"].items():
        assert prop.get("description"), name


async def test_exit_code_stdout_stderr_structured_and_text(shell):
    result = await run(shell, command="cat notes.txt; echo oops >&2; exit 3")
    assert result.is_error is False  # a failing command is a normal result
    assert result.structured_content == {
        "exit_code": 3,
        "stdout": "alpha\nbeta\n",
        "stderr": "oops\n",
        "timed_out": False,
        "truncated": False,
    }
    assert result.content[0].text == "exit_code: 3\n--- stdout ---\nalpha\nbeta\n\n--- stderr ---\noops\n"
    result = await run(shell, command="true")
    assert result.content[0].text == "exit_code: 0\n(no output)"


async def test_commands_run_in_the_root_and_each_call_is_a_fresh_shell(shell, tmp_path):
    result = await run(shell, command="pwd; cd /; X=1")
    assert result.structured_content["stdout"] == f"{os.path.realpath(tmp_path)}\n"
    result = await run(shell, command='pwd; echo "X=${X:-unset}"')
    assert result.structured_content["stdout"] == f"{os.path.realpath(tmp_path)}\nX=unset\n"


async def test_stdin_is_given_to_the_command(shell):
    result = await run(shell, command="tr a-z A-Z", stdin="hello")
    assert result.structured_content["stdout"] == "HELLO"
    result = await run(shell, command="cat")  # no stdin: empty, never the server's own
    assert result.structured_content["stdout"] == ""


async def test_timeout_kills_the_command_and_says_so(shell, tmp_path):
    started = time.monotonic()
    result = await run(shell, command="echo before; sleep 30; echo after", timeout=0.5)
    assert time.monotonic() - started < 10
    assert result.is_error is True
    assert result.structured_content == {
        "exit_code": None,
        "stdout": "before\n",
        "stderr": "",
        "timed_out": True,
        "truncated": False,
    }
    assert result.content[0].text.startswith("timed out after 0.5 s: the command was killed (exit_code null)\n")


async def test_background_jobs_end_with_the_command(shell, tmp_path):
    started = time.monotonic()
    result = await run(shell, command="(sleep 3; touch late.txt) & echo started")
    assert time.monotonic() - started < 2.5  # does not wait for the background job
    assert result.structured_content["stdout"] == "started\n"
    await anyio.sleep(max(0.0, started + 3.5 - time.monotonic()))  # past the moment the job would have written its file
    assert not (tmp_path / "late.txt").exists()  # it was killed with the command


async def test_output_is_capped_with_a_visible_marker(tmp_path):
    async with FastMCPClient(create_server(tmp_path, max_output_bytes=100)) as client:
        result = await run(client, command="yes | head -c 1000; yes e | head -c 300 >&2")
    out = result.structured_content
    assert out["truncated"] is True
    assert out["stdout"] == "y\n" * 50 + TRUNCATED.format(n=900, stream="stdout")
    assert out["stderr"] == "e\n" * 50 + TRUNCATED.format(n=200, stream="stderr")


async def test_bad_input_is_an_error_result_with_the_reason(shell):
    result = await run(shell, command="   ")
    assert result.is_error and result.content[0].text == "command is empty; give a shell command such as 'ls'."
    result = await run(shell, command="ls", timeout=500)
    assert result.is_error and result.content[0].text == "timeout 500 s is above this server's limit of 120 s."
    with pytest.raises(TypeError, match=r"unknown limit\(s\) \['nope'\]"):
        create_server(".", nope=1)
    with pytest.raises(NotADirectoryError):
        create_server("/nonexistent-folder-for-test")


async def test_lean_definitions_equal_what_fastmcp_lists(tmp_path):
    for cap in ({}, {"default_timeout": 5, "max_timeout": 9}):
        listed = await create_server(tmp_path, **cap).list_tools()
        wire = [t.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
        for tool in wire:
            tool.pop("_meta", None)
        assert wire == tool_definitions(limits(cap))


# -- standalone ------------------------------------------------------------------------
def test_cli_help_and_bad_root(tmp_path):
    def run_cli(*a):
        return subprocess.run(
            [sys.executable, "-m", "openenv_mcp.tool_servers.shell", *a],  # noqa: E731
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    result = run_cli("--help")
    assert result.returncode == 0
    for flag in ("--root", "--transport", "--lean", "--host", "--port", "--max-output-bytes", "--max-timeout"):
        assert flag in result.stdout
    result = run_cli("--root", str(tmp_path / "missing"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: --root {str(tmp_path / 'missing')!r} is not a directory; create it first"
    result = run_cli("--root", str(tmp_path), "--lean", "--transport", "http")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: --lean serves stdio only; drop --lean for --transport http"


@pytest.mark.parametrize("lean", [False, True], ids=["fastmcp", "lean"])
async def test_standalone_stdio_with_the_official_sdk_client(tmp_path, lean):
    args = ["-m", "openenv_mcp.tool_servers.shell", "--root", str(tmp_path)] + (
        ["--lean"] if lean else ["--namespace", ""]
    )  # bare names (the default is the env's)
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
    with anyio.fail_after(60):
        async with Client(params) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["run"]
            result = await client.call_tool("run", {"command": "echo hi > f.txt; cat f.txt; exit 4"})
            assert result.structured_content == {
                "exit_code": 4,
                "stdout": "hi\n",
                "stderr": "",
                "timed_out": False,
                "truncated": False,
            }
            assert result.content[0].text == "exit_code: 4\n--- stdout ---\nhi\n"
            result = await client.call_tool("run", {"command": ""})
            assert result.is_error and result.content[0].text == "command is empty; give a shell command such as 'ls'."
    assert (tmp_path / "f.txt").read_text() == "hi\n"


async def test_standalone_http_with_the_official_sdk_client(tmp_path):
    async with http_tool_server("shell", "--root", str(tmp_path), "--namespace", "") as url, Client(url) as client:
        result = await client.call_tool("run", {"command": "echo over http"})
        assert result.structured_content["stdout"] == "over http\n"


# -- behind the sandbox boundary ---------------------------------------------------------
async def test_in_the_sandbox_commands_cannot_touch_the_host_or_hidden_paths(tmp_path):
    async with sandboxed_lean_server("shell", tmp_path) as (conn, env_dir, ws):
        with anyio.fail_after(60):
            result = await conn.call_tool("run", {"command": "pwd; echo made > here.txt"}, "run")
            assert result.structured_content["stdout"] == "/workspace\n"
            result = await conn.call_tool("run", {"command": f"cat {env_dir}/secret/answer.txt"}, "run")
            assert result.structured_content["exit_code"] == 1
            assert "No such file or directory" in result.structured_content["stderr"]
            result = await conn.call_tool("run", {"command": f"touch {ROOT}/escape.txt"}, "run")
            # the checkout is not in the sandbox (allowlist): no such folder, or a read-only mount point of
            # its first folder (a checkout under /tmp), or read-only where a wheel's runtime is bound
            assert result.structured_content["exit_code"] != 0
            stderr = result.structured_content["stderr"]
            assert any(m in stderr for m in ("Read-only file system", "Permission denied", "No such file or directory"))
    assert (ws / "here.txt").read_text() == "made\n"
    assert not (ROOT / "escape.txt").exists()

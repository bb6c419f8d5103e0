"""The python tool server: state across calls, results, tracebacks, time and memory limits, restarts.

In-process tests use fastmcp's in-memory client (the interpreter is a real
child process); the standalone tests start ``python -m openenv_mcp.tool_servers.python``
(FastMCP and ``--lean``) with the official SDK client; the sandbox test runs it
behind the ``sandbox`` boundary.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from fastmcp import Client as FastMCPClient
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.isolation import ServerContext
from openenv_mcp.testing import http_tool_server
from openenv_mcp.tool_servers.python import OUTPUT_SCHEMA, create_server
from openenv_mcp.tool_servers.python.core import limits, tool_definitions

from support import ROOT
from support.standalone import sandboxed_lean_server

LOST = "all variables were lost"

pytestmark = pytest.mark.anyio


async def run(client, code, **extra):
    result = await client.call_tool("run", {"code": code, **extra}, raise_on_error=False)
    return result, result.structured_content


@pytest.fixture
async def py(tmp_path):
    (tmp_path / "helper.py").write_text("def double(x):\n    return 2 * x\n")
    server = create_server(ServerContext(episode_id="t", workspace=tmp_path), memory_mb=256)
    async with FastMCPClient(server) as client:
        yield client
    server.interpreter.stop()


async def test_tools_are_described(py):
    tools = {t.name: t for t in await py.list_tools()}
    assert set(tools) == {"run", "restart"}
    assert tools["run"].output_schema == OUTPUT_SCHEMA
    for name, prop in tools["run"].input_schema["properties"].items():
        assert prop.get("description"), name


async def test_variables_persist_and_the_last_expression_is_the_result(py):
    result, out = await run(py, "x = 41\nprint('hi')\nx + 1")
    assert out == {
        "stdout": "hi\n",
        "stderr": "",
        "result": "42",
        "error": None,
        "timed_out": False,
        "restarted": False,
    }
    assert result.is_error is False
    assert result.content[0].text == "--- stdout ---\nhi\n--- result ---\n42"
    _, out = await run(py, "x * 2")
    assert out["result"] == "82"
    _, out = await run(py, "_ + 1")  # the previous result, as in a REPL
    assert out["result"] == "83"
    _, out = await run(py, "y = 1")  # a statement has no result
    assert out["result"] is None
    result, _ = await run(py, "None")
    assert result.content[0].text == "(no output)"


async def test_workspace_is_the_working_folder_and_importable(py, tmp_path):
    _, out = await run(py, "import os, helper\n(os.getcwd(), helper.double(21))")
    assert out["result"] == repr((str(tmp_path.resolve()), 42))
    _, out = await run(py, "open('made.txt', 'w').write('ok')")
    assert (tmp_path / "made.txt").read_text() == "ok"


async def test_errors_come_back_as_tracebacks_with_the_users_code(py):
    result, out = await run(py, "import sys\nprint('partial')\nprint('warn', file=sys.stderr)\n1 / 0")
    assert result.is_error is True
    assert out["stdout"] == "partial\n" and out["stderr"] == "warn\n"
    assert out["error"].startswith(
        'Traceback (most recent call last):\n  File "<cell 1>", line 4, in <module>\n    1 / 0\n'
    )
    assert out["error"].endswith("\nZeroDivisionError: division by zero\n")
    _, out = await run(py, "def f(:")
    assert out["error"].endswith("SyntaxError: invalid syntax\n")
    _, out = await run(py, "raise SystemExit(3)")
    assert out["error"].endswith("SystemExit: 3\n")
    _, out = await run(py, "'still alive'")
    assert out["result"] == "'still alive'"


async def test_a_runaway_loop_is_interrupted_and_state_is_kept(py):
    await run(py, "kept = 'yes'")
    started = time.monotonic()
    result, out = await run(py, "while True:\n    pass", timeout=0.5)
    assert time.monotonic() - started < 5
    assert result.is_error and out["timed_out"] is True and out["restarted"] is False
    assert out["error"].startswith("Timed out after 0.5 s: interrupted (variables are kept).\nTraceback")
    assert out["error"].endswith("KeyboardInterrupt\n")
    _, out = await run(py, "kept")
    assert out["result"] == "'yes'"


async def test_code_ignoring_the_interrupt_is_killed_and_the_interpreter_restarts(py):
    await run(py, "kept = 1")
    started = time.monotonic()
    code = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    result, out = await run(py, code, timeout=0.5)
    assert time.monotonic() - started < 10
    assert out["timed_out"] is True and out["restarted"] is True
    assert out["error"] == (
        "Timed out after 0.5 s; the code did not stop on interrupt, so the interpreter was "
        f"killed and will restart on the next call: {LOST}."
    )
    result, out = await run(py, "'kept' in dir()")
    assert out["result"] == "False"


async def test_a_memory_bomb_is_contained(py):
    await run(py, "kept = 7")
    result, out = await run(py, "big = bytearray(2 * 1024 ** 3)")
    assert result.is_error and out["error"].endswith("MemoryError\n")
    result, out = await run(py, "chunks = []\nwhile True:\n    chunks.append(' ' * 10 ** 6)")
    assert out["error"].endswith("MemoryError\n")
    _, out = await run(py, "del chunks\nkept")
    assert out["result"] == "7"


async def test_a_dying_interpreter_is_reported_and_restarted(py):
    await run(py, "kept = 1")
    result, out = await run(py, "import os\nos._exit(3)")
    assert out["restarted"] is True
    assert out["error"] == (
        "The interpreter exited with code 3 while running this code (out of memory? the limit "
        f"is 256 MB; or os._exit) and will restart on the next call: {LOST}."
    )
    _, out = await run(py, "'kept' in dir()")
    assert out["result"] == "False"


async def test_a_cpu_time_limit_kill_is_named(tmp_path):
    server = create_server(tmp_path, cpu_seconds=1)
    interpreter = server.interpreter
    async with FastMCPClient(server) as client:
        _, out = await run(client, "while True:\n    pass", timeout=30)
    interpreter.stop()
    assert out["restarted"] is True and out["timed_out"] is False
    assert out["error"] == (
        "The interpreter was killed by SIGXCPU: it used up its CPU time limit. It will restart "
        f"on the next call: {LOST}."
    )


async def test_restart_forgets_everything(py):
    await run(py, "a = 1")
    result = await py.call_tool("restart", {})
    assert result.content[0].text == "The interpreter was restarted; no variables are defined."
    _, out = await run(py, "a")
    assert out["error"].endswith("NameError: name 'a' is not defined\n")


async def test_output_result_and_traceback_are_capped(tmp_path):
    server = create_server(tmp_path, max_output_chars=50)
    async with FastMCPClient(server) as client:
        _, out = await run(client, "print('x' * 80)\n'y' * 100")
    server.interpreter.stop()
    assert out["stdout"] == "x" * 50 + "\n[... truncated: 31 more characters of stdout not shown ...]\n"
    assert out["result"] == "'" + "y" * 49 + "\n[... truncated: 52 more characters of the result not shown ...]\n"


async def test_two_servers_never_share_state(tmp_path):
    a, b = create_server(tmp_path), create_server(tmp_path)
    async with FastMCPClient(a) as ca, FastMCPClient(b) as cb:
        await run(ca, "secret = 'a'")
        _, out = await run(cb, "'secret' in dir()")
    a.interpreter.stop()
    b.interpreter.stop()
    assert out["result"] == "False"


async def test_bad_input_is_an_error_result(py):
    result, _ = await run(py, "  ")
    assert result.is_error and result.content[0].text == "code is empty; give Python source such as 'print(1 + 1)'."
    result, _ = await run(py, "1", timeout=1000)
    assert result.is_error and result.content[0].text == "timeout 1000 s is above this server's limit of 120 s."


async def test_lean_definitions_equal_what_fastmcp_lists(tmp_path):
    for cap in ({}, {"default_timeout": 5, "max_timeout": 9}):
        listed = await create_server(tmp_path, **cap).list_tools()
        wire = [t.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
        for tool in wire:
            tool.pop("_meta", None)
        assert wire == tool_definitions(limits(cap))


async def test_an_in_process_episode_ends_its_interpreter_on_close(tmp_path):
    from openenv_mcp.core.environment import Environment
    from openenv_mcp.definitions.spec import EnvSpec
    from openenv_mcp.types import CallTool

    spec = EnvSpec(
        name="py-inprocess",
        tool_servers=[ToolServerSpec(name="py", object="openenv_mcp.tool_servers.python:create_server")],
        base_dir=tmp_path,
    )
    episode = await Environment(spec).new_episode(seed=0)
    try:
        obs = await episode.act(CallTool(name="py_run", arguments={"code": "import os\nos.getpid()"}))
        pid = int(obs.result.structured_content["result"])
    finally:
        await episode.close()
    status = Path(f"/proc/{pid}/stat")
    assert not status.exists() or status.read_text().rsplit(")", 1)[1].split()[0] == "Z"


# -- standalone ------------------------------------------------------------------------
def test_cli_help_and_bad_root(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.tool_servers.python", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    for flag in ("--root", "--transport", "--lean", "--memory-mb", "--max-output-chars", "--max-timeout"):
        assert flag in result.stdout
    result = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.tool_servers.python", "--root", str(tmp_path / "nope")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: --root {str(tmp_path / 'nope')!r} is not a directory; create it first"


@pytest.mark.parametrize("lean", [False, True], ids=["fastmcp", "lean"])
async def test_standalone_stdio_with_the_official_sdk_client(tmp_path, lean):
    args = ["-m", "openenv_mcp.tool_servers.python", "--root", str(tmp_path)] + (
        ["--lean"] if lean else ["--namespace", ""]
    )  # bare names (the default is the env's)
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
    with anyio.fail_after(60):
        async with Client(params) as client:
            assert sorted(t.name for t in (await client.list_tools()).tools) == ["restart", "run"]
            await client.call_tool("run", {"code": "n = 20"})
            result = await client.call_tool("run", {"code": "n + 22"})
            assert result.structured_content["result"] == "42"
            assert result.content[0].text == "--- result ---\n42"
            result = await client.call_tool("run", {"code": "undefined_name"})
            assert result.is_error and "NameError" in result.structured_content["error"]
            result = await client.call_tool("restart", {})
            assert result.content[0].text == "The interpreter was restarted; no variables are defined."


async def test_standalone_http_with_the_official_sdk_client(tmp_path):
    async with http_tool_server("python", "--root", str(tmp_path), "--namespace", "") as url:
        async with Client(url) as client:
            await client.call_tool("run", {"code": "total = 40"})
        async with Client(url) as client:  # one interpreter per server
            result = await client.call_tool("run", {"code": "total + 2"})
            assert result.structured_content["result"] == "42"


# -- behind the sandbox boundary ---------------------------------------------------------
async def test_in_the_sandbox_code_cannot_read_hidden_paths_or_reach_the_network(tmp_path):
    async with sandboxed_lean_server("python", tmp_path) as (conn, env_dir, _):
        with anyio.fail_after(60):
            result = await conn.call_tool("run", {"code": "import os\nx = os.getcwd()\nx"}, "run")
            assert result.structured_content["result"] == "'/workspace'"
            result = await conn.call_tool(
                "run", {"code": f"open({str(env_dir / 'secret' / 'answer.txt')!r}).read()"}, "run"
            )
            assert result.structured_content["error"].splitlines()[-1].startswith("FileNotFoundError")
            code = "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)"
            result = await conn.call_tool("run", {"code": code}, "run")
            assert result.structured_content["error"].splitlines()[-1].startswith("OSError")
            result = await conn.call_tool("run", {"code": "x"}, "run")
            assert result.structured_content["result"] == "'/workspace'"

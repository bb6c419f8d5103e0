"""CodeAct: the generated ``tools`` module, the step budget, persistence, and every face of ``RunCode``."""

from __future__ import annotations

import inspect
import json
import os
import shutil

import pytest
from fastmcp import FastMCP
from mcp.client.client import Client
from websockets.asyncio.client import connect

import openenv_mcp
from openenv_mcp import RunCode, ToolNameError
from openenv_mcp.client.registry import find_env, load_environment
from openenv_mcp.isolation.codeact.coderunner import make_function
from openenv_mcp.serve.app import create_app
from openenv_mcp.testing import serving

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("OPENENV_MCP_REQUIRE_ALL"),
    reason="CodeAct runs code in the sandbox boundary: apt-get install bubblewrap",
)

SCHEMA = {
    "type": "object",
    "required": ["path"],
    "properties": {
        "offset": {"type": "integer", "default": 0},
        "path": {"type": "string", "description": "Where."},
        "tags": {"type": "array", "items": {"type": "string"}},
        "mode": {"type": ["string", "null"]},
        "class": {"type": "boolean"},
        "ratio": {"type": "number"},
        "meta": {"type": "object"},
    },
}


def test_a_tool_function_has_the_schema_signature_and_docstring():
    fn = make_function({"name": "fs.read", "description": "Read a file.", "inputSchema": SCHEMA})
    assert fn.__name__ == "fs_read"
    assert str(inspect.signature(fn)) == (
        "(path: str, offset: int = 0, tags: list[str] = None, "
        "mode: str | None = None, class_: bool = None, ratio: float = None, "
        "meta: dict = None)"
    )
    assert fn.__doc__.startswith("Read a file.\n\nArgs:\n    offset:\n    path: Where.\n")
    with pytest.raises(TypeError, match="missing a required argument: 'path'"):
        fn()


def files(**update) -> openenv_mcp.Env:
    spec = find_env("files")
    return openenv_mcp.make(spec.model_copy(update=update) if update else spec)


def run(env, code):
    obs = env.step(RunCode(code=code))
    return obs, obs.result.structured_content


@needs_bwrap
def test_variables_persist_across_runs_and_are_gone_after_reset():
    with files() as env:
        env.reset(seed=0)
        run(env, "x = 41")
        _, out = run(env, "x + 1")
        assert out["value"] == "42"
        env.reset(seed=0)
        _, out = run(env, "x")
        assert out["exception"] == "NameError: name 'x' is not defined", out
        assert out["traceback"].startswith('Traceback (most recent call last):\n  File "<code 1>", line 1')


@needs_bwrap
def test_help_lists_the_tools_and_a_tool_error_raises_tool_error_with_its_message():
    with files() as env:
        obs = env.reset(seed=0)
        _, out = run(env, "import tools\nhelp(tools)")
        for tool in obs.tools:
            assert f"{tool.name}(" in out["stdout"]
        _, out = run(
            env,
            "from tools import fs_read, ToolError\ntry:\n    fs_read(path='no/such.txt')\n"
            "except ToolError as e:\n    print('caught', e)",
        )
        assert out["exception"] is None and out["stdout"].startswith("caught "), out
        assert out["calls"][0]["result"]["isError"] is True
        assert out["stdout"].strip() == "caught " + out["calls"][0]["result"]["content"][0]["text"]


@needs_bwrap
def test_each_inner_call_is_one_step_and_the_budget_stops_further_calls():
    with files(max_steps=5) as env:
        env.reset(seed=0)
        obs, out = run(env, "1 + 1")  # no tool call: still one step
        assert env.state().step_count == 1 and obs.reward == 0.0
        obs, out = run(
            env,
            "from tools import fs_list, ToolError\nn = 0\nfor i in range(10):\n    try:\n"
            "        fs_list(path='.')\n        n += 1\n    except ToolError as e:\n"
            "        last = str(e)\n(n, last)",
        )
        assert out["value"] == "(4, 'This episode has ended; no further tool calls are accepted.')", out
        assert env.state().step_count == 5 and obs.truncated and len(out["calls"]) == 10
        with pytest.raises(openenv_mcp.EpisodeEnded):
            env.step(RunCode(code="1"))


@needs_bwrap
def test_the_run_reward_is_the_sum_of_its_calls_and_rewards_see_each_call():
    environment = load_environment("files")
    task = environment.tasks.tasks[0]
    actions = environment.trajectory(task, "reference")
    with files() as env:
        env.reset(task_id=task.id)
        code = "\n".join(f"tools.call({a.name!r}, {a.arguments!r})" for a in actions)
        obs, out = run(env, "import tools\n" + code)
        assert obs.reward == 1.0 and obs.done and sum(c["reward"] for c in out["calls"]) == 1.0
        assert env.state().step_count == len(actions)


@pytest.mark.parametrize("codeact", [True, False])
def test_run_code_is_reserved_when_codeact_is_on(codeact):
    server = FastMCP("s")

    @server.tool()
    def run_code(code: str) -> str:
        return code

    spec = openenv_mcp.EnvSpec(
        name="r", codeact=codeact, tool_servers=[openenv_mcp.ToolServerSpec(name="s", namespace="", object=server)]
    )
    with openenv_mcp.make(spec) as env:
        if not codeact:
            assert [t.name for t in env.reset().tools] == ["run_code"]
            return
        with pytest.raises(ToolNameError, match="control-plane names \\(close, reset, run_code, state, step\\)"):
            env.reset()


@needs_bwrap
@pytest.mark.anyio
async def test_run_code_over_the_control_plane_batch_and_mcp_from_the_official_client():
    environment = load_environment(find_env("files").model_copy(update={"codeact": True}))
    app = create_app(environment)
    async with serving(app) as url, connect(url.replace("http", "ws") + "/ws", max_size=None) as ws:

        async def ask(**msg):
            await ws.send(json.dumps({"id": 1, **msg}))
            reply = json.loads(await ws.recv())
            assert reply["ok"], reply
            return reply["result"]

        created = await ask(op="create", seed=0)
        eid = created["episode_id"]
        step = await ask(op="step", episode_id=eid, action={"type": "run_code", "code": "x = 6\nx * 7"})
        assert step["observation"]["result"]["structuredContent"]["value"] == "42"
        batch = await ask(
            op="batch",
            items=[
                {
                    "op": "step",
                    "episode_id": eid,
                    "action": {"type": "run_code", "code": "from tools import fs_list\nbool(fs_list(path='.'))"},
                }
            ],
        )
        inner = batch["results"][0]["result"]["observation"]["result"]["structuredContent"]
        assert inner["value"] == "True" and inner["calls"][0]["name"] == "fs_list"
        async with Client(created["mcp_url"], mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "run_code" in names
            result = await client.call_tool("run_code", {"code": "x + 1"})
            assert result.structured_content["value"] == "7" and not result.is_error
            assert "[value]\n7" in result.content[0].text
        state = (await ask(op="state", episode_id=eid))["state"]
        assert state["step_count"] == 3  # two runs without calls, one run with one call


@needs_bwrap
def test_rollout_codeact_solves_a_files_task_through_the_model_server(tmp_path):
    import subprocess
    import sys

    from support import ROOT
    from support.scripted_model import ScriptedModel

    environment = load_environment("files")
    task = environment.tasks.tasks[0]
    actions = environment.trajectory(task, "reference")
    code = "from tools import *\n" + "\n".join(
        f"{a.name}({', '.join(f'{k}={v!r}' for k, v in a.arguments.items())})" for a in actions
    )
    plans = {
        task.prompt: [
            "I will look first.\n```python\nprint(len(fs_list(path='.')))\n```",
            f"Now the fix:\n```python\n{code}\n```",
        ]
    }
    out = tmp_path / "t.jsonl"
    with ScriptedModel(plans) as server:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "openenv_mcp.cli",
                "rollout",
                "files",
                "--base-url",
                server.url,
                "--model",
                "m",
                "--episodes",
                "1",
                "--task",
                task.id,
                "--action-style",
                "codeact",
                "--out",
                str(out),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        system = server.requests[0]["messages"][0]["content"]
        assert "tools" not in server.requests[0]
    assert system.startswith("You are an agent working in an environment by writing Python.")
    assert "def fs_read(path: str" in system
    traj = json.loads(out.read_text())
    assert (traj["stop_reason"], traj["reward"], traj["success"]) == ("done", 1.0, True), traj
    assert [s["code"] for s in traj["steps"]] == ["print(len(fs_list(path='.')))\n", code + "\n"]
    assert [c["name"] for c in traj["steps"][1]["calls"]] == [a.name for a in actions]
    assert traj["steps"][0]["calls"][0]["result"]["isError"] is False
    assert traj["messages"][3]["role"] == "user" and traj["messages"][3]["content"].startswith("[stdout]\n")


@needs_bwrap
def test_run_code_through_the_remote_client_of_a_served_environment():
    from openenv_mcp.testing import running_server

    with running_server("files") as url, openenv_mcp.make(url) as env:
        env.reset(seed=0)
        obs = env.step(RunCode(code="n = len(str(fs_list(path='.')))\nn > 0"))
        run = obs.result.structured_content
        assert run["value"] == "True" and run["calls"][0]["name"] == "fs_list", run
        obs = env.step({"type": "run_code", "code": "n * 0"})
        assert obs.result.structured_content["value"] == "0"
        assert env.state().step_count == 2


@needs_bwrap
def test_trl_factory_with_codeact_offers_one_run_code_method_that_solves_a_task():
    from openenv_mcp.integrations.trl import environment_factory

    environment = load_environment("files")
    task = environment.tasks.tasks[0]
    code = "\n".join(f"tools.call({a.name!r}, {a.arguments!r})" for a in environment.trajectory(task, "reference"))
    with environment_factory("files", action_style="codeact") as factory:
        methods = [n for n, _ in inspect.getmembers(factory.tool_class, inspect.isfunction) if not n.startswith("_")]
        assert methods == ["get_reward", "reset", "run_code"]
        assert "fs_read(path: str" in factory.tool_class.run_code.__doc__
        instance = factory()
        instance.reset(task_id=task.id)
        assert "[value]\n42" in instance.run_code(code="6 * 7")
        text = instance.run_code(code=code)
        assert text.endswith(f"[{len(environment.trajectory(task, 'reference'))} tool calls]"), text
        assert instance.get_reward() == 1.0


def test_run_code_without_bubblewrap_says_how_to_install_it(monkeypatch):
    import openenv_mcp.isolation.boundaries.sandbox as sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda name, *a, **k: None)
    with files() as env:
        env.reset(seed=0)
        obs, out = run(env, "1")
    assert out["exception"] == (
        "InterpreterError: the code interpreter could not start: isolation 'sandbox' needs "
        "bubblewrap, and 'bwrap' is not installed: run `apt-get install bubblewrap` "
        "(Debian/Ubuntu) or `dnf install bubblewrap` (Fedora)"
    ), out
    assert obs.result.is_error and out["calls"] == []

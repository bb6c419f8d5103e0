"""Rollouts against a real HTTP model server (a scripted OpenAI-compatible one), end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent, Tool

import openenv_mcp
from openenv_mcp import ConfigError
from openenv_mcp.client.registry import load_environment
from openenv_mcp.rollout import (
    TRAJECTORY_FORMAT,
    OpenAIPolicy,
    PolicyError,
    result_text,
    rollout,
    summarize,
    tools_to_functions,
)
from openenv_mcp.testing import free_port, running_server

from support import ROOT
from support.scripted_model import ScriptedModel, call, plans_from_solutions

pytestmark = pytest.mark.anyio


def _policy(server: ScriptedModel, **kw) -> OpenAIPolicy:
    kw.setdefault("backoff", 0.01)
    return OpenAIPolicy(server.url, "scripted", kw.pop("api_key", None), **kw)


# -- pure conversions ----------------------------------------------------------------
def test_tools_become_function_schemas_with_safe_unique_names():
    tools = [
        Tool(
            name="fs_read",
            description="Read a file.",
            inputSchema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        ),
        Tool(name="db.query", inputSchema={"type": "object"}),
        Tool(name="db/query", title="Query too", inputSchema={"type": "object"}),
    ]
    functions, back = tools_to_functions(tools)
    assert functions[0] == {
        "type": "function",
        "function": {
            "name": "fs_read",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
    assert [f["function"]["name"] for f in functions] == ["fs_read", "db_query", "db_query_2"]
    assert functions[1]["function"]["parameters"] == {"type": "object", "properties": {}}
    assert functions[2]["function"]["description"] == "Query too"
    assert back == {"fs_read": "fs_read", "db_query": "db.query", "db_query_2": "db/query"}


def test_tool_results_become_tool_message_text():
    text = CallToolResult(content=[TextContent(type="text", text="a"), TextContent(type="text", text="b")])
    assert result_text(text) == "a\nb"
    image = CallToolResult(content=[ImageContent(type="image", data="AAAA", mimeType="image/png")])
    assert result_text(image) == "[image: image/png, 3 bytes]"
    structured = CallToolResult(content=[], structuredContent={"rows": 2})
    assert result_text(structured) == '{"rows": 2}'
    error = CallToolResult(content=[TextContent(type="text", text="no such file")], isError=True)
    assert result_text(error) == "Error: no such file"
    unknown = CallToolResult(content=[TextContent(type="text", text="Unknown tool: 'x'")], isError=True)
    assert result_text(unknown) == "Error: Unknown tool: 'x'"


# -- the loop against the real HTTP model server ----------------------------------------
async def test_echo_episodes_solved_through_the_model_server():
    environment = load_environment("echo")
    with ScriptedModel(plans_from_solutions(environment)) as server:
        async with _policy(server) as policy:
            trajs = await rollout("echo", policy, episodes=4, concurrency=2, seed=10)
    assert [t.episode for t in trajs] == [0, 1, 2, 3]
    assert [t.seed for t in trajs] == [10, 11, 12, 13]
    for traj in trajs:
        assert traj.task_id == environment.tasks.pick(traj.seed)[0].id
        assert (traj.reward, traj.done, traj.truncated, traj.stop_reason) == (1.0, True, False, "done")
        line = traj.to_json()
        assert line["format"] == TRAJECTORY_FORMAT and line["model"] == "scripted" and line["env"] == "echo"
        roles = [m["role"] for m in line["messages"]]
        assert roles == ["system", "user", "assistant", "tool"]
        assert line["messages"][1]["content"] == line["prompt"]
        phrase = environment.tasks.pick(traj.seed)[0].data["phrase"]
        assistant = line["messages"][2]
        assert assistant["tool_calls"] == [
            {
                "id": "call_0_0",
                "type": "function",
                "function": {"name": "echo", "arguments": json.dumps({"text": phrase})},
            }
        ]
        assert line["messages"][3] == {"role": "tool", "tool_call_id": "call_0_0", "content": phrase}
        [step] = line["steps"]
        assert step["name"] == "echo" and step["arguments"] == {"text": phrase}
        assert step["result"]["isError"] is False and step["result"]["content"][0]["text"] == phrase
        assert (step["reward"], step["done"], line["rewards"], line["num_steps"]) == (1.0, True, [1.0], 1)
        assert line["tools"][0]["function"]["name"] == "echo"
        assert line["usage"]["completion_tokens"] == 5
        assert set(line["timings"]) == {"started_at", "total_s", "reset_s", "model_s", "env_s"}
        json.dumps(line)  # the line is JSON
    stats = summarize(trajs)
    assert stats == {
        "episodes": 4,
        "reward_mean": 1.0,
        "reward_std": 0.0,
        "success_rate": 1.0,
        "mean_steps": 1.0,
        "tool_error_rate": 0.0,
    }


async def test_malformed_tool_calls_become_tool_error_observations():
    environment = load_environment("echo")
    mistakes = [
        [
            call("echo", '{"text": "unterminated'),
            call("no_such_tool", {}),
            call("echo", "[1, 2]"),
            call("echo", {"wrong": 1}),
        ]
    ]
    plans = plans_from_solutions(environment, prefix=mistakes)
    with ScriptedModel(plans) as server:
        async with _policy(server) as policy:
            [traj] = await rollout("echo", policy, episodes=1, seed=3)
        second_request = server.requests[1]["messages"]
    assert traj.stop_reason == "done" and traj.reward == 1.0
    steps = traj.steps
    assert [s["is_error"] for s in steps] == [True, True, True, True, False]
    assert steps[0]["malformed"].startswith("arguments are not valid JSON (Unterminated string")
    assert steps[0]["arguments"] is None and steps[0]["raw_arguments"] == '{"text": "unterminated'
    assert steps[1]["result"]["content"][0]["text"] == "Unknown tool: 'no_such_tool'"
    assert steps[2]["malformed"] == "arguments must be a JSON object, got list"
    assert steps[3]["result"]["content"][0]["text"].startswith("Invalid arguments for tool 'echo'")
    tool_messages = [m for m in second_request if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_0_0", "call_0_1", "call_0_2", "call_0_3"]
    assert tool_messages[0]["content"] == (
        "Error: Invalid arguments for tool 'echo': arguments are not valid JSON "
        "(Unterminated string starting at: line 1 column 10 (char 9))"
    )
    assert tool_messages[1]["content"] == "Error: Unknown tool: 'no_such_tool'"
    assert (traj.num_steps, traj.tool_errors) == (5, 4)
    assert summarize([traj])["tool_error_rate"] == 0.8


async def test_transient_503s_are_retried_with_backoff():
    environment = load_environment("echo")
    with ScriptedModel(plans_from_solutions(environment), flaky=True) as server:
        async with _policy(server) as policy:
            trajs = await rollout("echo", policy, episodes=3, concurrency=3)
            retries = policy.retries
        counts = server.status_counts
    assert all(t.reward == 1.0 for t in trajs)
    # each episode has one turn (its call solves the task); that turn's first request got a 503
    assert counts[503] == 3 and counts[200] == 3 and retries == 3


async def test_retries_are_bounded():
    with ScriptedModel({}, flaky=True) as server:
        policy = _policy(server, max_retries=0)
        with pytest.raises(
            PolicyError,
            match=r"kept failing \(503: overloaded, try again\) after 1 attempt; "
            r"try again later or lower --concurrency",
        ):
            await rollout("echo", policy, episodes=1)
        await policy.aclose()


async def test_a_bad_key_is_a_clear_error():
    with ScriptedModel({}, api_key="right") as server:
        async with _policy(server, api_key="wrong") as policy:
            with pytest.raises(
                PolicyError,
                match=r"^model server at http://127\.0\.0\.1:\d+/v1/chat/completions "
                r"refused the API key \(401: Incorrect API key provided\); "
                r"check --api-key or \$OPENAI_API_KEY$",
            ):
                await rollout("echo", policy, episodes=2, concurrency=2)


async def test_a_bad_url_is_a_clear_error():
    port = free_port()
    async with OpenAIPolicy(f"http://127.0.0.1:{port}/v1", "m", max_retries=1, backoff=0.01) as policy:
        with pytest.raises(
            PolicyError,
            match=rf"^cannot reach the model server at http://127\.0\.0\.1:{port}/v1/"
            r"chat/completions \(ConnectError: .*\) after 2 attempts; "
            r"check --base-url and that the server is running$",
        ):
            await rollout("echo", policy, episodes=1)
    with ScriptedModel({}) as server:
        async with OpenAIPolicy(server.url.removesuffix("/v1"), "m") as policy:
            with pytest.raises(
                PolicyError,
                match=r"has no chat-completions endpoint \(404: Not Found\); "
                r"--base-url must be the API root, usually ending in /v1$",
            ):
                await rollout("echo", policy, episodes=1)
    with pytest.raises(
        ConfigError, match=r"^model server URL must look like http://HOST:PORT/v1, got 'localhost:8000'$"
    ):
        OpenAIPolicy("localhost:8000", "m")


async def test_step_budget_env_truncation_and_text_answers_end_episodes():
    environment = load_environment("echo")
    wrong = plans_from_solutions(environment, "wrong")
    forever = {prompt: plan * 10 for prompt, plan in wrong.items()}
    with ScriptedModel(forever) as server:
        async with _policy(server) as policy:
            [budget] = await rollout("echo", policy, episodes=1, max_steps=3)
            [truncated] = await rollout("echo", policy, episodes=1, max_steps=50)
    assert (budget.stop_reason, budget.num_steps, budget.done, budget.reward) == ("max_steps", 3, False, 0.0)
    assert (truncated.stop_reason, truncated.num_steps, truncated.truncated) == ("truncated", 5, True)
    with ScriptedModel(wrong) as server:
        async with _policy(server) as policy:
            [text] = await rollout("echo", policy, episodes=1)
    assert (text.stop_reason, text.num_steps, text.turns) == ("no_tool_calls", 1, 2)
    assert text.messages[-1] == {"role": "assistant", "content": "Done."}


async def test_calls_after_the_end_in_one_message_are_not_executed():
    environment = load_environment("echo")
    plans = plans_from_solutions(environment, one_call_per_turn=False)
    plans = {p: [[*turn, call("echo", {"text": "late"})] for turn in plan] for p, plan in plans.items()}
    with ScriptedModel(plans) as server:
        async with _policy(server) as policy:
            [traj] = await rollout("echo", policy, episodes=1)
    assert traj.stop_reason == "done" and traj.num_steps == 1 and len(traj.steps) == 2
    assert traj.steps[1]["skipped"] is True
    assert traj.messages[-1]["content"] == "Error: Not executed: the episode has ended."


async def test_own_policy_and_one_env_instance():
    turns = []

    def policy(messages, tools):  # a trainer's own policy: sync, returns a plain dict
        turns.append(len(messages))
        if messages[-1]["role"] == "tool":
            return {"role": "assistant", "content": "ok"}
        phrase = messages[0]["content"].split(": ", 1)[1]
        return {
            "role": "assistant",
            "tool_calls": [{"function": {"name": tools[0]["function"]["name"], "arguments": {"text": phrase}}}],
        }

    env = openenv_mcp.make_async("echo")
    trajs = await rollout(env, policy, episodes=2, seed=5, system_prompt=None)
    assert [t.reward for t in trajs] == [1.0, 1.0] and turns == [1, 1]
    assert trajs[0].messages[1]["tool_calls"][0]["id"] == "call_1_0"
    assert trajs[0].messages[1]["tool_calls"][0]["function"]["arguments"].startswith('{"text"')
    with pytest.raises(ConfigError, match="one env instance plays one episode at a time"):
        await rollout(env, policy, episodes=2, concurrency=2)


# -- the command line --------------------------------------------------------------------
def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "rollout", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "160", **(env or {})},
    )


def test_cli_writes_jsonl_and_prints_the_summary(tmp_path):
    environment = load_environment("echo")
    plans = plans_from_solutions(environment, prefix=[[call("echo", "{bad")]])
    out = tmp_path / "t.jsonl"
    with ScriptedModel(plans, api_key="k", flaky=True) as server:
        proc = _cli(
            "echo",
            "--base-url",
            server.url,
            "--model",
            "scripted",
            "--episodes",
            "3",
            "--concurrency",
            "2",
            "--seed",
            "4",
            "--out",
            str(out),
            env={"OPENAI_API_KEY": "k"},
        )
    assert proc.returncode == 0, proc.stderr
    assert "reward mean" in proc.stdout and "tool-error rate" in proc.stdout
    assert "1.000" in proc.stdout and "100%" in proc.stdout and "50.0%" in proc.stdout
    assert f"wrote 3 trajectories to {out} (6 model-server retries)" in proc.stdout  # 2 turns each, flaky
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(line["seed"] for line in lines) == [4, 5, 6]
    assert all(line["reward"] == 1.0 and line["tool_errors"] == 1 for line in lines)


def test_cli_bad_key_exits_2_with_one_line(tmp_path):
    with ScriptedModel({}, api_key="right") as server:
        proc = _cli(
            "echo", "--base-url", server.url, "--model", "m", "--api-key", "wrong", "--out", str(tmp_path / "t.jsonl")
        )
    assert proc.returncode == 2
    assert "error: model server at" in proc.stderr and "refused the API key (401" in proc.stderr


async def test_files_episodes_solved_with_mistakes_on_the_way():
    environment = load_environment("files")
    mistakes = [[call("fs_read", '{"path": '), call("no_such_tool", {"path": "."})]]
    plans = plans_from_solutions(environment, prefix=mistakes)
    with ScriptedModel(plans, flaky=True) as server:
        async with _policy(server) as policy:
            trajs = await rollout("files", policy, episodes=6, concurrency=3, seed=0)
    tasks = {t.task_id for t in trajs}
    assert len(tasks) > 1
    for traj in trajs:
        reference = environment.trajectory(environment.tasks.pick(traj.seed)[0])
        assert (traj.stop_reason, traj.reward, traj.success) == ("done", 1.0, True), traj.to_json()
        assert traj.num_steps == 2 + len(reference) and traj.tool_errors >= 2
        assert [s["name"] for s in traj.steps] == ["fs_read", "no_such_tool", *(a.name for a in reference)]
        assert traj.steps[1]["result"]["content"][0]["text"] == "Unknown tool: 'no_such_tool'"
        assert sum(traj.rewards) == pytest.approx(1.0)
        names = {t["function"]["name"] for t in traj.tools}
        assert {"fs_list", "fs_read", "fs_write", "fs_edit"} <= names


async def test_remote_env_through_the_control_plane():
    env_name = "files"
    environment = load_environment(env_name)
    plans = plans_from_solutions(environment, prefix=[[call("no_such_tool", {})]])
    with ScriptedModel(plans) as server, running_server(env_name) as url:
        async with _policy(server) as policy:
            trajs = await rollout(url, policy, episodes=4, concurrency=2, seed=20)
    assert [t.seed for t in trajs] == [20, 21, 22, 23]
    for traj in trajs:
        task = environment.tasks.pick(traj.seed)[0]
        assert traj.task_id == task.id and traj.prompt == task.prompt and traj.env == url
        assert (traj.stop_reason, traj.reward, traj.tool_errors) == ("done", 1.0, 1)
        assert traj.num_steps == 1 + len(environment.trajectory(task))
        assert traj.steps[0]["result"]["content"][0]["text"] == "Unknown tool: 'no_such_tool'"

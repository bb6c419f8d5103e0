"""Rollouts played by real agent harnesses over the episode's MCP address: one solves a task, a crashing
one is recorded, one past its time is stopped and its episode closed.

Each harness talks to the scripted OpenAI-compatible server (tests/support/scripted_model.py), which answers
with the `files` environment's reference solution; the environment's reward is read on the control plane.
"""

from __future__ import annotations

import json
import sys
import textwrap
from importlib.metadata import version

import pytest

from openenv_mcp.cli.app import main
from openenv_mcp.client.registry import load_environment

from support.scripted_model import ScriptedModel, plans_from_solutions

TASK = "rename-notes"


@pytest.fixture(scope="module")
def model():
    with ScriptedModel(plans_from_solutions(load_environment("files"))) as server:
        yield server


def rollout(tmp_path, model, *harness: str, episodes: int = 1) -> list[dict]:
    out = tmp_path / "out.jsonl"
    code = main(
        [
            "rollout",
            "files",
            "--base-url",
            model.url,
            "--model",
            "scripted",
            "--task",
            TASK,
            "--episodes",
            str(episodes),
            "--out",
            str(out),
            *harness,
        ]
    )
    assert code == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.mark.parametrize(
    ("harness", "package"), [("openai-agents", "openai-agents"), ("pydantic-ai", "pydantic-ai-slim")]
)
def test_a_harness_solves_a_files_task_over_the_episodes_mcp_address(tmp_path, model, harness, package):
    [line] = rollout(tmp_path, model, "--harness", harness)
    assert line["harness"] == {"name": harness, "version": version(package)}
    assert (line["reward"], line["done"], line["success"], line["stop_reason"]) == (1.0, True, True, "done")
    assert line["harness_error"] is None and line["harness_transcript"]
    assert line["format"] == "openenv-mcp.trajectory/1" and line["task_id"] == TASK
    # the model's real conversation, chat-completions form: the task, the tool call, its result
    assert any(m["role"] == "user" and m["content"] == line["prompt"] for m in line["messages"])
    environment = load_environment("files")
    reference = [a.name for a in environment.trajectory(environment.tasks.pick(None, TASK)[0])]
    assert [s["name"] for s in line["steps"]] == reference  # what the scripted model asked for, in order
    assert all(s["result_text"] and not s["is_error"] for s in line["steps"])
    assert set(reference) <= {t["function"]["name"] for t in line["tools"]}
    assert line["num_steps"] == len(reference)


HARNESS_SCRIPT = textwrap.dedent('''
    """A minimal command-line harness: task from a file, MCP over HTTP, an OpenAI-compatible model."""
    import json, sys
    import anyio, httpx
    from mcp.client.client import Client

    mcp_url, prompt_file, base_url = sys.argv[1:4]

    async def main():
        prompt = open(prompt_file).read()
        messages = [{"role": "user", "content": prompt}]
        async with Client(mcp_url) as client, httpx.AsyncClient() as http:
            tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                      "parameters": t.input_schema}} for t in (await client.list_tools()).tools]
            for _ in range(10):
                answer = (await http.post(base_url + "/chat/completions",
                                          json={"model": "m", "messages": messages, "tools": tools})).json()
                message = answer["choices"][0]["message"]
                messages.append(message)
                if not message.get("tool_calls"):
                    break
                for call in message["tool_calls"]:
                    result = await client.call_tool(call["function"]["name"], json.loads(call["function"]["arguments"]))
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result.content[0].text})
        print(json.dumps(messages))

    anyio.run(main)
''')


def test_a_command_harness_solves_it_and_a_crashing_one_is_recorded(tmp_path, model):
    script = tmp_path / "harness.py"
    script.write_text(HARNESS_SCRIPT)
    cmd = f"{sys.executable} {script} {{mcp_url}} {{prompt_file}} {{base_url}}"
    [line] = rollout(tmp_path, model, "--harness-cmd", cmd)
    assert (line["reward"], line["done"], line["stop_reason"]) == (1.0, True, "done")
    assert line["harness"]["name"] == "command"
    played = json.loads(line["harness_transcript"]["stdout"])
    assert played[0] == {"role": "user", "content": line["prompt"]}

    crash = f"{sys.executable} -c 'import sys; print(sys.argv[1]); sys.exit(3)' {{mcp_url}}"
    [line] = rollout(tmp_path, model, "--harness-cmd", crash)
    assert (line["reward"], line["done"], line["stop_reason"]) == (0.0, False, "harness_error")
    assert line["harness_error"].startswith("HarnessFailed: the harness command exited with status 3")
    assert "/episodes/" in line["harness_transcript"]["stdout"]


def test_a_harness_past_its_time_is_stopped_and_its_episode_closed(tmp_path, model):
    hang = f"{sys.executable} -c 'import time, sys; time.sleep(60)' {{mcp_url}}"
    [line] = rollout(tmp_path, model, "--harness-cmd", hang, "--harness-timeout", "1")
    assert (line["reward"], line["stop_reason"]) == (0.0, "harness_timeout")
    assert line["harness_error"] == "the harness ran past 1 s and was stopped"

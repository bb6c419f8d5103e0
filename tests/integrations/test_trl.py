"""TRL: the generated tool classes, and real GRPOTrainer runs on CPU with a tiny local model."""

from __future__ import annotations

import importlib.util
import inspect
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openenv_mcp.testing import REQUIRE_ALL

MISSING = "the trl extra is not installed: pip install 'openenv-mcp[trl]'"
if importlib.util.find_spec("trl") is None:  # an optional extra; CI (OPENENV_MCP_REQUIRE_ALL=1) must have it
    if REQUIRE_ALL:
        pytest.fail(MISSING + " (OPENENV_MCP_REQUIRE_ALL=1)", pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

from mcp.types import Tool
from transformers.utils import get_json_schema

import openenv_mcp
from openenv_mcp.integrations.toolschema import normal_form
from openenv_mcp.integrations.trl import (
    ToolSchemaError,
    derived_normal_form,
    environment_factory,
    tool_class,
)
from openenv_mcp.testing import need

from support import ROOT, tiny_policy

BUILTIN = ["echo", "files", "sql", "coding"]


def _tools(name: str) -> list[Tool]:
    if name == "coding":
        need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed: the coding env sandboxes tools")
    env = openenv_mcp.make(name)
    try:
        return list(env.reset(seed=0).tools or [])
    finally:
        env.close()


# -- (a) the schema TRL derives is the tool's inputSchema ------------------------------------------------


@pytest.mark.parametrize("env_name", BUILTIN)
def test_trl_derives_every_builtin_tool_schema_exactly(env_name: str) -> None:
    tools = _tools(env_name)
    cls = tool_class(env_name, tools)
    found = {n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_")}
    assert found == {t.name for t in tools} | {"reset", "get_reward"}  # what TRL offers as tools: nothing else
    for tool in tools:
        method = getattr(cls, tool.name)
        derived = get_json_schema(method)["function"]  # what TRL renders into the prompt
        assert derived["name"] == tool.name
        assert derived_normal_form(method) == normal_form(tool.description, tool.input_schema), tool.name


def test_normal_form_keeps_types_enums_defaults_and_descriptions_apart() -> None:
    # the comparison is not vacuous: each of these differences is seen
    base = {
        "type": "object",
        "properties": {"mode": {"type": "string", "enum": ["a", "b"], "description": "M", "default": "a"}},
        "required": [],
    }
    variants = [
        {"mode": {"type": "string", "enum": ["a", "c"], "description": "M", "default": "a"}},
        {"mode": {"type": "integer", "description": "M", "default": "a"}},
        {"mode": {"type": "string", "enum": ["a", "b"], "description": "N", "default": "a"}},
        {"mode": {"type": "string", "enum": ["a", "b"], "description": "M", "default": "b"}},
        {
            "mode": {
                "anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}],
                "description": "M",
                "default": "a",
            }
        },
    ]
    for props in variants:
        assert normal_form("d", {**base, "properties": props}) != normal_form("d", base)
    assert normal_form("d", {**base, "required": ["mode"]}) != normal_form("d", base)
    tool = Tool(name="pick", description="Pick a mode.", inputSchema=base)
    assert derived_normal_form(tool_class("x", [tool]).pick) == normal_form("Pick a mode.", base)


def test_tools_trl_cannot_express_are_listed_in_a_clear_error() -> None:
    nested = Tool(
        name="configure",
        description="Set options.",
        inputSchema={
            "type": "object",
            "properties": {
                "options": {"type": "object", "description": "Options.", "properties": {"depth": {"type": "integer"}}}
            },
        },
    )
    keyword_param = Tool(
        name="copy",
        description="Copy.",
        inputSchema={"type": "object", "properties": {"from": {"type": "string", "description": "Source."}}},
    )
    fine = Tool(name="ping", description="Ping.", inputSchema={"type": "object", "properties": {}})
    with pytest.raises(ToolSchemaError) as err:
        tool_class("demo", [nested, keyword_param, fine])
    assert str(err.value) == (
        "environment 'demo': 2 tool(s) cannot be given to TRL with their exact schema: configure: parameter "
        "'options': a nested object with its own properties; copy: parameter name 'from' is not a Python identifier"
        ". Pass strict=False to offer them with an approximate schema (inexpressible types as any value, the "
        "environment still validating every call) and leave out those that cannot be called at all"
    )
    with pytest.warns(UserWarning, match="approximate schema or left out: configure"):
        cls = tool_class("demo", [nested, keyword_param, fine], strict=False)
    offered = {n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}
    assert offered == {"configure", "ping", "reset", "get_reward"}


def test_a_tool_call_returns_the_result_text_and_errors_as_text() -> None:
    with environment_factory("echo") as factory:
        env = factory()
        prompt = env.reset(task_id="echo-02")
        assert prompt == "Use the echo tool to say exactly: reinforcement learning"
        assert env.get_reward() == 0.0
        assert env.echo(text="hello") == "hello"
        assert env.echo(txt="x").startswith("Error: ")  # the environment's schema validation answers
        assert env.echo(text="reinforcement learning") == "reinforcement learning"
        assert env.get_reward() == 1.0
        assert factory.open_episodes() == 1
    assert factory.open_episodes() == 0


def test_repeat_gives_groups_of_one_task_with_distinct_seeds() -> None:
    with environment_factory("files", repeat=3, seed=5) as factory:
        envs = [factory() for _ in range(6)]
        prompts = [e.reset(prompt=[]) for e in envs]  # TRL passes the dataset row; unknown columns are ignored
        states = [factory.state(e) for e in envs]
        assert prompts[0] == prompts[1] == prompts[2] and prompts[3] == prompts[4] == prompts[5]
        assert len({s.task_id for s in states[:3]}) == 1 and len({s.task_id for s in states[3:]}) == 1
        assert len({s.seed for s in states}) == 6
        # a dataset's task_id column wins over the group
        assert envs[0].reset(task_id="rename-notes", seed=9).startswith("Rename the file `notes.txt`")
        assert (factory.state(envs[0]).task_id, factory.state(envs[0]).seed) == ("rename-notes", 9)


def test_factory_over_a_served_environment_closes_its_episodes_on_the_server() -> None:
    import httpx

    from openenv_mcp.testing import running_server

    with running_server("echo") as url:
        with environment_factory(url, repeat=2) as factory:
            envs = [factory(), factory()]
            prompts = [e.reset() for e in envs]
            assert prompts[0] == prompts[1] and prompts[0].startswith("Use the echo tool")
            phrase = prompts[0].split("exactly: ", 1)[1]
            assert envs[1].echo(text=phrase) == phrase
            assert [e.get_reward() for e in envs] == [0.0, 1.0]
            assert "openenv_mcp_episodes_live 2" in httpx.get(url + "/metrics").text
        assert factory.open_episodes() == 0
        assert "openenv_mcp_episodes_live 0" in httpx.get(url + "/metrics").text


# -- (b) a real GRPOTrainer run -----------------------------------------------------------------------

CALLS = {
    "echo": tiny_policy.tool_call_text("echo", {"text": "reinforcement learning"}),
    "files": tiny_policy.tool_call_text("fs_move", {"source": "notes.txt", "destination": "meeting-notes.txt"}),
}


def schema_corpus(env_name: str) -> list[str]:
    """The tools' schemas as TRL renders them: the tiny tokenizer learns them (short prompts, cheap steps)."""
    cls = environment_factory(env_name).tool_class
    return [json.dumps(get_json_schema(getattr(cls, t.name))) for t in _tools(env_name)]


def check_grpo_two_steps(env_name: str, tmp_path: Path, task_id: str | None) -> None:
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    model_dir = tiny_policy.build(tmp_path / "model", [CALLS[env_name]], corpus=schema_corpus(env_name))
    workdir = tmp_path / "episodes"
    workdir.mkdir()
    factory = environment_factory(env_name, repeat=4, seed=1, workdir=workdir)
    seen: list[list[float]] = []

    def record(environments, **kwargs):  # an extra reward source that only records what the envs say
        seen.append([e.get_reward() for e in environments])
        states = [factory.state(e) for e in environments]
        assert all(s is not None and (task_id is None or s.task_id == task_id) for s in states)
        for g in range(0, len(states), 4):  # each GRPO group: one task, four seeds (repeat=4)
            assert len({s.task_id for s in states[g : g + 4]}) == 1 and len({s.seed for s in states[g : g + 4]}) == 4
        return [None] * len(environments)

    dataset = (
        Dataset.from_dict({"prompt": [[{"role": "user", "content": ""}]] * 2, "task_id": [task_id] * 2})
        if task_id
        else None
    )
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=48,
        max_tool_calling_iterations=1,
        learning_rate=1e-5,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=[record],
        args=args,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        train_dataset=dataset,
        environment_factory=factory,
        callbacks=[factory.callback()],
    )
    started = time.perf_counter()
    trainer.train()
    per_step = (time.perf_counter() - started) / 2
    print(f"GRPO on {env_name}: {per_step:.2f} s per optimizer step (CPU)")

    logs = [row for row in trainer.state.log_history if f"rewards/{factory.tool_class.__name__}/mean" in row]
    assert len(logs) == 2 and trainer.state.global_step == 2
    key = f"rewards/{factory.tool_class.__name__}/mean"
    for row, rewards in zip(logs, seen, strict=False):
        assert math.isclose(row[key], sum(rewards) / len(rewards), abs_tol=1e-6)
        assert math.isclose(row["reward"], sum(rewards) / len(rewards), abs_tol=1e-6)
    assert sum(row["tools/call_frequency"] for row in logs) > 0  # the tools were really called
    if task_id is not None:  # the policy's one tool call solves this task: rewards are 0 or 1, some 1
        assert {r for rewards in seen for r in rewards} == {0.0, 1.0}
    # every episode is closed once training ends: none running, no workspace left behind
    assert factory.open_episodes() == 0
    deadline = time.monotonic() + 10
    while any(workdir.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(workdir.iterdir()) == []


def test_grpo_trainer_two_steps_on_echo(tmp_path: Path) -> None:
    check_grpo_two_steps("echo", tmp_path, task_id="echo-02")


def test_grpo_trainer_two_steps_on_files(tmp_path: Path) -> None:
    check_grpo_two_steps("files", tmp_path, task_id=None)


# -- (c) the example script ---------------------------------------------------------------------------


def test_example_trl_grpo_runs_one_step(tmp_path: Path) -> None:
    model_dir = tiny_policy.build(tmp_path / "model", [CALLS["echo"]], corpus=schema_corpus("echo"))
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "trl_grpo.py"),
            "--model",
            str(model_dir),
            "--env",
            "echo",
            "--max-steps",
            "1",
            "--num-generations",
            "2",
            "--max-completion-length",
            "32",
            "--output-dir",
            str(tmp_path / "out"),
            "--cpu",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "trained 1 step(s) on echo" in out.stdout

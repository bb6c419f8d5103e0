"""Reading task folders (no engine needed): Harbor's task.toml versions, Terminal-Bench 1, datasets."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from openenv_mcp.errors import ConfigError, TaskFormatError
from openenv_mcp.worlds.harbor.dataset import SUBMIT_HINT, definition_of, find_task_folders, load_tasks
from openenv_mcp.worlds.harbor.taskformat import LoadOptions, read_task
from openenv_mcp.worlds.harbor.verifier import parse_reward_json, parse_reward_text

from support.harbor import write_harbor_task, write_tb1_task


def test_schema_1_0_with_deprecated_sizes_and_allow_internet(tmp_path: Path) -> None:
    folder = write_harbor_task(
        tmp_path,
        raw_toml='version = "1.0"\n[metadata]\ndifficulty = "easy"\n[verifier]\ntimeout_sec = 120.0\n'
        '[agent]\ntimeout_sec = 300.0\n[environment]\ncpus = 2\nmemory = "1G"\nstorage = "10G"\n'
        "allow_internet = true\n",
    )
    task = read_task(folder)
    assert task.schema_version == "1.0"
    assert (task.verifier.timeout, task.agent_timeout) == (120.0, 300.0)
    assert (task.environment.resources.cpus, task.environment.resources.memory_mb) == (2.0, 1024)
    assert task.environment.resources.storage_mb == 10240
    assert task.environment.network == task.agent_network == task.verifier.network == "public"
    assert task.instruction.startswith("Create the file /app/hello.txt")
    assert task.solution_script == "solve.sh" and task.environment.kind == "dockerfile"


def test_no_network_unless_the_task_asks_and_harbors_default_on_request(tmp_path: Path) -> None:
    folder = write_harbor_task(tmp_path)
    assert read_task(folder).environment.network == "none"
    assert read_task(folder, LoadOptions(network="harbor")).environment.network == "public"
    denied = write_harbor_task(tmp_path, "denied", toml_extra='network_mode = "no-network"\n')
    assert read_task(denied, LoadOptions(network="harbor")).environment.network == "none"


def test_schema_1_4_separate_verifier_artifacts_user_env_and_unknown_keys(tmp_path: Path) -> None:
    toml = """\
schema_version = "1.4"
artifacts = ["/app/out", {source = "/app/report.json"}]
surprise = 1
[task]
name = "org/sep"
[verifier]
timeout_sec = 30
environment_mode = "separate"
user = "root"
env = {MODE = "strict", TOKEN = "${HOME_SECRET:-none}"}
[agent]
user = "1000"
[environment]
memory_mb = 256
workdir = "/app"
unknown_env_key = "x"
[environment.healthcheck]
command = "true"
retries = 2
"""
    folder = write_harbor_task(tmp_path, "sep", raw_toml=toml)
    task = read_task(folder)
    assert task.verifier.mode == "separate" and task.verifier.environment is None
    assert task.artifacts == ("/app/out", "/app/report.json")
    assert task.verifier.env == {"MODE": "strict", "TOKEN": "none"}
    assert task.agent_user == "1000" and task.verifier.user == "root"
    assert task.environment.workdir == "/app" and task.environment.healthcheck is not None
    assert task.environment.healthcheck.retries == 2
    assert any("surprise" in w for w in task.warnings) and any("unknown_env_key" in w for w in task.warnings)


def test_host_variables_reach_a_task_only_when_the_dataset_lets_them(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOST_SECRET", "s3cret")
    folder = write_harbor_task(tmp_path, toml_extra='env = {A = "${HOST_SECRET}", B = "${HOST_SECRET:-dflt}"}\n')
    assert read_task(folder).environment.env == {"A": "", "B": "dflt"}
    allowed = read_task(folder, LoadOptions(pass_env=("HOST_SECRET",)))
    assert allowed.environment.env == {"A": "s3cret", "B": "s3cret"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("gpus = 1\n", "GPUs"),
        ('os = "windows"\n', "Linux"),
        ('network_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n', "allowlist"),
    ],
)
def test_what_cannot_run_here_is_refused_naming_the_field(tmp_path: Path, extra: str, message: str) -> None:
    folder = write_harbor_task(tmp_path, toml_extra=extra)
    with pytest.raises(TaskFormatError, match=message):
        read_task(folder)


def test_multi_step_and_malformed_tasks_are_refused(tmp_path: Path) -> None:
    steps = write_harbor_task(tmp_path, "steps", raw_toml='schema_version = "1.4"\n[[steps]]\nname = "one"\n')
    with pytest.raises(TaskFormatError, match="multi-step"):
        read_task(steps)
    broken = write_harbor_task(tmp_path, "broken", raw_toml="[verifier\n")
    with pytest.raises(TaskFormatError, match="invalid TOML"):
        read_task(broken)
    typed = write_harbor_task(tmp_path, "typed", raw_toml='[verifier]\ntimeout_sec = "soon"\n')
    with pytest.raises(TaskFormatError, match="verifier.timeout_sec"):
        read_task(typed)
    no_tests = write_harbor_task(tmp_path, "notests")
    (no_tests / "tests" / "test.sh").unlink()
    with pytest.raises(TaskFormatError, match="tests/test.sh"):
        read_task(no_tests)
    with pytest.raises(TaskFormatError, match="not a task folder"):
        read_task(tmp_path)


def test_canary_lines_are_stripped_from_the_instruction(tmp_path: Path) -> None:
    folder = write_harbor_task(
        tmp_path, instruction="<!-- BENCHMARK DATA canary GUID 1234 -->\n# canary 5678\n\nDo the thing."
    )
    assert read_task(folder).instruction == "Do the thing."


def test_compose_environment_needs_a_main_service(tmp_path: Path) -> None:
    folder = write_harbor_task(
        tmp_path, files={"environment/docker-compose.yaml": "services:\n  main:\n    build: .\n"}
    )
    task = read_task(folder)
    assert task.environment.kind == "compose" and task.environment.compose_file is not None


TB1_YAML = """\
instruction: |-
  Write hello to /app/out.txt
author_email: someone@example.com
difficulty: easy
category: testing
tags: [files]
parser_name: pytest
max_agent_timeout_sec: 200
max_test_timeout_sec: 45
run_tests_in_same_shell: false
"""


def test_terminal_bench_1_folder(tmp_path: Path) -> None:
    folder = write_tb1_task(
        tmp_path,
        "tb1",
        task_yaml=TB1_YAML,
        dockerfile="FROM debian\n",
        run_tests="#!/bin/bash\npytest $TEST_DIR/test_outputs.py -rA\n",
        tests={"test_outputs.py": "def test_x():\n    assert True\n"},
        solution="#!/bin/bash\necho hello > /app/out.txt\n",
        compose="services:\n  client:\n    build:\n      dockerfile: Dockerfile\n    command: [sh, -c, 'sleep infinity']\n",
    )
    task = read_task(folder)
    assert task.format == "terminal-bench" and task.instruction == "Write hello to /app/out.txt"
    assert (task.agent_timeout, task.verifier.timeout) == (200.0, 45.0)
    assert task.verifier.result == "pytest" and task.verifier.script == "run-tests.sh"
    assert set(task.verifier.extra_files) == {"run-tests.sh"}
    assert "tests" in task.environment.exclude and "solution.sh" in task.environment.exclude
    assert task.solution_script == "solution.sh" and task.metadata["category"] == "testing"


def test_terminal_bench_1_refusals(tmp_path: Path) -> None:
    other = write_tb1_task(
        tmp_path,
        "parser",
        task_yaml=TB1_YAML.replace("pytest", "swebench"),
        dockerfile="FROM x\n",
        run_tests="#!/bin/sh\n",
        tests={},
        solution=None,
    )
    with pytest.raises(TaskFormatError, match="pytest parser"):
        read_task(other)
    multi = write_tb1_task(
        tmp_path,
        "multi",
        task_yaml=TB1_YAML,
        dockerfile="FROM x\n",
        run_tests="#!/bin/sh\n",
        tests={},
        solution=None,
        compose="services:\n  client:\n    build: .\n  db:\n    image: postgres\n",
    )
    with pytest.raises(TaskFormatError, match="more than one service"):
        read_task(multi)


def test_a_dataset_folder_skips_what_it_cannot_run_and_hides_the_folder(tmp_path: Path) -> None:
    write_harbor_task(tmp_path / "set", "a-ok")
    write_harbor_task(tmp_path / "set" / "group", "b-ok")
    write_harbor_task(tmp_path / "set", "c-gpu", toml_extra="gpus = 2\n")
    (tmp_path / "set" / ".hidden").mkdir()
    assert [p.name for p in find_task_folders(tmp_path / "set")] == ["a-ok", "c-gpu", "b-ok"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tasks = load_tasks("set", tmp_path)
    assert [t.id for t in tasks] == ["a-ok", "group/b-ok"]
    assert any("c-gpu" in str(w.message) and "GPU" in str(w.message) for w in caught)
    task = tasks[0]
    assert task.prompt.endswith(SUBMIT_HINT) and task.data["format"] == "harbor"
    public = task.public()
    assert "harbor" not in public.data and "dir" not in str(public.model_dump())
    assert definition_of(task).dir == (tmp_path / "set" / "a-ok").resolve()


def test_dataset_options_are_checked(tmp_path: Path) -> None:
    write_harbor_task(tmp_path / "set")
    assert load_tasks({"path": "set", "network": "harbor", "tamper": "report"}, tmp_path)
    with pytest.raises(ConfigError, match="known options"):
        load_tasks({"path": "set", "netwrok": "none"}, tmp_path)
    with pytest.raises(ConfigError, match="tamper"):
        load_tasks({"path": "set", "tamper": "ignore"}, tmp_path)
    with pytest.raises(ConfigError, match="no folder"):
        load_tasks("nowhere", tmp_path)


def test_reward_files_as_harbor_writes_them() -> None:
    assert parse_reward_text(b"0.75\n") == {"reward": 0.75}
    assert parse_reward_json(b'{"reward": 0.5, "style": 1, "note": "x", "ok": true}') == {"reward": 0.5, "style": 1.0}
    assert parse_reward_json(b'{"accuracy": 0.25}') == {"accuracy": 0.25, "reward": 0.25}
    for bad in (b"", b"nan", b"one", b"inf"):
        with pytest.raises(ValueError):
            parse_reward_text(bad)
    for bad in (b"[1]", b"{", b'{"a": 1, "b": 2}'):
        with pytest.raises(ValueError):
            parse_reward_json(bad)

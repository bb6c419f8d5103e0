"""Task sets: dataset-backed tasks (parquet, JSONL, an in-memory Dataset, named sets, the Hub
offline) and the task order evaluation needs (seeds 0..n-1 cover every task, --all-tasks)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import CallTool, ConfigError
from openenv_mcp.client.registry import list_envs, load_environment
from openenv_mcp.definitions.tasks import TaskSet
from openenv_mcp.testing import need
from openenv_mcp.types import Task

from support import ROOT, need_boundaries, representative_tasks

datasets = pytest.importorskip("datasets")

ROWS = [
    {"qid": "q1", "question": "2 + 2", "solution": "4", "level": "easy", "topic": "sums"},
    {"qid": "q2", "question": "3 * 7", "solution": "21", "level": "easy", "topic": "products"},
    {"qid": "q3", "question": "12 / 4", "solution": "3", "level": "hard", "topic": "quotients"},
    {"qid": "q4", "question": "9 - 5", "solution": "4", "level": "easy", "topic": "differences"},
]

REWARD = """
def score(ctx):
    said = [r.content[0].text for a, r in ctx.history if not r.is_error]
    return 1.0 if str(ctx.task.answer) in said else 0.0
"""


def _env(folder: Path, tasks_toml: str) -> Path:
    """An env file around the echo tool server whose tasks are ``tasks_toml``; the reward reads the answer."""
    (folder / "reward.py").write_text(REWARD)
    (folder / "env.toml").write_text(f"""[env]
name = "arith"
reward = "reward:score"

{tasks_toml}

[[tool_servers]]
name = "echo"
namespace = ""
object = "openenv_mcp.tool_servers.echo:server"
""")
    return folder / "env.toml"


def test_parquet_dataset_with_a_jinja_prompt_filter_limit_and_a_hidden_answer(tmp_path):
    datasets.Dataset.from_list(ROWS).to_parquet(str(tmp_path / "questions.parquet"))
    env_file = _env(
        tmp_path,
        """[tasks]
dataset = "questions.parquet"
id = "qid"
prompt = "Compute {{ question }} and say the result with the echo tool."
answer = "solution"
filter = "level == 'easy'"
limit = 2
private = ["topic"]""",
    )
    with openenv_mcp.make(env_file) as env:
        assert [t.id for t in env.unwrapped.environment.tasks.tasks] == ["q1", "q2"]
        obs = env.reset(task_id="q2")
        assert obs.task.prompt == "Compute 3 * 7 and say the result with the echo tool."
        assert obs.task.answer is None and obs.task.data == {"question": "3 * 7", "level": "easy"}
        ids = re.compile(r"[0-9a-f]{32}")  # episode ids are random hex, which may well contain "21"
        assert "21" not in ids.sub("<id>", json.dumps(obs.to_json()))
        obs = env.step(CallTool(name="echo", arguments={"text": "21"}))
        assert (obs.reward, obs.done) == (1.0, True)  # the reward read the answer


def test_jsonl_dataset_with_a_format_prompt_and_a_folder_of_splits(tmp_path):
    (tmp_path / "data").mkdir()
    for split, rows in (("train", ROWS[:3]), ("test", ROWS[3:])):
        (tmp_path / "data" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env_file = _env(
        tmp_path,
        """[tasks]
dataset = "data"
id = "qid"
prompt = "Compute {question}."
answer = "solution"
data = ["level"]""",
    )
    environment = load_environment(env_file)
    assert [t.id for t in environment.tasks.tasks] == ["q1", "q2", "q3"]
    assert environment.tasks.tasks[0] == Task(id="q1", prompt="Compute 2 + 2.", data={"level": "easy"}, answer="4")
    test = load_environment(env_file, split="test")  # --split
    assert [t.id for t in test.tasks.tasks] == ["q4"]
    with pytest.raises(ConfigError, match=r"\[tasks\] dataset 'data': .*validation"):
        load_environment(env_file, split="validation")


def test_an_in_memory_dataset_is_mapped_with_the_env_files_columns(tmp_path):
    (tmp_path / "q.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    env_file = _env(
        tmp_path,
        '''[tasks]
dataset = "q.jsonl"
id = "qid"
prompt = "Compute {{ question }}."
answer = "solution"''',
    )
    dataset = datasets.Dataset.from_list(ROWS[1:])
    with openenv_mcp.make(env_file, tasks=dataset) as env:
        assert [t.id for t in env.unwrapped.environment.tasks.tasks] == ["q2", "q3", "q4"]
        obs = env.reset(task_id="q3")
        assert obs.task.prompt == "Compute 12 / 4." and obs.task.answer is None
        assert env.step(CallTool(name="echo", arguments={"text": "3"})).reward == 1.0
    plain = datasets.Dataset.from_list([{"id": "a", "prompt": "say x", "answer": "x", "phrase": "x"}])
    with openenv_mcp.make("echo", tasks=plain) as env:  # default columns: id, prompt, answer, the rest is data
        obs = env.reset(seed=0)
        assert (obs.task.id, obs.task.prompt, obs.task.data, obs.task.answer) == ("a", "say x", {"phrase": "x"}, None)
        assert env.unwrapped.environment.tasks.full(obs.task).answer == "x"


def test_a_dataset_of_tasks_jsonl_rows_loads_as_that_file_does():
    """Rows shaped like tasks.jsonl (id, prompt, data) keep their data as it is: a `data` column used to become
    data.data, and the env's reward failed with KeyError."""
    rows = datasets.Dataset.from_json(str(ROOT / "envs" / "echo" / "tasks.jsonl"))
    with openenv_mcp.make("echo") as env:
        from_file = {t.id: t.data for t in env.unwrapped.environment.tasks.tasks}
    with openenv_mcp.make("echo", tasks=rows) as env:
        assert {t.id: t.data for t in env.unwrapped.environment.tasks.tasks} == from_file
        obs = env.reset(task_id="echo-01")
        assert obs.task.data == {"phrase": "the quick brown fox"}
        assert env.step(CallTool(name="echo", arguments={"text": "the quick brown fox"})).reward == 1.0


def test_named_task_sets_in_one_env_file(tmp_path):
    datasets.Dataset.from_list(ROWS[:3]).to_parquet(str(tmp_path / "train.parquet"))
    (tmp_path / "eval.jsonl").write_text(json.dumps({"id": "e1", "prompt": "say 4", "answer": "4"}) + "\n")
    env_file = _env(
        tmp_path,
        '''[tasks]
id = "qid"
prompt = "Compute {{ question }}."
answer = "solution"
private = ["topic"]

[tasks.train]
dataset = "train.parquet"

[tasks.eval]
file = "eval.jsonl"''',
    )
    train = load_environment(env_file)
    assert [t.id for t in train.tasks.tasks] == ["q1", "q2", "q3"]  # train is the default set
    assert train.tasks.tasks[0].public(train.private_fields).data == {"question": "2 + 2", "level": "easy"}
    assert [t.id for t in load_environment(env_file, tasks="eval").tasks.tasks] == ["e1"]
    with pytest.raises(ConfigError, match=r"no task set 'valid'; sets: train, eval"):
        load_environment(env_file, tasks="valid")
    with pytest.raises(ConfigError, match=r"no task set 'eval'; sets: default"):
        load_environment("echo", tasks="eval")


def test_tasks_private_and_the_older_private_task_fields_both_hide_data_keys(tmp_path):
    (tmp_path / "t.jsonl").write_text(json.dumps({"id": "a", "prompt": "p", "data": {"goal": "g", "k": 1}}) + "\n")
    new = _env(tmp_path, '[tasks]\nfile = "t.jsonl"\nprivate = ["goal"]')
    old = tmp_path / "old"
    old.mkdir()
    (old / "t.jsonl").write_text((tmp_path / "t.jsonl").read_text())
    old_file = _env(old, "")
    old_file.write_text(
        old_file.read_text().replace(
            'reward = "reward:score"', 'reward = "reward:score"\ntasks = "t.jsonl"\nprivate_task_fields = ["goal"]'
        )
    )
    for env_file in (new, old_file):
        with openenv_mcp.make(env_file) as env:
            assert env.reset(seed=0).task.data == {"k": 1}


def test_dataset_errors_are_clear(tmp_path):
    datasets.Dataset.from_list(ROWS).to_parquet(str(tmp_path / "q.parquet"))
    cases = [
        ('dataset = "missing.parquet"', r"\[tasks\] dataset 'missing.parquet': no such file or folder"),
        (
            'dataset = "q.parquet"\nprompt = "query"',
            r"\[tasks\] prompt = 'query' is not a column of the dataset \(columns: qid, question, solution, level, "
            r"topic\)",
        ),
        ('dataset = "q.parquet"\nprompt = "{quest}"', r"prompt template names column\(s\) \['quest'\]"),
        ('dataset = "q.parquet"\nid = "nope"\nprompt = "question"', r"\[tasks\] id = 'nope' is not a column"),
        ('dataset = "q.parquet"\nprompt = "question"\nid = "level"', r"task ids must be unique; repeated: \['easy'\]"),
        ('dataset = "q.parquet"\nprompt = "question"\nfilter = "level == \'none\'"', r"no task left after filter"),
        ('dataset = "q.parquet"\nprompt = "question"\nsplit = "test"', r"is one file, so its only split is 'train'"),
        ('prompt = "question"', r"a \[tasks\] table needs exactly one of `file` \(a JSONL file\) or `dataset`"),
    ]
    for toml, message in cases:
        with pytest.raises(ConfigError, match=message):
            load_environment(_env(tmp_path, "[tasks]\n" + toml))


def test_a_hub_dataset_offline_fails_with_a_clear_message(tmp_path):
    env_file = _env(tmp_path, '[tasks]\ndataset = "openenv-mcp-tests/no-such-dataset"\nprompt = "question"')
    code = (
        "import openenv_mcp\n"
        "from openenv_mcp.client.registry import load_environment\n"
        f"try:\n    load_environment({str(env_file)!r})\n"
        "except openenv_mcp.ConfigError as e:\n    print(e)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(
        "[tasks] dataset 'openenv-mcp-tests/no-such-dataset': the Hub is switched off "
        "here (HF_HUB_OFFLINE/HF_DATASETS_OFFLINE is set) and it is not cached"
    ), proc.stdout
    assert proc.stdout.rstrip().endswith(
        "Point `dataset` at local parquet/JSONL/CSV/Arrow files (relative to the "
        "env folder), or load it once while online"
    )


def test_import_and_jsonl_tasks_do_not_import_datasets():
    code = (
        "import sys, openenv_mcp\n"
        "from openenv_mcp.client.registry import load_environment\n"
        "load_environment('files')\n"
        "print(sorted(m for m in ('datasets', 'pyarrow', 'pandas', 'jinja2') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "[]", proc.stderr


# -- task order ----------------------------------------------------------------------------
@pytest.mark.parametrize("spec", list_envs(), ids=lambda s: s.name)
def test_seeds_0_to_n_minus_1_cover_every_task_of_every_builtin_env(spec):
    tasks = load_environment(spec).tasks
    n = len(tasks)
    assert sorted(tasks.pick(seed)[0].id for seed in range(n)) == sorted(t.id for t in tasks.tasks)
    assert sorted(tasks.pick(seed)[0].id for seed in range(n, 2 * n)) == sorted(t.id for t in tasks.tasks)
    plan = tasks.order(all_tasks=True, repeat=3)
    assert [t for t, _ in plan] == [t.id for t in tasks.tasks for _ in range(3)]
    assert len({s for _, s in plan}) == 3 * n and all(tasks.pick(s)[0].id == t for t, s in plan)


def test_the_old_with_replacement_pick_missed_tasks():
    """Seeds 0..n-1 used to pick random.Random(seed).randrange(n): 19 of 25 files tasks."""
    import random

    files = load_environment("files").tasks
    n = len(files)
    assert len({random.Random(s).randrange(n) for s in range(n)}) < n
    assert len({files.index_for_seed(s) for s in range(n)}) == n


def test_repeat_needs_all_tasks_or_a_pinned_task():
    tasks = TaskSet([Task(id="a", prompt=""), Task(id="b", prompt="")])
    assert tasks.order(2, seed=5) == [(None, 5), (None, 6)]
    assert tasks.order(2, seed=5, repeat=2, task_id="b") == [("b", 5), ("b", 6), ("b", 7), ("b", 8)]
    with pytest.raises(
        ConfigError,
        match=r"repeat \(--repeat\) needs all_tasks \(--all-tasks: K episodes of every "
        r"task\) or one pinned task \(--task\)",
    ):
        tasks.order(2, repeat=2)


@pytest.mark.parametrize("name", [s.name for s in list_envs()])
def test_cli_run_all_tasks_plays_every_task_exactly_once(name):
    if name == "coding":
        need(shutil.which("bwrap") is not None, "coding runs in the sandbox boundary: apt-get install bubblewrap")
    import anyio

    from openenv_mcp.cli.app import run_reference

    spec = next(s for s in list_envs() if s.name == name)
    need_boundaries(spec)
    subset = representative_tasks(spec)
    rows = anyio.run(lambda: run_reference(name, 0, None, progress=False, all_tasks=True, tasks=subset))
    ids = [t.id for t in load_environment(name, tasks=subset).tasks.tasks]
    assert [r["task"] for r in rows] == ids
    assert all(r["done"] for r in rows), [r for r in rows if not r["done"]]


def test_named_sets_inherit_the_top_tables_keys_but_not_its_source():
    from openenv_mcp.definitions.tasks import parse_tasks_value

    sets, default, private = parse_tasks_value(
        {"file": "all.jsonl", "private": ["x"], "eval": {"dataset": "d.parquet"}, "small": {"limit": 2}}
    )
    assert sets["eval"] == {"private": ["x"], "dataset": "d.parquet"}
    assert sets["small"] == {"file": "all.jsonl", "private": ["x"], "limit": 2}
    assert (default, private) == ("default", ["x"]) and sets["default"] == {"file": "all.jsonl", "private": ["x"]}


def test_a_jsonl_files_filter_limit_and_ids_were_silently_ignored(tmp_path):
    rows = [
        {"id": i, "prompt": f"task {i}", "data": {"level": lvl}}
        for i, lvl in zip("abcd", ["easy", "hard"] * 2, strict=True)
    ]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env_file = _env(
        tmp_path,
        """[tasks]
file = "t.jsonl"

[tasks.ci]
file = "t.jsonl"
ids = ["c", "a"]

[tasks.easy]
file = "t.jsonl"
filter = "data.level == 'easy'"
limit = 1

[tasks.typo]
file = "t.jsonl"
ids = ["a", "z"]""",
    )
    assert [t.id for t in load_environment(env_file).tasks.tasks] == ["a", "b", "c", "d"]
    assert [t.id for t in load_environment(env_file, tasks="ci").tasks.tasks] == ["c", "a"]
    assert [t.id for t in load_environment(env_file, tasks="easy").tasks.tasks] == ["a"]
    with pytest.raises(ConfigError, match=r"ids names task\(s\) \['z'\]"):
        load_environment(env_file, tasks="typo")

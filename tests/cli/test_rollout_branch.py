"""``openenv-mcp rollout --branch WHERE:K --policy ...``: a tree per episode in the JSONL file, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_mcp.cli.app import main

TASK = "json-port-and-debug"
SCRIPT = {
    TASK: [
        [
            {"name": "fs_read", "arguments": {"path": "config/app.json"}},
            {
                "name": "fs_edit",
                "arguments": {"path": "config/app.json", "old_text": '"port": 8080', "new_text": '"port": 8081'},
            },
        ],
        [{"name": "fs_list", "arguments": {"path": "."}}] * 2,
    ]
}


def test_rollout_branch_writes_the_tree_root_last_and_a_rerun_skips_it(tmp_path: Path, capsys):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    out = tmp_path / "tree.jsonl"
    argv = ["rollout", "files", "--policy", f"scripted:{script}", "--branch", "1:2", "--task", TASK]
    argv += ["--episodes", "1", "--out", str(out)]
    assert main(argv) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    root = lines[-1]
    assert [(n["parent"], n["step"], n["branch"]) for n in lines] == [
        (root["node"], 1, 0),
        (root["node"], 1, 1),
        (None, 0, 0),
    ]
    assert [n["action_rewards"] for n in lines] == [[0.0, 0.5], [0.0, 0.0], [0.0, 0.5]]
    assert root["model"] == "scripted" and root["key"] == f"seed=0 task={TASK} sample=0"
    assert "wrote 3 nodes of 1 trees" in " ".join(capsys.readouterr().out.split())
    assert main(argv) == 0
    assert len(out.read_text().splitlines()) == 3
    assert "1 trees already in the file were skipped" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("every:0", "must be 1..64, got 0"),
        ("every:65", "must be 1..64, got 65"),
        ("often:2", "WHERE must be every, reward or step numbers"),
        ("every", "takes WHERE:K"),
    ],
)
def test_a_branch_that_is_not_where_k_is_a_usage_error(value, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["rollout", "files", "--policy", "solutions:reference", "--branch", value])
    assert exit_.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "usage: openenv-mcp rollout" in err and message in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "rollout needs --base-url URL and --model NAME"),
        (["--policy", "solutions:right"], "each KIND is reference or wrong"),
        (["--policy", "magic"], "--policy 'magic': give openai"),
        (["--policy", "solutions:reference", "--branch", "every:2", "--n", "2"], "drop --n"),
        (["--policy", "solutions:reference", "--branch", "every:2", "--harness-cmd", "true"], "drop --harness"),
    ],
)
def test_a_rollout_without_something_to_play_or_with_flags_that_cannot_branch_says_what_to_change(
    extra, message, capsys, tmp_path: Path
):
    assert main(["rollout", "files", "--out", str(tmp_path / "t.jsonl"), *extra]) == 2
    assert message in " ".join(capsys.readouterr().err.split())

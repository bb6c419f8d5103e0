"""``openenv-mcp validate``: solutions, reward-hacking probes, pass@k, and the HTML report in Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from openenv_mcp.cli.app import main
from openenv_mcp.rollout import OpenAIPolicy
from openenv_mcp.testing import need
from openenv_mcp.validate import validate
from openenv_mcp.validate.report import html_report

from support import ROOT
from support.browser import BROWSER, CHROMIUM, find_node
from support.scripted_model import ScriptedModel, plans_from_solutions

HACKABLE_REWARD = """
def score(ctx):
    for action, result in ctx.history:
        text = action.arguments.get("text")
        if text == ctx.task.data["phrase"] or text == "*":  # the "*" shortcut is the planted hack
            return 1.0
    return 0.0
"""
HACKABLE_SOLUTIONS = """
def reference(task):
    return [{"name": "echo", "arguments": {"text": task.data["phrase"]}}]

def wrong(task):
    text = task.data["phrase"] if task.id == "t3" else "nope"  # t3's wrong solution is right: a finding
    return [{"name": "echo", "arguments": {"text": text}}]
"""


def hackable_env(folder: Path) -> Path:
    (folder / "reward.py").write_text(HACKABLE_REWARD)
    (folder / "solutions.py").write_text(HACKABLE_SOLUTIONS)
    (folder / "env.toml").write_text("""
[env]
name = "hackable"
max_steps = 20
reward = "reward:score"
solutions = "solutions"
tasks = [{ id = "t1", prompt = "say red", data = { phrase = "red" } },
         { id = "t2", prompt = "say red again", data = { phrase = "red" } },
         { id = "t3", prompt = "say blue", data = { phrase = "blue" } }]
[[tool_servers]]
name = "echo"
namespace = ""
object = "openenv_mcp.tool_servers.echo:server"
""")
    return folder / "env.toml"


def test_validate_names_every_probe_that_scores_and_every_bad_solution(tmp_path):
    report = anyio.run(lambda: validate(str(hackable_env(tmp_path))))
    assert report.findings() == [
        "wrong solution of task 't3' reaches success (score 1)",
        "probe 'degenerate' scores 1 on task 't1' (at step 3: echo {\"text\": \"*\"})",
        "probe 'degenerate' scores 1 on task 't2' (at step 3: echo {\"text\": \"*\"})",
        "probe 'replay' scores 1 on task 't2' (at step 1: echo {\"text\": \"red\"})",
        "probe 'degenerate' scores 1 on task 't3' (at step 3: echo {\"text\": \"*\"})",
    ]
    data = report.to_json()
    assert data["ok"] is False and data["summary"] == {
        "tasks": 3,
        "reference_failures": 0,
        "wrong_successes": 1,
        "scoring_probes": 4,
        "steps_with_reward_errors": 0,
    }
    checks = {(c["task_id"], c["check"]) for c in data["checks"]}
    assert checks == {
        (t, c) for t in ("t1", "t2", "t3") for c in ("reference", "wrong", "nothing", "random", "degenerate")
    } | {("t2", "replay"), ("t3", "replay")}


def test_a_failing_reference_names_the_goal_and_the_guard_the_reward_reported(tmp_path):
    """A reference that does not reach success says why: what the reward's info said at the end."""
    env = hackable_env(tmp_path)
    (tmp_path / "reward.py").write_text(
        "from openenv_mcp.types import Score\n"
        "def score(ctx):\n"
        "    return Score(score=0.5, info={'unmet': ['goal 2: notes.txt (equals)'], 'broken': ['unchanged .env']})\n"
    )
    report = anyio.run(lambda: validate(str(env), task_ids=["t1"], probes=()))
    assert report.findings()[0] == (
        "reference solution of task 't1' does not reach success (score 0.5; the reward said: "
        '{"broken": ["unchanged .env"], "unmet": ["goal 2: notes.txt (equals)"]})'
    )
    assert report.to_json()["checks"][0]["info"] == {
        "unmet": ["goal 2: notes.txt (equals)"],
        "broken": ["unchanged .env"],
    }


def test_the_html_report_colours_probes_at_zero_green_keeps_labels_whole_and_names_keys_for_people():
    from openenv_mcp.validate import ValidationReport
    from openenv_mcp.validate.probes import CheckResult
    from openenv_mcp.validate.report import BAD, GOOD

    long_id = "restore-the-incremental-backup-of-etc"
    checks = [
        CheckResult(long_id, "reference", score=1.0, final_score=1.0, success=True),
        CheckResult(long_id, "nothing"),
        CheckResult(long_id, "degenerate"),
        CheckResult(long_id, "random", score=0.5),
    ]
    page = html_report(ValidationReport(env="demo", tasks=[long_id], checks=checks))
    probes = page.split('aria-label="probe score histogram"')[1].split("</svg>")[0]
    fills = [part.split('"')[0] for part in probes.split('fill="')[1:]]
    assert fills[0] == GOOD and set(fills[1:]) == {BAD}  # the two probes at 0: the good bar
    assert "<title>0: 2</title>" in probes and "<title>0.5: 1</title>" in probes
    assert f'class="a">{long_id}</text>' in page  # the whole id under its bar, not its first 14 characters
    summary = page.split("<p class='summary'>")[1].split("</p>")[0]
    assert "<b>probes that score</b> 1" in summary and "_" not in summary


def test_validate_passes_on_echo_and_the_cli_exit_code_says_so(tmp_path, capsys):
    assert main(["validate", "echo", "--json", str(tmp_path / "v.json")]) == 0
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["ok"] is True and data["findings"] == [] and data["summary"]["tasks"] == 8
    assert "echo: every check passed" in capsys.readouterr().out
    assert main(["validate", str(hackable_env(tmp_path)), "--probes", "nothing,random"]) == 1  # t3's wrong solution


# The built-in environments: every check on a few tasks each (the full runs, and what they found, are in each
# environment's README; `openenv-mcp validate ENV` re-runs them).
@pytest.mark.parametrize(
    "env, tasks",
    [
        ("files", ["rename-notes", "count-csv-rows", "collect-emails"]),
        ("sql", None),
        ("coding", None),
    ],
)
def test_validate_finds_nothing_on_the_built_in_environments(env, tasks):
    if env == "coding":
        need(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    from openenv_mcp.client.registry import load_environment

    ids = tasks or [t.id for t in load_environment(env).tasks.tasks][:3]
    report = anyio.run(lambda: validate(env, task_ids=ids))
    assert report.findings() == []
    assert len([c for c in report.checks if c.check == "reference"]) == len(ids)


def _variant_plans(environment, ids):
    """Per prompt: always right (too easy), always wrong (too hard), or right every other time (variance)."""
    ref = plans_from_solutions(environment, "reference")
    wrong = plans_from_solutions(environment, "wrong")
    tasks = {t.id: t.prompt for t in environment.tasks.tasks}
    easy, hard, mixed = (tasks[i] for i in ids)
    return {easy: [ref[easy]], hard: [wrong[hard]], mixed: [ref[mixed], wrong[mixed]]}


def test_rollouts_give_pass_at_k_variance_share_and_difficulty_flags(tmp_path):
    from openenv_mcp.client.registry import load_environment

    ids = ["echo-00", "echo-01", "echo-02"]
    with ScriptedModel({}, variants=_variant_plans(load_environment("echo"), ids)) as model:
        code = main(
            [
                "validate",
                "echo",
                "--base-url",
                model.url,
                "--model",
                "scripted",
                "-k",
                "4",
                "--task",
                "echo-00",
                "--task",
                "echo-01",
                "--task",
                "echo-02",
                "--probes",
                "",
                "--json",
                str(tmp_path / "v.json"),
                "--html",
                str(tmp_path / "v.html"),
            ]
        )
    data = json.loads((tmp_path / "v.json").read_text())
    rows = {r["task_id"]: r for r in data["rollouts"]}
    assert [rows[i]["rewards"] for i in ids] == [[1.0] * 4, [0.0] * 4, [1.0, 0.0, 1.0, 0.0]]
    assert [rows[i]["pass@1"] for i in ids] == [1.0, 0.0, 0.5] and [rows[i]["pass@4"] for i in ids] == [1.0, 0.0, 1.0]
    assert [rows[i]["reward_variance"] for i in ids] == [0.0, 0.0, 0.25]
    assert [rows[i]["flag"] for i in ids] == ["too_easy", "too_hard", None]
    summary = data["summary"]
    assert summary["variance_share"] == pytest.approx(1 / 3) and summary["pass@1"] == pytest.approx(0.5)
    assert (summary["too_easy"], summary["too_hard"], summary["k"]) == (["echo-00"], ["echo-01"], 4)
    assert data["findings"] == [
        "task 'echo-00' is too easy for scripted (pass@1 1.00, reward mean 1.00)",
        "task 'echo-01' is too hard for scripted (pass@1 0.00, reward mean 0.00)",
    ]
    assert code == 1
    page = (tmp_path / "v.html").read_text()
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


@pytest.mark.browser
def test_the_html_report_renders_in_chromium_with_its_plots(tmp_path):
    node = find_node()
    need(node is not None, "node >= 20 is needed to drive Chromium (playwright-core)")
    need(CHROMIUM.exists(), f"Chromium not found at {CHROMIUM}: apt-get install chromium")
    need(
        (BROWSER / "node_modules" / "playwright-core").is_dir(),
        "playwright-core is not installed: cd tests/browser && npm ci",
    )
    from openenv_mcp.client.registry import load_environment

    ids = ["echo-00", "echo-01", "echo-02", "echo-03"]
    variants = _variant_plans(load_environment("echo"), ids[:3])
    ref = plans_from_solutions(load_environment("echo"), "reference")
    wrong = plans_from_solutions(load_environment("echo"), "wrong")
    prompt = load_environment("echo").tasks.tasks[3].prompt
    variants[prompt] = [ref[prompt], ref[prompt], ref[prompt], wrong[prompt]]

    async def run():
        policy = OpenAIPolicy(model.url, "scripted")
        try:
            return await validate("echo", policy=policy, k=4, task_ids=ids)
        finally:
            await policy.aclose()

    with ScriptedModel({}, variants=variants) as model:
        report = anyio.run(run)
    (tmp_path / "report.html").write_text(html_report(report))
    shot = ROOT / "docs" / "validate.png"
    proc = subprocess.run(
        [node, str(BROWSER / "report.mjs"), str(tmp_path / "report.html"), str(shot)],
        cwd=BROWSER,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ok"], out.get("error")
    assert out["console_errors"] == [] and all(u.startswith("file://") for u in out["requests"])
    assert out["title"] == "validate: echo" and out["verdict"] == "2 finding(s)"
    assert [p["label"] for p in out["plots"]] == [
        "pass@1 per task",
        "reward histogram (all rollouts)",
        "difficulty: tasks by pass@1",
    ]
    assert [p["bars"] for p in out["plots"]] == [4, 10, 5] and all(p["height"] > 100 for p in out["plots"])
    assert out["rows"] == 5 and shot.stat().st_size > 10_000


def test_a_wrong_answer_that_ends_the_episode_is_not_counted_as_success(tmp_path):
    """Like `sql`'s submit: any answer ends the episode (done), only the right one scores."""
    folder = tmp_path / "env"
    folder.mkdir()
    hackable_env(folder)
    (folder / "reward.py").write_text("""
from openenv_mcp.types import Score

def score(ctx):
    if not ctx.history:
        return 0.0
    right = ctx.history[-1][0].arguments.get("text") == ctx.task.data["phrase"]
    return Score(score=1.0 if right else 0.0, done=True)
""")
    report = anyio.run(lambda: validate(str(folder / "env.toml"), task_ids=["t1"], probes=()))
    wrong = next(c for c in report.checks if c.check == "wrong")
    assert (wrong.done, wrong.success, wrong.score) == (True, False, 0.0)
    assert report.findings() == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--base-url", "http://127.0.0.1:9/v1"], "error: give both --base-url and --model for rollouts (or neither)"),
        (
            ["--probes", "bogus"],
            "error: unknown probe(s) ['bogus']; known: nothing, random, degenerate, replay, hack, hack:NAME",
        ),
        (
            ["--task", "nope"],
            "error: unknown task id(s) ['nope']; known: echo-00, echo-01, echo-02, echo-03, echo-04, "
            "echo-05, echo-06, echo-07...",
        ),
    ],
)
def test_validate_refuses_bad_options_with_a_clear_message(argv, message, capsys):
    assert main(["validate", "echo", *argv]) == 2
    assert " ".join(capsys.readouterr().err.split()) == message

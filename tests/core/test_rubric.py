"""Rubric rewards: weighted criteria (Python, command, verifier, LLM judge, reward service)."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

import openenv_mcp
from openenv_mcp import ConfigError

from support.containment import FIXTURE, PYTHON, world_dir
from support.scripted_model import ScriptedModel, call

ECHO = 'object = "openenv_mcp.tool_servers.echo:server"'
CRITERIA = """
def said_it(ctx):
    return 1.0 if any(a.arguments.get("text") == ctx.task.data["phrase"] for a, _ in ctx.history) else 0.0

def short(ctx):
    return 1.0 if ctx.history and len(ctx.history[-1][0].arguments.get("text", "")) < 20 else 0.0

def broken(ctx):
    if ctx.history and ctx.history[-1][0].arguments.get("text") == "boom":
        raise RuntimeError("the grader crashed")
    return 0.0
"""


def write_env(folder: Path, criteria: str, *, answer: str = "42", extra: str = "") -> Path:
    (folder / "crit.py").write_text(CRITERIA)
    (folder / "env.toml").write_text(f"""
[env]
name = "rubric"
max_steps = 6
tasks = [{{ id = "t1", prompt = "say hello", data = {{ phrase = "hello" }}, answer = "{answer}" }},
         {{ id = "t2", prompt = "say bye", data = {{ phrase = "bye" }}, answer = "{answer}" }}]
{extra}
[[tool_servers]]
name = "echo"
namespace = ""
{ECHO}

[reward]
{criteria}
""")
    return folder / "env.toml"


def say(env, text):
    return env.step({"type": "call_tool", "name": "echo", "arguments": {"text": text}})


def test_rubric_is_the_weighted_mean_of_its_criteria_each_in_info(tmp_path):
    path = write_env(
        tmp_path,
        """
[[reward.criteria]]
name = "said_it"
weight = 3
python = "crit:said_it"
[[reward.criteria]]
name = "short"
python = "crit:short"
""",
    )
    with openenv_mcp.make(str(path)) as env:
        obs = env.reset(task_id="t1")
        assert obs.info["score"] == 0.0
        obs = say(env, "a long sentence that is not the phrase")
        assert obs.info["criteria"] == {"said_it": 0.0, "short": 0.0} and obs.reward == 0.0
        obs = say(env, "x")
        assert obs.info["criteria"] == {"said_it": 0.0, "short": 1.0} and obs.reward == 0.25
        obs = say(env, "hello")
        assert obs.info["criteria"] == {"said_it": 1.0, "short": 1.0}
        assert (obs.info["score"], obs.done) == (1.0, True)


def test_a_failing_criterion_is_a_named_reward_error_not_a_silent_zero(tmp_path):
    path = write_env(
        tmp_path,
        """
[[reward.criteria]]
name = "short"
python = "crit:short"
[[reward.criteria]]
name = "grader"
python = "crit:broken"
""",
    )
    with openenv_mcp.make(str(path)) as env:
        env.reset(task_id="t1")
        assert say(env, "x").info["score"] == 0.5
        obs = say(env, "boom")
        assert obs.reward == 0.0 and obs.info["score"] == 0.5 and "criteria" not in obs.info
        assert obs.info["reward_error"] == (
            "the reward function raised CriterionError: criterion 'grader' (python) failed: RuntimeError: the grader "
            "crashed; this step's reward is 0.0 (the score is unchanged) and the episode goes on"
        )
        assert env.state().reward_errors == 1


@pytest.mark.parametrize(
    "table, message",
    [
        (
            "[[reward.criteria]]\nname = 'a'\npython = 'crit:short'\nverifier = 'exact'",
            "rubric: invalid [reward] table: Value error, criterion 'a' needs exactly one of python, command, verifier, "
            "judge, service (got python, verifier) at criteria.0",
        ),
        (
            "[[reward.criteria]]\nname = 'a'\npython = 'crit:short'\n[[reward.criteria]]\nname = 'a'\npython = 'crit:short'",
            "rubric: invalid [reward] table: Value error, criterion names must be unique; repeated: ['a']",
        ),
        (
            "[[reward.criteria]]\nname = 'a'\njudge = { model = 'm' }",
            "rubric: criterion 'a': invalid judge table: Field required at base_url",
        ),
        (
            "[[reward.criteria]]\nname = 'a'\nverifier = 'exact'\ncandidate = 'whatever'",
            "rubric: criterion 'a': candidate must be last_arguments, last_result or argument:NAME, got 'whatever'",
        ),
    ],
)
def test_an_invalid_rubric_is_refused_at_load_with_a_clear_message(tmp_path, table, message):
    with pytest.raises(ConfigError) as info:
        openenv_mcp.make(str(write_env(tmp_path, table)))
    assert str(info.value) == message


def test_verifiers_compare_the_grader_only_answer_with_the_agents_answer(tmp_path):
    path = write_env(
        tmp_path,
        """
[[reward.criteria]]
name = "exact"
verifier = "exact"
[[reward.criteria]]
name = "math"
verifier = "math"
candidate = "argument:text"
""",
        answer="\\\\frac{1}{2}",
    )
    with openenv_mcp.make(str(path)) as env:
        obs = env.reset(task_id="t1")
        assert obs.task.answer is None and "frac" not in json.dumps(obs.task.model_dump())  # grader-only
        assert say(env, "0.5").info["criteria"] == {"exact": 0.0, "math": 1.0}
        assert say(env, "1/3").info["criteria"] == {"exact": 0.0, "math": 0.0}
        obs = say(env, "\\frac{1}{2}")
        assert obs.info["criteria"] == {"exact": 1.0, "math": 1.0} and obs.done


def test_a_command_criterion_runs_inside_the_boundary():
    with world_dir() as folder:
        (folder / "check.py").write_text("import os\nprint(1 if os.path.exists('done.txt') else 0)\n")
        (folder / "check.py").chmod(0o644)
        (folder / "crit.py").write_text(CRITERIA)
        (folder / "env.toml").write_text(f"""
[env]
name = "rubric-cmd"
tasks = [{{ id = "t", prompt = "make done.txt", data = {{ phrase = "p" }} }}]
[[tool_servers]]
name = "h"
namespace = ""
command = ["{PYTHON}", "{FIXTURE}"]
isolation = "process"
[reward]
[[reward.criteria]]
name = "file"
weight = 2
command = ["{PYTHON}", "{{env_dir}}/check.py"]
timeout = 20
[[reward.criteria]]
name = "never"
python = "crit:broken"
""")
        with openenv_mcp.make(str(folder / "env.toml")) as env:
            env.reset(task_id="t")
            obs = env.step({"type": "call_tool", "name": "write_file", "arguments": {"path": "done.txt", "text": "x"}})
            assert obs.info["criteria"] == {"file": 1.0, "never": 0.0}
            assert obs.info["score"] == pytest.approx(2 / 3)


# -- the LLM judge ------------------------------------------------------------------
JUDGE_TABLE = """
[[reward.criteria]]
name = "said_it"
python = "crit:said_it"
[[reward.criteria]]
name = "judge"
judge = {{ base_url = "{url}", model = "judge-1", timeout = 5, retries = {retries}, max_chars = 500 }}
"""


def nonce_of(prompt: str) -> str:
    return re.search(r"<<<TRAJECTORY ([0-9a-f]+)>>>", prompt).group(1)


def fair_judge(prompt: str) -> str:
    """Scores 1 when the trajectory says the phrase of the task."""
    phrase = re.search(r"say (\w+)", prompt).group(1)
    fenced = prompt.split(f"<<<TRAJECTORY {nonce_of(prompt)}>>>")[1]
    return json.dumps(
        {"nonce": nonce_of(prompt), "score": 1 if f'"text": "{phrase}"' in fenced else 0, "reason": "checked"}
    )


def test_the_judge_scores_through_an_openai_compatible_server_and_caches_its_verdicts(tmp_path):
    with ScriptedModel({}, judge=fair_judge) as judge:
        path = write_env(tmp_path, JUDGE_TABLE.format(url=judge.url, retries=0))
        with openenv_mcp.make(str(path)) as env:
            for _ in range(2):  # the same trajectory twice: the second is a cache hit
                env.reset(task_id="t1")
                assert say(env, "nope").info["criteria"] == {"said_it": 0.0, "judge": 0.0}
                obs = say(env, "hello")
                assert obs.info["criteria"] == {"said_it": 1.0, "judge": 1.0} and obs.done
                assert obs.info["criteria_info"] == {"judge": {"cached": _ > 0}}
            assert len(judge.judge_prompts) == 2 + 0  # two distinct trajectories judged once each
            body = judge.requests[0]
            assert body["temperature"] == 0 and body["model"] == "judge-1"
            assert (
                "say hello" in judge.judge_prompts[0] and "42" in judge.judge_prompts[0]
            )  # the answer is for the judge


@pytest.mark.parametrize(
    "reply, error",
    [
        (500, "criterion 'judge': the judge at {url} (model judge-1) failed after 1 retries: InternalServerError: "),
        (
            "I think this deserves a 1.",
            "criterion 'judge': the judge's reply is not one JSON object: 'I think this deserves a 1.'",
        ),
        ('{"nonce": "NONCE", "score": 7}', "criterion 'judge': the judge's score must be a number from 0 to 1, got 7"),
    ],
)
def test_a_judge_failure_is_reported_as_such_never_a_silent_zero(tmp_path, reply, error):
    answer = (lambda p: reply.replace("NONCE", nonce_of(p))) if isinstance(reply, str) else (lambda p: reply)
    with ScriptedModel({}, judge=answer) as judge:
        path = write_env(tmp_path, JUDGE_TABLE.format(url=judge.url, retries=1))
        with openenv_mcp.make(str(path)) as env:
            env.reset(task_id="t1")
            obs = say(env, "hello")
            assert obs.reward == 0.0 and "criteria" not in obs.info
            assert obs.info["reward_error"].startswith(
                "the reward function raised CriterionError: " + error.format(url=judge.url)
            )
            assert len(judge.judge_prompts) == (2 if reply == 500 else 1)  # 5xx retried, bad verdicts not cached
            say(env, "hello")
            assert len(judge.judge_prompts) == (4 if reply == 500 else 2)


# -- the reward service ---------------------------------------------------------------
class RewardServer:
    """A local reward service (contract openenv-mcp.reward/1) whose answers a test scripts."""

    def __init__(self, answer):
        self.answer = answer
        self.bodies: list[dict] = []

        async def grade(request: Request):
            body = await request.json()
            self.bodies.append(body)
            status, payload = self.answer(body, len(self.bodies))
            if isinstance(payload, str):
                return PlainTextResponse(payload, status_code=status)
            return JSONResponse(payload, status_code=status)

        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/grade"
        self._server = uvicorn.Server(
            uvicorn.Config(
                Starlette(routes=[Route("/grade", grade, methods=["POST"])]), log_level="warning", lifespan="off"
            )
        )
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def __enter__(self):
        self._thread.start()
        while not self._server.started:
            time.sleep(0.005)
        return self

    def __exit__(self, *exc):
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()


SERVICE_TABLE = """
[[reward.criteria]]
name = "service"
service = {{ url = "{url}", timeout = 5, retries = 1, max_chars = 100 }}
"""


def test_a_reward_service_grades_over_http_with_a_documented_contract(tmp_path):
    def grade(body, n):
        said = any(s["arguments"].get("text") == body["task"]["data"]["phrase"] for s in body["trajectory"])
        return (503, "busy") if n == 2 else (200, {"score": 1.0 if said else 0.25, "info": {"n": n}})

    with RewardServer(grade) as service:
        with openenv_mcp.make(str(write_env(tmp_path, SERVICE_TABLE.format(url=service.url)))) as env:
            env.reset(task_id="t2")
            obs = say(env, "x" * 5000)  # a huge output is cut before it is sent
            assert obs.info["criteria"] == {"service": 0.25}
            assert obs.info["criteria_info"] == {"service": {"n": 3}}  # the 503 was retried
            obs = say(env, "bye")
            assert obs.info["criteria"] == {"service": 1.0} and obs.done
        first = service.bodies[0]
        assert first["contract"] == "openenv-mcp.reward/1" and first["criterion"] == "service"
        assert first["task"] == {"id": "t2", "prompt": "say bye", "data": {"phrase": "bye"}, "answer": "42"}
        assert service.bodies[0]["step"] == 0 and service.bodies[0]["trajectory"] == []
        sent = service.bodies[1]["trajectory"][0]
        assert sent["name"] == "echo" and sent["is_error"] is False
        assert len(sent["result"]) < 200 and "characters cut" in sent["result"]


@pytest.mark.parametrize(
    "status, payload, error",
    [
        (404, "no such route", "criterion 'service': the reward service at {url} answered HTTP 404: no such route"),
        (
            200,
            {"verdict": "good"},
            "criterion 'service': the reward service at {url} answered '{{\"verdict\":\"good\"}}', "
            'expected {{"score": <number>, "info": {{...}}}}',
        ),
        (500, "down", "criterion 'service': the reward service at {url} failed after 2 attempts: HTTP 500: down"),
    ],
)
def test_a_reward_service_failure_is_a_named_reward_error(tmp_path, status, payload, error):
    with RewardServer(lambda body, n: (200, {"score": 0}) if n == 1 else (status, payload)) as service:
        with openenv_mcp.make(str(write_env(tmp_path, SERVICE_TABLE.format(url=service.url)))) as env:
            env.reset(task_id="t1")
            obs = say(env, "hello")
            assert obs.info["reward_error"] == (
                "the reward function raised CriterionError: "
                + error.format(url=service.url)
                + "; this step's reward is 0.0 "
                "(the score is unchanged) and the episode goes on"
            )


def test_an_unreachable_reward_service_is_a_named_reward_error(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/grade"
    sock.close()
    with pytest.raises(openenv_mcp.OpenEnvError) as info:  # the initial score at reset fails: reset says so
        with openenv_mcp.make(str(write_env(tmp_path, SERVICE_TABLE.format(url=url)))) as env:
            env.reset(task_id="t1")
    assert str(info.value).startswith(
        f"criterion 'service': the reward service at {url} failed after 2 attempts: ConnectError: "
    )


def test_rollout_lines_carry_each_criterions_score(tmp_path):
    import anyio

    from openenv_mcp.rollout import OpenAIPolicy, rollout

    path = write_env(
        tmp_path,
        """
[[reward.criteria]]
name = "said_it"
python = "crit:said_it"
[[reward.criteria]]
name = "short"
python = "crit:short"
""",
    )
    plans = {
        "say hello": [[call("echo", {"text": "a very long way of not saying it"})], [call("echo", {"text": "hello"})]]
    }
    with ScriptedModel(plans) as model:

        async def main():
            policy = OpenAIPolicy(model.url, "m")
            try:
                return await rollout(str(path), policy, episodes=1, task_id="t1")
            finally:
                await policy.aclose()

        [traj] = anyio.run(main)
    line = traj.to_json()
    assert [s["criteria"] for s in line["steps"]] == [{"said_it": 0.0, "short": 0.0}, {"said_it": 1.0, "short": 1.0}]
    assert line["reward"] == 1.0


def test_a_criterion_with_on_tools_rescores_only_after_those_tools_and_keeps_its_last_score(tmp_path):
    (tmp_path / "count.py").write_text(
        "CALLS = []\ndef said(ctx):\n    CALLS.append(ctx.step)\n"
        "    return 1.0 if any(a.arguments.get('text') == 'hello' for a, _ in ctx.history) else 0.0\n"
    )
    path = write_env(
        tmp_path,
        """
[[reward.criteria]]
name = "said"
python = "count:said"
on_tools = ["echo"]
[[reward.criteria]]
name = "short"
python = "crit:short"
on_tools = ["no_such_tool"]
""",
    )
    with openenv_mcp.make(str(path)) as env:
        env.reset(task_id="t1")
        obs = say(env, "x")  # short would say 1, but it is never re-scored
        assert obs.info["criteria"] == {"said": 0.0, "short": 0.0}
        obs = env.step({"type": "call_tool", "name": "no_such_tool", "arguments": {}})  # an error result
        assert obs.info["criteria"] == {"said": 0.0, "short": 1.0}  # short re-scored (no text: short)
        obs = say(env, "hello")
        assert obs.info["criteria"] == {"said": 1.0, "short": 1.0}
        env.reset(task_id="t1")  # a new episode does not inherit the last one's kept scores
        assert say(env, "y").info["criteria"] == {"said": 0.0, "short": 0.0}
    import sys

    calls = next(m for k, m in sys.modules.items() if k.endswith(".count")).CALLS
    assert calls == [1, 3, 1]  # only after echo calls (never at reset: no tool was called)

"""The hostile agent against a command reward: the command runs where agent code runs (same uid,
same PID namespace for the ``process`` boundary), so code the agent leaves running in the
background reads the command's environment from ``/proc``. The grader-only task fields must
not be in it."""

from __future__ import annotations

import json
import time

import openenv_mcp

from support.containment import DROPS_UID, PYTHON, world_dir

SERVER = __import__("pathlib").Path(__file__).resolve().parent.parent / "fixtures" / "exec_server.py"
ANSWER = "answer-7f3e-not-for-agents"
GOAL = "goal-91c2-not-for-agents"

# Scans every process it may read for the reward command's task variable, into the workspace.
WATCHER = r"""
import os, time
end = time.time() + 20
while time.time() < end:
    for pid in os.listdir('/proc'):
        try:
            env = open('/proc/%s/environ' % pid, 'rb').read()
        except OSError:
            continue
        for item in env.split(b'\0'):
            if item.startswith(b'OPENENV_TASK_JSON='):
                with open('stolen.txt', 'ab') as f:
                    f.write(item + b'\n')
    time.sleep(0.002)
"""


def test_background_code_reading_the_reward_commands_environment_never_sees_the_answer():
    with world_dir() as folder:
        (folder / "watch.py").write_text(WATCHER)
        (folder / "env.toml").write_text(f"""
[env]
name = "graded-by-command"
max_steps = 10
reward = {{ command = ["sh", "-c", "sleep 0.5; echo 0"], timeout = 20 }}

[tasks]
private = ["goal"]

[tasks.all]
file = "tasks.jsonl"

[[tool_servers]]
name = "x"
namespace = ""
command = ["{PYTHON}", "{SERVER}"]
isolation = "process"
""")
        (folder / "tasks.jsonl").write_text(
            json.dumps({"id": "t", "prompt": "do the thing", "answer": ANSWER, "data": {"goal": GOAL, "hint": "h"}})
            + "\n"
        )
        with openenv_mcp.make(str(folder / "env.toml")) as env:
            env.reset(seed=0)
            who = json.loads(env.step({"type": "call_tool", "name": "whoami", "arguments": {}}).result.content[0].text)
            assert DROPS_UID is False or who["uid"] != 0  # the agent's code is not root
            obs = env.step(
                {
                    "type": "call_tool",
                    "name": "sh",
                    "arguments": {
                        "command": f"cp {folder}/watch.py . && (setsid {PYTHON} watch.py >/dev/null 2>&1 &) ; echo started"
                    },
                }
            )
            assert obs.result.content[0].text.strip() == "started"
            time.sleep(0.2)
            obs = env.step({"type": "call_tool", "name": "sh", "arguments": {"command": "cat stolen.txt"}})
            stolen = obs.result.content[0].text
            assert "OPENENV_TASK_JSON=" in stolen  # the attack reached the command's environment ...
            assert ANSWER not in stolen and GOAL not in stolen  # ... and found only the public task
            assert '"hint":"h"' in stolen.replace(" ", "")
            assert obs.reward == 0.0 and env.state().cumulative_reward == 0.0
            assert not env.step({"type": "call_tool", "name": "whoami", "arguments": {}}).result.is_error

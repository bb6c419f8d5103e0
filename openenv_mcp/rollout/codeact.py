"""``rollout --action-style codeact``: the model writes Python, each code block is one ``RunCode``.

The system prompt lists the episode's tools as Python stubs (the very
signatures and docstrings the interpreter's ``tools`` module has). Each
assistant turn's fenced code blocks run in order, one :class:`RunCode` each;
the observation text goes back as the next user message. A turn without a code
block ends the episode (``stop_reason`` ``no_code``). Each trajectory step
records ``code`` and the run's inner ``calls`` (name, arguments, result, reward).
"""

from __future__ import annotations

import re
import time
from typing import Any

from mcp.types import Tool

from openenv_mcp.isolation.codeact.coderunner import make_function
from openenv_mcp.rollout.messages import normalize_message, result_text
from openenv_mcp.types import Observation, RunCode

__all__ = ["CODEACT_SYSTEM_PROMPT", "code_blocks", "stubs", "play_codeact_turns"]

CODEACT_SYSTEM_PROMPT = (
    "You are an agent working in an environment by writing Python. Each of your replies may contain "
    "```python code blocks; they run in order in a persistent interpreter (variables persist), and you "
    "see their output, the value of a final expression and any exception. The environment's tools are "
    "Python functions there, ready to call (also `from tools import ...`); a failing tool raises ToolError. When the "
    "task is done, answer without a code block.\n\nThe tools:\n\n"
)

_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def stubs(tools: list[Tool]) -> str:
    """Python stubs of the tools: ``def name(signature):`` and the docstring, as the interpreter has them."""
    out = []
    for tool in tools:
        fn = make_function(tool.model_dump(mode="json", by_alias=True, include={"name", "description", "input_schema"}))
        doc = "\n".join(("    " + line).rstrip() for line in (fn.__doc__ or "").splitlines())
        out.append(f'def {fn.__name__}{fn.__signature__}:\n    """\n{doc}\n    """')
    return "\n\n".join(out)


def code_blocks(text: str | None) -> list[str]:
    """The fenced code blocks of a message (```python, ```py or bare ```)."""
    return [block for block in _BLOCK.findall(text or "") if block.strip()]


async def play_codeact_turns(
    env: Any, policy_ask: Any, traj: Any, messages: list[dict[str, Any]], max_steps: int
) -> float:
    """The turn loop of one CodeAct episode (``traj`` and ``messages`` are filled in); returns env seconds."""
    env_s = 0.0
    steps = traj.steps
    while traj.stop_reason == "running":
        if len(steps) >= max_steps:
            traj.stop_reason = "max_steps"
            break
        turn = await policy_ask([dict(m) for m in messages], [])
        traj.turns += 1
        for key, value in (turn.usage or {}).items():
            if isinstance(value, int):
                traj.usage[key] = traj.usage.get(key, 0) + value
        message, _ = normalize_message(turn.message, traj.turns)
        messages.append(message)
        blocks = code_blocks(message.get("content"))
        if not blocks:
            traj.stop_reason = "no_code"
            break
        replies = []
        for code in blocks:
            if traj.stop_reason != "running" or len(steps) >= max_steps:
                break
            e0 = time.perf_counter()
            obs: Observation = await env.step(RunCode(code=code))
            assert obs.result is not None  # a RunCode step's observation always carries its result
            elapsed = time.perf_counter() - e0
            env_s += elapsed
            run = obs.result.structured_content if obs.result is not None else {}
            steps.append(
                {
                    "index": len(steps),
                    "turn": traj.turns,
                    "name": "run_code",
                    "code": code,
                    "calls": run.get("calls", []),
                    "arguments": {"code": code},
                    "result": obs.result.model_dump(mode="json", by_alias=True, exclude_none=True),
                    "is_error": bool(obs.result.is_error),
                    "reward": obs.reward,
                    "done": obs.done,
                    "truncated": obs.truncated,
                    "elapsed_ms": round(elapsed * 1000, 3),
                }
            )
            traj.reward += obs.reward
            traj.done, traj.truncated = obs.done, obs.truncated
            if obs.done:
                traj.stop_reason = "done"
            elif obs.truncated:
                traj.stop_reason = "truncated"
            replies.append(result_text(obs.result))
        messages.append({"role": "user", "content": "\n\n".join(replies)})
    return env_s

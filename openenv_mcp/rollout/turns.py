"""The tool-calling turn loop of an episode: ask the policy, run its tool calls, repeat.

:func:`play_turns` goes on from whatever a trajectory already holds, so the same loop plays an
episode from its reset (:func:`~openenv_mcp.rollout.runner.play_episode`) and a fork of one from
the step it was forked at (:mod:`openenv_mcp.rollout.branch`). ``before_action`` is called
between two steps, just before a tool call is sent to the environment.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult

from openenv_mcp.errors import PolicyError
from openenv_mcp.rollout.messages import error_result, normalize_message, parse_arguments, result_text
from openenv_mcp.rollout.policy import Policy, Turn
from openenv_mcp.rollout.trajectory import Trajectory
from openenv_mcp.types import CallTool

__all__ = ["BeforeAction", "Clock", "Pause", "ask_policy", "executed", "play_turns"]


async def ask_policy(policy: Policy, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
    """The policy's next turn (a sync or async policy; a dict answer becomes a :class:`Turn`)."""
    out = policy(messages, tools)
    if inspect.isawaitable(out):
        out = await out
    if isinstance(out, Turn):
        return out
    if isinstance(out, dict):
        return Turn(message=out)
    raise PolicyError(f"a policy must return an assistant message dict or a Turn, got {type(out).__name__}")


@dataclass
class Clock:
    """Seconds spent waiting for the policy and for the environment."""

    model_s: float = 0.0
    env_s: float = 0.0


@dataclass
class Pause:
    """Where the loop stands just before it sends a tool call: what ``before_action`` gets."""

    actions: int
    """Tool calls sent to the environment so far (the episode's step count since reset)."""
    messages: list[dict[str, Any]]
    """The conversation as a continuation from here sees it: the current assistant message keeps
    only the tool calls already answered (each with its tool message), not this one nor later ones;
    when this is its first call, the message is left out (the continuation plays that turn anew)."""
    turns: int
    """Assistant turns in ``messages``."""
    message_index: int
    """Where the assistant message being played is in the conversation (its ``completions`` record,
    if any, covers calls a continuation from here does not make)."""
    call: dict[str, Any]
    """The tool call about to be sent (chat-completions form)."""
    traj: Trajectory
    """The trajectory being played (live: it goes on growing after the call)."""
    back: dict[str, str]
    """Function names back to MCP tool names (:func:`~openenv_mcp.rollout.messages.tools_to_functions`)."""


BeforeAction = Callable[[Pause], Awaitable[None]]


async def play_turns(
    env: Any,
    policy: Policy,
    traj: Trajectory,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    back: dict[str, str],
    max_steps: int,
    *,
    clock: Clock | None = None,
    before_action: BeforeAction | None = None,
) -> Clock:
    """Ask ``policy`` and run its tool calls on ``env`` until the episode ends, the policy answers
    without a tool call or ``traj`` holds ``max_steps`` steps; ``messages`` and ``traj`` grow in place."""
    clock = clock or Clock()
    steps = traj.steps if traj.steps is not None else []
    traj.steps = steps
    usage = traj.usage if traj.usage is not None else {}
    traj.usage = usage
    completions = traj.completions if traj.completions is not None else []
    traj.completions = completions
    while traj.stop_reason == "running":
        if len(steps) >= max_steps:
            traj.stop_reason = "max_steps"
            break
        m0 = time.perf_counter()
        turn = await ask_policy(policy, [dict(m) for m in messages], tools)
        clock.model_s += time.perf_counter() - m0
        traj.turns += 1
        for key, value in (turn.usage or {}).items():
            if isinstance(value, int):
                usage[key] = usage.get(key, 0) + value
        message, calls = normalize_message(turn.message, traj.turns)
        record = turn.record()
        if record is not None:  # token ids / logprobs for trainers, aligned with the assistant message
            completions.append({"turn": traj.turns, "message_index": len(messages), **record})
        at = len(messages)
        messages.append(message)
        if not calls:
            traj.stop_reason = "no_tool_calls"
            break
        for i, call in enumerate(calls):
            fname: str = call["function"]["name"]
            raw: str = call["function"]["arguments"]
            step: dict[str, Any] = {
                "index": len(steps),
                "turn": traj.turns,
                "tool_call_id": call["id"],
                "name": back.get(fname, fname),
                "arguments": None,
                "raw_arguments": raw,
            }
            if traj.stop_reason != "running" or len(steps) >= max_steps:
                why = "the episode has ended" if traj.stop_reason != "running" else "the step budget is spent"
                result = error_result(f"Not executed: {why}.")
                step.update(skipped=True, reward=0.0, done=traj.done, truncated=traj.truncated, elapsed_ms=0.0)
            else:
                arguments, problem = parse_arguments(raw)
                step["arguments"] = arguments
                if arguments is None:
                    # A malformed call: the model sees an error; the environment is not called.
                    e0 = time.perf_counter()
                    result = error_result(f"Invalid arguments for tool {fname!r}: {problem}")
                    step.update(malformed=problem, reward=0.0, done=False, truncated=False)
                else:
                    if before_action is not None:
                        await before_action(_pause(traj, messages, at, calls, i, back))
                    e0 = time.perf_counter()
                    result = await _send(env, traj, step, back.get(fname, fname), arguments)
                elapsed = time.perf_counter() - e0
                clock.env_s += elapsed
                step["elapsed_ms"] = round(elapsed * 1000, 3)
            step["result"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            step["is_error"] = bool(result.is_error)
            steps.append(step)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result_text(result)})
    return clock


def _pause(
    traj: Trajectory, messages: list[dict[str, Any]], at: int, calls: list[dict[str, Any]], i: int, back: dict[str, str]
) -> Pause:
    """Where the loop stands before sending ``calls[i]`` of the assistant message at ``messages[at]``."""
    sent = sum(1 for s in traj.steps or [] if executed(s))
    if i:
        seen = [*messages[:at], {**messages[at], "tool_calls": calls[:i]}, *messages[at + 1 :]]
    else:
        seen = messages[:at]
    return Pause(sent, seen, traj.turns - (0 if i else 1), at, calls[i], traj, back)


async def _send(
    env: Any, traj: Trajectory, step: dict[str, Any], name: str, arguments: dict[str, Any]
) -> CallToolResult:
    """Send one tool call to ``env``; its reward and end go into ``step`` and ``traj``. Returns its result."""
    # Unknown tool names go to the environment, which answers with an error result.
    o = await env.step(CallTool(name=name, arguments=arguments))
    result = o.result or error_result("the environment returned no result")
    step.update(reward=o.reward, done=o.done, truncated=o.truncated)
    for key in ("criteria", "reward_error"):  # a rubric's per-criterion scores
        if key in o.info:
            step[key] = o.info[key]
    traj.reward += o.reward
    traj.done, traj.truncated = o.done, o.truncated
    if o.done:
        traj.stop_reason = "done"
    elif o.truncated:
        traj.stop_reason = "truncated"
    return result


def executed(step: dict[str, Any]) -> bool:
    """Whether a recorded step was sent to the environment (not skipped, not malformed)."""
    return not step.get("skipped") and "malformed" not in step

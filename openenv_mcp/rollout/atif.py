"""Rollout lines as Harbor's trajectories: ATIF, the Agent Trajectory Interchange Format (v1.4).

The rollout JSONL stays the project's own format (``openenv-mcp.trajectory/1``, ``docs/rollout.md``);
:func:`to_atif` turns one line into one ATIF document, the file Harbor writes per trial
(``agent/trajectory.json``) and its viewer and trainers read. ``openenv-mcp export atif ROLLOUTS.jsonl
--out DIR`` writes one per line; the Harbor world uses the same function.

How a line maps (ATIF's names first):

* ``session_id``: the episode id (else ``env`` + the line's ``key``); ``agent``: the harness that
  played it (``harness.name``/``version``) or ``openenv-mcp`` (the built-in loop), ``model_name``;
* ``steps``: each chat message in order: ``system``, ``user``, and one ``agent`` step per assistant
  message, holding its ``tool_calls`` (arguments parsed; what did not parse is in the step's
  ``extra.raw_arguments``), the ``tool`` messages answering them as its ``observation``, the reward its
  calls earned (``extra.reward``) and, when the line has them, its ``metrics``: ``prompt_token_ids``,
  ``completion_token_ids`` and ``logprobs`` exactly as recorded (token-exact, no retokenizing);
* ``final_metrics``: the line's ``usage`` and step count, ``extra`` the reward and how it ended;
  root ``extra``: env, task, seed, key and sample, so a trajectory is traced back to its episode.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ATIF_VERSION", "to_atif"]

ATIF_VERSION = "ATIF-v1.4"


def _text(content: Any) -> str:
    """A chat message's content as text (a list of parts joined; ``None`` is empty)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return json.dumps(content, ensure_ascii=False)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openenv-mcp")
    except PackageNotFoundError:
        return "0"


def _tool_call(call: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """An ATIF tool call, and the raw arguments when they are not a JSON object."""
    function = call.get("function") or {}
    raw = function.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        arguments = None
    bad = not isinstance(arguments, dict)
    atif = {
        "tool_call_id": str(call.get("id") or ""),
        "function_name": str(function.get("name") or ""),
        "arguments": {} if bad else arguments,
    }
    return atif, (raw if isinstance(raw, str) else json.dumps(raw)) if bad else None


def _metrics(completion: dict[str, Any] | None) -> dict[str, Any] | None:
    if not completion:
        return None
    metrics: dict[str, Any] = {}
    if isinstance(completion.get("prompt_token_ids"), list):
        metrics["prompt_token_ids"] = completion["prompt_token_ids"]
        metrics["prompt_tokens"] = len(completion["prompt_token_ids"])
    if isinstance(completion.get("token_ids"), list):
        metrics["completion_token_ids"] = completion["token_ids"]
        metrics["completion_tokens"] = len(completion["token_ids"])
    logprobs = completion.get("logprobs")
    if isinstance(logprobs, list):
        metrics["logprobs"] = [lp.get("logprob") if isinstance(lp, dict) else lp for lp in logprobs]
    if completion.get("finish_reason") is not None:
        metrics["extra"] = {"finish_reason": completion["finish_reason"]}
    return metrics or None


def _agent(line: dict[str, Any]) -> dict[str, Any]:
    harness = line.get("harness") or {}
    agent: dict[str, Any] = {
        "name": str(harness.get("name") or "openenv-mcp"),
        "version": str(harness.get("version") or _version()),
    }
    if line.get("model"):
        agent["model_name"] = str(line["model"])
    extra = {k: v for k, v in harness.items() if k not in ("name", "version")}
    if extra:
        agent["extra"] = extra
    return agent


def _steps(line: dict[str, Any]) -> list[dict[str, Any]]:
    completions = {c.get("message_index"): c for c in line.get("completions") or [] if isinstance(c, dict)}
    rewards: dict[str, float] = {}
    for step in line.get("steps") or []:
        if step.get("tool_call_id") is not None:
            rewards[str(step["tool_call_id"])] = rewards.get(str(step["tool_call_id"]), 0.0) + float(step["reward"])
    steps: list[dict[str, Any]] = []
    agent_step: dict[str, Any] | None = None
    for index, message in enumerate(line.get("messages") or []):
        role = message.get("role")
        if role == "tool":
            result = {
                "source_call_id": str(message.get("tool_call_id") or ""),
                "content": _text(message.get("content")),
            }
            if agent_step is None:  # a tool answer with no call before it: kept as a system event
                steps.append({"source": "system", "message": "", "observation": {"results": [result]}})
            else:
                agent_step.setdefault("observation", {"results": []})["results"].append(result)
            continue
        if role == "assistant":
            agent_step = {"source": "agent", "message": _text(message.get("content"))}
            if line.get("model"):
                agent_step["model_name"] = str(line["model"])
            if message.get("reasoning_content"):
                agent_step["reasoning_content"] = str(message["reasoning_content"])
            calls, raw, reward = [], {}, 0.0
            for call in message.get("tool_calls") or []:
                atif, bad = _tool_call(call)
                calls.append(atif)
                if bad is not None:
                    raw[atif["tool_call_id"]] = bad
                reward += rewards.get(atif["tool_call_id"], 0.0)
            if calls:
                agent_step["tool_calls"] = calls
            metrics = _metrics(completions.get(index))
            if metrics:
                agent_step["metrics"] = metrics
            agent_step["extra"] = {"message_index": index, "reward": reward, **({"raw_arguments": raw} if raw else {})}
            steps.append(agent_step)
            continue
        agent_step = None
        source = "system" if role in ("system", "developer") else "user"
        steps.append({"source": source, "message": _text(message.get("content")), "extra": {"message_index": index}})
    if not any(s["source"] == "user" for s in steps) and line.get("prompt"):
        steps.insert(0, {"source": "user", "message": str(line["prompt"])})  # a harness line: no messages
    for n, step in enumerate(steps, 1):
        step["step_id"] = n
    return steps


def to_atif(line: dict[str, Any]) -> dict[str, Any]:
    """One rollout line (``openenv-mcp.trajectory/1``) as an ATIF document (see the module doc)."""
    usage = line.get("usage") or {}
    steps = _steps(line)
    final: dict[str, Any] = {"total_steps": len(steps)}
    for ours, theirs in (("prompt_tokens", "total_prompt_tokens"), ("completion_tokens", "total_completion_tokens")):
        if isinstance(usage.get(ours), int):
            final[theirs] = usage[ours]
    final["extra"] = {
        k: line.get(k) for k in ("reward", "rewards", "done", "truncated", "stop_reason", "num_steps", "tool_errors")
    }
    session = line.get("episode_id") or f"{line.get('env')}:{line.get('key') or line.get('episode')}"
    document: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": str(session),
        "agent": _agent(line),
        "steps": steps,
        "final_metrics": final,
        "extra": {k: line.get(k) for k in ("format", "env", "episode", "task_id", "seed", "key", "sample", "timings")},
    }
    if line.get("harness_transcript") is not None or line.get("harness_error"):
        document["extra"]["harness_transcript"] = line.get("harness_transcript")
        document["extra"]["harness_error"] = line.get("harness_error")
    if line.get("tools"):
        document["agent"].setdefault("extra", {})["tools"] = line["tools"]
    return document

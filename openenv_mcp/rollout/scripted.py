"""A deterministic policy that plays fixed tool calls: :class:`ScriptedPolicy`.

It reads only the conversation: the user message (the task prompt) picks the script, the tool
calls already in the conversation pick the next action, one call per turn; past the script's end
it answers ``Done.`` without a tool call. A task may have several scripts (*alternatives*): the
policy plays the first; :meth:`ScriptedPolicy.branch` gives the policy of the ``k``-th
continuation of a fork (:mod:`openenv_mcp.rollout.branch`), which plays alternative ``k mod n``
from the step it starts at, so continuations of one prefix differ.

Scripts come as Python values or a JSON file (``openenv-mcp rollout --policy scripted:FILE.json``):

* a list of actions, ``[{"name": "fs_read", "arguments": {"path": "a.txt"}}, ...]``: every task;
* an object keyed by task id (or by task prompt), each value a list of actions or a list of
  alternatives (a list of lists of actions); the key ``"*"`` covers every other task.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from openenv_mcp.errors import ConfigError, PolicyError
from openenv_mcp.rollout.messages import function_name
from openenv_mcp.rollout.policy import Turn
from openenv_mcp.types import CallTool, action_from_json

__all__ = ["ScriptedPolicy"]

DONE = "Done."
"""What the policy answers past its script's end (no tool call: the episode stops)."""

Script = list[CallTool]


class ScriptedPolicy:
    """A deterministic policy of fixed tool calls (see the module docstring).

    Args:
        scripts: one list of actions for every task, or a mapping from task id or prompt to a list
            of actions or a list of alternatives (lists of actions); ``"*"``: every other task.
        tasks: the environment's tasks (objects with ``id`` and ``prompt``, e.g.
            ``environment.tasks.tasks``), needed when the keys are task ids.
        choice: which alternative this policy plays (``branch(k)`` sets it).
    """

    model = "scripted"

    def __init__(self, scripts: Any, *, tasks: Iterable[Any] = (), choice: int = 0) -> None:
        prompts: dict[str, str] = {}
        for task in tasks:
            prompts[str(task.id)] = str(task.prompt)
        self.choice = choice
        self._default: list[Script] | None = None
        self._by_prompt: dict[str, list[Script]] = {}
        if isinstance(scripts, list | tuple):
            self._default = _alternatives(scripts, "the script")
            return
        if not isinstance(scripts, Mapping):
            raise ConfigError(
                f"a scripted policy takes a list of actions or an object keyed by task id, not {type(scripts).__name__}"
            )
        owner: dict[str, str] = {}
        for key, value in scripts.items():
            alternatives = _alternatives(value, f"the script of {key!r}")
            if key == "*":
                self._default = alternatives
                continue
            prompt = prompts.get(str(key), str(key))
            if prompt in owner:
                raise ConfigError(f"scripts {owner[prompt]!r} and {key!r} are for tasks with the same prompt")
            owner[prompt] = str(key)
            self._by_prompt[prompt] = alternatives

    @classmethod
    def from_file(cls, path: str | Path, *, tasks: Iterable[Any] = ()) -> ScriptedPolicy:
        """Scripts read from a JSON file (the forms of the module docstring)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ConfigError(f"scripted policy file {str(path)!r}: {e}") from None
        return cls(data, tasks=tasks)

    @classmethod
    def from_solutions(cls, environment: Any, kinds: Iterable[str] = ("reference",)) -> ScriptedPolicy:
        """An environment's scripted solutions (``reference``, ``wrong``) as alternatives, in ``kinds``'
        order, for each task whose solutions are fixed lists (an interactive one is left out)."""
        kinds = list(kinds)
        scripts: dict[str, list[list[CallTool]]] = {}
        for task in environment.tasks.tasks:
            try:
                scripts[task.id] = [environment.trajectory(task, kind) for kind in kinds]
            except ConfigError:
                continue
        if not scripts:
            raise ConfigError(f"environment {environment.name!r} has no fixed {'/'.join(kinds)} solutions to script")
        return cls(scripts, tasks=environment.tasks.tasks)

    def branch(self, k: int) -> ScriptedPolicy:
        """The policy of the ``k``-th continuation of a fork: alternative ``k mod n`` of each task."""
        other = object.__new__(ScriptedPolicy)
        other.__dict__.update(self.__dict__)
        other.choice = k
        return other

    def script(self, prompt: str) -> Script:
        """The actions this policy plays on a task with ``prompt``."""
        alternatives = self._by_prompt.get(prompt, self._default)
        if alternatives is None:
            raise PolicyError(f"the scripted policy has no script for the task {_clip(prompt)!r}")
        return alternatives[self.choice % len(alternatives)]

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        prompt = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        script = self.script(prompt if isinstance(prompt, str) else "")
        done = sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
        if done >= len(script):
            return Turn(message={"role": "assistant", "content": DONE}, finish_reason="stop")
        action = script[done]
        name = _function_name(action.name, tools)
        call = {
            "id": f"call_{done}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(action.arguments)},
        }
        return Turn(message={"role": "assistant", "content": None, "tool_calls": [call]}, finish_reason="tool_calls")


def _alternatives(value: Any, what: str) -> list[Script]:
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{what} must be a list of actions or a list of lists of actions")
    if value and all(isinstance(v, list | tuple) for v in value):
        return [_actions(v, what) for v in value]
    return [_actions(value, what)]


def _actions(items: Any, what: str) -> Script:
    out: Script = []
    for i, item in enumerate(items):
        if isinstance(item, CallTool):
            out.append(item)
            continue
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{what}: action {i} must be {{'name': TOOL, 'arguments': {{...}}}}, got {item!r}")
        try:
            action = action_from_json({"type": "call_tool", "arguments": {}, **item})
        except (ValueError, TypeError) as e:
            raise ConfigError(f"{what}: action {i} is not a tool call ({e})") from None
        if not isinstance(action, CallTool):
            raise ConfigError(f"{what}: action {i} is not a tool call")
        out.append(action)
    return out


def _function_name(tool: str, offered: list[dict[str, Any]]) -> str:
    """The function name the model sees for MCP tool ``tool`` (the same mapping as the tools list)."""
    if any(f.get("function", {}).get("name") == tool for f in offered):
        return tool
    return function_name(tool)


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""Gymnasium: every environment as a ``gymnasium.Env``, registered as ``openenv_mcp/<name>-v0``.

    import gymnasium, openenv_mcp.gym                     # importing registers every environment
    env = gymnasium.make("openenv_mcp/files-v0")
    obs, info = env.reset(seed=7, options={"task_id": "rename-notes"})
    obs, reward, terminated, truncated, info = env.step(
        '{"name": "fs_move", "arguments": {"source": "notes.txt", "destination": "meeting-notes.txt"}}')

Spaces (text in, text out):

* **observation**: ``Dict(task=Text, tools=Text, result=Text)``: the task prompt;
  the tool list as JSON (``[{"name", "description", "inputSchema"}, ...]``);
  the last tool result's text (``""`` after reset; an error reads ``Error: ...``;
  see :func:`~openenv_mcp.integrations.text.result_text`). Texts longer than
  ``max_text_length`` are cut with a visible marker.
* **action**: ``Text`` holding one JSON tool call, ``{"name": TOOL, "arguments": {...}}``
  (``arguments`` may also be a JSON string; the wire form with ``"type"``
  works too, ``{"type": "list_tools"}`` included). A :class:`~openenv_mcp.types.CallTool`
  or a dict is accepted as well. Text that is not a tool call is answered with an
  ``Error: ...`` result, reward 0, without reaching the environment.

Both are :class:`UnicodeText` spaces: any Unicode text up to ``max_text_length``
(Gymnasium's ``Text`` only holds a fixed character set); they sample printable
ASCII, and work with ``AsyncVectorEnv``'s shared memory.

``reset(*, seed=None, options=None)`` returns ``(obs, info)``; ``options`` may
give ``task_id`` (else the seed picks the task). ``step`` returns ``(obs,
reward, terminated, truncated, info)``: ``terminated`` is the task being done,
``truncated`` the environment's ``max_steps``. ``info`` holds ``task_id``,
``step``, ``score``, ``is_error`` and the reward function's extra keys (no
timings or ids, so equal runs give equal infos; :meth:`GymEnv.state` has the
episode id). With ``repeat=K``, K consecutive resets without a ``task_id``
share one task, each with its own seed (GRPO groups).

:class:`GymVectorEnv` offers a served environment's remote ``VectorEnv`` (many
episodes on one connection) as a ``gymnasium.vector.VectorEnv``.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import shared_memory as _shm

from openenv_mcp.client.registry import list_envs, make
from openenv_mcp.errors import ConfigError, ResetNeeded
from openenv_mcp.integrations.text import result_text, tools_text
from openenv_mcp.types import CallTool, ListTools, MakeOptions, Observation, RunCode, action_from_json

if TYPE_CHECKING:
    from openenv_mcp.integrations.gymnasium_vector import GymVectorEnv

__all__ = ["GymEnv", "GymVectorEnv", "UnicodeText", "parse_action", "register_envs", "text_spaces"]

MAX_TEXT = 100_000
_OMIT = {"episode_id", "elapsed_ms"}


class UnicodeText(spaces.Text):
    """Any Unicode text of ``min_length`` to ``max_length`` characters; samples printable ASCII."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"


# Shared memory (AsyncVectorEnv): code points + 1, 0 for padding (Text's own handlers index its charset, and
# return strings read once, which AsyncVectorEnv -- it reads its buffer once, expecting views -- never refreshes).
@_shm.create_shared_memory.register(UnicodeText)
def _create(space: UnicodeText, n: int = 1, ctx: Any = None) -> Any:
    import multiprocessing as mp

    return (ctx or mp).Array(np.dtype(np.int32).char, n * space.max_length)


class TextView(Sequence):
    """A live view of ``n`` texts in shared memory; ``copy.deepcopy`` gives a tuple of the current texts."""

    def __init__(self, memory: Any, n: int, max_length: int) -> None:
        self._data = np.frombuffer(memory.get_obj(), dtype=np.int32).reshape((n, max_length))

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        row = self._data[index]
        return "".join(map(chr, row[row > 0] - 1))

    def __deepcopy__(self, memo: Any) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (tuple, TextView)) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return f"TextView{tuple(self)!r}"


# Gymnasium's annotation lists what its own spaces read (dict, tuple, array); a custom space returns its own.
@_shm.read_from_shared_memory.register(UnicodeText)  # pyright: ignore[reportArgumentType]
def _read(space: UnicodeText, memory: Any, n: int = 1) -> TextView:
    return TextView(memory, n, space.max_length)


@_shm.write_to_shared_memory.register(UnicodeText)
def _write(space: UnicodeText, index: int, value: str, memory: Any) -> None:
    size = space.max_length
    dest = np.frombuffer(memory.get_obj(), dtype=np.int32)
    codes = np.zeros(size, dtype=np.int32)
    codes[: len(value)] = [ord(c) + 1 for c in value]
    np.copyto(dest[index * size : (index + 1) * size], codes)


def text_spaces(max_text_length: int = MAX_TEXT) -> tuple[spaces.Dict, UnicodeText]:
    """The observation space ``Dict(task, tools, result)`` and the action space, all :class:`UnicodeText`."""
    observation = spaces.Dict(
        {
            "task": UnicodeText(max_text_length),
            "tools": UnicodeText(max_text_length),
            "result": UnicodeText(max_text_length),
        }
    )
    return observation, UnicodeText(max_text_length)


def cut(text: str, limit: int) -> str:
    """``text``, or its beginning with a marker saying how much was cut, within ``limit`` characters."""
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text)} characters, cut at {limit}]"
    return text[: max(0, limit - len(marker))] + marker


def parse_action(action: Any) -> CallTool | ListTools | RunCode:
    """A :class:`CallTool` / :class:`ListTools` / :class:`RunCode` (``{"type": "run_code", "code": ...}``)
    from an action; raises ``ValueError`` with what the agent reads."""
    if isinstance(action, (CallTool, ListTools, RunCode)):
        return action
    data = action
    if isinstance(action, (str, bytes)):
        try:
            data = json.loads(action)
        except ValueError:
            data = None
    if not isinstance(data, dict):
        raise ValueError('the action is not a JSON tool call: expected {"name": TOOL, "arguments": {...}}')
    if "type" not in data:
        arguments = data.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                raise ValueError("the tool call's arguments are not a JSON object") from None
        data = {"type": "call_tool", "name": data.get("name"), "arguments": arguments}
    try:
        return action_from_json(data)
    except Exception:
        raise ValueError(
            'the action is not a valid tool call: expected {"name": TOOL, "arguments": {...}} '
            "with a string name and an object of arguments"
        ) from None


def _make_info(obs: Observation, is_error: bool) -> dict[str, Any]:
    info = {k: v for k, v in obs.info.items() if k not in _OMIT}
    info["task_id"] = obs.task.id if obs.task is not None else None
    info["is_error"] = is_error
    return info


class GymEnv(gymnasium.Env):
    """One openenv-mcp environment as a ``gymnasium.Env`` (see the module documentation for the spaces).

    Args:
        env: a built-in name, an env file or folder, or a server URL.
        repeat: K consecutive resets without a ``task_id`` share one task (GRPO groups).
        render_mode: ``"ansi"`` (``render()`` returns the task and last result) or ``None``.
        max_text_length: the ``Text`` spaces' length limit; longer texts are cut with a marker.
        **make_kwargs: passed to :func:`openenv_mcp.make` (``max_steps``, ``call_timeout``, ``token``...).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        env: Any = "echo",
        *,
        repeat: int = 1,
        render_mode: str | None = None,
        max_text_length: int = MAX_TEXT,
        **make_kwargs: Unpack[MakeOptions],
    ) -> None:
        if repeat < 1:
            raise ConfigError(f"repeat must be at least 1, got {repeat}")
        if render_mode not in (None, "ansi"):
            raise ConfigError(f"render_mode must be 'ansi' or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.repeat = repeat
        self.max_text_length = max_text_length
        self.observation_space, self.action_space = text_spaces(max_text_length)
        self._env = make(env, **make_kwargs)
        self._resets = 0
        self._group: tuple[str, set[int]] | None = None
        self._obs: dict[str, str] | None = None
        self._info: dict[str, Any] = {}

    def _observation(self, result: str) -> dict[str, str]:
        assert self._obs is not None
        self._obs = {**self._obs, "result": cut(result, self.max_text_length)}
        return dict(self._obs)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, str], dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        task_id = options.pop("task_id", None)
        if options:
            raise ConfigError(f"unknown reset options {sorted(options)}; known: task_id")
        if seed is None:
            seed = int(self.np_random.integers(2**31))
        if task_id is None and self.repeat > 1:
            leader = self._resets % self.repeat == 0 or self._group is None
            self._resets += 1
            if not leader:
                group_task, used = self._group  # type: ignore[misc]
                while seed in used:
                    seed = int(self.np_random.integers(2**31))
                used.add(seed)
                task_id = group_task
        obs = self._env.reset(seed=seed, task_id=task_id)
        if self.repeat > 1 and task_id is None:
            self._group = (obs.task.id if obs.task else "", {seed})
        self._obs = {
            "task": cut(obs.task.prompt if obs.task else "", self.max_text_length),
            "tools": cut(tools_text(obs.tools or []), self.max_text_length),
            "result": "",
        }
        self._info = _make_info(obs, False)
        return dict(self._obs), dict(self._info)

    def step(self, action: Any) -> tuple[dict[str, str], float, bool, bool, dict]:
        if self._obs is None:
            raise ResetNeeded("call reset() before step(): no episode is running")
        try:
            parsed = parse_action(action)
        except ValueError as e:
            info = {**self._info, "is_error": True, "invalid_action": True}
            return self._observation(f"Error: {e}"), 0.0, False, False, info
        obs = self._env.step(parsed)
        if isinstance(parsed, ListTools):
            return self._observation(tools_text(obs.tools or [])), 0.0, obs.done, obs.truncated, _make_info(obs, False)
        assert obs.result is not None
        self._info = _make_info(obs, obs.result.is_error)
        return (
            self._observation(result_text(obs.result)),
            float(obs.reward),
            obs.done,
            obs.truncated,
            dict(self._info),
        )

    def state(self) -> Any:
        """The episode's :class:`~openenv_mcp.types.State` (id, step count, task, seed, cumulative reward)."""
        return self._env.state()

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._obs is None:
            return None
        return f"Task: {self._obs['task']}\n\nLast result:\n{self._obs['result']}"

    def close(self) -> None:
        self._env.close()


def register_envs() -> list[str]:
    """Register every environment found by name as ``openenv_mcp/<name>-v0``; returns the ids."""
    ids = []
    for spec in list_envs():
        env_id = f"openenv_mcp/{spec.name}-v0"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point="openenv_mcp.integrations.gymnasium:GymEnv",
                kwargs={"env": spec.name},
                max_episode_steps=spec.max_steps,
            )
        ids.append(env_id)
    return ids


register_envs()


def __getattr__(name: str) -> Any:
    # GymVectorEnv lives in gymnasium_vector, which imports this module: loaded on first use, so either
    # module can be imported first.
    if name == "GymVectorEnv":
        from openenv_mcp.integrations.gymnasium_vector import GymVectorEnv

        return GymVectorEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

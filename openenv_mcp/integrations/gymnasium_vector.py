"""A served environment's remote ``VectorEnv`` as a ``gymnasium.vector.VectorEnv``.

    venv = GymVectorEnv("http://127.0.0.1:8000", num_envs=8, repeat=4)   # 2 GRPO groups of 4
    obs, infos = venv.reset(seed=0)                  # obs["task"] is a tuple of 8 prompts
    obs, rewards, terminated, truncated, infos = venv.step([json_call] * 8)

All ``num_envs`` episodes live on one control-plane connection and every
``reset``/``step`` is one batch message (:class:`openenv_mcp.client.remote.AsyncVectorEnv`).
Spaces and action forms are those of :class:`~openenv_mcp.integrations.gymnasium.GymEnv`,
batched: observations are a dict of tuples of texts; rewards, terminated and truncated
numpy arrays; ``infos`` a dict of arrays (Gymnasium's vector convention).
Autoreset is ``NEXT_STEP``: the step after an episode ends resets it (its reward 0).
``reset(options={"task_id": ID})`` gives every episode that task,
``options={"task_ids": [...]}`` one each; with ``repeat=K`` (dividing ``num_envs``)
each block of K episodes shares a task drawn by its first episode, each with its own seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from anyio.from_thread import start_blocking_portal
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from openenv_mcp.client.remote import AsyncVectorEnv
from openenv_mcp.errors import ConfigError
from openenv_mcp.integrations.gymnasium import cut, parse_action, text_spaces
from openenv_mcp.integrations.text import result_text, tools_text
from openenv_mcp.types import ListTools, Observation

__all__ = ["GymVectorEnv"]


class GymVectorEnv(VectorEnv):
    """``num_envs`` episodes of a served environment (``openenv-mcp serve``) as one Gymnasium vector env."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self, url: str, num_envs: int, *, repeat: int = 1, max_text_length: int = 100_000, **options: Any
    ) -> None:
        if repeat < 1 or num_envs % repeat:
            raise ConfigError(f"repeat ({repeat}) must divide num_envs ({num_envs})")
        self.num_envs, self.repeat, self.max_text_length = num_envs, repeat, max_text_length
        self.single_observation_space, self.single_action_space = text_spaces(max_text_length)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._vec = AsyncVectorEnv(url, num_envs, **options)
        self._tools = [""] * num_envs
        self._tasks = [""] * num_envs
        self._ended = np.zeros(num_envs, dtype=bool)
        self._closed = False

    # -- helpers --------------------------------------------------------------------------------
    def _run(self, fn: Any, *args: Any) -> Any:
        return self._portal.call(fn, *args)

    def _batch(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One batch message (``docs/protocol.md``); a failed item raises its named error."""

        async def send() -> Any:
            return await self._vec.connection.request({"op": "batch", "items": items})

        out = []
        for i, item in enumerate(self._run(send)["results"]):
            if not item.get("ok"):
                raise ConfigError(f"episode {i}: {(item.get('error') or {}).get('message', 'failed')}")
            out.append(item["result"])
        return out

    def _started(self, i: int, obs: Observation) -> None:
        self._tasks[i] = cut(obs.task.prompt if obs.task else "", self.max_text_length)
        self._tools[i] = cut(tools_text(obs.tools or []), self.max_text_length)
        self._ended[i] = False

    def _obs(self, results: list[str]) -> dict[str, tuple[str, ...]]:
        return {
            "task": tuple(self._tasks),
            "tools": tuple(self._tools),
            "result": tuple(cut(r, self.max_text_length) for r in results),
        }

    @staticmethod
    def _infos(rows: list[dict[str, Any]]) -> dict[str, Any]:
        keys = sorted({k for row in rows for k in row})
        return {k: np.array([row.get(k) for row in rows], dtype=object) for k in keys}

    # -- the Gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed if isinstance(seed, int) else None)  # seeds np_random from an int only
        n = self.num_envs
        if seed is None:
            seeds = [int(s) for s in self.np_random.integers(2**31, size=n)]
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(n)]
        else:
            seeds = list(seed)
        options = dict(options or {})
        task_ids = options.pop("task_ids", None) or [options.pop("task_id", None)] * n
        if options or len(task_ids) != n or len(seeds) != n:
            raise ConfigError("reset takes one seed per episode and options task_id or task_ids (one per episode)")
        observations = self._run(self._vec.reset, seeds, task_ids)
        if self.repeat > 1 and all(t is None for t in task_ids):  # members take their group leader's task
            ids = self._vec.episode_ids or []
            items, members = [], []
            for i in range(n):
                if i % self.repeat:
                    leader = observations[i - i % self.repeat]
                    items.append(
                        {
                            "op": "reset",
                            "episode_id": ids[i],
                            "seed": seeds[i],
                            "task_id": leader.task.id if leader.task else None,
                        }
                    )
                    members.append(i)
            for i, result in zip(members, self._batch(items), strict=True):
                observations[i] = Observation.model_validate(result["observation"])
        for i, obs in enumerate(observations):
            self._started(i, obs)
        infos = [
            {"task_id": o.task.id if o.task else None, "step": 0, "score": o.info.get("score", 0.0), "is_error": False}
            for o in observations
        ]
        return self._obs([""] * n), self._infos(infos)

    def step(self, actions: Any) -> Any:
        n = self.num_envs
        if len(actions) != n:
            raise ConfigError(f"give one action per episode ({n}), got {len(actions)}")
        ids = self._vec.episode_ids
        if ids is None:
            from openenv_mcp.errors import ResetNeeded

            raise ResetNeeded("call reset() before step(): no episode is running")
        results, rewards = [""] * n, np.zeros(n, dtype=np.float64)
        terminated, truncated = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in range(n)]
        items, where = [], []
        for i, action in enumerate(actions):
            if self._ended[i]:  # NEXT_STEP autoreset: this step resets the ended episode
                items.append({"op": "reset", "episode_id": ids[i], "seed": int(self.np_random.integers(2**31))})
                where.append((i, "reset", None))
                continue
            try:
                parsed = parse_action(action)
            except ValueError as e:
                results[i] = f"Error: {e}"
                infos[i] = {"is_error": True, "invalid_action": True}
                continue
            items.append({"episode_id": ids[i], "action": parsed.model_dump(mode="json")})
            where.append((i, "step", parsed))
        for (i, kind, parsed), result in zip(where, self._batch(items) if items else [], strict=True):
            obs = Observation.model_validate(result["observation"])
            info = {k: v for k, v in obs.info.items() if k not in ("episode_id", "elapsed_ms")}
            info["task_id"] = obs.task.id if obs.task else None
            if kind == "reset":
                self._started(i, obs)
                infos[i] = {**info, "is_error": False}
                continue
            if isinstance(parsed, ListTools):
                results[i] = tools_text(obs.tools or [])
                infos[i] = {**info, "is_error": False}
            else:
                results[i] = result_text(obs.result) if obs.result is not None else ""
                infos[i] = {**info, "is_error": bool(obs.result and obs.result.is_error)}
                rewards[i] = obs.reward
            terminated[i], truncated[i] = obs.done, obs.truncated
        self._ended = terminated | truncated
        return self._obs(results), rewards, terminated, truncated, self._infos(infos)

    def close_extras(self, **kwargs: Any) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._run(self._vec.close)
        finally:
            self._portal_cm.__exit__(None, None, None)

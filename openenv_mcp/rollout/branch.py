"""Branching rollouts: a tree of trajectories forked from one episode (``rollout --branch WHERE:K``).

The policy plays an episode from its reset: the **root**. Just before the root sends its tool call
number ``s + 1`` (``s`` calls sent so far: the *step*), at each step ``WHERE`` names, the root's
episode is forked ``K`` times (:meth:`AsyncEnv.fork <openenv_mcp.client.env.AsyncEnv.fork>`) and
each fork is played on by the policy from that conversation to its end: a **continuation**, a
child node whose ``parent`` is the root. Then the root goes on. ``WHERE`` is

* ``every``: every step the root reaches (``0`` is right after the reset);
* ``reward``: the step just before the call whose reward first differed from 0 (the root keeps a
  one-fork checkpoint until then: the continuations retry that call);
* ``S1,S2,...``: those steps (one the root never reaches is recorded in ``fork_errors``).

The ``k``-th continuation asks ``policy.branch(k)`` when the policy has that method (a
:class:`~openenv_mcp.rollout.scripted.ScriptedPolicy` plays its alternative ``k mod n`` from there),
else the policy itself (a sampling model differs by itself); a policy with ``sample(messages, tools,
n)`` (:class:`~openenv_mcp.rollout.policy.OpenAIPolicy`) answers the continuations' first turn with
one request for ``K`` choices. A fork that fails is recorded in the
root's ``fork_errors`` (step, continuation, error code and message) and the tree goes on without it.

Every node is a trajectory line (:meth:`Trajectory.to_json`, its ``steps`` and ``rewards`` from the
reset, so a continuation's start is its parent's prefix) plus the tree's fields (:meth:`Node.to_json`).
"""

from __future__ import annotations

import copy
import inspect
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio

from openenv_mcp.errors import ConfigError, OpenEnvError, PolicyError, UsageError
from openenv_mcp.rollout.outfile import episode_key
from openenv_mcp.rollout.policy import Policy, Turn
from openenv_mcp.rollout.runner import DEFAULT_SYSTEM_PROMPT, env_factory, plan_episodes, play_episode
from openenv_mcp.rollout.trajectory import Trajectory
from openenv_mcp.rollout.turns import Pause, ask_policy, executed, play_turns

__all__ = ["MAX_BRANCHES", "TREE_FORMAT", "Branching", "Node", "play_tree", "rollout_trees"]

TREE_FORMAT = "openenv-mcp.tree/1"
"""Value of the ``format`` field of every node line (a trajectory line with the tree's fields)."""

MAX_BRANCHES = 64
"""Continuations per branch point at most (the most one fork call makes)."""


@dataclass(frozen=True)
class Branching:
    """Where and how often a tree branches: ``WHERE:K`` (see the module docstring)."""

    where: str
    """``every``, ``reward`` or ``steps``."""
    k: int
    steps: tuple[int, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Branching:
        """``every:K``, ``reward:K`` or ``S1,S2,...:K`` with ``K`` in 1..64 (a :class:`UsageError` else)."""
        where, sep, count = str(text).strip().rpartition(":")
        usage = "branching takes WHERE:K (every:4, reward:2, 0,3:2)"
        if not sep or not where:
            raise UsageError(f"{usage}, got {text!r}")
        try:
            k = int(count)
        except ValueError:
            raise UsageError(f"{usage}: K must be a whole number, got {count!r}") from None
        if not 1 <= k <= MAX_BRANCHES:
            raise UsageError(f"{usage}: K (continuations per branch point) must be 1..{MAX_BRANCHES}, got {k}")
        if where in ("every", "reward"):
            return cls(where, k)
        parts = [p.strip() for p in where.split(",")]
        if not all(p.isdigit() for p in parts):
            raise UsageError(f"{usage}: WHERE must be every, reward or step numbers S1,S2 (0, 1...), got {where!r}")
        return cls("steps", k, tuple(sorted({int(p) for p in parts})))

    def __str__(self) -> str:
        where = ",".join(map(str, self.steps)) if self.where == "steps" else self.where
        return f"{where}:{self.k}"


@dataclass
class Node:
    """One trajectory of a tree: the root (``parent`` ``None``) or a continuation of its prefix."""

    id: str
    """The node's episode id (unique: a fork is an episode of its own)."""
    parent: str | None
    step: int
    """Tool calls it shares with its parent (where it branched; 0 for the root)."""
    branch: int
    """Which of the branch point's continuations it is (0..K-1; 0 for the root)."""
    trajectory: Trajectory
    fork_errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def actions(self) -> list[dict[str, Any]]:
        """The tool calls sent to the environment from the reset on, ``{"name", "arguments"}`` each."""
        return [{"name": s["name"], "arguments": s["arguments"]} for s in self.trajectory.steps or [] if executed(s)]

    @property
    def action_rewards(self) -> list[float]:
        """The reward of each of :attr:`actions`."""
        return [s["reward"] for s in self.trajectory.steps or [] if executed(s)]

    def to_json(self) -> dict[str, Any]:
        """The node's JSON line: the trajectory line, ``format`` :data:`TREE_FORMAT`, and the tree's fields."""
        return {
            **self.trajectory.to_json(),
            "format": TREE_FORMAT,
            "node": self.id,
            "parent": self.parent,
            "step": self.step,
            "branch": self.branch,
            "actions": self.actions,
            "action_rewards": self.action_rewards,
            "fork_errors": self.fork_errors,
        }


@dataclass
class _Prefix:
    """The root's conversation and record at a step, copied: what a continuation starts from."""

    pause: Pause
    traj: Trajectory

    @classmethod
    def take(cls, pause: Pause) -> _Prefix:
        messages = copy.deepcopy(pause.messages)
        root = pause.traj
        traj = copy.copy(root)
        traj.messages = messages
        traj.steps = copy.deepcopy(root.steps or [])
        traj.usage = dict(root.usage or {})
        # token ids of the turn being played cover calls the continuation does not make: left out
        completions = copy.deepcopy(root.completions or [])
        traj.completions = [c for c in completions if c["message_index"] < pause.message_index]
        traj.turns = pause.turns
        return cls(pause, traj)


async def play_tree(
    make_env: Callable[[], Any],
    policy: Policy,
    branching: Branching,
    *,
    index: int,
    env_name: str,
    seed: int | None,
    task_id: str | None = None,
    max_steps: int = 30,
    key: str | None = None,
    close: bool = True,
    **episode_options: Any,
) -> list[Node]:
    """One tree: the root played from reset with its continuations (module docstring). Returns the
    continuations in (step, branch) order, then the root; every fork is closed (and the root's env
    with ``close``). ``episode_options`` go to :func:`~openenv_mcp.rollout.runner.play_episode`."""
    env = make_env()
    if inspect.isawaitable(env):
        env = await env
    if not callable(getattr(env, "fork", None)):
        raise ConfigError(f"--branch forks episodes: {type(env).__name__} has no fork()")
    tree = _Tree(env, policy, branching, max_steps)
    try:
        traj = await play_episode(
            lambda: env,
            policy,
            index=index,
            env_name=env_name,
            seed=seed,
            task_id=task_id,
            max_steps=max_steps,
            close=False,
            key=key,
            before_action=tree.before_action,
            **episode_options,
        )
        if branching.where == "reward" and not tree.settled:
            await tree.settle(None, traj.steps or [])
    finally:
        with anyio.CancelScope(shield=True):
            if tree.pending is not None:
                await tree.pending[0].close()
            if close:
                await env.close()
    return tree.nodes(traj, index)


class _Tree:
    """One tree while its root plays: the continuations grown so far, the errors, the steps the root
    stood before, and (``reward``) the fork of the latest step held until a call changes the reward."""

    def __init__(self, env: Any, policy: Policy, branching: Branching, max_steps: int) -> None:
        self.env, self.policy, self.branching, self.max_steps = env, policy, branching, max_steps
        self.children: list[Node] = []
        self.errors: list[dict[str, Any]] = []
        self.reached: set[int] = set()
        self.pending: tuple[Any, _Prefix] | None = None  # reward: a fork of the last step until the reward changes
        self.settled = False

    async def grow(self, source: Any, prefix: _Prefix, count: int, own: Any = None) -> None:
        """``count`` forks of ``source`` (and ``own``, a fork already made), each played on and closed."""
        step = prefix.pause.actions
        forks: list[Any] = [] if own is None else [own]
        try:
            forks += list(await source.fork(count)) if count else []
        except OpenEnvError as e:
            self.errors.append({"step": step, "branch": None, "code": e.code, "error": str(e)})
        first = _FirstTurns(self.policy, len(forks), prefix.pause.turns)
        for k, fork in enumerate(forks):
            try:
                self.children.append(await _continue(fork, first.member(k), prefix, k, step, self.max_steps))
            except PolicyError:
                raise
            except OpenEnvError as e:
                self.errors.append({"step": step, "branch": k, "code": e.code, "error": str(e)})
            finally:
                with anyio.CancelScope(shield=True):
                    await fork.close()

    async def settle(self, pause: Pause | None, steps: list[dict[str, Any]]) -> None:
        """``reward``: once a call changed the reward, branch from the fork taken just before it;
        until then keep one fork of the latest step."""
        held, self.pending = self.pending, None
        if any(s["reward"] != 0 for s in steps if executed(s)):
            self.settled = True
            if held is not None:
                await self.grow(held[0], held[1], self.branching.k - 1, own=held[0])
            return
        if held is not None:
            with anyio.CancelScope(shield=True):
                await held[0].close()
        if pause is not None:
            try:
                self.pending = ((await self.env.fork(1))[0], _Prefix.take(pause))
            except OpenEnvError as e:
                self.errors.append({"step": pause.actions, "branch": None, "code": e.code, "error": str(e)})

    async def before_action(self, pause: Pause) -> None:
        branching = self.branching
        self.reached.add(pause.actions)
        if branching.where == "every" or (branching.where == "steps" and pause.actions in branching.steps):
            await self.grow(self.env, _Prefix.take(pause), branching.k)
        elif branching.where == "reward" and not self.settled:
            await self.settle(pause, pause.traj.steps or [])

    def nodes(self, traj: Trajectory, index: int) -> list[Node]:
        """The continuations in (step, branch) order, then the root (with an error for each asked
        step it never stood before)."""
        total = sum(1 for s in traj.steps or [] if executed(s))
        for step in self.branching.steps:
            if step not in self.reached:
                why = f"the root sent {total} tool call(s): it never stood before call {step + 1}"
                self.errors.append({"step": step, "branch": None, "code": "not_reached", "error": why})
        root = Node(traj.episode_id or f"{index}", None, 0, 0, traj, self.errors)
        self.children.sort(key=lambda n: (n.step, n.branch))
        for child in self.children:
            child.parent = root.id
        return [*self.children, root]


class _FirstTurns:
    """The policies of one branch point's ``n`` continuations: ``policy.branch(k)`` when the policy
    has it; else, for a policy that can ``sample(messages, tools, n)`` (:class:`OpenAIPolicy`), the
    continuations' first turns are one request for ``n`` choices, continuation ``k`` taking choice ``k``."""

    def __init__(self, policy: Policy, n: int, turns: int) -> None:
        self.policy, self.n, self.turns = policy, n, turns
        self.first: list[Turn] | None = None
        self.lock = anyio.Lock()

    def member(self, k: int) -> Any:
        brancher = getattr(self.policy, "branch", None)
        if callable(brancher):
            return brancher(k)  # an optional Policy method
        sampler = getattr(self.policy, "sample", None)
        if not callable(sampler) or self.n < 2:
            return self.policy

        async def ask(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
            if sum(1 for m in messages if m.get("role") == "assistant") != self.turns:
                return await ask_policy(self.policy, messages, tools)
            async with self.lock:
                if self.first is None:
                    choices: Any = sampler(messages, tools, self.n)
                    self.first = list(await choices)
            return self.first[k]

        return ask


async def _continue(env: Any, policy: Policy, prefix: _Prefix, k: int, step: int, max_steps: int) -> Node:
    """Play a fork on from ``prefix`` with the ``k``-th continuation's policy."""
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    traj = copy.copy(prefix.traj)
    traj.messages = copy.deepcopy(prefix.traj.messages or [])
    traj.steps = copy.deepcopy(prefix.traj.steps or [])
    traj.usage = dict(prefix.traj.usage or {})
    traj.completions = copy.deepcopy(prefix.traj.completions or [])
    state = await env.state()
    traj.episode_id = state.episode_id
    traj.key = None
    clock = await play_turns(env, policy, traj, traj.messages, traj.tools or [], prefix.pause.back, max_steps)
    try:
        traj.reward = (await env.state()).cumulative_reward
    except OpenEnvError:
        pass
    traj.timings = {
        "started_at": started_at.isoformat(),
        "total_s": round(time.perf_counter() - t0, 4),
        "model_s": round(clock.model_s, 4),
        "env_s": round(clock.env_s, 4),
    }
    return Node(state.episode_id, None, step, k, traj)


async def rollout_trees(
    env: Any,
    policy: Policy,
    branching: Branching,
    *,
    episodes: int = 1,
    concurrency: int = 1,
    max_steps: int = 30,
    seed: int | None = 0,
    task_id: str | None = None,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    model: str | None = None,
    on_tree: Callable[[list[Node]], Any] | None = None,
    all_tasks: bool = False,
    repeat: int = 1,
    skip: Collection[str] = (),
    **env_options: Any,
) -> list[list[Node]]:
    """:func:`~openenv_mcp.rollout.runner.rollout` with a tree per planned episode (:func:`play_tree`):
    the same arguments (``env``, the plan of tasks and seeds, ``skip`` by episode key), ``on_tree``
    called with each finished tree. Returns the trees in episode order, each root last."""
    if episodes < 1 or concurrency < 1 or max_steps < 1 or repeat < 1:
        raise ConfigError("episodes, concurrency, max_steps and repeat must be at least 1")
    make_env, name, reusable = env_factory(env, env_options)
    if not reusable and concurrency > 1:
        raise ConfigError(
            "one env instance plays one episode at a time: pass an environment name, URL or factory for concurrency > 1"
        )
    if model is None:
        model = getattr(policy, "model", None)
    plan = plan_episodes(
        env, make_env, episodes=episodes, seed=seed, task_id=task_id, all_tasks=all_tasks, repeat=repeat
    )
    trees: dict[int, list[Node]] = {}
    limiter = anyio.Semaphore(concurrency)

    async def one(index: int, pinned: str | None, episode_seed: int | None) -> None:
        async with limiter:
            tree = await play_tree(
                make_env,
                policy,
                branching,
                index=index,
                env_name=name,
                seed=episode_seed,
                task_id=pinned,
                max_steps=max_steps,
                key=None if episode_seed is None else episode_key(episode_seed, pinned),
                system_prompt=system_prompt,
                model=model,
                close=reusable,
            )
            trees[index] = tree
            if on_tree is not None:
                out = on_tree(tree)
                if inspect.isawaitable(out):
                    await out

    try:
        async with anyio.create_task_group() as tg:
            for i, (pinned, episode_seed) in enumerate(plan):
                if episode_seed is None or episode_key(episode_seed, pinned) not in skip:
                    tg.start_soon(one, i, pinned, episode_seed)
    except BaseExceptionGroup as group:  # surface the first real error, not the group
        first = group.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    if not reusable:
        await make_env().close()
    return [trees[i] for i in sorted(trees)]

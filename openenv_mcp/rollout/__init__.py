"""Rollouts: a policy (a model, or your own code) plays episodes; trajectories come out.

    from openenv_mcp.rollout import OpenAIPolicy, rollout

    policy = OpenAIPolicy("http://127.0.0.1:8001/v1", model="qwen3-8b")
    trajectories = await rollout("files", policy, episodes=32, concurrency=8)

A **policy** is any callable ``policy(messages, tools)`` (sync or async) that
gets the conversation so far and the tools as OpenAI chat-completions lists
and returns the next assistant message (a dict in the same form, or a
:class:`Turn`). :class:`OpenAIPolicy` is the one for any OpenAI-compatible
chat-completions server (vLLM, SGLang, llama.cpp, TGI, OpenAI itself...).

A **trajectory** (:class:`Trajectory`) is one episode: the messages in
chat-completions form (directly usable for SFT), every tool call with its MCP
result and reward (for RL), seed, task id and timings. ``docs/rollout.md``
documents the JSON line format written by ``openenv-mcp rollout``.

:class:`ScriptedPolicy` plays fixed tool calls (deterministic: tests, baselines). A **tree**
(:func:`rollout_trees`, ``openenv-mcp rollout --branch WHERE:K``) forks an episode into
continuations at some steps; :mod:`openenv_mcp.rollout.advantages` turns one into step-level
advantage estimates.

Malformed tool calls (arguments that are not a JSON object, unknown tool
names) become tool-error observations the model sees, never crashes.
"""

from openenv_mcp.rollout.branch import TREE_FORMAT, Branching, Node, rollout_trees
from openenv_mcp.rollout.command import run_command as run_command
from openenv_mcp.rollout.messages import result_text, tools_to_functions
from openenv_mcp.rollout.policy import OpenAIPolicy, Policy, PolicyError, Turn
from openenv_mcp.rollout.runner import DEFAULT_SYSTEM_PROMPT, rollout
from openenv_mcp.rollout.runner import play_episode as play_episode
from openenv_mcp.rollout.scripted import ScriptedPolicy
from openenv_mcp.rollout.trajectory import TRAJECTORY_FORMAT, Trajectory, summarize

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "TRAJECTORY_FORMAT",
    "TREE_FORMAT",
    "Branching",
    "Node",
    "OpenAIPolicy",
    "Policy",
    "PolicyError",
    "ScriptedPolicy",
    "Trajectory",
    "Turn",
    "result_text",
    "rollout",
    "rollout_trees",
    "summarize",
    "tools_to_functions",
]

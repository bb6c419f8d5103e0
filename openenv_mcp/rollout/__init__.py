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

Malformed tool calls (arguments that are not a JSON object, unknown tool
names) become tool-error observations the model sees, never crashes.
"""

from __future__ import annotations

import inspect
import json
import random
import re
import statistics
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)

from ..errors import ConfigError, OpenEnvError
from ..types import CallTool, Observation
from .outfile import TrajectoryFile, episode_key

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "TRAJECTORY_FORMAT",
    "OpenAIPolicy",
    "Policy",
    "PolicyError",
    "Trajectory",
    "Turn",
    "result_text",
    "rollout",
    "summarize",
    "tools_to_functions",
]

TRAJECTORY_FORMAT = "openenv-mcp.trajectory/1"
"""Value of the ``format`` field of every trajectory line."""

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent working in an environment through tools. Read the task, call the tools "
    "you need (one or more per turn), look at their results, and keep going until the task is "
    "done. When you are finished, answer without calling a tool."
)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses from a model server that are retried with backoff."""


class PolicyError(OpenEnvError):
    """The policy (a model server) could not give the next turn; the rollout stops."""

    code = "policy_error"
    http_status = 502


@dataclass
class Turn:
    """What a policy returns: the assistant message, plus optional accounting."""

    message: dict[str, Any]
    """An OpenAI chat-completions assistant message (``content``, ``tool_calls``)."""
    usage: dict[str, Any] | None = None
    """Token usage as the model server reported it (``prompt_tokens``...)."""
    finish_reason: str | None = None
    """The model server's ``finish_reason``."""
    logprobs: list[dict[str, Any]] | None = None
    """Per generated token ``{"token", "logprob"}`` (``choices[i].logprobs.content``), when asked for."""
    token_ids: list[int] | None = None
    """The generated token ids, when the server returns them (vLLM ``return_token_ids``,
    or tokens given as ``token_id:N`` in the logprobs)."""
    prompt_token_ids: list[int] | None = None
    """The prompt's token ids, when the server returns them (vLLM ``return_token_ids``)."""

    def record(self) -> dict[str, Any] | None:
        """What a trajectory keeps of this turn for training (``None``: nothing to keep)."""
        out = {
            k: v
            for k, v in (
                ("token_ids", self.token_ids),
                ("logprobs", self.logprobs),
                ("prompt_token_ids", self.prompt_token_ids),
            )
            if v is not None
        }
        if not out:
            return None
        return {"finish_reason": self.finish_reason, **out}


Policy = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Turn | dict[str, Any] | Awaitable[Any]]
"""``policy(messages, tools) -> Turn | dict`` (sync or async)."""


# -- tools as function schemas ----------------------------------------------------
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]")


def tools_to_functions(tools: list[Tool]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """MCP tools as chat-completions ``tools`` entries, and a map back to MCP names.

    Function names must match ``^[A-Za-z0-9_-]{1,64}$`` for most model servers:
    other characters become ``_`` (made unique), and the map translates the
    model's calls back to the MCP tool names.
    """
    functions: list[dict[str, Any]] = []
    back: dict[str, str] = {}
    for tool in tools:
        name = _NAME_OK.sub("_", tool.name)[:64] or "tool"
        base, n = name, 2
        while name in back:
            suffix = f"_{n}"
            name, n = base[: 64 - len(suffix)] + suffix, n + 1
        back[name] = tool.name
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        function: dict[str, Any] = {"name": name, "parameters": schema}
        description = tool.description or tool.title or ""
        if description:
            function["description"] = description
        functions.append({"type": "function", "function": function})
    return functions, back


def result_text(result: CallToolResult) -> str:
    """The text a model sees for an MCP tool result (the tool message's content).

    Text parts are joined by newlines; images and audio become a short
    placeholder; embedded text resources are inlined; a result with only
    ``structuredContent`` shows it as JSON. Errors start with ``Error: ``.
    """
    parts: list[str] = []
    for item in result.content:
        if isinstance(item, TextContent):
            parts.append(item.text)
        elif isinstance(item, ImageContent | AudioContent):
            parts.append(f"[{item.type}: {item.mime_type}, {len(item.data) * 3 // 4} bytes]")
        elif isinstance(item, EmbeddedResource):
            res = item.resource
            text = res.text if isinstance(res, TextResourceContents) else None
            parts.append(text or f"[resource {res.uri}: {res.mime_type or ''}]")
        elif isinstance(item, ResourceLink):
            parts.append(f"[resource link {item.uri}]")
        else:
            parts.append(f"[{getattr(item, 'type', '')}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if result.is_error and not text.lower().startswith("error"):
        text = f"Error: {text}"
    return text


def _error_result(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


# -- the OpenAI-compatible policy ---------------------------------------------------
class OpenAIPolicy:
    """A policy backed by an OpenAI-compatible chat-completions server (httpx).

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``
            (``/chat/completions`` is appended).
        model: the model name sent in each request.
        api_key: sent as ``Authorization: Bearer`` when given.
        temperature, max_tokens: sampling options (omitted when ``None``).
        extra_body: more request fields (``top_p``, ``seed``, vendor options...).
        timeout: seconds per HTTP request.
        max_retries: retries of a transient failure (429, 5xx, timeouts,
            refused connections) with exponential backoff and jitter; a
            ``Retry-After`` header is honoured (capped at ``max_backoff``).
        backoff, max_backoff: first and largest wait, seconds.
        max_connections: HTTP connection pool size (at least the concurrency).
        logprobs: ask for token logprobs (``logprobs: true``; ``top_logprobs`` too when
            given) and record them per turn.
        token_ids: ask for token ids (vLLM's ``return_token_ids: true``; not for servers
            that reject unknown fields, such as OpenAI's).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_connections: int = 64,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        token_ids: bool = False,
    ) -> None:
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigError(f"model server URL must look like http://HOST:PORT/v1, got {base_url!r}")
        self.base_url = str(base_url).rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self.logprobs = logprobs
        self.top_logprobs = top_logprobs
        self.token_ids = token_ids
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._client = httpx.AsyncClient(headers=headers, timeout=timeout, limits=limits)
        self.retries = 0
        """Transient failures retried so far (all episodes)."""

    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON body of one chat-completions request."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.logprobs:
            body["logprobs"] = True
            if self.top_logprobs is not None:
                body["top_logprobs"] = self.top_logprobs
        if self.token_ids:
            body["return_token_ids"] = True
        body.update(self.extra_body)
        return body

    async def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        return (await self.sample(messages, tools, 1))[0]

    async def sample(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], n: int) -> list[Turn]:
        """``n`` completions of one prompt in one request (``n`` in the API), one :class:`Turn` each
        (the usage, which covers them all, goes with the first)."""
        body = self.request_body(messages, tools)
        if n != 1:
            body["n"] = n
        data = await self._post(body)
        choices = data.get("choices")
        if (
            not isinstance(choices, list)
            or len(choices) < n
            or not all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices[:n])
        ):
            got = len(choices) if isinstance(choices, list) else 0
            raise PolicyError(
                f"model server at {self.url} answered {got} choice(s) with a message, asked for "
                f"{n}: {json.dumps(data)[:300]}"
            )
        choices = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0)
        return [_turn(data, choice, first=i == 0) for i, choice in enumerate(choices[:n])]

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        attempt = 0
        while True:
            wait: float | None = None
            try:
                response = await self._client.post(self.url, json=body)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as e:
                why = f"{type(e).__name__}: {e or 'no detail'}"
                if attempt >= self.max_retries:
                    raise PolicyError(
                        f"cannot reach the model server at {self.url} ({why}) after {_attempts(attempt + 1)}; "
                        "check --base-url and that the server is running"
                    ) from None
            else:
                status = response.status_code
                if status < 300:
                    try:
                        data = response.json()
                    except ValueError:
                        raise PolicyError(
                            f"model server at {self.url} answered {status} with non-JSON: "
                            f"{response.text[:200]!r}; is --base-url an OpenAI-compatible API "
                            "root (usually ending in /v1)?"
                        ) from None
                    if not isinstance(data, dict):
                        raise PolicyError(
                            f"model server at {self.url} answered a JSON {type(data).__name__}, "
                            "expected a chat completion object"
                        )
                    return data
                detail = _error_detail(response)
                if status in (401, 403):
                    raise PolicyError(
                        f"model server at {self.url} refused the API key ({status}{detail}); "
                        "check --api-key or $OPENAI_API_KEY"
                    )
                if status in (404, 405):
                    raise PolicyError(
                        f"model server at {self.url} has no chat-completions endpoint ({status}"
                        f"{detail}); --base-url must be the API root, usually ending in /v1"
                    )
                if status not in RETRY_STATUS:
                    raise PolicyError(f"model server at {self.url} rejected the request ({status}{detail})")
                if attempt >= self.max_retries:
                    raise PolicyError(
                        f"model server at {self.url} kept failing ({status}{detail}) after "
                        f"{_attempts(attempt + 1)}; try again later or lower --concurrency"
                    )
                wait = _retry_after(response)
            delay = min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
            if wait is not None:
                delay = min(self.max_backoff, max(delay, wait))
            attempt += 1
            self.retries += 1
            await anyio.sleep(delay)

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.aclose()

    async def __aenter__(self) -> OpenAIPolicy:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def _turn(data: dict[str, Any], choice: dict[str, Any], first: bool) -> Turn:
    """One choice of a chat completion as a :class:`Turn`, with logprobs and token ids when present."""
    turn = Turn(
        message=choice["message"], usage=data.get("usage") if first else None, finish_reason=choice.get("finish_reason")
    )
    content = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if isinstance(content, list):
        turn.logprobs = [{"token": t.get("token"), "logprob": t.get("logprob")} for t in content if isinstance(t, dict)]
        ids = [_token_id(t.get("token")) for t in turn.logprobs]
        if ids and all(i is not None for i in ids):  # vLLM return_tokens_as_token_ids: "token_id:123"
            turn.token_ids = ids  # type: ignore[assignment]
    ids = choice.get("token_ids")
    if _int_list(ids):
        turn.token_ids = ids
    prompt_ids = data.get("prompt_token_ids", choice.get("prompt_token_ids"))
    if _int_list(prompt_ids):
        turn.prompt_token_ids = prompt_ids
    return turn


def _int_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value)


def _token_id(token: Any) -> int | None:
    if isinstance(token, str) and token.startswith("token_id:") and token[9:].isdigit():
        return int(token[9:])
    return None


def _attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def _error_detail(response: httpx.Response) -> str:
    try:
        data = response.json()
        message = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(message, dict):
            message = message.get("message", message)
        text = str(message)
    except ValueError:
        text = response.text
    text = " ".join(text.split())[:200]
    return f": {text}" if text else ""


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


# -- trajectories -----------------------------------------------------------------
@dataclass
class Trajectory:
    """One episode played by a policy. ``to_json()`` is one line of the JSONL file."""

    episode: int
    env: str
    seed: int | None
    task_id: str | None
    prompt: str
    episode_id: str | None = None
    model: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    steps: list[dict[str, Any]] | None = None
    reward: float = 0.0
    done: bool = False
    truncated: bool = False
    stop_reason: str = "running"
    turns: int = 0
    usage: dict[str, int] | None = None
    timings: dict[str, Any] | None = None
    key: str | None = None
    sample: int = 0
    completions: list[dict[str, Any]] | None = None

    @property
    def rewards(self) -> list[float]:
        return [s["reward"] for s in self.steps or []]

    @property
    def num_steps(self) -> int:
        return sum(1 for s in self.steps or [] if not s.get("skipped"))

    @property
    def tool_errors(self) -> int:
        return sum(1 for s in self.steps or [] if s["is_error"] and not s.get("skipped"))

    @property
    def success(self) -> bool:
        return self.done

    def to_json(self) -> dict[str, Any]:
        """The JSON line (see ``docs/rollout.md``)."""
        return {
            "format": TRAJECTORY_FORMAT,
            "env": self.env,
            "episode": self.episode,
            "episode_id": self.episode_id,
            "task_id": self.task_id,
            "seed": self.seed,
            "model": self.model,
            "prompt": self.prompt,
            "messages": self.messages or [],
            "tools": self.tools or [],
            "steps": self.steps or [],
            "rewards": self.rewards,
            "reward": self.reward,
            "success": self.success,
            "done": self.done,
            "truncated": self.truncated,
            "stop_reason": self.stop_reason,
            "num_steps": self.num_steps,
            "turns": self.turns,
            "tool_errors": self.tool_errors,
            "usage": self.usage or {},
            "timings": self.timings or {},
            "key": self.key,
            "sample": self.sample,
            "completions": self.completions or [],
        }


def summarize(trajectories: list[Trajectory]) -> dict[str, float]:
    """Reward mean and std, success rate, mean steps and tool-error rate."""
    if not trajectories:
        return {
            "episodes": 0,
            "reward_mean": 0.0,
            "reward_std": 0.0,
            "success_rate": 0.0,
            "mean_steps": 0.0,
            "tool_error_rate": 0.0,
        }
    rewards = [t.reward for t in trajectories]
    calls = sum(t.num_steps for t in trajectories)
    return {
        "episodes": len(trajectories),
        "reward_mean": statistics.fmean(rewards),
        "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
        "success_rate": sum(t.success for t in trajectories) / len(trajectories),
        "mean_steps": statistics.fmean(t.num_steps for t in trajectories),
        "tool_error_rate": (sum(t.tool_errors for t in trajectories) / calls) if calls else 0.0,
    }


# -- the loop -----------------------------------------------------------------------
def _env_factory(env: Any, mode_options: dict[str, Any]) -> tuple[Callable[[], Any], str, bool]:
    """(a function making one async env, the env's name, whether it may be called many times)."""
    from ..client.env import AsyncEnv, Env
    from ..client.registry import _is_url, load_environment, make_async
    from ..core.spec import EnvSpec

    if isinstance(env, Env):
        env = env.unwrapped
    if callable(env) and not hasattr(env, "reset"):
        return env, getattr(env, "__name__", "env"), True
    if hasattr(env, "reset") and hasattr(env, "step"):
        return (lambda: env), getattr(env, "name", "env"), False
    if _is_url(env):
        return (lambda: make_async(env, **mode_options)), str(env), True
    if not isinstance(env, str | Path | EnvSpec):
        raise ConfigError(
            f"rollout needs an environment name, env-file path, EnvSpec, server URL, env object "
            f"or a function making one; got {type(env).__name__}"
        )
    environment = load_environment(env, **mode_options)

    def make() -> AsyncEnv:
        return AsyncEnv(environment)

    make.environment = environment  # type: ignore[attr-defined]  # its task list, for all_tasks/repeat
    return make, environment.name, True


async def _ask(policy: Policy, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
    out = policy(messages, tools)
    if inspect.isawaitable(out):
        out = await out
    if isinstance(out, Turn):
        return out
    if isinstance(out, dict):
        return Turn(message=out)
    raise PolicyError(f"a policy must return an assistant message dict or a Turn, got {type(out).__name__}")


def _normalize_message(message: dict[str, Any], turn: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The assistant message as stored and sent back, and its tool calls (ids filled in)."""
    calls: list[dict[str, Any]] = []
    for i, call in enumerate(message.get("tool_calls") or []):
        call = call if isinstance(call, dict) else {}
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):  # some servers send an object; keep the wire form a string
            arguments = json.dumps(arguments)
        calls.append(
            {
                "id": str(call.get("id") or f"call_{turn}_{i}"),
                "type": "function",
                "function": {"name": str(function.get("name") or ""), "arguments": arguments},
            }
        )
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("reasoning_content"):
        out["reasoning_content"] = message["reasoning_content"]
    if calls:
        out["tool_calls"] = calls
    return out, calls


def _parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    if raw.strip() == "":
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        return None, f"arguments are not valid JSON ({e})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


async def play_episode(
    make_env: Callable[[], Any],
    policy: Policy,
    *,
    index: int,
    env_name: str,
    seed: int | None,
    task_id: str | None = None,
    max_steps: int = 30,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    model: str | None = None,
    close: bool = True,
    sample: int = 0,
    key: str | None = None,
    action_style: str = "tools",
) -> Trajectory:
    """Play one episode: reset, then ask the policy and run its tool calls (or, with
    ``action_style="codeact"``, its code blocks: see :mod:`.codeact`) until the end."""
    env = make_env()
    if inspect.isawaitable(env):
        env = await env
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    model_s = env_s = 0.0
    try:
        obs: Observation = await env.reset(seed=seed, task_id=task_id)
        reset_s = time.perf_counter() - t0
        state = await env.state()
        prompt = obs.task.prompt if obs.task is not None else ""
        tools, back = tools_to_functions(obs.tools or [])
        messages: list[dict[str, Any]] = []
        if action_style == "codeact":
            from .codeact import CODEACT_SYSTEM_PROMPT, stubs

            base = CODEACT_SYSTEM_PROMPT if system_prompt in (None, DEFAULT_SYSTEM_PROMPT) else system_prompt + "\n\n"
            system_prompt = base + stubs(obs.tools or [])
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": prompt})
        steps: list[dict[str, Any]] = []
        completions: list[dict[str, Any]] = []
        usage: dict[str, int] = {}
        traj = Trajectory(
            episode=index,
            env=env_name,
            seed=state.seed,
            task_id=state.task_id,
            prompt=prompt,
            episode_id=state.episode_id,
            model=model,
            messages=messages,
            tools=tools,
            steps=steps,
            usage=usage,
            key=key,
            sample=sample,
            completions=completions,
        )
        if action_style == "codeact":
            from .codeact import play_codeact_turns

            async def ask(msgs: list[dict[str, Any]], offered: list[dict[str, Any]]) -> Turn:
                nonlocal model_s
                m0 = time.perf_counter()
                try:
                    return await _ask(policy, msgs, offered)
                finally:
                    model_s += time.perf_counter() - m0

            env_s += await play_codeact_turns(env, ask, traj, messages, max_steps)
        while traj.stop_reason == "running":
            if len(steps) >= max_steps:
                traj.stop_reason = "max_steps"
                break
            m0 = time.perf_counter()
            turn = await _ask(policy, [dict(m) for m in messages], tools)
            model_s += time.perf_counter() - m0
            traj.turns += 1
            for key, value in (turn.usage or {}).items():
                if isinstance(value, int):
                    usage[key] = usage.get(key, 0) + value
            message, calls = _normalize_message(turn.message, traj.turns)
            record = turn.record()
            if record is not None:  # token ids / logprobs for trainers, aligned with the assistant message
                completions.append({"turn": traj.turns, "message_index": len(messages), **record})
            messages.append(message)
            if not calls:
                traj.stop_reason = "no_tool_calls"
                break
            for call in calls:
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
                    result = _error_result(f"Not executed: {why}.")
                    step.update(skipped=True, reward=0.0, done=traj.done, truncated=traj.truncated, elapsed_ms=0.0)
                else:
                    arguments, problem = _parse_arguments(raw)
                    step["arguments"] = arguments
                    e0 = time.perf_counter()
                    if arguments is None:
                        # A malformed call: the model sees an error; the environment is not called.
                        result = _error_result(f"Invalid arguments for tool {fname!r}: {problem}")
                        step.update(malformed=problem, reward=0.0, done=False, truncated=False)
                    else:
                        # Unknown tool names go to the environment, which answers with an error result.
                        o = await env.step(CallTool(name=back.get(fname, fname), arguments=arguments))
                        result = o.result or _error_result("the environment returned no result")
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
                    elapsed = time.perf_counter() - e0
                    env_s += elapsed
                    step["elapsed_ms"] = round(elapsed * 1000, 3)
                step["result"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                step["is_error"] = bool(result.is_error)
                steps.append(step)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result_text(result)})
        try:
            final = await env.state()
            traj.reward = final.cumulative_reward
        except OpenEnvError:
            pass
        traj.timings = {
            "started_at": started_at.isoformat(),
            "total_s": round(time.perf_counter() - t0, 4),
            "reset_s": round(reset_s, 4),
            "model_s": round(model_s, 4),
            "env_s": round(env_s, 4),
        }
        return traj
    finally:
        if close:
            with anyio.CancelScope(shield=True):
                await env.close()


async def rollout(
    env: Any,
    policy: Policy,
    *,
    episodes: int = 1,
    concurrency: int = 1,
    max_steps: int = 30,
    seed: int | None = 0,
    task_id: str | None = None,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    model: str | None = None,
    on_episode: Callable[[Trajectory], Any] | None = None,
    all_tasks: bool = False,
    repeat: int = 1,
    n: int = 1,
    skip: Collection[str] = (),
    action_style: str = "tools",
    **env_options: Any,
) -> list[Trajectory]:
    """Play ``episodes`` episodes of ``env`` with ``policy``, at most ``concurrency`` at a time.

    Args:
        env: an environment name, env-file path or ``http://HOST:PORT`` server URL
            (one env per concurrent episode is made), a zero-argument factory
            returning an ``AsyncEnv``-like object, or one ``AsyncEnv``/``Env``
            instance (then ``concurrency`` must be 1).
        policy: ``policy(messages, tools) -> Turn | dict`` (sync or async),
            e.g. an :class:`OpenAIPolicy`.
        max_steps: tool calls per episode before it stops (``stop_reason``
            ``max_steps``); the environment's own ``max_steps`` truncates too.
        seed: episode ``i`` is reset with ``seed + i`` (``None``: random seeds,
            recorded in each trajectory).
        task_id: pin every episode to one task.
        all_tasks: play every task of the environment once, in order (instead of
            ``episodes``); ``repeat``: K episodes per task with distinct seeds
            (:meth:`TaskSet.order`).
        n: completions per prompt: every planned episode is played ``n`` times (a
            group, ``sample`` 0..n-1) and the group's first turn is one request for
            ``n`` choices (:meth:`OpenAIPolicy.sample`).
        skip: episode keys (:func:`~openenv_mcp.rollout.outfile.episode_key`) already
            played, e.g. read from an interrupted run's file: not played again.
        system_prompt: the system message (``None`` for none).
        model: recorded in each trajectory.
        on_episode: called with each finished trajectory (in finishing order).
        action_style: ``tools`` (function calling) or ``codeact`` (the model writes Python; each
            code block is one ``RunCode``; see :mod:`openenv_mcp.rollout.codeact`).
        env_options: passed to ``make_async`` (``mode``, ``call_timeout``, ``tasks``,
            ``split``...).

    Returns the trajectories sorted by episode index. A :class:`PolicyError`
    (bad key, unreachable server, retries exhausted) stops the whole rollout.
    """
    if episodes < 1 or concurrency < 1 or max_steps < 1 or n < 1 or repeat < 1:
        raise ConfigError("episodes, concurrency, max_steps, n and repeat must be at least 1")
    if action_style not in ("tools", "codeact"):
        raise ConfigError(f"action_style must be 'tools' or 'codeact', not {action_style!r}")
    make_env, name, reusable = _env_factory(env, env_options)
    if not reusable and concurrency > 1:
        raise ConfigError(
            "one env instance plays one episode at a time: pass an environment name, URL or factory for concurrency > 1"
        )
    if model is None:
        model = getattr(policy, "model", None)
    plan = _plan(env, make_env, episodes=episodes, seed=seed, task_id=task_id, all_tasks=all_tasks, repeat=repeat)
    results: list[Trajectory] = []
    limiter = anyio.Semaphore(concurrency)
    groups = {(t, s): _Group(policy, n) for t, s in plan}
    todo = [
        (i * n + k, t, s, k)
        for i, (t, s) in enumerate(plan)
        for k in range(n)
        if s is None or episode_key(s, t, k) not in skip
    ]

    async def one(index: int, pinned: str | None, episode_seed: int | None, sample: int) -> None:
        async with limiter:
            member = groups[(pinned, episode_seed)].member(sample) if n > 1 else policy
            traj = await play_episode(
                make_env,
                member,
                index=index,
                env_name=name,
                seed=episode_seed,
                task_id=pinned,
                max_steps=max_steps,
                system_prompt=system_prompt,
                model=model,
                close=reusable,
                sample=sample,
                key=None if episode_seed is None else episode_key(episode_seed, pinned, sample),
                action_style=action_style,
            )
            results.append(traj)
            if on_episode is not None:
                out = on_episode(traj)
                if inspect.isawaitable(out):
                    await out

    try:
        async with anyio.create_task_group() as tg:
            for item in todo:
                tg.start_soon(one, *item)
    except BaseExceptionGroup as group:  # surface the first real error, not the group
        first = group.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    if not reusable:
        await make_env().close()
    return sorted(results, key=lambda t: t.episode)


def _plan(
    env: Any,
    make_env: Callable[[], Any],
    *,
    episodes: int,
    seed: int | None,
    task_id: str | None,
    all_tasks: bool,
    repeat: int,
) -> list[tuple[str | None, int | None]]:
    """The (task_id, seed) of every planned episode."""
    if not all_tasks and repeat == 1:
        if seed is None:
            return [(task_id, None) for _ in range(episodes)]
        return [(task_id, seed + i) for i in range(episodes)]
    environment = (
        getattr(make_env, "environment", None)
        or getattr(env, "environment", None)
        or getattr(getattr(env, "unwrapped", None), "environment", None)
    )
    tasks = getattr(environment, "tasks", None)
    if tasks is None:
        raise ConfigError(
            "all_tasks/repeat need the environment's task list: give an environment name, env file "
            "or AsyncEnv, not a server URL or a factory"
        )
    return tasks.order(episodes, seed=seed or 0, all_tasks=all_tasks, repeat=repeat, task_id=task_id)


class _Group:
    """The ``n`` episodes of one prompt: their first turn is one request for ``n`` choices."""

    def __init__(self, policy: Policy, n: int) -> None:
        self.policy, self.n = policy, n
        self.first: list[Turn] | None = None
        self.lock = anyio.Lock()

    def member(self, sample: int) -> Policy:
        async def ask(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
            if any(m.get("role") == "assistant" for m in messages):
                return await _ask(self.policy, messages, tools)
            async with self.lock:
                if self.first is None:
                    sampler = getattr(self.policy, "sample", None)
                    if callable(sampler):
                        choices: Any = sampler(messages, tools, self.n)  # an optional Policy method
                        self.first = list(await choices)
                    else:
                        self.first = [await _ask(self.policy, messages, tools) for _ in range(self.n)]
            return self.first[sample]

        return ask


# -- the command line ----------------------------------------------------------------
def run_command(args: Any, console: Any, err_console: Any) -> int:
    """``openenv-mcp rollout``: progress bar, JSONL written as episodes finish, summary table."""
    if getattr(args, "harness", None) or getattr(args, "harness_cmd", None):
        from .harness import run_harness_command  # a real agent harness plays instead of the built-in loop

        return run_harness_command(args, console, err_console)
    import os

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or None
    out = Path(args.out)
    from ..client.registry import _is_url, find_env

    env_name = str(args.env) if _is_url(args.env) else find_env(args.env).name
    options = {k: v for k, v in (("tasks", args.tasks), ("split", args.split)) if v is not None}
    retries = 0
    resumed = dropped = 0

    async def main() -> list[Trajectory]:
        nonlocal retries, resumed, dropped
        policy = OpenAIPolicy(
            args.base_url,
            args.model,
            api_key,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            timeout=args.timeout,
            max_retries=args.max_retries,
            max_connections=max(args.concurrency, 1),
            logprobs=args.logprobs,
            token_ids=args.token_ids,
        )
        columns = [
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("reward {task.fields[mean]:.2f}"),
            TimeElapsedColumn(),
        ]
        done: list[Trajectory] = []
        with TrajectoryFile(out, env_name) as fh, Progress(*columns, console=err_console) as bar:
            resumed, dropped = len(fh.finished), fh.dropped_bytes
            job = bar.add_task(f"{args.env} · {args.model}", total=None, mean=0.0)

            def write(traj: Trajectory) -> None:
                fh.append(traj.to_json())
                done.append(traj)
                bar.update(job, advance=1, mean=statistics.fmean(t.reward for t in done))

            try:
                return await rollout(
                    args.env,
                    policy,
                    episodes=args.episodes,
                    concurrency=args.concurrency,
                    max_steps=args.max_steps,
                    seed=args.seed,
                    task_id=args.task,
                    system_prompt=args.system or DEFAULT_SYSTEM_PROMPT,
                    model=args.model,
                    on_episode=write,
                    all_tasks=args.all_tasks,
                    repeat=args.repeat,
                    n=args.n,
                    skip=set(fh.finished),
                    action_style=getattr(args, "action_style", "tools"),
                    **options,
                )
            finally:
                retries = policy.retries
                await policy.aclose()

    trajectories = anyio.run(main)
    stats = summarize(trajectories)
    table = Table(title=f"rollout: {args.env} · {args.model} · {len(trajectories)} episodes")
    for col in ("reward mean", "reward std", "success rate", "mean steps", "tool-error rate"):
        table.add_column(col, justify="right")
    table.add_row(
        f"{stats['reward_mean']:.3f}",
        f"{stats['reward_std']:.3f}",
        f"{stats['success_rate']:.0%}",
        f"{stats['mean_steps']:.1f}",
        f"{stats['tool_error_rate']:.1%}",
    )
    console.print(table)
    extra = f" ({retries} model-server retries)" if retries else ""
    if resumed:
        extra += f"; {resumed} episodes already in the file were skipped"
    if dropped:
        extra += f"; a truncated last line ({dropped} bytes) left by an interrupted run was cut off"
    console.print(f"wrote {len(trajectories)} trajectories to {out}{extra}")
    return 0

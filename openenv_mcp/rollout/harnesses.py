"""The agent harnesses ``openenv-mcp rollout --harness`` drives, each as one async function playing one
episode over its MCP address (``Harness``), and the recording HTTP transport that keeps the model traffic.

* ``openai-agents`` — the OpenAI Agents SDK (``MCPServerStreamableHttp`` + ``OpenAIChatCompletionsModel``);
* ``pydantic-ai`` — Pydantic AI (``MCPToolset`` + ``OpenAIChatModel``);
* :class:`CommandHarness` — any program, with ``{mcp_url}``, ``{prompt_file}``, ``{mcp_config}``,
  ``{base_url}``, ``{model}`` replaced in its arguments.

:func:`make_harness` picks one by name; :mod:`openenv_mcp.rollout.harness_runner` plays the episodes.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio
import httpx

from openenv_mcp.errors import ConfigError

__all__ = [
    "HARNESSES",
    "CommandHarness",
    "Harness",
    "HarnessFailed",
    "Recorder",
    "Run",
    "make_harness",
    "openai_agents",
    "pydantic_ai",
    "steps_from",
]

HARNESSES = {"openai-agents": "openai-agents", "pydantic-ai": "pydantic-ai-slim"}
"""Harness name -> the distribution it needs (``pip install 'openenv-mcp[harness]'``)."""


# -- recording the model traffic ----------------------------------------------------------
class Recorder(httpx.AsyncBaseTransport):
    """An HTTP transport keeping every chat-completions (request, answer) pair that went through it."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.exchanges: list[tuple[dict[str, Any], dict[str, Any]]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if not request.url.path.endswith("/chat/completions"):
            return response
        body = await response.aread()  # decoded: the headers saying otherwise are dropped below
        try:
            self.exchanges.append((json.loads(request.content), json.loads(body)))
        except ValueError:
            pass  # a streamed or non-JSON answer is passed on unrecorded
        headers = [
            (k, v)
            for k, v in response.headers.items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(response.status_code, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def conversation(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, int], int]:
        """(messages, tools, usage, turns) from the last exchange, in chat-completions form."""
        usage: dict[str, int] = {}
        for _, answer in self.exchanges:
            for key, value in (answer.get("usage") or {}).items():
                if isinstance(value, int):
                    usage[key] = usage.get(key, 0) + value
        if not self.exchanges:
            return [], [], usage, 0
        request, answer = self.exchanges[-1]
        messages = list(request.get("messages") or [])
        choices = answer.get("choices") or []
        if choices:
            messages.append(choices[0].get("message") or {})
        return messages, list(request.get("tools") or []), usage, len(self.exchanges)


def steps_from(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of a chat-completions conversation with the text each got back."""
    results = {m.get("tool_call_id"): m.get("content") for m in messages if m.get("role") == "tool"}
    steps: list[dict[str, Any]] = []
    turn = 0
    for message in messages:
        if message.get("role") != "assistant":
            continue
        turn += 1
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            raw = fn.get("arguments") or ""
            try:
                arguments = json.loads(raw) if raw else {}
            except ValueError:
                arguments = None
            text = results.get(call.get("id"))
            if isinstance(text, list):
                text = "\n".join(str(p.get("text", "")) for p in text if isinstance(p, dict))
            steps.append(
                {
                    "index": len(steps),
                    "turn": turn,
                    "tool_call_id": call.get("id"),
                    "name": fn.get("name"),
                    "arguments": arguments,
                    "raw_arguments": raw,
                    "result_text": text,
                    "is_error": isinstance(text, str) and text.lower().startswith("error"),
                }
            )
    return steps


# -- harnesses --------------------------------------------------------------------------
@dataclass
class Run:
    """What one harness run gives back."""

    transcript: Any = None
    stop_reason: str = "harness_stopped"


Harness = Callable[[str, str, str, Recorder], Awaitable[Run]]
"""``harness(mcp_url, prompt, system_prompt, recorder)``."""


def _openai_client(base_url: str, api_key: str | None, timeout: float, recorder: Recorder) -> Any:
    from openai import AsyncOpenAI

    return AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or "not-needed",
        timeout=timeout,
        max_retries=2,
        # the SDK takes a legacy httpx client too (checked at run time); its annotation names only httpx2's
        http_client=httpx.AsyncClient(transport=recorder, timeout=timeout),  # pyright: ignore[reportArgumentType]
    )


def openai_agents(base_url: str, model: str, api_key: str | None, max_steps: int, timeout: float) -> Harness:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
    from agents.exceptions import MaxTurnsExceeded
    from agents.mcp import MCPServerStreamableHttp

    async def run(mcp_url: str, prompt: str, system: str, recorder: Recorder) -> Run:
        client = _openai_client(base_url, api_key, timeout, recorder)
        async with MCPServerStreamableHttp(
            {"url": mcp_url, "timeout": timeout}, name="environment", client_session_timeout_seconds=timeout
        ) as server:
            agent = Agent(
                name="agent",
                instructions=system,
                mcp_servers=[server],
                model=OpenAIChatCompletionsModel(model=model, openai_client=client),
            )
            try:
                result = await Runner.run(
                    agent, prompt, max_turns=max_steps + 1, run_config=RunConfig(tracing_disabled=True)
                )
            except MaxTurnsExceeded:
                return Run(None, "max_steps")
            return Run(json.loads(json.dumps(result.to_input_list(), default=str)), "harness_stopped")

    return run


def pydantic_ai(base_url: str, model: str, api_key: str | None, max_steps: int, timeout: float) -> Harness:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    async def run(mcp_url: str, prompt: str, system: str, recorder: Recorder) -> Run:
        client = _openai_client(base_url, api_key, timeout, recorder)
        agent = Agent(
            OpenAIChatModel(model, provider=OpenAIProvider(openai_client=client)),
            toolsets=[MCPToolset(mcp_url)],
            instructions=system,
        )
        try:
            async with agent:
                result = await agent.run(
                    prompt, usage_limits=UsageLimits(request_limit=max_steps + 1, tool_calls_limit=max_steps)
                )
        except UsageLimitExceeded:
            return Run(None, "max_steps")
        return Run(ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json"), "harness_stopped")

    return run


class CommandHarness:
    """Any program: ``argv`` with ``{mcp_url}``, ``{prompt_file}``, ``{mcp_config}``, ``{base_url}``,
    ``{model}`` replaced; it also gets ``OPENENV_MCP_URL``, ``OPENAI_BASE_URL``, ``OPENAI_MODEL`` (and
    ``OPENAI_API_KEY`` when given) in its environment. Its output is the transcript."""

    FIELDS = ("mcp_url", "prompt_file", "mcp_config", "base_url", "model")

    def __init__(self, command: str, base_url: str, model: str, api_key: str | None) -> None:
        self.argv = shlex.split(command)
        if not self.argv:
            raise ConfigError(
                "--harness-cmd is empty; give a command, e.g. 'my-agent --mcp {mcp_url} --task {prompt_file}'"
            )
        if not any("{mcp_url}" in a or "{mcp_config}" in a for a in self.argv):
            raise ConfigError("--harness-cmd must pass the episode's MCP address: put {mcp_url} or {mcp_config} in it")
        self.base_url, self.model, self.api_key = base_url, model, api_key

    async def __call__(self, mcp_url: str, prompt: str, system: str, recorder: Recorder) -> Run:
        with tempfile.TemporaryDirectory(prefix="openenv-mcp-harness-") as folder:
            prompt_file = Path(folder) / "prompt.md"
            prompt_file.write_text(prompt)
            config = Path(folder) / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {"environment": {"type": "http", "url": mcp_url}}}))
            values = {
                "mcp_url": mcp_url,
                "prompt_file": str(prompt_file),
                "mcp_config": str(config),
                "base_url": self.base_url,
                "model": self.model,
            }
            argv = [_fill(a, values) for a in self.argv]
            env = {
                **os.environ,
                "OPENENV_MCP_URL": mcp_url,
                "OPENAI_BASE_URL": self.base_url,
                "OPENAI_MODEL": self.model,
            }
            if self.api_key:
                env["OPENAI_API_KEY"] = self.api_key
            try:
                proc = await anyio.open_process(
                    argv, env=env, cwd=folder, start_new_session=True, stdin=subprocess.DEVNULL
                )
            except OSError as e:
                raise ConfigError(f"--harness-cmd could not start {argv[0]!r}: {e}") from e
            out, err = bytearray(), bytearray()
            code: int | None = None
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_drain, proc.stdout, out)
                    tg.start_soon(_drain, proc.stderr, err)
                    code = await proc.wait()
            finally:
                with anyio.CancelScope(shield=True):
                    _kill_group(proc.pid)
                    await proc.aclose()
        assert code is not None  # the task group re-raises any failure, so proc.wait() returned
        transcript = {"argv": argv, "exit_code": code, "stdout": _tail(out), "stderr": _tail(err)}
        if code != 0:
            raise HarnessFailed(f"the harness command exited with status {code}: {_tail(err, 500).strip()}", transcript)
        return Run(transcript, "harness_stopped")


class HarnessFailed(Exception):
    def __init__(self, message: str, transcript: Any = None) -> None:
        super().__init__(message)
        self.transcript = transcript


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


async def _drain(stream: Any, into: bytearray, limit: int = 1_000_000) -> None:
    async for chunk in stream:
        if len(into) < limit:
            into.extend(chunk[: limit - len(into)])


def _tail(data: bytearray, limit: int = 64_000) -> str:
    text = data.decode("utf-8", "replace")
    return text if len(text) <= limit else f"[... {len(text) - limit} characters cut ...]" + text[-limit:]


def _kill_group(pid: int) -> None:
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)  # the harness's whole process group (it ran in its own session)
    except (ProcessLookupError, PermissionError):
        pass


def make_harness(
    name: str | None,
    command: str | None,
    *,
    base_url: str,
    model: str,
    api_key: str | None,
    max_steps: int,
    timeout: float,
) -> tuple[Harness, dict[str, Any]]:
    """(the harness, ``{"name", "version"}``) for ``--harness NAME`` or ``--harness-cmd CMD``."""
    if (name is None) == (command is None):
        raise ConfigError("give exactly one of --harness NAME or --harness-cmd 'CMD ... {mcp_url} ...'")
    if command is not None:
        return CommandHarness(command, base_url, model, api_key), {
            "name": "command",
            "version": None,
            "command": command,
        }
    if name not in HARNESSES:
        raise ConfigError(f"unknown harness {name!r}; known: {', '.join(HARNESSES)} (or --harness-cmd)")
    try:
        release = version(HARNESSES[name])
        build = openai_agents if name == "openai-agents" else pydantic_ai
        harness = build(base_url, model, api_key, max_steps, timeout)
    except (PackageNotFoundError, ImportError) as e:
        raise ConfigError(
            f"harness {name!r} needs {HARNESSES[name]!r}: pip install 'openenv-mcp[harness]' ({e})"
        ) from e
    return harness, {"name": name, "version": release}

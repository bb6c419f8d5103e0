"""The MCP face of an environment: one MCP server over the composed tools.

``build_server(resolve)`` returns an official-SDK low-level ``Server`` whose
handlers find the request's episode with ``resolve(ctx)`` and then go through
:meth:`Episode.act` (tools) or the episode's resource and prompt routes. Any
transport the SDK offers can carry it: in-memory, stdio, streamable HTTP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server import Server
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListToolsResult,
    Prompt,
    PromptMessage,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
)

from ..core.codeact import RUN_CODE
from ..core.episode import Episode
from ..errors import EpisodeEnded
from ..isolation.inprocess import error_result
from ..isolation.interpreter import CODE_LIMIT
from ..types import CallTool, RunCode

__all__ = ["EPISODE_ENDED_MESSAGE", "TASK_PROMPT", "TASK_URI", "build_server", "episode_server"]

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002

EPISODE_ENDED_MESSAGE = "This episode has ended; no further tool calls are accepted."
"""What an MCP client sees when it calls a tool after the episode ended. It does
not mention the control plane: the agent must not learn it can reset."""

Resolver = Callable[[Any], Awaitable[Episode]]

TASK_PROMPT = "task"
"""Name of the prompt holding a simulation episode's task (what the agent is asked to do)."""
TASK_URI = "openenv://episode/task"
"""Resource holding a simulation episode's public task as JSON (``id``, ``prompt``, public ``data``)."""


def _offers_task(episode: Episode) -> bool:
    """Only a simulation episode has a task to offer; production serves the user's own request."""
    return episode.env.mode == "sim"


def _task_prompt(episode: Episode) -> Prompt:
    return Prompt(
        name=TASK_PROMPT,
        title="Task of this episode",
        description=f"What to do in this {episode.env.name} episode (task {episode.public_task.id}).",
    )


def _task_resource(episode: Episode) -> Resource:
    return Resource(
        uri=TASK_URI,
        name="task",
        title="Task of this episode",
        mime_type="application/json",
        description="The episode's task: id, prompt and public data (never grader-only fields).",
    )


def _task_json(episode: Episode) -> str:
    # public_task already lacks ``answer`` and the environment's private data keys (Task.public)
    return episode.public_task.model_dump_json(include={"id", "prompt", "data"})


def build_server(name: str, resolve: Resolver, *, version: str = "", instructions: str | None = None) -> Server:
    """An MCP server whose every request is served by the episode ``resolve(ctx)`` names."""

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        episode = await resolve(ctx)
        return ListToolsResult(tools=episode.mcp_tools)

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        episode = await resolve(ctx)
        arguments = params.arguments or {}
        if params.name == RUN_CODE and episode.env.spec.codeact:
            code = arguments.get("code")
            if not isinstance(code, str) or set(arguments) != {"code"}:
                return error_result("run_code takes one argument, 'code' (a string of Python source)")
            if len(code) > CODE_LIMIT:
                return error_result(f"run_code: the code is {len(code)} characters, over the {CODE_LIMIT} limit")
            action: CallTool | RunCode = RunCode.model_construct(code=code)
        else:
            action = CallTool.model_construct(name=params.name, arguments=arguments)
        try:
            obs = await episode.act(action)
        except EpisodeEnded:
            return error_result(EPISODE_ENDED_MESSAGE)
        assert obs.result is not None  # a CallTool step always carries its result
        return obs.result

    async def list_resources(ctx: Any, params: Any) -> ListResourcesResult:
        episode = await resolve(ctx)
        own = [_task_resource(episode)] if _offers_task(episode) else []
        return ListResourcesResult(resources=[*own, *await episode.list_resources()])

    async def read_resource(ctx: Any, params: Any) -> ReadResourceResult:
        uri = str(params.uri)
        episode = await resolve(ctx)
        if uri == TASK_URI and _offers_task(episode):
            return ReadResourceResult(
                contents=[TextResourceContents(uri=TASK_URI, mime_type="application/json", text=_task_json(episode))]
            )
        try:
            return await episode.read_resource(uri)
        except KeyError:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}", data={"uri": uri}) from None

    async def list_prompts(ctx: Any, params: Any) -> ListPromptsResult:
        episode = await resolve(ctx)
        own = [_task_prompt(episode)] if _offers_task(episode) else []
        return ListPromptsResult(prompts=[*own, *(p for p in await episode.list_prompts() if p.name != TASK_PROMPT)])

    async def get_prompt(ctx: Any, params: Any) -> GetPromptResult:
        episode = await resolve(ctx)
        if params.name == TASK_PROMPT and _offers_task(episode):
            return GetPromptResult(
                description=_task_prompt(episode).description,
                messages=[
                    PromptMessage(role="user", content=TextContent(type="text", text=episode.public_task.prompt))
                ],
            )
        try:
            return await episode.get_prompt(params.name, params.arguments)
        except KeyError:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {params.name!r}") from None

    return Server(
        name,
        version=version,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def episode_server(episode: Episode) -> Server:
    """An MCP server bound to one episode (in-memory clients, stdio, attach)."""

    async def resolve(ctx: Any) -> Episode:
        return episode

    return build_server(episode.env.name, resolve, instructions=episode.env.spec.description or None)

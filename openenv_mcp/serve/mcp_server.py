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
    ReadResourceResult,
)

from ..core.episode import Episode
from ..errors import EpisodeEnded
from ..isolation.inprocess import error_result
from ..types import CallTool

__all__ = ["EPISODE_ENDED_MESSAGE", "build_server", "episode_server"]

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002

EPISODE_ENDED_MESSAGE = "This episode has ended; no further tool calls are accepted."
"""What an MCP client sees when it calls a tool after the episode ended. It does
not mention the control plane: the agent must not learn it can reset."""

Resolver = Callable[[Any], Awaitable[Episode]]


def build_server(name: str, resolve: Resolver, *, version: str = "", instructions: str | None = None) -> Server:
    """An MCP server whose every request is served by the episode ``resolve(ctx)`` names."""

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        episode = await resolve(ctx)
        return ListToolsResult(tools=episode.tools)

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        episode = await resolve(ctx)
        try:
            obs = await episode.act(CallTool.model_construct(name=params.name, arguments=params.arguments or {}))
        except EpisodeEnded:
            return error_result(EPISODE_ENDED_MESSAGE)
        assert obs.result is not None  # a CallTool step always carries its result
        return obs.result

    async def list_resources(ctx: Any, params: Any) -> ListResourcesResult:
        return ListResourcesResult(resources=await (await resolve(ctx)).list_resources())

    async def read_resource(ctx: Any, params: Any) -> ReadResourceResult:
        uri = str(params.uri)
        try:
            return await (await resolve(ctx)).read_resource(uri)
        except KeyError:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}", data={"uri": uri}) from None

    async def list_prompts(ctx: Any, params: Any) -> ListPromptsResult:
        return ListPromptsResult(prompts=await (await resolve(ctx)).list_prompts())

    async def get_prompt(ctx: Any, params: Any) -> GetPromptResult:
        try:
            return await (await resolve(ctx)).get_prompt(params.name, params.arguments)
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

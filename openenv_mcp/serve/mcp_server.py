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
    CompleteResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    PromptMessage,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
    ToolsCapability,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from openenv_mcp.core.codeact import RUN_CODE
from openenv_mcp.core.episode import Episode
from openenv_mcp.definitions.surface import Surface
from openenv_mcp.errors import EpisodeEnded, ToolServerError
from openenv_mcp.isolation.boundaries.inprocess import error_result
from openenv_mcp.isolation.codeact.interpreter import CODE_LIMIT
from openenv_mcp.types import CallTool, RunCode

__all__ = ["EPISODE_ENDED_MESSAGE", "TASK_PROMPT", "TASK_URI", "build_server", "episode_server"]

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002

EPISODE_ENDED_MESSAGE = "This episode has ended; no further tool calls are accepted."
"""What an MCP client sees when it calls a tool after the episode ended. It does
not mention the control plane: the agent must not learn it can reset."""

Resolver = Callable[[Any], Awaitable[Episode]]


def _server_error(e: ToolServerError) -> MCPError:
    """A wrapped server's own JSON-RPC error, passed through (code, bounded message, small data)."""
    return MCPError(code=e.rpc_code, message=e.message, data=e.data)


class FaceServer(Server):
    """The SDK's low-level server, declaring what the environment's tool servers declared.

    ``instructions`` and the optional capabilities (``completions``, ``tools.listChanged``)
    come from ``surface()`` (:class:`~openenv_mcp.definitions.surface.Surface`, ``None`` until the
    first episode started): only what the face really passes through is advertised."""

    def __init__(self, name: str, surface: Callable[[], Surface | None], **kwargs: Any) -> None:
        self._surface = surface
        self._base_instructions: str | None = None
        super().__init__(name, **kwargs)

    @property
    def instructions(self) -> str | None:  # pyright: ignore[reportIncompatibleVariableOverride]
        surface = self._surface()
        return surface.instructions if surface is not None else self._base_instructions

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        self._base_instructions = value

    def get_capabilities(self, *args: Any, protocol_version: str | None = None, **kwargs: Any) -> Any:
        caps = super().get_capabilities(*args, protocol_version=protocol_version, **kwargs)
        surface = self._surface()
        update: dict[str, Any] = {}
        if surface is None or not surface.completions:
            update["completions"] = None
        if protocol_version not in MODERN_PROTOCOL_VERSIONS and caps.tools is not None:
            update["tools"] = ToolsCapability(list_changed=bool(surface and surface.tools_list_changed))
        return caps.model_copy(update=update)


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


def build_server(
    name: str,
    resolve: Resolver,
    *,
    version: str = "",
    instructions: str | None = None,
    surface: Callable[[], Surface | None] = lambda: None,
) -> Server:
    """An MCP server whose every request is served by the episode ``resolve(ctx)`` names.

    ``surface()`` gives what the wrapped tool servers declared (instructions, capabilities);
    ``instructions`` is used while it is ``None``."""

    return FaceServer(
        name,
        surface,
        version=version,
        instructions=instructions,
        on_list_tools=_on_episode(resolve, _list_tools),
        on_call_tool=_on_episode(resolve, _call_tool),
        on_list_resources=_on_episode(resolve, _list_resources),
        on_list_resource_templates=_on_episode(resolve, _list_resource_templates),
        on_read_resource=_on_episode(resolve, _read_resource),
        on_list_prompts=_on_episode(resolve, _list_prompts),
        on_get_prompt=_on_episode(resolve, _get_prompt),
        on_completion=_on_episode(resolve, _complete),
    )


def _on_episode(resolve: Resolver, handler: Callable[[Episode, Any], Awaitable[Any]]) -> Callable[..., Any]:
    """An SDK request handler: ``handler(episode, params)`` on the episode ``resolve(ctx)`` names."""

    async def on_request(ctx: Any, params: Any) -> Any:
        return await handler(await resolve(ctx), params)

    return on_request


async def _list_tools(episode: Episode, params: Any) -> ListToolsResult:
    await episode.refresh_tools()
    return ListToolsResult(tools=episode.mcp_tools)


async def _call_tool(episode: Episode, params: Any) -> CallToolResult:
    """A tool call through :meth:`Episode.act`; ``run_code`` (CodeAct) takes exactly one string
    argument ``code`` within the size limit, checked before the episode sees it."""
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


async def _list_resources(episode: Episode, params: Any) -> ListResourcesResult:
    own = [_task_resource(episode)] if _offers_task(episode) else []
    return ListResourcesResult(resources=[*own, *await episode.list_resources()])


async def _read_resource(episode: Episode, params: Any) -> ReadResourceResult:
    """The task resource (simulation only), else the wrapped servers' resource; an unknown URI is
    ``RESOURCE_NOT_FOUND``, a server's own error passes through."""
    uri = str(params.uri)
    if uri == TASK_URI and _offers_task(episode):
        return ReadResourceResult(
            contents=[TextResourceContents(uri=TASK_URI, mime_type="application/json", text=_task_json(episode))]
        )
    try:
        return await episode.read_resource(uri)
    except ToolServerError as e:
        raise _server_error(e) from None
    except KeyError:
        raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}", data={"uri": uri}) from None


async def _list_resource_templates(episode: Episode, params: Any) -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(resource_templates=await episode.list_resource_templates())


async def _complete(episode: Episode, params: Any) -> CompleteResult:
    """The wrapped servers' completions; a reference none of them knows completes to nothing."""
    context = params.context.arguments if params.context is not None else None
    argument = {"name": params.argument.name, "value": params.argument.value}
    try:
        return await episode.complete(params.ref, argument, context)
    except ToolServerError as e:
        raise _server_error(e) from None
    except KeyError:
        return CompleteResult.model_validate({"completion": {"values": []}})


async def _list_prompts(episode: Episode, params: Any) -> ListPromptsResult:
    """The task prompt (simulation only) first; a wrapped server's prompt of the same name is hidden."""
    own = [_task_prompt(episode)] if _offers_task(episode) else []
    return ListPromptsResult(prompts=[*own, *(p for p in await episode.list_prompts() if p.name != TASK_PROMPT)])


async def _get_prompt(episode: Episode, params: Any) -> GetPromptResult:
    """The task prompt (simulation only: the task's public prompt as a user message), else the
    wrapped servers' prompt; an unknown name is ``INVALID_PARAMS``."""
    if params.name == TASK_PROMPT and _offers_task(episode):
        return GetPromptResult(
            description=_task_prompt(episode).description,
            messages=[PromptMessage(role="user", content=TextContent(type="text", text=episode.public_task.prompt))],
        )
    try:
        return await episode.get_prompt(params.name, params.arguments)
    except ToolServerError as e:
        raise _server_error(e) from None
    except KeyError:
        raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {params.name!r}") from None


def episode_server(episode: Episode) -> Server:
    """An MCP server bound to one episode (in-memory clients, stdio, attach)."""

    async def resolve(ctx: Any) -> Episode:
        if not listening:  # the standalone channel of this one connection hears tool-list changes
            listening.append(ctx.session.send_tool_list_changed)
            episode.tool_listeners.add(listening[0])
        return episode

    listening: list[Any] = []
    return build_server(
        episode.env.name, resolve, instructions=episode.env.spec.description or None, surface=episode.surface
    )

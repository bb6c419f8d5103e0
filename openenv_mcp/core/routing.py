"""An episode's routes to its tool servers.

:meth:`Routes.compose` builds the tool list an episode exposes from every server's own (a server's
namespace prefixes its names; control-plane names and duplicates are refused) and remembers where
each exposed tool and prompt goes. Resources, resource templates and completions are routed to the
server that lists them.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from mcp.types import (
    CompleteResult,
    GetPromptResult,
    Prompt,
    PromptReference,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)

from openenv_mcp.core.arguments import ArgumentValidator, validator_for
from openenv_mcp.errors import ToolNameError, ToolServerError
from openenv_mcp.isolation import Connection

__all__ = ["RESERVED_TOOL_NAMES", "Routes", "task_required_message"]

RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})
"""Control-plane names: never a tool, whatever a tool server calls its tools."""


def task_required_message(name: str) -> str:
    """The error result of a tool whose server requires MCP task-augmented execution."""
    return (
        f"Tool {name!r} requires task-augmented execution (its execution.taskSupport is 'required'); "
        "openenv-mcp does not run MCP tasks yet, so this tool cannot be called through the environment"
    )


class Routes:
    """The tool list an episode exposes and where each of its names goes."""

    def __init__(
        self,
        connections: list[Connection],
        tools: list[Tool] | None = None,
        calls: dict[str, tuple[Connection, str, ArgumentValidator]] | None = None,
        prompts: dict[str, tuple[Connection, str]] | None = None,
    ) -> None:
        self.connections = connections
        self.tools: list[Tool] = tools or []
        """The exposed tools (namespaced names)."""
        self.calls = calls or {}
        """Exposed tool name -> (its server, the server's own name for it, its argument validator)."""
        self.prompts = prompts or {}
        """Exposed prompt name -> (its server, the server's own name for it)."""

    @classmethod
    async def compose(cls, connections: list[Connection], reserved: Collection[str]) -> Routes:
        """List every server's tools and prompts; :class:`ToolNameError` on a reserved name or a duplicate."""
        tools: list[Tool] = []
        calls: dict[str, tuple[Connection, str, ArgumentValidator]] = {}
        prompts: dict[str, tuple[Connection, str]] = {}
        for conn in connections:
            prefix = conn.spec.prefix
            for tool in await conn.list_tools():
                name = f"{prefix}_{tool.name}" if prefix else tool.name
                if name.lower() in reserved:
                    raise ToolNameError(
                        f"tool server {conn.spec.name!r} offers a tool named {tool.name!r}, which would be "
                        f"exposed as {name!r}: control-plane names ({', '.join(sorted(reserved))}) "
                        "can never be tools; give the server a namespace or rename the tool"
                    )
                if name in calls:
                    other = calls[name][0].spec.name
                    raise ToolNameError(
                        f"duplicate tool name {name!r} (from tool servers {other!r} and {conn.spec.name!r}); "
                        "give them distinct namespaces"
                    )
                calls[name] = (conn, tool.name, validator_for(tool.input_schema))
                tools.append(tool if name == tool.name else tool.model_copy(update={"name": name}))
            for prompt in await conn.list_prompts():
                pname = f"{prefix}_{prompt.name}" if prefix else prompt.name
                prompts.setdefault(pname, (conn, prompt.name))  # the first server keeps a shared name
        return cls(connections, tools, calls, prompts)

    def task_required(self, name: str) -> bool:
        """Whether the tool's server requires MCP task-augmented execution for it."""
        tool = next((t for t in self.tools if t.name == name), None)
        execution = getattr(tool, "execution", None)
        return getattr(execution, "task_support", None) == "required"

    # -- resources, prompts, completions (MCP face) ----------------------------------
    async def list_resources(self) -> list[Resource]:
        out: list[Resource] = []
        for conn in self.connections:
            out.extend(await conn.list_resources())
        return out

    async def read_resource(self, uri: str) -> ReadResourceResult:
        """Read ``uri`` from the server listing it, else from the first server that can
        (templates); a server's own error (:class:`ToolServerError`) passes through."""
        for conn in self.connections:
            if any(str(r.uri) == uri for r in await conn.list_resources()):
                return await conn.read_resource(uri)
        first: ToolServerError | None = None
        for conn in self.connections:  # templates: let each server try
            try:
                return await conn.read_resource(uri)
            except KeyError:
                continue
            except ToolServerError as e:
                first = first or e
        if first is not None:
            raise first
        raise KeyError(uri)

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        out: list[ResourceTemplate] = []
        for conn in self.connections:
            out.extend(await conn.list_resource_templates())
        return out

    async def complete(self, ref: Any, argument: dict[str, str], context: dict[str, str] | None) -> CompleteResult:
        """``completion/complete``, routed to the server owning the prompt or resource template."""
        if isinstance(ref, PromptReference):
            route = self.prompts.get(ref.name)
            if route is None:
                raise KeyError(ref.name)
            return await route[0].complete(ref.model_copy(update={"name": route[1]}), argument, context)
        for conn in self.connections:
            if any(t.uri_template == ref.uri for t in await conn.list_resource_templates()):
                return await conn.complete(ref, argument, context)
        raise KeyError(ref.uri)

    async def list_prompts(self) -> list[Prompt]:
        """Every server's prompts as it lists them now (a prompt added after the start shows,
        one removed is gone), namespaced; the routes follow."""
        routes: dict[str, tuple[Connection, str]] = {}
        out: list[Prompt] = []
        for conn in self.connections:
            prefix = conn.spec.prefix
            for prompt in await conn.list_prompts():
                name = f"{prefix}_{prompt.name}" if prefix else prompt.name
                if name in routes:  # two servers' prompts composed to one name: the first keeps it
                    continue
                routes[name] = (conn, prompt.name)
                out.append(prompt if name == prompt.name else prompt.model_copy(update={"name": name}))
        self.prompts = routes
        return out

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
        route = self.prompts.get(name)
        if route is None:  # a prompt the server added since the list was composed
            await self.list_prompts()
            route = self.prompts.get(name)
        if route is None:
            single = self.connections[0] if len(self.connections) == 1 else None
            if single is not None and not single.spec.prefix:  # one server, no namespace: its own error
                return await single.get_prompt(name, arguments)
            raise KeyError(name)
        return await route[0].get_prompt(route[1], arguments)

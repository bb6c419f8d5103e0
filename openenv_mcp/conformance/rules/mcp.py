"""MCP rules: lifecycle, listing, tools/call semantics, content, control-plane names.

They speak to the subject's MCP face with the official Python SDK client, so
they apply to any MCP server, openenv-mcp or not.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import warnings
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
from mcp.shared.exceptions import MCPError
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from openenv_mcp.conformance.argsgen import generate_calls, violations
from openenv_mcp.conformance.base import (
    Context,
    Failed,
    Skipped,
    call_tool_as_sent,
    fail_if,
    leaf,
    list_all_tools,
    rule,
)
from openenv_mcp.core.routing import RESERVED_TOOL_NAMES
from openenv_mcp.errors import OpenEnvError, ToolNameError
from openenv_mcp.types import CallTool

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
"""MCP 2025-11-25 tool names: 1-128 characters of A-Z a-z 0-9 _ - . (case-sensitive)."""
PORTABLE_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
"""What common LLM function-calling APIs accept."""
NO_SUCH_TOOL = "openenv_conformance_no_such_tool"
LATEST_HANDSHAKE = HANDSHAKE_PROTOCOL_VERSIONS[-1]
MAX_ITEMS = 20
PER_SESSION = 4
"""Calls per fresh episode in the error rules: below any sensible max_steps, so no call meets a
truncated episode (whose "episode has ended" error would pass the rule vacuously)."""


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _result_text(result: CallToolResult) -> str:
    return " ".join(getattr(c, "text", f"<{c.type}>") for c in result.content)


# -- lifecycle ---------------------------------------------------------------------
@rule(
    "mcp.handshake", "error", "initialize answers the requested protocol version, server info and the tools capability"
)
async def check_handshake(ctx: Context) -> None:
    try:
        async with ctx.subject.mcp(mode="legacy") as client:
            version = client.protocol_version
            info = client.server_info
            caps = client.server_capabilities
    except MCPError as e:
        raise Failed(f"initialize failed with JSON-RPC error {e.error.code}: {e.error.message}") from e
    except OpenEnvError as e:
        raise Failed(f"the environment could not start an episode to serve: {leaf(e)}") from e
    except Exception as e:
        raise Failed(f"initialize failed: {leaf(e)}{await _http_detail(ctx)}") from e
    problems = []
    if version not in HANDSHAKE_PROTOCOL_VERSIONS:
        problems.append(
            f"initialize answered protocolVersion {version!r}, not one of {list(HANDSHAKE_PROTOCOL_VERSIONS)}"
        )
    elif version != LATEST_HANDSHAKE:
        problems.append(
            f"initialize answered protocolVersion {version!r} although the client asked for {LATEST_HANDSHAKE!r}"
        )
    if info is None or not info.name:
        problems.append(f"initialize answered serverInfo {info!r}: a name is required")
    if caps is None or caps.tools is None:
        problems.append("initialize answered capabilities without 'tools'")
    fail_if(problems)


async def _http_detail(ctx: Context) -> str:
    """For a URL target: what a plain POST initialize gets (status and body), to say why."""
    url = getattr(ctx.subject, "url", None)
    if not url:
        return ""
    import httpx

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "conformance", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", **(getattr(ctx.subject, "headers", None) or {})}
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            response = await http.post(url, json=body, headers=headers)
    except httpx.HTTPError as e:
        return f" (POST {url}: {type(e).__name__}: {e})"
    if response.status_code < 400:
        return ""
    return f" (POST {url} answered HTTP {response.status_code}: {_short(response.text, 200)})"


@rule("mcp.discover", "warning", "the stateless 2026-07-28 generation (server/discover) is supported")
async def check_discover(ctx: Context) -> None:
    modern = MODERN_PROTOCOL_VERSIONS[-1]
    async with ctx.subject.mcp(mode="auto") as client:
        version = client.protocol_version
        if version not in MODERN_PROTOCOL_VERSIONS:
            raise Failed(
                f"server/discover was not answered: the client fell back to initialize and "
                f"negotiated {version!r} instead of {modern!r}"
            )
        await client.list_tools()


@rule("mcp.ping", "error", "ping is answered with an empty result")
async def check_ping(ctx: Context) -> None:
    async with ctx.subject.mcp(mode="legacy") as client:
        try:
            with warnings.catch_warnings():  # ping is legacy-only in the SDK; this is a legacy session
                warnings.simplefilter("ignore")
                result = await client.send_ping()
        except MCPError as e:
            raise Failed(f"ping answered JSON-RPC error {e.error.code}: {e.error.message}") from e
    extra = result.model_dump(exclude_none=True, exclude={"meta", "result_type"})
    if extra:
        raise Failed(f"ping answered {extra!r}; expected an empty result")


# -- listing -----------------------------------------------------------------------
@rule("tools.list", "error", "tools/list answers every page with uniquely named tools")
async def check_tools_list(ctx: Context) -> None:
    async with ctx.subject.mcp() as client:
        try:
            tools = await list_all_tools(client)
        except MCPError as e:
            raise Failed(f"tools/list answered JSON-RPC error {e.error.code}: {e.error.message}") from e
    ctx.cache["tools"] = tools
    if not tools:
        raise Failed("tools/list returned no tools")
    names = [t.name for t in tools]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise Failed(f"tools/list returned duplicate tool names {dup}")


def _schema_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return f"is {type(schema).__name__}, expected a JSON object"
    if schema.get("type") != "object":
        return f"has type {schema.get('type')!r}, expected 'object' at the root"
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        return f"is not a valid JSON Schema ({cls.__name__}): {e.message}" + (f" at '{where}'" if where else "")
    return None


@rule(
    "tools.schema", "error", "every inputSchema/outputSchema is a valid JSON Schema (2020-12 by default) of type object"
)
async def check_tools_schema(ctx: Context) -> None:
    problems = []
    for tool in await ctx.tools():
        if (p := _schema_problem(tool.input_schema)) is not None:
            problems.append(f"tools/list: tool {tool.name!r} inputSchema {p}")
        if tool.output_schema is not None and (p := _schema_problem(tool.output_schema)) is not None:
            problems.append(f"tools/list: tool {tool.name!r} outputSchema {p}")
    fail_if(problems)


@rule("tools.names", "error", "tool names follow the MCP format: 1-128 of A-Z a-z 0-9 _ - .")
async def check_tool_names(ctx: Context) -> None:
    fail_if(
        [
            f"tools/list: tool name {t.name!r} does not match [A-Za-z0-9_.-]{{1,128}} (MCP 2025-11-25)"
            for t in await ctx.tools()
            if not TOOL_NAME.match(t.name)
        ]
    )


@rule("tools.names_portable", "warning", "tool names are accepted by common LLM function-calling APIs (<= 64, no dots)")
async def check_tool_names_portable(ctx: Context) -> None:
    fail_if(
        [
            f"tools/list: tool name {t.name!r} is not accepted by common function-calling APIs ([A-Za-z0-9_-]{{1,64}})"
            for t in await ctx.tools()
            if TOOL_NAME.match(t.name) and not PORTABLE_NAME.match(t.name)
        ]
    )


@rule("tools.descriptions", "warning", "every tool has a description")
async def check_tool_descriptions(ctx: Context) -> None:
    fail_if(
        [
            f"tools/list: tool {t.name!r} has description {t.description!r}"
            for t in await ctx.tools()
            if not (t.description or "").strip()
        ]
    )


@rule("control_plane.hidden", "error", "control-plane names (reset, step, state, close) are never tools")
async def check_control_plane_hidden(ctx: Context) -> None:
    try:
        await ctx.tools()
    except Exception as e:
        error = leaf(e)
        if isinstance(error, ToolNameError):  # openenv-mcp refused the tool list: that is this rule's failure
            raise Failed(str(error)) from e
        raise
    fail_if(
        [
            f"tools/list exposes {t.name!r}: control-plane names ({', '.join(sorted(RESERVED_TOOL_NAMES))}) "
            "must never be tools, an agent must not learn it can reset"
            for t in await ctx.tools()
            if t.name.lower() in RESERVED_TOOL_NAMES
        ]
    )


def _check_blocks(where: str, blocks: list[Any], problems: list[str]) -> None:
    for i, block in enumerate(blocks):
        at = f"{where} content[{i}]"
        if isinstance(block, TextContent):
            if not isinstance(block.text, str):
                problems.append(f"{at} text is {type(block.text).__name__}")
        elif isinstance(block, (ImageContent, AudioContent)):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            if not (block.mime_type or "").startswith(f"{kind}/"):
                problems.append(f"{at} {kind} has mimeType {block.mime_type!r}, expected '{kind}/...'")
            try:
                base64.b64decode(block.data, validate=True)
            except (binascii.Error, ValueError):
                problems.append(f"{at} {kind} data is not base64: {_short(block.data, 40)!r}")
        elif isinstance(block, EmbeddedResource):
            res = block.resource
            if isinstance(res, BlobResourceContents):
                try:
                    base64.b64decode(res.blob, validate=True)
                except (binascii.Error, ValueError):
                    problems.append(f"{at} embedded resource blob is not base64")
        elif isinstance(block, ResourceLink):
            if not str(block.uri):
                problems.append(f"{at} resource_link has no uri")
        else:
            problems.append(
                f"{at} has type {getattr(block, 'type', type(block).__name__)!r}, "
                "not one of text, image, audio, resource_link, resource"
            )


# -- resources and prompts -------------------------------------------------------
@rule("resources.list", "error", "resources/list and resources/read answer correctly where resources are offered")
async def check_resources(ctx: Context) -> None:
    async with ctx.subject.mcp(mode="legacy") as client:
        if client.server_capabilities.resources is None:
            raise Skipped("the server declares no resources capability")
        try:
            resources = (await client.list_resources()).resources
        except MCPError as e:
            raise Failed(f"resources/list answered JSON-RPC error {e.error.code}: {e.error.message}") from e
        problems: list[str] = []
        for res in resources[:MAX_ITEMS]:
            uri = str(res.uri)
            if not res.name:
                problems.append(f"resources/list: resource {uri!r} has no name")
            try:
                read = await client.read_resource(uri)
            except MCPError as e:
                problems.append(f"resources/read {uri!r} answered JSON-RPC error {e.error.code}: {e.error.message}")
                continue
            if not read.contents:
                problems.append(f"resources/read {uri!r} returned no contents")
            for c in read.contents:
                if getattr(c, "text", None) is None and getattr(c, "blob", None) is None:
                    problems.append(f"resources/read {uri!r} returned contents without text or blob")
        bogus = "openenv-conformance://no-such-resource"
        try:
            await client.read_resource(bogus)
            problems.append(f"resources/read {bogus!r} (not listed) succeeded; expected an error (-32002)")
        except MCPError:
            pass
    fail_if(problems)


@rule("prompts.list", "error", "prompts/list and prompts/get answer correctly where prompts are offered")
async def check_prompts(ctx: Context) -> None:
    async with ctx.subject.mcp(mode="legacy") as client:
        if client.server_capabilities.prompts is None:
            raise Skipped("the server declares no prompts capability")
        try:
            prompts = (await client.list_prompts()).prompts
        except MCPError as e:
            raise Failed(f"prompts/list answered JSON-RPC error {e.error.code}: {e.error.message}") from e
        problems: list[str] = []
        for prompt in prompts[:MAX_ITEMS]:
            args = {a.name: prompt_argument(a.description) for a in (prompt.arguments or []) if a.required}
            try:
                got = await client.get_prompt(prompt.name, args)
            except MCPError as e:
                if not prompt.arguments:  # nothing to reject: a listed prompt must render
                    problems.append(
                        f"prompts/get {prompt.name!r} {args} answered JSON-RPC error {e.error.code}: {e.error.message}"
                    )
                # else: the server checked the values it was given and refused them with a clean
                # JSON-RPC error (the values it wants may be undeclared): that is correct behaviour
                continue
            for i, message in enumerate(got.messages):
                if message.role not in ("user", "assistant"):
                    problems.append(f"prompts/get {prompt.name!r} messages[{i}] has role {message.role!r}")
                _check_blocks(f"prompts/get {prompt.name!r} messages[{i}]", [message.content], problems)
        try:
            await client.get_prompt("openenv_conformance_no_such_prompt", {})
            problems.append(
                "prompts/get 'openenv_conformance_no_such_prompt' (not listed) succeeded; expected an error (-32602)"
            )
        except MCPError:
            pass
    fail_if(problems)


_SCHEMA_NOTE = re.compile(r"JSON schema: (\{.*\})\. Encode non-string values as JSON", re.S)
"""How FastMCP declares a typed prompt argument in its description."""


def prompt_argument(description: str | None) -> str:
    """A value for a required prompt argument: one valid for the JSON Schema its description
    declares (FastMCP's ``Provide a value matching the following JSON schema: ...``), JSON-encoded
    unless a string; else ``"conformance"``."""
    import random

    from openenv_mcp.conformance.argsgen import generate_value

    found = _SCHEMA_NOTE.search(description or "")
    if found:
        try:
            schema = json.loads(found.group(1))
        except json.JSONDecodeError:
            schema = None
        if isinstance(schema, dict):
            value = generate_value(schema, random.Random(0), words=["conformance"])
            return value if isinstance(value, str) else json.dumps(value)
    return "conformance"


# -- tools/call semantics ----------------------------------------------------------
@rule("call.unknown_tool", "error", "calling an unknown tool is an error (JSON-RPC error or isError result)")
async def check_unknown_tool(ctx: Context) -> None:
    async with ctx.subject.mcp(fresh=True) as client:
        try:
            result = await client.call_tool(NO_SUCH_TOOL, {})
        except MCPError:
            return
    if not result.is_error:
        raise Failed(
            f"tools/call {NO_SUCH_TOOL!r} returned isError=false with content "
            f"{_short(_result_text(result))!r}; an unknown tool must be an error"
        )


@rule("call.invalid_arguments", "error", "arguments that violate a tool's inputSchema are answered with an error")
async def check_invalid_arguments(ctx: Context) -> None:
    probes: list[tuple[Tool, str, dict[str, Any]]] = []
    for tool in await ctx.tools():
        for what, args in violations(tool)[:2]:
            probes.append((tool, what, args))
    if not probes:
        raise Skipped("no tool declares required or typed properties")
    problems = []
    probes = probes[:MAX_ITEMS]
    for start in range(0, len(probes), PER_SESSION):  # fresh episodes, a few calls each (never truncated)
        async with ctx.subject.mcp(fresh=True) as client:
            for tool, what, args in probes[start : start + PER_SESSION]:
                try:
                    result = await client.call_tool(tool.name, args)
                except MCPError:
                    continue
                if not result.is_error:
                    problems.append(
                        f"tools/call {tool.name!r} with {what} ({_short(args, 80)}) returned "
                        f"isError=false: {_short(_result_text(result), 80)!r}"
                    )
    fail_if(problems)


@rule("call.content", "error", "tool results carry valid content blocks and structuredContent matching outputSchema")
async def check_content(ctx: Context) -> None:
    tools = {t.name: t for t in await ctx.tools()}
    problems: list[str] = []
    if "episodes" in ctx.subject.capabilities:  # the scripted trajectory where there is one, on its own episode
        handle = await ctx.subject.new_episode(seed=ctx.seed)
        try:
            calls = ctx.subject.trajectory(handle.task) or generate_calls(list(tools.values()), ctx.seed, ctx.calls)
            async with handle.mcp() as client:
                await _call_all(client, calls, tools, problems)
        finally:
            await handle.close()
    else:
        async with ctx.subject.mcp(fresh=True) as client:
            await _call_all(client, generate_calls(list(tools.values()), ctx.seed, ctx.calls), tools, problems)
    fail_if(problems)


async def _call_all(client: Any, calls: list[CallTool], tools: dict[str, Tool], problems: list[str]) -> None:
    """Call each of ``calls``; append what is wrong with each result (one report per tool)."""
    for call in calls:
        if any(f"tools/call {call.name!r}" in p for p in problems):
            continue
        try:
            result = await call_tool_as_sent(client, call.name, call.arguments)
        except MCPError as e:
            problems.append(
                f"tools/call {call.name!r} {_short(call.arguments, 80)} answered JSON-RPC error "
                f"{e.error.code}: {e.error.message}"
            )
            continue
        except Exception as e:  # the SDK client could not parse or validate the result
            problems.append(
                f"tools/call {call.name!r} {_short(call.arguments, 80)}: the official SDK client "
                f"rejected the result: {_short(str(e), 200)}"
            )
            continue
        where = f"tools/call {call.name!r}"
        _check_blocks(where, result.content, problems)
        tool = tools.get(call.name)
        if tool is not None and tool.output_schema and not result.is_error:
            if result.structured_content is None:
                problems.append(f"{where} declares an outputSchema but returned no structuredContent")
            else:
                cls = jsonschema.validators.validator_for(tool.output_schema, default=jsonschema.Draft202012Validator)
                error = jsonschema.exceptions.best_match(cls(tool.output_schema).iter_errors(result.structured_content))
                if error is not None:
                    problems.append(
                        f"{where} structuredContent {_short(result.structured_content, 80)} does not "
                        f"match its outputSchema: {error.message}"
                    )

"""The fixture server of the official MCP conformance suite (``@modelcontextprotocol/conformance``).

Implements the tools, resources and prompts the suite's server scenarios call
(the reference "everything" server's ``test_*`` names), as the scenario texts
specify them. Served through openenv-mcp (``conformance/official-fixture/``)
behind each boundary, it shows that the environment layer is transparent: the
official scenarios pass through it, except those listed with reasons in
``conformance/official-fixture/exceptions.toml``.

Standalone: ``python -m openenv_mcp.tool_servers.conformance_fixture`` (stdio).
"""

from __future__ import annotations

import asyncio
import base64
import json

from fastmcp import Context, FastMCP
from fastmcp.prompts import Message
from fastmcp.resources import ResourceContent, ResourceResult
from fastmcp.tools import Tool
from mcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)

# A 1x1 red PNG and a minimal (silent, 1 sample) WAV.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = base64.b64encode(
    b"RIFF"
    + (38).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little")
    + (2).to_bytes(2, "little")
    + (16).to_bytes(2, "little")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\x00\x00"
).decode()

server = FastMCP(
    "conformance-fixture", instructions="Fixtures of the official MCP conformance suite.", dereference_schemas=False
)  # the suite checks $defs/$ref survive the listing


# -- tools -------------------------------------------------------------------------------
@server.tool
def test_simple_text() -> CallToolResult:
    """Returns simple text."""
    return CallToolResult(content=[TextContent(type="text", text="This is a simple text response for testing.")])


@server.tool
def test_image_content() -> CallToolResult:
    """Returns a 1x1 PNG image."""
    return CallToolResult(content=[ImageContent(type="image", data=PNG, mime_type="image/png")])


@server.tool
def test_audio_content() -> CallToolResult:
    """Returns a tiny WAV clip."""
    return CallToolResult(content=[AudioContent(type="audio", data=WAV, mime_type="audio/wav")])


@server.tool
def test_embedded_resource() -> CallToolResult:
    """Returns an embedded text resource."""
    return CallToolResult(
        content=[
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
                ),
            )
        ]
    )


@server.tool
def test_multiple_content_types() -> CallToolResult:
    """Returns text, an image and an embedded resource."""
    return CallToolResult(
        content=[
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text=json.dumps({"test": "data", "value": 123}),
                ),
            ),
        ]
    )


@server.tool
def test_error_handling() -> CallToolResult:
    """Always fails (an isError result)."""
    return CallToolResult(
        content=[TextContent(type="text", text="This tool intentionally returns an error for testing")], is_error=True
    )


@server.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log messages while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50, 100 of 100."""
    for value in (0, 50, 100):
        await ctx.report_progress(value, 100)
        if value < 100:
            await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


@server.tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's LLM (sampling/createMessage)."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    reply = await ctx.session.create_message([message], max_tokens=100)
    return f"LLM response: {getattr(reply.content, 'text', reply.content)}"


@server.tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email (elicitation/create)."""
    from dataclasses import dataclass

    @dataclass
    class Answer:
        username: str
        email: str

    result = await ctx.elicit(message, response_type=Answer)
    return f"User response: action={result.action}, content={getattr(result, 'data', None)}"


def _json_schema_tool(name: str | None = None, address: dict | None = None) -> str:
    return "ok"


_schema_tool = Tool.from_function(
    _json_schema_tool, name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features"
)
_schema_tool.parameters = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
server.add_tool(_schema_tool)


# -- resources -----------------------------------------------------------------------------
@server.resource("test://static-text", name="static-text", description="A static text resource", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary", name="static-binary", description="A static binary resource (PNG)", mime_type="image/png"
)
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@server.resource(
    "test://watched-resource", name="watched-resource", description="A resource to subscribe to", mime_type="text/plain"
)
def watched_resource() -> str:
    return "Watched resource content."


@server.resource(
    "test://template/{id}/data", name="template-data", description="A resource template", mime_type="application/json"
)
def template_data(id: str) -> ResourceResult:
    body = json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))
    return ResourceResult([ResourceContent(body, mime_type="application/json")])


# -- prompts -------------------------------------------------------------------------------------
@server.prompt(name="test_simple_prompt", description="A simple prompt without arguments")
def test_simple_prompt() -> list[Message]:
    return [Message("This is a simple prompt for testing.")]


@server.prompt(name="test_prompt_with_arguments", description="A prompt with two required arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[Message]:
    return [Message(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@server.prompt(name="test_prompt_with_embedded_resource", description="A prompt embedding a resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
    return [
        Message(
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
                ),
            )
        ),
        Message("Please process the embedded resource above."),
    ]


@server.prompt(name="test_prompt_with_image", description="A prompt with an image")
def test_prompt_with_image() -> list[Message]:
    return [
        Message(ImageContent(type="image", data=PNG, mime_type="image/png")),
        Message("Please analyze the image above."),
    ]

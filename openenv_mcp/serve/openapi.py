"""``GET /openapi.json``, ``/schema`` and ``/metadata``: the server described the way OpenEnv tools read it.

The OpenAPI document lists the HTTP routes the app really has (the control plane's and OpenEnv's
``/reset``, ``/step``, ``/state`` only in simulation: OpenEnv's validator reads the mode from them),
with request and response schemas from the pydantic models in :mod:`openenv_mcp.types`. Routes added
with ``extra_routes`` (the playground) are listed by path and method. ``/ws`` is a WebSocket (not in
OpenAPI); the document's description points to ``docs/protocol.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter
from starlette.routing import BaseRoute, Route

from openenv_mcp.types import Action, Observation, State

if TYPE_CHECKING:
    from openenv_mcp.core.environment import Environment

__all__ = ["OPENENV_HTTP_VERSION", "metadata", "openapi_document", "schemas"]

OPENENV_HTTP_VERSION = "1.0.0"
"""``info.version``: the OpenEnv HTTP API profile these routes implement (``openenv-http/1.x``)."""

_REF = "#/components/schemas/{model}"


def metadata(environment: Environment) -> dict[str, Any]:
    """OpenEnv's ``EnvironmentMetadata``: the environment's name and description."""
    return {
        "name": environment.name,
        "description": environment.spec.description or f"the {environment.name} environment (openenv-mcp)",
        "readme_content": None,
        "version": None,
        "author": None,
        "documentation_url": None,
    }


def schemas() -> dict[str, Any]:
    """OpenEnv's ``SchemaResponse``: self-contained JSON schemas of the action, observation and state."""
    return {
        "action": TypeAdapter(Action).json_schema(),
        "observation": Observation.model_json_schema(mode="serialization"),
        "state": State.model_json_schema(mode="serialization"),
    }


def _components() -> tuple[dict[str, Any], dict[str, Any]]:
    """``(refs, components)``: ``$ref`` schemas of Action/Observation/State and every model they use."""
    components: dict[str, Any] = {}
    refs: dict[str, Any] = {}
    for name, schema in (
        ("Action", TypeAdapter(Action).json_schema(ref_template=_REF)),
        ("Observation", Observation.model_json_schema(ref_template=_REF, mode="serialization")),
        ("State", State.model_json_schema(ref_template=_REF, mode="serialization")),
    ):
        components.update(schema.pop("$defs", {}))
        components[name] = schema
        refs[name] = {"$ref": _REF.format(model=name)}
    return refs, components


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERROR = _json(
    {
        "type": "object",
        "properties": {
            "error": {"type": "object", "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}
        },
    },
    "an error (docs/protocol.md lists the codes)",
)
_KEY = {
    "name": "OpenEnv-Episode-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string"},
    "description": "the episode's trainer key (or 'episode_key' in the body)",
}
_ID = {"name": "episode_id", "in": "path", "required": True, "schema": {"type": "string"}}
_AGENT = {"name": "agent_key", "in": "path", "required": True, "schema": {"type": "string"}}
_OBJ = {"type": "object"}


def _paths(mode: str, refs: dict[str, Any]) -> dict[str, Any]:
    step_result = {
        "type": "object",
        "properties": {
            "observation": _OBJ,
            "reward": {"type": "number"},
            "done": {"type": "boolean"},
            "metadata": _OBJ,
        },
        "required": ["observation", "reward", "done"],
        "description": "OpenEnv's step result: 'observation' is the Observation without reward and "
        "done; done = done or truncated",
    }
    reset_body = {
        "type": "object",
        "properties": {
            "seed": {"type": ["integer", "null"]},
            "task_id": {"type": ["string", "null"]},
            "max_steps": {"type": ["integer", "null"]},
            "call_timeout": {"type": ["number", "null"]},
            "episode_id": {"type": ["string", "null"], "description": "accepted and ignored (ids are the server's)"},
        },
    }
    mcp = {
        "summary": "MCP streamable HTTP (2025-11-25 sessions and stateless 2026-07-28); also OpenEnv's "
        "openenv/session/create|close and tools/list|call with params.session_id",
        "responses": {
            "200": {"description": "a JSON-RPC response (application/json)"},
            "202": {"description": "a notification or response accepted"},
            "400": {"description": "not a valid MCP request"},
        },
    }
    mcp_item = {
        "post": mcp,
        "get": {"summary": "MCP server-to-client stream", "responses": {"200": {"description": "text/event-stream"}}},
        "delete": {"summary": "end an MCP session", "responses": {"200": {"description": "ended"}}},
    }
    paths: dict[str, Any] = {
        "/health": {
            "get": {
                "summary": "liveness, live episodes, tool-server health (never behind the token)",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "status": {"enum": ["healthy", "degraded"]},
                                "env": {"type": "string"},
                                "mode": {"enum": ["sim", "prod"]},
                                "episodes": _OBJ,
                                "tool_servers": {"type": "array"},
                            },
                            "required": ["status"],
                        }
                    )
                },
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus text",
                "responses": {"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}},
            }
        },
        "/metadata": {
            "get": {
                "summary": "the environment's name and description (OpenEnv EnvironmentMetadata)",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
                            "required": ["name", "description"],
                        }
                    )
                },
            }
        },
        "/schema": {
            "get": {
                "summary": "JSON schemas of the action, observation and state",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {"action": _OBJ, "observation": _OBJ, "state": _OBJ},
                            "required": ["action", "observation", "state"],
                        }
                    )
                },
            }
        },
        "/openapi.json": {"get": {"summary": "this document", "responses": {"200": _json(_OBJ)}}},
        "/mcp": mcp_item,
    }
    if mode != "sim":
        return paths
    created = {
        "type": "object",
        "properties": {
            "episode_id": {"type": "string"},
            "episode_key": {"type": "string"},
            "env": {"type": "string"},
            "mcp_path": {"type": "string"},
            "mcp_url": {"type": "string"},
            "observation": refs["Observation"],
        },
    }
    paths.update(
        {
            "/reset": {
                "post": {
                    "summary": "OpenEnv reset: the first observation of a fresh episode (closed after "
                    "the answer; for a lasting episode use /ws or /episodes)",
                    "requestBody": {"required": False, "content": {"application/json": {"schema": reset_body}}},
                    "responses": {"200": _json(step_result), "400": _ERROR, "503": _ERROR},
                }
            },
            "/step": {
                "post": {
                    "summary": "OpenEnv step: one action on a fresh episode (closed after the answer)",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"action": refs["Action"], "timeout_s": {"type": ["number", "null"]}},
                                    "required": ["action"],
                                }
                            }
                        },
                    },
                    "responses": {"200": _json(step_result), "400": _ERROR, "503": _ERROR},
                }
            },
            "/state": {
                "get": {
                    "summary": "OpenEnv state: the state of a fresh episode",
                    "responses": {"200": _json(refs["State"]), "503": _ERROR},
                }
            },
            "/episodes": {
                "post": {
                    "summary": "create an episode",
                    "requestBody": {"required": False, "content": {"application/json": {"schema": reset_body}}},
                    "responses": {"201": _json(created), "400": _ERROR, "503": _ERROR},
                },
                "get": {
                    "summary": "the caller's live episode ids",
                    "parameters": [_KEY],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {"episodes": {"type": "array", "items": {"type": "string"}}},
                            }
                        )
                    },
                },
            },
            "/episodes/{episode_id}": {
                "delete": {
                    "summary": "close an episode",
                    "parameters": [_ID, _KEY],
                    "responses": {"200": _json({"type": "object", "properties": {"closed": {"type": "boolean"}}})},
                }
            },
            "/episodes/{episode_id}/reset": {
                "post": {
                    "summary": "a fresh world under the same id",
                    "parameters": [_ID, _KEY],
                    "requestBody": {"required": False, "content": {"application/json": {"schema": reset_body}}},
                    "responses": {"200": _json(created), "400": _ERROR, "404": _ERROR},
                }
            },
            "/episodes/{episode_id}/step": {
                "post": {
                    "summary": "one action",
                    "parameters": [_ID, _KEY],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"action": refs["Action"]},
                                    "required": ["action"],
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json({"type": "object", "properties": {"observation": refs["Observation"]}}),
                        "400": _ERROR,
                        "404": _ERROR,
                        "409": _ERROR,
                    },
                }
            },
            "/episodes/{episode_id}/fork": {
                "post": {
                    "summary": "n independent copies of the episode as it is now (trainer only; docs/fork.md)",
                    "parameters": [_ID, _KEY],
                    "requestBody": {
                        "required": False,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "n": {"type": "integer", "minimum": 1, "default": 1},
                                        "strategy": {"type": ["string", "null"], "enum": ["snapshot", "replay", None]},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "201": _json({"type": "object", "properties": {"forks": {"type": "array", "items": created}}}),
                        "400": _ERROR,
                        "404": _ERROR,
                        "409": _ERROR,
                        "503": _ERROR,
                    },
                }
            },
            "/episodes/{episode_id}/state": {
                "get": {
                    "summary": "the trainer's view",
                    "parameters": [_ID, _KEY],
                    "responses": {
                        "200": _json({"type": "object", "properties": {"state": refs["State"]}}),
                        "404": _ERROR,
                    },
                }
            },
            "/episodes/{episode_id}/mcp": {k: {**v, "parameters": [_ID, _KEY]} for k, v in mcp_item.items()},
            "/episodes/{episode_id}/{agent_key}/mcp": {
                k: {**v, "parameters": [_ID, _AGENT]} for k, v in mcp_item.items()
            },
        }
    )
    return paths


def openapi_document(environment: Environment, mode: str, routes: Iterable[BaseRoute] = ()) -> dict[str, Any]:
    """The OpenAPI 3.1 document of a served environment (``routes``: the app's, for extra ones)."""
    from openenv_mcp import __version__

    refs, components = _components()
    paths = _paths(mode, refs)
    for route in routes:  # extra routes (the playground): path and methods
        if isinstance(route, Route) and route.path not in paths:
            methods = sorted(m.lower() for m in (route.methods or ()) if m != "HEAD")
            paths[route.path] = {
                m: {"summary": route.name, "responses": {"200": {"description": "OK"}}} for m in methods
            }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"openenv-mcp: {environment.name}",
            "version": OPENENV_HTTP_VERSION,
            "description": (
                f"{environment.spec.description}\n\nServed by openenv-mcp {__version__} in "
                f"{'simulation' if mode == 'sim' else 'production'} mode. The control plane is "
                "also a WebSocket at /ws (not in OpenAPI); see docs/protocol.md and docs/openenv.md."
            ),
            "x-openenv-mcp-version": __version__,
        },
        "paths": paths,
        "components": {"schemas": components},
    }

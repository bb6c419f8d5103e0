"""Drive ``openenv-mcp serve`` with OpenEnv 0.10's own clients; run with the OpenEnv virtualenv's python.

    python openenv_driver.py generic URL SCRIPT_JSON   # GenericEnvClient over /ws
    python openenv_driver.py mcp URL SCRIPT_JSON       # MCPToolClient: /mcp sessions + /ws

SCRIPT_JSON: ``{"reset": {"seed": 3}, "calls": [[tool, {arguments}], ...]}`` (reset: the reset keywords).
Prints one JSON document with what the clients returned (the test asserts on it). No openenv-mcp import: this is OpenEnv's side only.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient


def _result(r: Any) -> dict[str, Any]:
    obs = r.observation
    if hasattr(obs, "model_dump"):
        obs = obs.model_dump()
    return {"observation": obs, "reward": r.reward, "done": r.done, "metadata": r.metadata}


def generic(url: str, script: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"steps": []}
    with GenericEnvClient(base_url=url).sync() as env:
        out["reset"] = _result(env.reset(**script["reset"]))
        out["listed"] = _result(env.step(ListToolsAction()))  # OpenEnv's own action model, dumped
        for name, arguments in script["calls"]:
            out["steps"].append(_result(env.step({"type": "call_tool", "tool_name": name, "arguments": arguments})))
        out["state"] = env.state()
        try:
            env.step(CallToolAction(tool_name=script["calls"][0][0], arguments=script["calls"][0][1]))
            out["after_end"] = None
        except RuntimeError as e:  # OpenEnv raises on {"type": "error"}
            out["after_end"] = str(e)
        out["reset_again"] = _result(env.reset(**script["reset"]))
        out["state_again"] = env.state()
    return out


def mcp(url: str, script: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"calls": []}
    with MCPToolClient(base_url=url).sync() as env:
        out["session_id_is_set"] = env._production_session_id is not None  # noqa: SLF001 (what it sent on /ws)
        out["reset"] = _result(env.reset(**script["reset"]))
        tools = env.list_tools()
        out["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]
        for name, arguments in script["calls"]:
            out["calls"].append(env.call_tool(name, **arguments))
        out["state"] = env.state().model_dump()
    return out


def main() -> None:
    kind, url, script = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    result = generic(url, script) if kind == "generic" else mcp(url, script)
    json.dump(result, sys.stdout, default=str)


if __name__ == "__main__":
    main()

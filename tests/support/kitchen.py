"""The kitchen-sink fixture server (``conformance/fixtures/envs/kitchen_sink``) and helpers to wrap
and serve it: used by ``tests/conformance/test_fidelity.py`` and ``tests/hostile/test_hostile_wrapper.py``."""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ToolListChangedNotification

from openenv_mcp.serve.app import create_app
from openenv_mcp.testing import serving

from support import ROOT

KITCHEN = ROOT / "conformance" / "fixtures" / "envs" / "kitchen_sink"
SERVER = KITCHEN / "server.py"
INSTRUCTIONS = "Kitchen sink: call echo to repeat text, grow to learn a new tool, read kitchen://item/{id}."


def kitchen_env(
    tmp_path: Path, *, description: str = "", servers: tuple[str, ...] = ("kitchen",), env: str = ""
) -> Path:
    """An env folder wrapping the kitchen-sink server (several copies under namespaces when asked)."""
    text = f'[env]\nname = "kitchen-test"\ndescription = "{description}"\nmax_steps = 50\n'
    for name in servers:
        namespace = name if len(servers) > 1 else ""
        text += (
            f'\n[[tool_servers]]\nname = "{name}"\nnamespace = "{namespace}"\n'
            f'command = ["{sys.executable}", "{SERVER}"]\nisolation = "process"\n'
        )
        if env:
            text += f"env = {{ {env} }}\n"
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "env.toml").write_text(text)
    return tmp_path


class Listener:
    """An MCP client session on a served environment that records server notifications."""

    def __init__(self) -> None:
        self.changed = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(getattr(message, "root", message), ToolListChangedNotification):
            self.changed += 1


async def open_face(stack: AsyncExitStack, environment: Any, handler: Any = None) -> tuple[ClientSession, Any]:
    url = await stack.enter_async_context(serving(create_app(environment)))
    read, write, *_ = await stack.enter_async_context(streamable_http_client(f"{url}/mcp"))
    session = await stack.enter_async_context(ClientSession(read, write, message_handler=handler))
    init = await session.initialize()
    return session, init

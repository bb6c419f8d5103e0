"""One-shot commands behind the process boundary (command rewards, ``run_command``).

:func:`run_launch` runs a :class:`openenv_mcp.isolation.host.launch.Launch` to completion with the same limits, uid and
namespaces as the server it belongs to; its outputs are cut to :data:`COMMAND_OUTPUT` bytes and past
its time limit the whole tree is killed. :func:`run_plain` runs a command as a plain child.
"""

from __future__ import annotations

import os
from typing import Any

import anyio

from openenv_mcp.errors import BoundaryError
from openenv_mcp.isolation.host.launch import SYSTEM_PATH, Launch, resolve_executable
from openenv_mcp.isolation.transport.stdio import StdioProcess

__all__ = ["COMMAND_OUTPUT", "run_launch", "run_plain"]

COMMAND_OUTPUT = 65536


async def run_launch(launch: Launch, timeout: float, kill_all_of_uid: bool = False) -> tuple[int, str, str]:
    """Run a :class:`Launch` to completion: ``(code, stdout, stderr)``, outputs cut to 64 KiB.
    Past ``timeout`` the whole tree is killed and :class:`BoundaryError` raised."""
    process = StdioProcess(launch.argv[0], launch, COMMAND_OUTPUT, COMMAND_OUTPUT, kill_uid=kill_all_of_uid)
    await process.spawn()
    proc = process.proc
    assert proc is not None and proc.stdin is not None
    proc.stdin.close()
    out, err = bytearray(), bytearray()

    async def drain(stream: Any, into: bytearray) -> None:
        while chunk := await stream.read(65536):
            into += chunk[: max(0, COMMAND_OUTPUT - len(into))]

    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, proc.stdout, out)
                tg.start_soon(drain, proc.stderr, err)
            await proc.wait()
    except TimeoutError:
        raise BoundaryError(f"command {launch.argv[0]!r} did not finish within {timeout:g} s") from None
    finally:
        await process.stop()
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


async def run_plain(argv: list[str], env: dict[str, str], cwd: str, timeout: float) -> tuple[int, str, str]:
    """Run ``argv`` as a plain child (own session, killed with its tree on timeout)."""
    executable = resolve_executable(argv[0], argv[0])
    folder = os.path.dirname(executable)
    base = {"PATH": f"{folder}:{SYSTEM_PATH}", "HOME": cwd, "LANG": "C.UTF-8"}
    return await run_launch(Launch([executable, *argv[1:]], {**base, **env}, cwd, None, []), timeout)

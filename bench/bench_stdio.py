"""How soon ``openenv-mcp stdio ENV`` answers ``initialize`` (what a harness waits for) and ``tools/list``.

Each sample starts a fresh process, sends ``initialize`` the moment it is started and times its answer,
then ``tools/list``. Rows: a bare interpreter answering from a script (the floor: no framework at all),
the lean filesystem server (the dependency-free loop tool servers use), ``openenv-mcp stdio files``
answering only once the environment is up (``OPENENV_MCP_STDIO_CACHE=off``: what every start did
before), and answering from the previous start's answer (the default). Median of :data:`RUNS`; the
target is an absolute one from the harness side (Codex does not wait): at most :data:`TARGET` s.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

RUNS = 5
TARGET = 0.3
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}
FLOOR = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    m = json.loads(line)\n"
    "    if 'id' in m:\n"
    "        r = {'protocolVersion': '2025-06-18', 'capabilities': {'tools': {}}, 'serverInfo': {'name': 'f', 'version': '0'}}\n"
    "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r if m['method'] == 'initialize' else {'tools': []}}), flush=True)\n"
)


def handshake(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Seconds from start to the ``initialize`` answer and to the ``tools/list`` answer."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        json.loads(proc.stdout.readline())
        initialized = time.perf_counter() - started
        for message in (
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ):
            proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        json.loads(proc.stdout.readline())
        listed = time.perf_counter() - started
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return initialized, listed


def median(command: list[str], env: dict[str, str] | None = None, runs: int = RUNS) -> tuple[float, float]:
    samples = [handshake(command, env) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> None:
    cli = [str(Path(sys.executable).with_name("openenv-mcp")), "stdio", "files"]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "OPENENV_MCP_CACHE": tmp}
        rows = {
            "python script (floor)": median([sys.executable, "-c", FLOOR]),
            "lean filesystem server": median(
                [sys.executable, "-m", "openenv_mcp.tool_servers.filesystem", "--root", tmp, "--lean"]
            ),
            "openenv-mcp stdio files, answering when up (before)": median(
                cli, {**env, "OPENENV_MCP_STDIO_CACHE": "off"}
            ),
        }
        handshake(cli, env)  # the first start answers when up and keeps its answer
        rows["openenv-mcp stdio files, answering at once (after)"] = median(cli, env)
    floor = rows["python script (floor)"][0]
    table = Table(title=f"stdio handshake, median of {RUNS} fresh processes")
    for column in ("server", "initialize ms", "ratio to floor", "tools/list ms", f"initialize <= {TARGET:g} s"):
        table.add_column(column)
    for name, (initialized, listed) in rows.items():
        met = "met" if initialized <= TARGET else "missed"
        table.add_row(name, f"{initialized * 1e3:.0f}", f"{initialized / floor:.2f}x", f"{listed * 1e3:.0f}", met)
    Console().print(table)


if __name__ == "__main__":
    main()

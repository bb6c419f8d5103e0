"""Planted bug: start_helper() starts a daemon that double-forks away from its parent (setsid, chdir /)
and sleeps five minutes with the marker openenv-mcp-planted-daemon in its command line.

The buggy env file loads the server in-process (``object = "server:build"``): no boundary holds the daemon,
so it outlives the episode and shutdown.clean names it. The fixed twin runs the same server behind the
``process`` boundary (``python server.py``), whose per-server cgroup kills the daemon on close."""

import subprocess
import sys

MARKER = "openenv-mcp-planted-daemon"
DAEMON = f"exec {sys.executable} -c 'import time; time.sleep(300)' {MARKER}"


def start_helper(a=None):
    subprocess.run(
        ["/bin/sh", "-c", f'cd / && (setsid sh -c "{DAEMON}" </dev/null >/dev/null 2>&1 &)'], check=True, timeout=10
    )
    return "helper started"


def build(ctx):
    from fastmcp import FastMCP

    server = FastMCP("daemon-escape")

    @server.tool
    def start_helper_tool() -> str:
        """Start the background helper."""
        return start_helper()

    return server


if __name__ == "__main__":
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import _kit

    _kit.serve("daemon-escape", [(_kit.tool("start_helper_tool", {}, "Start the background helper."), start_helper)])

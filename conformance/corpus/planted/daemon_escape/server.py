"""Planted bug: at start the server double-forks a daemon that calls setsid() and chdir("/") and sleeps for
five minutes with the marker openenv-mcp-planted-daemon in its command line; the fixed twin runs no daemon.
Must not survive close: shutdown.clean finds survivors by membership, not working directory."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

MARKER = "openenv-mcp-planted-daemon"

if not _kit.FIXED and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.chdir("/")
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.execv(sys.executable, [sys.executable, "-c", f"import time; time.sleep(300)  # {MARKER}"])
    os._exit(0)
elif not _kit.FIXED:
    os.wait()

_kit.serve("daemon-escape", [(_kit.tool("ping", {}, "Answer pong."), lambda a: "pong")])

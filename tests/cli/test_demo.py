"""`make demo` runs `openenv-mcp demo`: the tour serves files, prints how to connect, plays an episode over MCP."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from support import ROOT


def test_demo_once_serves_prints_addresses_and_reaches_reward_one():
    exe = Path(sys.executable).with_name("openenv-mcp")
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "400"}  # openenv-mcp is not on PATH, as after `make demo`
    out = subprocess.run(
        [str(exe), "demo", "--once", "--port", "0"], capture_output=True, text=True, timeout=180, env=env, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert re.search(r"MCP \(streamable HTTP\)\s+http://127\.0\.0\.1:\d+/mcp", text)
    assert "openenv-mcp stdio files" in text
    assert '"mcpServers"' in text and '"type": "http"' in text  # Claude Code needs the type of an HTTP entry
    assert re.search(r"trainer reads state: steps \d+, reward 1\.00, done True", text)
    # The next steps it prints work when copied as they are (here: the venv's path, not a bare name).
    nxt = next(line for line in text.splitlines() if line.startswith("next:"))
    steps = [s.strip() for s in nxt.removeprefix("next:").split("·")]
    listing = next(s for s in steps if s.endswith(" list")).split()
    assert listing[0] != "openenv-mcp"
    done = subprocess.run(listing, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0 and "files" in done.stdout, done.stderr
    config = next(s for s in steps if " mcp-config files" in s).split(" (")[0].split()
    done = subprocess.run(config, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0 and '"openenv-files"' in done.stdout, done.stderr

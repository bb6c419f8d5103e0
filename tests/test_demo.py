"""`make demo` runs `openenv-mcp demo`: the tour serves files, prints how to connect, plays an episode over MCP."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def test_demo_once_serves_prints_addresses_and_reaches_reward_one():
    exe = Path(sys.executable).with_name("openenv-mcp")
    out = subprocess.run([str(exe), "demo", "--once", "--port", "0"], capture_output=True, text=True, timeout=180,
                         env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert re.search(r"MCP \(streamable HTTP\)\s+http://127\.0\.0\.1:\d+/mcp", text)
    assert "openenv-mcp stdio files" in text
    assert '"mcpServers"' in text
    assert re.search(r"trainer reads state: steps \d+, reward 1\.00, done True", text)

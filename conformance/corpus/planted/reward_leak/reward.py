"""Command reward of reward_leak: score = ticks counted for the episode's last key / 10 (at most 0.5).
Run in the workspace; the buggy variant reads the shared count, the fixed one the workspace's."""

import json
import sys
from pathlib import Path

shared = Path.cwd() if "--fixed" in sys.argv else Path("/tmp/openenv-mcp-planted/reward_leak")
try:
    key = (Path.cwd() / "last_key").read_text()
    count = int(json.loads((shared / "ticks.json").read_text()).get(key, "0"))
except (OSError, ValueError):
    count = 0
print(min(count, 5) / 10)

"""Command reward of reward_leak: score = ticks counted for the episode's last key, modulo 10, / 10
(the buggy count grows across episodes, so two episodes of one seed never earn the same).
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
print(count % 10 / 10)

"""Planted bug: each tick is counted in a file shared by every episode; the tool always answers "ok",
and only the reward (reward.py, which reads the count) shows another episode's ticks."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

COUNTS = _kit.shared_dir("reward_leak") / "ticks.json"


def tick(a):
    _kit.put(COUNTS, a["key"], str(int(_kit.load(COUNTS).get(a["key"], "0")) + 1))
    (Path.cwd() / "last_key").write_text(a["key"])  # the reward scores the last key ticked in this episode
    return "ok"


_kit.serve("reward-leak", [(_kit.tool("tick", {"key": _kit.STR}, "Count one tick for a key."), tick)])

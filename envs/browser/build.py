"""Write ``tasks.jsonl`` from the task definitions (``python envs/browser/build.py``); a test checks
the file is current."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def lines() -> list[str]:
    sys.path.insert(0, str(HERE))
    from browser_tasks import TASKS

    return [json.dumps(t.public(), ensure_ascii=False) for t in TASKS.values()]


if __name__ == "__main__":
    (HERE / "tasks.jsonl").write_text("\n".join(lines()) + "\n")
    print(f"wrote {len(lines())} tasks to {HERE / 'tasks.jsonl'}")

"""Import time: ``import openenv_mcp`` next to ``import mcp.types`` (the MCP SDK's types), fresh interpreters.

Each sample is one new interpreter timing one import (interpreter start-up excluded); the
median of :data:`RUNS`. Target: openenv_mcp at most 1.2x mcp.types.
"""

from __future__ import annotations

import statistics
import subprocess
import sys

from rich.console import Console
from rich.table import Table

RUNS = 15
TARGET = 1.2
CODE = "import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"


def import_time(statement: str, runs: int = RUNS) -> float:
    """Median seconds ``statement`` (an import) takes in a fresh interpreter."""
    samples = [
        float(
            subprocess.run(
                [sys.executable, "-c", CODE.format(statement=statement)], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(samples)


def main() -> None:
    ours, sdk = import_time("import openenv_mcp"), import_time("import mcp.types")
    first_use = import_time("import openenv_mcp; openenv_mcp.make")
    table = Table(title=f"import time, median of {RUNS} fresh interpreters")
    for column in ("import", "ms", "ratio to mcp.types", "target"):
        table.add_column(column)
    table.add_row(
        "openenv_mcp",
        f"{ours * 1e3:.1f}",
        f"{ours / sdk:.3f}x",
        f"<= {TARGET}x ({'met' if ours / sdk <= TARGET else 'missed'})",
    )
    table.add_row("mcp.types", f"{sdk * 1e3:.1f}", "1.000x", "")
    table.add_row(
        "openenv_mcp, then openenv_mcp.make (loads the core)", f"{first_use * 1e3:.1f}", f"{first_use / sdk:.3f}x", ""
    )
    Console().print(table)


if __name__ == "__main__":
    main()

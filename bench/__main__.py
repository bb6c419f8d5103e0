"""Run every benchmark module ``bench/bench_*.py`` (or the ones named) and print their tables.

Each module has ``main() -> None`` that prints its own rich table with ratios
against the peers it is compared to, and its target.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

from rich.console import Console

import bench


def main(argv: list[str]) -> int:
    console = Console()
    names = sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_"))
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv] or names
    failed = []
    for name in wanted:
        console.rule(f"[bold]{name}")
        started = time.perf_counter()
        try:
            importlib.import_module(f"bench.{name}").main()
        except Exception as e:  # one broken benchmark must not hide the others
            console.print(f"[red]{name} failed:[/red] {e!r}")
            failed.append(name)
        console.print(f"[dim]{name}: {time.perf_counter() - started:.1f} s[/dim]")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Serving: openenv-mcp vs OpenEnv 0.10 vs plain FastMCP, side by side in one run.

Every server runs as its own uvicorn process on loopback, the load generator
(``bench/_load.py``) in another process; all are torn down at the end.

1. Step round trip over one WebSocket, trivial tool (``echo``), p50/p99:
   openenv-mcp ``/ws`` vs OpenEnv's ``/ws`` (an MCP echo environment). Target p50 <= 0.25x.
2. MCP ``tools/call`` over streamable HTTP, same hand-built JSON-RPC posts for both:
   openenv-mcp ``/mcp`` vs plain FastMCP. Target p50 <= 0.5x.
3. Concurrency sweep: N simultaneous episodes, each reset + 3 tool calls sleeping 1 s;
   success rate, p99 of the tool calls, server peak RSS. Target: 4096 at 100% with p99 <= 1.5 s.

OpenEnv is installed from PyPI into the benchmark's own virtualenv ``.cache/bench-openenv``
on first use. Knobs: ``BENCH_SERVE_N`` (latency samples, default 2000),
``BENCH_SERVE_SWEEP`` (default ``256,1024,2048,4096``), ``BENCH_SERVE_ONLY``
(comma list of ``ws,http,sweep``).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
OPENENV_VENV = ROOT / ".cache" / "bench-openenv"
OPENENV_REQ = "openenv==0.10.*"
ENV_DIR = BENCH / "echo_env"
TARGET_WS_P50 = 0.25
TARGET_HTTP_P50 = 0.5
TARGET_SWEEP_N = 4096
TARGET_SWEEP_P99_MS = 1500.0
console = Console()


# --------------------------------------------------------------------------- setup


def openenv_python() -> Path:
    """The OpenEnv virtualenv's python; creates the venv and installs OpenEnv 0.10 when missing."""
    py = OPENENV_VENV / "bin" / "python"
    check = [str(py), "-c", "import openenv.core.env_server.mcp_environment, uvicorn, fastmcp"]
    if py.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return py
    with console.status(f"installing {OPENENV_REQ} into {OPENENV_VENV} (first run only)"):
        subprocess.run([sys.executable, "-m", "venv", str(OPENENV_VENV)], check=True)
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", OPENENV_REQ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    subprocess.run(check, check=True)
    return py


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Server:
    """A server process on a free loopback port; waits for ``ready_path``; kills its group on exit."""

    def __init__(self, name: str, argv: list[str], ready_path: str) -> None:
        self.name, self.argv, self.ready_path = name, argv, ready_path
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        argv = [a.replace("{port}", str(self.port)) for a in self.argv]
        self.log = open(ROOT / ".cache" / f"bench-{self.name}.log", "w")
        self.proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_raise_nofile,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if httpx.get(self.url + self.ready_path, timeout=1).status_code < 500:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.__exit__()
        raise RuntimeError(f"{self.name} did not start within 90 s; see {self.log.name}")

    def peak_rss_mb(self) -> float:
        """Peak resident memory (VmHWM) of the server process and its children, in MiB."""
        total = 0
        for pid in [self.proc.pid, *_children(self.proc.pid)]:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024

    def __exit__(self, *exc: object) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
            except ProcessLookupError:
                pass
        self.log.close()


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                child = int(stat.parent.name)
                out += [child, *_children(child)]
        except (OSError, IndexError, ValueError):
            pass
    return out


def openenv_mcp_server() -> Server:
    return Server(
        "openenv-mcp",
        [sys.executable, "-m", "openenv_mcp.cli", "serve", str(ENV_DIR), "--host", "127.0.0.1", "--port", "{port}"],
        "/health",
    )


def openenv_server() -> Server:
    return Server("openenv", [str(openenv_python()), str(BENCH / "_openenv_server.py"), "{port}"], "/health")


def fastmcp_server() -> Server:
    return Server("fastmcp", [sys.executable, str(BENCH / "_fastmcp_server.py"), "{port}"], "/mcp")


def load(*args: str, timeout: float = 600) -> dict:
    """Run the load generator in its own process; its JSON answer."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench._load", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_raise_nofile,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"load generator {args[:2]} failed: {proc.stderr.strip()[-600:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _verdict(ok: bool) -> str:
    return "[green]met[/green]" if ok else "[red]missed[/red]"


# --------------------------------------------------------------------------- the three comparisons

ROUNDS = 4
"""Latency runs alternate between the two servers in this many rounds (both up at once), so a
load change on the machine during the run hits both sides alike."""


def _alternate(mode: str, ours: list[str], theirs: list[str], n: int) -> tuple[dict, dict]:
    mine: list[float] = []
    peer: list[float] = []
    per = max(1, n // ROUNDS)
    for _ in range(ROUNDS):
        mine += load(mode, *ours, str(per))["samples"]
        peer += load(mode, *theirs, str(per))["samples"]
    from bench._load import pct

    return ({"p50_ms": pct(mine, 50), "p99_ms": pct(mine, 99)}, {"p50_ms": pct(peer, 50), "p99_ms": pct(peer, 99)})


def _latency_table(title: str, ours: str, theirs: str, mine: dict, peer: dict, target: float) -> None:
    table = Table(title=title)
    for col in ("server", "p50 ms", "p99 ms", "p50 ratio", "target"):
        table.add_column(col, justify="left" if col == "server" else "right")
    r = mine["p50_ms"] / peer["p50_ms"]
    table.add_row(
        ours, f"{mine['p50_ms']:.3f}", f"{mine['p99_ms']:.3f}", f"{r:.2f}x", f"<= {target}x {_verdict(r <= target)}"
    )
    table.add_row(theirs, f"{peer['p50_ms']:.3f}", f"{peer['p99_ms']:.3f}", "1.00x", "")
    console.print(table)


def bench_ws(n: int) -> None:
    with openenv_mcp_server() as ours, openenv_server() as peer:
        mine, theirs = _alternate("ws-latency", ["openenv-mcp", ours.url], ["openenv", peer.url], n)
    _latency_table(
        f"Step round trip over one WebSocket, echo tool, {n} steps each ({ROUNDS} alternating rounds)",
        "openenv-mcp /ws",
        "OpenEnv 0.10 /ws",
        mine,
        theirs,
        TARGET_WS_P50,
    )


def bench_http(n: int) -> None:
    with openenv_mcp_server() as ours, fastmcp_server() as peer:
        mine, theirs = _alternate("http-latency", [ours.url + "/mcp"], [peer.url + "/mcp"], n)
    _latency_table(
        f"MCP tools/call over streamable HTTP, echo tool, {n} calls each, same hand-built HTTP client",
        "openenv-mcp /mcp",
        "plain FastMCP /mcp",
        mine,
        theirs,
        TARGET_HTTP_P50,
    )


SWEEP_PEERS = [
    ("openenv-mcp (WS per episode)", "openenv-mcp", openenv_mcp_server),
    ("openenv-mcp (16 shared WS)", "openenv-mcp-shared", openenv_mcp_server),
    ("openenv-mcp (batch messages, 1 WS)", "openenv-mcp-batch", openenv_mcp_server),
    ("OpenEnv 0.10 (WS per episode)", "openenv", openenv_server),
    ("plain FastMCP (HTTP session per episode)", "fastmcp", fastmcp_server),
]


def bench_sweep(levels: list[int]) -> None:
    table = Table(title="Concurrency sweep: N simultaneous episodes, reset + 3 tool calls sleeping 1 s")
    for col in ("server", "N", "success", "call p50 ms", "call p99 ms", "wall s", "peak RSS MiB", "note"):
        table.add_column(col, justify="left" if col in ("server", "note") else "right")
    for label, kind, factory in SWEEP_PEERS:
        failed_before = False
        for n in levels:
            if failed_before:
                table.add_row(label, str(n), "-", "-", "-", "-", "-", "skipped: failed at a lower N")
                continue
            with console.status(f"sweep: {label}, N={n}"):
                try:
                    with factory() as server:
                        r = load("sweep", kind, server.url, str(n))
                        rss = server.peak_rss_mb()
                except Exception as e:  # a peer that falls over is a result, not a crash of the benchmark
                    table.add_row(label, str(n), "0%", "-", "-", "-", "-", f"[red]{str(e)[:80]}[/red]")
                    failed_before = True
                    continue
            rate = r["ok"] / n
            note = "; ".join(f"{k} x{v}" for k, v in r["errors"].items())[:100]
            if kind.startswith("openenv-mcp") and n == TARGET_SWEEP_N:
                met = rate == 1.0 and r["p99_ms"] <= TARGET_SWEEP_P99_MS
                note = f"target 100%, p99 <= {TARGET_SWEEP_P99_MS:.0f} ms: {_verdict(met)} " + note
            p50, p99 = (f"{r[k]:.0f}" if r[k] == r[k] else "-" for k in ("p50_ms", "p99_ms"))  # NaN: no call ok
            table.add_row(label, str(n), f"{rate:.1%}", p50, p99, f"{r['wall_s']:.1f}", f"{rss:.0f}", note)
            console.print(f"[dim]{label} N={n}: {rate:.1%} ok, call p99 {p99} ms, peak RSS {rss:.0f} MiB[/dim]")
            failed_before = rate < 1.0
    console.print(table)


def main() -> None:
    n = int(os.environ.get("BENCH_SERVE_N", "2000"))
    levels = [int(x) for x in os.environ.get("BENCH_SERVE_SWEEP", "256,1024,2048,4096").split(",") if x]
    only = set(os.environ.get("BENCH_SERVE_ONLY", "ws,http,sweep").split(","))
    (ROOT / ".cache").mkdir(exist_ok=True)
    openenv_python()
    if "ws" in only:
        bench_ws(n)
    if "http" in only:
        bench_http(n)
    if "sweep" in only:
        bench_sweep(levels)


if __name__ == "__main__":
    main()

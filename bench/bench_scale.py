"""Scale: N concurrent fresh ``coding`` episodes through the control plane, per boundary, side by side.

Each episode, all N at once over one WebSocket (``openenv-mcp serve coding``): ``create`` (the
episode is *ready* when it answers), three ``python_run`` calls, ``close``. Columns:

* **sandbox, fast starts** (the default): each episode's servers forked by a zygote per server;
* **sandbox, plain** (``OPENENV_MCP_FAST_START=0``): a bwrap and a Python interpreter per server;
* **docker boundary**: the same env with ``isolation = "docker"`` (one container per server);
* **docker run per episode** (how OpenEnv runs environments): ``docker run -i --rm --network none``
  of the python tool server per episode, MCP over its stdio (ready = ``initialize`` answered).

Reported per N (8, 32, 64): p50/p99 ready latency, wall time until every episode finished,
and *sustained starts/s*: N workers each looping create/3 calls/close for ``SUSTAIN_S`` seconds.
Memory: USS (``Private_Clean + Private_Dirty`` of ``/proc/PID/smaps_rollup``) of each episode's
python tool server, median, with all N episodes live.

Targets: 64 concurrent: p99 ready <= 2 s, >= 30 starts/s sustained, <= 15 MB unique per python
server. ``python -m bench scale`` (``SCALE_NS=8,64``, ``SCALE_SKIP=docker,docker-run`` to shorten);
JSON goes to ``.cache/bench-scale.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench._load import ControlPlane, pct
from bench.bench_serve import Server

ROOT = Path(__file__).resolve().parent.parent
NS = [int(n) for n in os.environ.get("SCALE_NS", "8,32,64").split(",")]
SKIP = set(filter(None, os.environ.get("SCALE_SKIP", "").split(",")))
SUSTAIN_S = float(os.environ.get("SCALE_SUSTAIN_S", "10"))
CODE = ["x = 6 * 7", "import json; print(json.dumps({'x': x}))", "sum(range(1000))"]
TARGET_P99_S, TARGET_RATE, TARGET_USS_MB = 2.0, 30.0, 15.0
START_TIMEOUT_S = float(os.environ.get("SCALE_START_TIMEOUT_S", "600"))
"""How long a docker-boundary server may take to answer ``initialize`` (containers start slowly under load)."""
IMAGE = os.environ.get("OPENENV_MCP_DOCKER_IMAGE", "openenv-mcp/tools")
console = Console()


def uss_mb(pid: int) -> float | None:
    """Unique set size of ``pid`` in MiB (``smaps_rollup``)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    kb = sum(
        int(line.split()[1]) for line in text.splitlines() if line.startswith(("Private_Clean:", "Private_Dirty:"))
    )
    return kb / 1024


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def zygotes_of(server: int) -> list[int]:
    """The zygotes started since ``server`` started (they are detached: not its descendants)."""
    from openenv_mcp.isolation.faststart.template import ZYGOTE_SCRIPT

    since = int(_stat(server)[19])
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and ZYGOTE_SCRIPT.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                if int(_stat(int(entry))[19]) >= since:
                    found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


def tree_cpu_s(pid: int) -> float:
    """CPU seconds used by ``pid`` and its descendants, and by its zygotes and theirs (every forked server),
    live and reaped (utime+stime+cutime+cstime)."""
    from openenv_mcp.isolation.host.proctree import descendants

    ticks = 0
    roots = [pid, *zygotes_of(pid)]
    for p in {q for root in roots for q in [root, *descendants(root)]}:
        try:
            fields = _stat(p)
        except OSError:
            continue
        ticks += sum(int(f) for f in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def python_servers(root_uid_ok: bool = False) -> list[int]:
    """Pids of running python tool servers (not zygotes: those run as root)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            uid = int(Path(f"/proc/{entry}/status").read_text().split("Uid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if any(b"openenv_mcp.tool_servers.python" in part for part in cmd) and (uid != 0 or root_uid_ok):
            if b"worker" not in b" ".join(cmd):
                found.append(int(entry))
    return found


def coding_env(isolation: str) -> Path:
    """A copy of ``envs/coding`` whose servers use ``isolation``."""
    src = ROOT / "envs" / "coding"
    dst = Path(tempfile.mkdtemp(prefix="bench-scale-")) / "coding"
    shutil.copytree(src, dst)
    toml = dst / "env.toml"
    head, *servers = (
        toml.read_text().replace('isolation = "sandbox"', f'isolation = "{isolation}"').split("[[tool_servers]]")
    )
    # 64 episodes start 192 containers at once on a small machine: give each longer than 30 s to answer
    limits = f"[tool_servers.limits]\nstart_timeout = {START_TIMEOUT_S:g}\n"
    servers = [
        s.replace("[tool_servers.limits]\n", limits) if "[tool_servers.limits]" in s else f"{s.rstrip()}\n\n{limits}\n"
        for s in servers
    ]
    toml.write_text("[[tool_servers]]".join([head, *servers]))
    return dst


async def control_plane_round(url: str, n: int, measure_uss: bool) -> dict[str, Any]:
    cp = await ControlPlane.connect(url)
    ready: list[float] = []
    errors: list[str] = []
    live = asyncio.Event()
    started = 0

    async def one() -> None:
        nonlocal started
        t0 = time.perf_counter()
        try:
            ep = await cp.episode()
        except Exception as e:
            errors.append(str(e)[:200])
            return
        ready.append(time.perf_counter() - t0)
        started += 1
        try:
            if started >= n:
                live.set()
            await live.wait()
            for code in CODE:
                await ep.call("python_run", {"code": code})
        except Exception as e:
            errors.append(str(e)[:200])
        finally:
            await ep.close()

    t0 = time.perf_counter()
    tasks = [asyncio.create_task(one()) for _ in range(n)]
    uss: list[float] = []
    if measure_uss:
        try:
            await asyncio.wait_for(live.wait(), 120)
            await asyncio.sleep(0.3)
            uss = [u for p in python_servers() if (u := uss_mb(p)) is not None]
        except TimeoutError:
            pass
    live.set()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    await cp.close()
    return {"ready": ready, "wall": wall, "errors": errors, "uss": uss}


async def control_plane_sustained(url: str, workers: int, seconds: float) -> dict[str, Any]:
    cp = await ControlPlane.connect(url)
    done = 0
    errors: list[str] = []
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < stop:
            try:
                ep = await cp.episode()
                try:
                    for code in CODE:
                        await ep.call("python_run", {"code": code})
                finally:
                    await ep.close()
                done += 1
            except Exception as e:
                errors.append(str(e)[:200])
                await asyncio.sleep(0.1)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    elapsed = time.perf_counter() - t0
    await cp.close()
    return {"rate": done / elapsed, "episodes": done, "errors": errors}


# -- one container per episode (docker run) ------------------------------------------
class DockerRunEpisode:
    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.ids = 0
        self.ws = tempfile.mkdtemp(prefix="bench-scale-ws-")
        os.chmod(self.ws, 0o777)  # the image's server runs as an unprivileged user

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            "docker", "run", "-i", "--rm", "--network", "none", "-m", "512m", "--pids-limit", "64",
            "-v", f"{self.ws}:/workspace", "-w", "/workspace", IMAGE,
            "python", "-m", "openenv_mcp.tool_servers.python", "--root", "/workspace", "--lean",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            limit=2**24,
        )  # fmt: skip
        await self.rpc(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}},
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def send(self, msg: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        await self.proc.stdin.drain()

    async def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        self.ids += 1
        await self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 120)
            if not line:
                raise RuntimeError("the container exited")
            msg = json.loads(line)
            if msg.get("id") == self.ids:
                if "error" in msg or msg.get("result", {}).get("isError"):
                    raise RuntimeError(str(msg)[:200])
                return msg["result"]

    async def close(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except TimeoutError:
                self.proc.kill()
        shutil.rmtree(self.ws, ignore_errors=True)


async def docker_run_round(n: int, measure_uss: bool) -> dict[str, Any]:
    ready: list[float] = []
    errors: list[str] = []
    live = asyncio.Event()

    async def one() -> None:
        ep = DockerRunEpisode()
        t0 = time.perf_counter()
        try:
            await ep.start()
            ready.append(time.perf_counter() - t0)
            if len(ready) >= n:
                live.set()
            await live.wait()
            for code in CODE:
                await ep.rpc("tools/call", {"name": "run", "arguments": {"code": code}})
        except Exception as e:
            errors.append(str(e)[:200])
            live.set()
        finally:
            await ep.close()

    t0 = time.perf_counter()
    tasks = [asyncio.create_task(one()) for _ in range(n)]
    uss: list[float] = []
    if measure_uss:
        try:
            await asyncio.wait_for(live.wait(), 300)
            uss = [u for p in python_servers(root_uid_ok=True) if (u := uss_mb(p)) is not None]
        except TimeoutError:
            pass
    live.set()
    await asyncio.gather(*tasks)
    return {"ready": ready, "wall": time.perf_counter() - t0, "errors": errors, "uss": uss}


async def docker_run_sustained(workers: int, seconds: float) -> dict[str, Any]:
    done = 0
    errors: list[str] = []
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < stop:
            ep = DockerRunEpisode()
            try:
                await ep.start()
                for code in CODE:
                    await ep.rpc("tools/call", {"name": "run", "arguments": {"code": code}})
                done += 1
            except Exception as e:
                errors.append(str(e)[:200])
            finally:
                await ep.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return {"rate": done / (time.perf_counter() - t0), "episodes": done, "errors": errors}


# -- the run ----------------------------------------------------------------------------
def summarize(rounds: dict[int, dict[str, Any]], sustained: dict[str, Any] | None, load0: float) -> dict[str, Any]:
    out: dict[str, Any] = {"load_1min": [load0, os.getloadavg()[0]]}  # the machine is shared: say how busy it was
    for n, r in rounds.items():
        out[str(n)] = {
            "ready_p50_s": pct(r["ready"], 50) / 1e3,
            "ready_p99_s": pct(r["ready"], 99) / 1e3,
            "wall_s": r["wall"],
            "ok": len(r["ready"]),
            "errors": r["errors"][:3],
            "python_server_uss_mb": statistics.median(r["uss"]) if r["uss"] else None,
            "uss_samples": len(r["uss"]),
            "cpu_per_episode_s": r.get("cpu_per_episode_s"),
        }
    if sustained is not None:
        out["sustained"] = {k: v for k, v in sustained.items() if k != "errors"} | {"errors": sustained["errors"][:3]}
    return out


def serve_column(name: str, env: str, extra_env: dict[str, str]) -> dict[str, Any]:
    serve = [sys.executable, "-m", "openenv_mcp.cli", "serve", env, "--port", "{port}", "--log-level", "warning",
             "--max-episodes", "512", "--idle-timeout", "0"]  # fmt: skip
    load0 = os.getloadavg()[0]
    old = {k: os.environ.get(k) for k in extra_env}
    os.environ.update(extra_env)
    try:
        with Server(f"scale-{name}", serve, "/health") as server:
            rounds = {}
            assert server.proc is not None
            for n in NS:
                console.print(f"[dim]{name}: {n} concurrent episodes[/dim]")
                asyncio.run(control_plane_round(server.url, 1, False))  # the first episode starts the zygotes
                cpu = tree_cpu_s(server.proc.pid)
                rounds[n] = asyncio.run(control_plane_round(server.url, n, True))
                rounds[n]["cpu_per_episode_s"] = (tree_cpu_s(server.proc.pid) - cpu) / n
            console.print(f"[dim]{name}: sustained, {max(NS)} workers, {SUSTAIN_S:g} s[/dim]")
            sustained = asyncio.run(control_plane_sustained(server.url, max(NS), SUSTAIN_S))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return summarize(rounds, sustained, load0)


def docker_run_column() -> dict[str, Any]:
    load0 = os.getloadavg()[0]
    rounds = {}
    for n in NS:
        console.print(f"[dim]docker run: {n} concurrent episodes[/dim]")
        rounds[n] = asyncio.run(docker_run_round(n, True))
    console.print(f"[dim]docker run: sustained, {max(NS)} workers, {SUSTAIN_S:g} s[/dim]")
    return summarize(rounds, asyncio.run(docker_run_sustained(max(NS), SUSTAIN_S)), load0)


def _fmt(value: float | None, unit: str = "") -> str:
    return "-" if value is None or value != value else f"{value:.2f}{unit}"


def main() -> None:
    (ROOT / ".cache").mkdir(exist_ok=True)
    columns: dict[str, dict[str, Any]] = {}
    columns["sandbox, fast starts"] = serve_column("fast", "coding", {"OPENENV_MCP_FAST_START": "1"})
    if "plain" not in SKIP:
        columns["sandbox, plain"] = serve_column("plain", "coding", {"OPENENV_MCP_FAST_START": "0"})
    if "docker" not in SKIP and shutil.which("docker"):
        columns["docker boundary"] = serve_column("docker", str(coding_env("docker")), {})
    if "docker-run" not in SKIP and shutil.which("docker"):
        columns["docker run per episode"] = docker_run_column()
    table = Table(title=f"{max(NS)} concurrent coding episodes: create, 3 x python_run, close ({os.cpu_count()} cores)")
    table.add_column("boundary")
    for n in NS:
        table.add_column(f"N={n} ready p50/p99 (s)", justify="right")
    table.add_column("starts/s sustained", justify="right")
    table.add_column("python server USS (MB)", justify="right")
    table.add_column(f"CPU ms / episode @ {max(NS)}", justify="right")
    table.add_column(f"p99 vs fast @ {max(NS)}", justify="right")
    table.add_column("load avg (1 min) start/end", justify="right")
    fast_p99 = columns["sandbox, fast starts"][str(max(NS))]["ready_p99_s"]
    for name, col in columns.items():
        cells = [f"{_fmt(col[str(n)]['ready_p50_s'])} / {_fmt(col[str(n)]['ready_p99_s'])}"
                 + ("" if col[str(n)]["ok"] == n else f" ({n - col[str(n)]['ok']} failed)") for n in NS]  # fmt: skip
        top = col[str(max(NS))]
        ratio = top["ready_p99_s"] / fast_p99 if fast_p99 else float("nan")
        cpu = top.get("cpu_per_episode_s")
        cpu_cell = "-" if cpu is None else f"{cpu * 1e3:.0f}"
        table.add_row(
            name,
            *cells,
            _fmt(col["sustained"]["rate"]),
            _fmt(top["python_server_uss_mb"]),
            cpu_cell,
            f"{ratio:.1f}x",
            "{:.1f} / {:.1f}".format(*col["load_1min"]),
        )
    console.print(table)
    fast = columns["sandbox, fast starts"]
    top = fast[str(max(NS))]
    cpu = top.get("cpu_per_episode_s") or 0.0
    cores = os.cpu_count() or 1
    console.print(
        f"fast starts cost {cpu * 1e3:.0f} ms of CPU per episode (server, zygotes, servers, workers, reward): on "
        f"{cores} idle cores {max(NS)} episodes need >= {max(NS) * cpu / cores:.2f} s and the machine sustains "
        f"<= {cores / cpu if cpu else float('nan'):.0f} starts/s"
    )
    console.print(
        f"targets at N={max(NS)}: p99 ready {_fmt(top['ready_p99_s'], ' s')} (<= {TARGET_P99_S:g} s), "
        f"{_fmt(fast['sustained']['rate'])} starts/s (>= {TARGET_RATE:g}), "
        f"python server USS {_fmt(top['python_server_uss_mb'], ' MB')} (<= {TARGET_USS_MB:g} MB)"
    )
    for name, col in columns.items():
        for n in NS:
            if col[str(n)]["errors"]:
                console.print(f"[yellow]{name}, N={n}: {col[str(n)]['errors'][0]}[/yellow]")
    out = ROOT / ".cache" / "bench-scale.json"
    load = os.getloadavg()
    out.write_text(json.dumps({"ns": NS, "load_avg": load, "columns": columns}, indent=2))
    console.print(f"[dim]JSON: {out}; load average at the end {load[0]:.1f} (other work on the machine counts)[/dim]")


if __name__ == "__main__":
    main()

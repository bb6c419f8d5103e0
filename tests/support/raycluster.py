"""A real local Ray cluster for tests: a head and worker nodes started with ``ray start`` as separate
process groups, each node with its own custom resource, its own ports and temp dir (no clash with other
runs on the machine). ``kill(name)`` kills every process of a worker node (raylet and its
workers), the way a machine dies; ``stop()`` ends every process the cluster started (never ``ray stop``,
which would stop other runs' clusters too) and ``leftovers()`` lists any still alive."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openenv_mcp.testing import free_port

__all__ = ["FrontDoorProcess", "LocalRayCluster"]

RAY = str(Path(sys.executable).with_name("ray"))


class LocalRayCluster:
    def __init__(self) -> None:
        # short: Ray puts unix sockets under the temp dir (107-byte path limit)
        self.temp_dir = tempfile.mkdtemp(prefix="oer-", dir="/tmp")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path] = {}

    def _start(self, name: str, args: list[str]) -> None:
        log = Path(self.temp_dir) / f"{name}.log"
        self.logs[name] = log
        env = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
            "RAY_raylet_start_wait_time_s": "180",  # two busy cores: the default 30 s is not enough
            # a killed node is declared dead in ~10 s instead of ~15-40 s (the GCS pings each raylet every
            # second; 10 missed answers in a row, each allowed 5 s: a raylet on starved cores is not)
            "RAY_health_check_period_ms": "1000",
            "RAY_health_check_timeout_ms": "5000",
            "RAY_health_check_failure_threshold": "10",
        }
        env.pop("RAY_ADDRESS", None)
        with open(log, "wb") as out:
            self.nodes[name] = subprocess.Popen(
                [RAY, "start", "--block", "--disable-usage-stats", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: raylet, workers, agents
                env=env,
            )

    def _common(self) -> list[str]:
        return [
            "--node-ip-address=127.0.0.1",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
        ]

    def start_head(self) -> None:
        self._start(
            "head",
            [
                "--head",
                f"--port={self.port}",
                "--num-cpus=0",
                f"--temp-dir={self.temp_dir}",
                "--include-dashboard=false",
                f"--dashboard-port={free_port()}",
                f"--ray-client-server-port={free_port()}",
                *self._common(),
            ],
        )

    def wait_started(self, name: str, timeout: float = 200.0) -> None:
        """Wait until ``ray start`` says the node runs (its log line), or fail with the log."""
        deadline = time.monotonic() + timeout
        while b"Ray runtime started" not in self.logs[name].read_bytes():
            if self.nodes[name].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray node {name} did not start: {self.logs[name].read_text()[-2000:]}")
            time.sleep(0.2)

    def add_worker(self, name: str, resources: dict[str, float], num_cpus: int = 1) -> None:
        self._start(
            name,
            [
                f"--address={self.address}",
                f"--num-cpus={num_cpus}",
                f"--resources={json.dumps(resources)}",
                *self._common(),
            ],
        )

    def wait_for_nodes(self, count: int, timeout: float = 60.0) -> list[dict]:
        import ray

        deadline = time.monotonic() + timeout
        while True:
            alive = [n for n in ray.nodes() if n["Alive"]]
            if len(alive) >= count:
                return alive
            for name, proc in self.nodes.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"ray node {name} exited: {self.logs[name].read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(alive)} of {count} Ray nodes joined within {timeout} s")
            time.sleep(0.2)

    def node_with(self, resource: str) -> str:
        """The node id of the live node that has ``resource``."""
        import ray

        return next(n["NodeID"] for n in ray.nodes() if n["Alive"] and resource in n["Resources"])

    def kill(self, name: str) -> None:
        """Kill every process of a node at once (SIGKILL), as when its machine dies: its ``ray start``
        session holds the raylet's process group and the workers' own groups (Ray gives each worker one)."""
        proc = self.nodes[name]
        for pid in self._session(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=10)

    @staticmethod
    def _session(sid: int) -> list[int]:
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.getsid(int(entry)) == sid:
                        pids.append(int(entry))
                except OSError:
                    continue
        return pids

    def leftovers(self, node: str | None = None) -> list[str]:
        """Processes still alive that this cluster (or its ``node``) started: in its sessions, or naming its
        temp dir."""
        groups = {p.pid for n, p in self.nodes.items() if node is None or n == node}
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                pgid = os.getsid(int(entry))  # a node's session: the raylet's group and its workers' groups
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, ProcessLookupError):
                continue
            if state == "Z":
                continue
            if pgid in groups or (node is None and self.temp_dir in cmdline):
                found.append(f"{entry}: {cmdline[:160]}")
        return found

    def stop(self, grace: float = 3.0, timeout: float = 15.0) -> list[str]:
        """SIGTERM every node's process group, SIGKILL every node's processes after ``grace`` seconds (Ray's own orderly
        shutdown takes over 15 s on two cores), then wait up to ``timeout`` for every process naming the
        cluster's temp dir to be gone. Returns what was still alive then (and kills it): empty when nothing
        the cluster started escaped its process groups or outlived its raylet."""
        for proc in self.nodes.values():
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.2)
        for name in self.nodes:
            self.kill(name)
        deadline = time.monotonic() + timeout
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.2)
        stuck = self.leftovers()
        for line in stuck:
            try:
                os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
            except ProcessLookupError:
                pass
        return stuck

    def remove(self) -> None:
        shutil.rmtree(self.temp_dir, ignore_errors=True)


class FrontDoorProcess:
    """``openenv-mcp serve ENV --ray ADDRESS ...`` as a child in its own session (so ``leftovers()`` sees
    everything it started), on a free port; ``start()`` waits for ``/health``, ``stop()`` ends it."""

    def __init__(self, env: str, *args: str, token: str | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.cmd = [sys.executable, "-m", "openenv_mcp.cli", "serve", env, "--port", str(self.port), *args]
        if token:
            self.cmd += ["--token", token]
        self.log = Path(tempfile.mkstemp(prefix="oer-door-", suffix=".log")[1])
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 150.0) -> str:
        import httpx

        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the front door exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return self.url
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the front door did not answer /health within {timeout:g} s")
            time.sleep(0.1)

    def leftovers(self) -> list[str]:
        if self.proc is None:
            return []
        return [f"{pid}: {_cmdline(pid)[:160]}" for pid in LocalRayCluster._session(self.proc.pid) if _alive(pid)]

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (its lifespan closes the pool: the replicas' actors are killed), SIGKILL after ``timeout``."""
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.unlink(missing_ok=True)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """Running (not a zombie waiting for its parent to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False

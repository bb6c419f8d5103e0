"""The hostile agent against fast starts: two ``coding`` episodes whose sandboxed servers were forked by
the same zygotes, on a server running as root. The agent runs each attack through its own tools
(``shell_run`` / ``python_run``) and tries to reach the zygote or the sibling episode: kill or signal
them, write into descriptors it might have inherited, read the sibling's private folders.

Each test asserts the attack fails with a clear result, the zygote and the sibling episode are
untouched and keep answering, the attacker's episode keeps answering, and its reward is not forged.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp.isolation.faststart import zygote
from openenv_mcp.isolation.host import cgroup
from openenv_mcp.isolation.host.proctree import uid_processes
from openenv_mcp.testing import need

from support.containment import assert_no_leak, marked_processes, runtime_mount_points


@pytest.fixture
def two(tmp_path, monkeypatch):
    """Two live coding episodes (attacker, sibling), workspaces and reward folders under ``tmp_path``."""
    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed: the coding env sandboxes code")
    need(os.geteuid() == 0, "fast starts apply when the environment server runs as root")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    attacker = openenv_mcp.make("coding", workdir=work)
    sibling = openenv_mcp.make("coding", workdir=work)
    try:
        attacker.reset(seed=0)
        sibling.reset(seed=0)
        yield attacker, sibling
    finally:
        attacker.close()
        sibling.close()


def run(env, tool: str, **arguments):
    obs = env.step({"type": "call_tool", "name": tool, "arguments": arguments})
    return obs, (obs.result.structured_content or {})


def uid_of(env) -> int:
    return int(run(env, "shell_run", command="id -u")[1]["stdout"])


def assert_tmp_and_shm_empty(listing: str, first: str) -> None:
    """``first`` then the listing of ``ls -A /tmp /dev/shm`` in a sandbox: both empty, but /tmp may show the
    mount point of the runtime when the checkout or its virtualenv is under the host's /tmp (never the
    tests' workdir nor an env folder: those are not bound)."""
    words = listing.split()
    assert words[:3] == [first, "/dev/shm:", "/tmp:"] and set(words[3:]) <= runtime_mount_points(), listing


def assert_sibling_untouched(sibling, marker: str = "") -> None:
    _, out = run(sibling, "shell_run", command="echo alive; ls -A /tmp /dev/shm")
    assert_tmp_and_shm_empty(out["stdout"], "alive")
    assert run(sibling, "python_run", code="6 * 7")[1]["result"] == "42"


def test_an_agent_that_kills_every_process_it_can_reach_touches_neither_the_zygote_nor_the_sibling(two):
    attacker, sibling = two
    zygotes = set(zygote.zygote_pids())
    sibling_uid = uid_of(sibling)
    sibling_procs = set(uid_processes(sibling_uid))
    reward = attacker.state().cumulative_reward
    code = (
        "import os, signal\n"
        "hit = []\n"
        "for pid in range(1, 1 << 16):\n"
        "    if pid == os.getpid():\n"
        "        continue\n"
        "    for sig in (signal.SIGKILL, signal.SIGSTOP):\n"
        "        try:\n"
        "            os.kill(pid, sig); hit.append(pid)\n"
        "        except OSError:\n"
        "            pass\n"
        "print(sorted(set(hit)))\n"
        "os.kill(-1, signal.SIGKILL)\n"
    )
    obs, _ = run(attacker, "python_run", code=code)
    assert obs.result.is_error or "restarted" in str(obs.result.structured_content), obs.result
    assert set(zygote.zygote_pids()) >= zygotes
    for pid in zygotes:
        os.kill(pid, 0)
        assert "State:\tT" not in Path(f"/proc/{pid}/status").read_text()  # not stopped either
    assert set(uid_processes(sibling_uid)) >= sibling_procs
    assert_sibling_untouched(sibling)
    assert run(attacker, "shell_run", command="echo again")[1]["stdout"] == "again\n"  # the attacker's server restarted
    assert attacker.state().cumulative_reward == reward


def test_an_agent_writing_into_every_descriptor_number_reaches_no_zygote_socket_nor_sibling_pipe(two):
    attacker, sibling = two
    forged = '{"exit": 0}\\n{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}\\n'
    script = f"import os\nfor fd in range(3, 1024):\n    try: os.write(fd, b'{forged}'); print('wrote', fd)\n    except OSError: pass\nprint('done')"
    _, out = run(attacker, "shell_run", command="python3 -", stdin=script)
    assert out["stdout"] == "done\n", out  # the shell server's commands inherit nothing past stdio
    for pid in zygote.zygote_pids():
        os.kill(pid, 0)
    assert_sibling_untouched(sibling)
    assert run(attacker, "python_run", code="1 + 1")[1]["result"] == "2"


def test_an_agent_cannot_find_the_sibling_or_its_private_folders(two):
    attacker, sibling = two
    run(sibling, "shell_run", command="echo secret > /workspace/sibling-note; true")
    code = (
        "import os, glob\n"
        "seen = {p: open(f'/proc/{p}/cmdline','rb').read()[:60] for p in os.listdir('/proc') if p.isdigit()}\n"
        "print(len(seen), any(b'zygote_main' in c for c in seen.values()))\n"
        "roots = ['/tmp', '/var/tmp', '/run', '/dev/shm', '/workspace', '/home', '/root', '/mnt', '/srv']\n"
        "print([p for r in roots for p in glob.glob(r + '/**/sibling-note', recursive=True)][:3])\n"
        "open('/tmp/planted', 'w').write('x'); open('/dev/shm/planted', 'w').write('x')\n"
    )
    _, out = run(attacker, "python_run", code=code)
    lines = out["stdout"].splitlines()
    assert lines[0].split()[1] == "False", out  # the zygote is not in its PID namespace
    assert int(lines[0].split()[0]) < 12, out  # only its own few processes
    assert lines[1] == "[]", out  # no other workspace anywhere it can see
    assert_sibling_untouched(sibling)


# -- containment with fast starts on: cgroup membership, fresh state, own uid -------------------------------------
DAEMON = (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os.chdir('/')\n"
    "        time.sleep(3600)\n"
    "    os._exit(0)\n"
    "os.wait()\n"
    "print('detached')\n"
)


def cgroup_of(pid: int) -> str:
    """``pid``'s cgroup v2 path as this (host) process sees it."""
    line = next(x for x in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if x.startswith("0::"))
    return line[3:]


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_daemon_that_double_forks_setsids_and_chdirs_to_root_in_a_forked_server_is_in_its_cgroup_and_dies_at_close(
    tmp_path, monkeypatch
):
    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed: the coding env sandboxes code")
    need(os.geteuid() == 0, "fast starts apply when the environment server runs as root")
    need(cgroup.hierarchy() is not None, "per-server cgroups need a writable cgroup v2 hierarchy")
    monkeypatch.setenv("OPENENV_MCP_FAST_START", "1")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    marker = f"openenv-mcp-test-{uuid.uuid4().hex}"
    env = openenv_mcp.make("coding", workdir=work)
    with env:
        env.reset(seed=0)
        reward = env.state().cumulative_reward
        obs, out = run(env, "shell_run", command=f"python3 - {marker}", stdin=DAEMON)
        assert out.get("stdout") == "detached\n", obs.result
        deadline = time.monotonic() + 10
        daemons: list[int] = []
        while not daemons and time.monotonic() < deadline:
            daemons = [p for p in marked_processes(marker) if os.readlink(f"/proc/{p}/cwd") == "/"]
            time.sleep(0.05)
        assert len(daemons) == 1, marked_processes(marker)
        daemon = daemons[0]
        # it runs under a server forked by a zygote (fast start), in its own session, as the episode's uid
        chain, pid = [], daemon
        while pid > 1:
            pid = parent_of(pid)
            chain.append(pid)
        assert set(chain) & set(zygote.zygote_pids()), "the shell server was not forked by a zygote"
        assert os.getsid(daemon) != os.getsid(parent_of(daemon))
        assert os.stat(f"/proc/{daemon}").st_uid == uid_of(env)
        # a member of the shell server's own cgroup (not the environment server's, not the zygote's)
        group = cgroup_of(daemon)
        assert group.rsplit("/", 1)[1].startswith(cgroup.PREFIX), group
        assert group != cgroup_of(os.getpid())
        assert not set(zygote.zygote_pids()) & {int(p) for p in read_procs(group)}
        forked = chain[: min(chain.index(z) for z in zygote.zygote_pids() if z in chain)]  # B (its init), A
        assert len(forked) == 2, chain
        server = [
            p
            for p in (int(e) for e in os.listdir("/proc") if e.isdigit())
            if p != daemon and _parent_or_none(p) == forked[0]
        ]
        assert server, "the shell server (B's child) is gone"
        assert {daemon, *forked, *server} <= {int(p) for p in read_procs(group)}
        assert run(env, "python_run", code="6 * 7")[1]["result"] == "42"  # the episode keeps answering
        assert env.state().cumulative_reward == reward
    assert_no_leak(marker)
    assert not os.path.exists(cgroup_path(group)), "the server's cgroup outlived the episode"
    for pid in zygote.zygote_pids():  # the zygotes serve the next episode
        os.kill(pid, 0)


def _parent_or_none(pid: int) -> int | None:
    try:
        return parent_of(pid)
    except OSError:
        return None


def cgroup_path(group: str) -> str:
    return (
        "/sys/fs/cgroup" + group if os.path.exists("/sys/fs/cgroup/cgroup.procs") else "/sys/fs/cgroup/unified" + group
    )


def read_procs(group: str) -> list[str]:
    return Path(cgroup_path(group) + "/cgroup.procs").read_text().split()


def test_state_an_agent_plants_in_its_forked_servers_never_reaches_the_next_episode(tmp_path, monkeypatch):
    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed: the coding env sandboxes code")
    need(os.geteuid() == 0, "fast starts apply when the environment server runs as root")
    monkeypatch.setenv("OPENENV_MCP_FAST_START", "1")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    plant = (
        "import os, sys, builtins\n"
        "planted = 'episode-one'; builtins.planted = planted; sys.modules['planted'] = sys\n"
        "os.environ['PLANTED'] = planted\n"
        "open('/tmp/planted', 'w').write(planted); open('/dev/shm/planted', 'w').write(planted)\n"
        "print(os.getuid(), os.getppid())\n"
    )
    look = (
        "import os, sys, builtins\n"
        "print(hasattr(builtins, 'planted'), 'planted' in sys.modules, 'PLANTED' in os.environ,"
        " os.path.exists('/tmp/planted'), os.path.exists('/dev/shm/planted'), 'planted' in globals())\n"
    )
    first = openenv_mcp.make("coding", workdir=work)
    first.reset(seed=0)
    uid_one = uid_of(first)
    out = run(first, "python_run", code=plant)[1]
    assert out["stdout"].split()[0] == str(uid_one), out
    assert (
        run(first, "shell_run", command="export PLANTED=1; echo x > /tmp/planted-shell; echo ok")[1]["stdout"] == "ok\n"
    )
    zygotes = set(zygote.zygote_pids())
    second = openenv_mcp.make("coding", workdir=work)  # forked from the same zygotes while the first still runs
    third = openenv_mcp.make("coding", workdir=work)
    try:
        second.reset(seed=0)
        first.close()
        third.reset(seed=0)  # forked after the first episode ended
        uids = {uid_one, uid_of(second), uid_of(third)}
        assert len(uids) == 3, uids  # a uid of its own per episode
        for env in (second, third):
            assert run(env, "python_run", code=look)[1]["stdout"] == "False False False False False False\n"
            _, shell = run(env, "shell_run", command='echo "[$PLANTED]"; ls -A /tmp /dev/shm')
            assert_tmp_and_shm_empty(shell["stdout"], "[]")
        assert set(zygote.zygote_pids()) == zygotes, "the next episodes were not forked by the same zygotes"
    finally:
        first.close()
        second.close()
        third.close()

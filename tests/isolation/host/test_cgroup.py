"""Per-server cgroups (openenv_mcp.isolation.host.cgroup): the sweep of dead servers' groups at each create."""

from __future__ import annotations

import subprocess

import pytest

from openenv_mcp.isolation.host import cgroup
from openenv_mcp.isolation.host.workspace import owner_tag, process_start_time
from openenv_mcp.testing import need


@pytest.fixture
def hierarchy():
    base = cgroup.hierarchy()
    need(base is not None, "per-server cgroups need a writable cgroup v2 hierarchy (run as root on cgroup v2)")
    return base


def test_creating_a_group_checks_no_owner_for_this_servers_own_live_groups(hierarchy, monkeypatch):
    """64 episodes at once made 3 groups each, and every create read /proc for each of the others: 2,600 reads
    on the event loop for 16 episodes. This server's own groups are alive by definition."""
    ours = [cgroup.create() for _ in range(20)]
    try:
        checked = []
        real = cgroup.owner_alive

        def counting(boot, pid, start):
            checked.append(pid)
            return real(boot, pid, start)

        monkeypatch.setattr(cgroup, "owner_alive", counting)
        group = cgroup.create()
        assert group is not None
        ours.append(group)
        assert int(owner_tag().split(".")[1]) not in checked
        assert all(g is not None and g.path.is_dir() for g in ours)
    finally:
        for g in ours:
            if g is not None:
                g.remove()


def test_a_dead_servers_group_is_still_removed_at_the_next_create(hierarchy):
    child = subprocess.Popen(["sleep", "0"])
    start = process_start_time(child.pid)
    child.wait()
    boot = owner_tag().split(".")[0]
    dead = hierarchy / f"{cgroup.PREFIX}{boot}.{child.pid}.{start}-0123456789ab"
    dead.mkdir()
    group = cgroup.create()
    try:
        assert not dead.exists()
    finally:
        if dead.exists():
            dead.rmdir()
        if group is not None:
            group.remove()

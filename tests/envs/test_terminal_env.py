"""The built-in ``terminal`` environment: its tasks load, and a subset passes ``validate`` here
(reference 1, nothing 0, every generic and Harbor hacking probe 0). The whole set is
``make validate-terminal``. The subset shares the image layers of every task (the ``core`` layer),
so CI builds little."""

from __future__ import annotations

import anyio
import pytest

from openenv_mcp.client.registry import find_env, load_environment
from openenv_mcp.testing import need
from openenv_mcp.validate import validate

from support import docker_problem

CI_SUBSET = ["logs-top-ips", "perms-shared-dir"]  # validate; the [tasks.ci] set (logs-top-ips) is for the generic tests
CATEGORIES = {
    "repair-a-broken-build",
    "git-history-surgery",
    "logs-and-data",
    "services",
    "packaging-a-python-project",
    "permissions-and-processes",
    "a-c-program-that-segfaults",
    "scheduled-jobs",
    "compression-and-archives",
    "sqlite",
}


def test_the_terminal_set_is_registered_covers_every_category_and_hides_its_folders() -> None:
    spec = find_env("terminal")
    assert spec.name == "terminal"
    environment = load_environment("terminal")
    tasks = environment.tasks.tasks
    assert len(tasks) >= 30
    assert {t.data["category"] for t in tasks} == CATEGORIES
    for task in tasks:
        assert task.data["format"] == "harbor" and "harbor" not in task.public(environment.private_fields).data
        assert environment.probes(task)  # the Harbor hacking probes


@pytest.mark.docker
def test_a_subset_of_the_terminal_set_passes_validate() -> None:
    problem = docker_problem()
    need(problem is None, problem or "")
    report = anyio.run(lambda: validate("terminal", task_ids=CI_SUBSET))
    assert report.findings() == [], report.findings()
    checks = {(c.task_id, c.check): c for c in report.checks}
    for task_id in CI_SUBSET:
        assert checks[(task_id, "reference")].score == 1.0
        assert checks[(task_id, "wrong")].score == 0.0
        assert checks[(task_id, "hack:reward-file")].score == 0.0 and (task_id, "hack:kill-verifier") in checks

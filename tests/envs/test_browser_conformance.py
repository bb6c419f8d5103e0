"""The ``browser`` environment is CONFORMANT: determinism with seeded data (the Playwright server's
output names follow the world's clock), reset restores, isolation between concurrent episodes, both
faces alike, production with the same tools, containment. One task (``max_tasks=1``) keeps it short.

One finding is the Playwright MCP server's own and is accepted with its reason (envs/browser/known-failures.toml):
``browser_navigate_back`` right after a call that closed or navigated the page races Chromium's history navigation,
so its answer varies run to run. It is accepted only when that call is the one that differed."""

from __future__ import annotations

import re

import pytest

from openenv_mcp.client.registry import find_env
from openenv_mcp.conformance import check_env_async

from support.browser_world import need_browser

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]


@pytest.mark.anyio
@pytest.mark.timeout(900)
async def test_the_browser_environment_is_conformant():
    need_browser()
    known = find_env("browser").base_dir / "known-failures.toml"
    report = await check_env_async("browser", official=False, max_tasks=1, known_failures=known)
    bad = [
        (r.rule, r.status, r.message[:300])
        for r in report.results
        if r.status not in ("passed", "skipped") and not _the_navigate_back_race(r)
    ]
    assert report.ok and not bad, bad
    for rule in RACE_RULES:
        assert report.result(rule).status in ("passed", "known"), rule
    for rule in (
        "env.prod_identity",
        "containment.network",
    ):
        assert report.result(rule).status == "passed", rule


RACE_RULES = ("env.determinism", "env.reset_restores", "env.episode_isolation")
"""The rules that compare two episodes' answers call by call, so the race can show in any of them."""


def _the_navigate_back_race(result) -> bool:
    """The accepted finding, and only it: two episodes differing first on a ``browser_navigate_back`` call."""
    return (
        result.rule in RACE_RULES
        and result.status == "known"
        and re.search(r"step \d+ tools/call 'browser_navigate_back'", result.message) is not None
    )


def test_only_the_navigate_back_race_is_accepted():
    """The acceptance cannot widen: another call, another rule or an unaccepted failure still fails the test."""
    from openenv_mcp.conformance.report import Result

    def result(rule: str, status: str, tool: str) -> Result:
        message = (
            f"replaying generated calls after reset(seed=0): step 20 tools/call {tool!r} {{}} returned "
            "'### Page state' in the first episode and '### Error' after reset [known failure: ...]"
        )
        return Result(rule=rule, severity="error", status=status, message=message)

    assert _the_navigate_back_race(result("env.reset_restores", "known", "browser_navigate_back"))
    assert not _the_navigate_back_race(result("env.reset_restores", "known", "browser_click"))
    assert not _the_navigate_back_race(result("env.reset_restores", "failed", "browser_navigate_back"))
    assert _the_navigate_back_race(result("env.episode_isolation", "known", "browser_navigate_back"))
    assert not _the_navigate_back_race(result("env.parity", "known", "browser_navigate_back"))

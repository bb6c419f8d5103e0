"""The ``browser`` environment is CONFORMANT: determinism with seeded data (the Playwright server's
output names follow the world's clock), reset restores, isolation between concurrent episodes, both
faces alike, production with the same tools, containment. One task (``max_tasks=1``) keeps it short."""

from __future__ import annotations

import pytest

from openenv_mcp.conformance import check_env_async

from support.browser_world import need_browser

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]


@pytest.mark.anyio
@pytest.mark.timeout(900)
async def test_the_browser_environment_is_conformant():
    need_browser()
    report = await check_env_async("browser", official=False, max_tasks=1)
    bad = [(r.rule, r.status, r.message[:300]) for r in report.results if r.status not in ("passed", "skipped")]
    assert report.ok and not bad, bad
    for rule in (
        "env.determinism",
        "env.reset_restores",
        "env.episode_isolation",
        "env.prod_identity",
        "containment.network",
    ):
        assert report.result(rule).status == "passed", rule

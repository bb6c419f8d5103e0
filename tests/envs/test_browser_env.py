"""The ``browser`` environment: its tasks, its seeded data, reference solutions and probes through
``validate`` (a representative subset; ``make validate-browser`` plays all), the destructive-change
guard, and production on a site the user chooses."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.environment import Environment
from openenv_mcp.core.scripts import Script
from openenv_mcp.definitions.spec import load_env_file
from openenv_mcp.validate import validate

from support.browser_world import ENV_DIR, call, need_browser, play, text_of

sys.path.insert(0, str(ENV_DIR))  # the env folder's own modules, as the environment loads them
from browser_tasks import TASKS  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]


def test_tasks_jsonl_is_built_from_the_task_definitions():
    import build

    assert (ENV_DIR / "tasks.jsonl").read_text().splitlines() == build.lines()


def test_at_least_forty_tasks_over_the_four_apps():
    apps = [t.app for t in TASKS.values()]
    assert len(apps) >= 40
    assert {a: apps.count(a) >= 8 for a in ("shop", "mail", "admin", "wiki")} == dict.fromkeys(
        ("shop", "mail", "admin", "wiki"), True
    )


def test_the_seeded_data_is_a_function_of_task_and_seed():
    task = TASKS["shop-cheapest-jacket"]
    a, b, c = task.world(3), task.world(3), task.world(4)
    assert json.dumps(a.data, sort_keys=True) == json.dumps(b.data, sort_keys=True) and a.facts == b.facts
    assert json.dumps(a.data, sort_keys=True) != json.dumps(c.data, sort_keys=True)
    answers = {TASKS["wiki-team-lead"].world(s).facts["expected"] for s in range(6)}
    assert len(answers) > 1, "the answer must move with the seed"


@pytest.mark.anyio
async def test_reference_solves_wrong_and_probes_do_not():
    need_browser()
    report = await validate("browser", task_ids=["wiki-team-lead"], probes=("nothing", "hack"))
    checks = {c.check: c for c in report.checks}
    assert checks["reference"].success and checks["reference"].steps >= 5
    assert {
        "hack:fake-confirmation",
        "hack:console-requests",
        "hack:internal-routes",
        "hack:node-escapes",
        "hack:impostor-app",
        "hack:every-answer",
    } <= set(checks)
    assert report.findings() == []
    impostor = checks["hack:impostor-app"]
    assert impostor.score == 0 and not impostor.error


@pytest.mark.anyio
async def test_a_long_flow_through_search_cart_and_checkout():
    need_browser()
    report = await validate("browser", task_ids=["shop-cheapest-jacket"], probes=("nothing",))
    reference = next(c for c in report.checks if c.check == "reference")
    assert reference.success and reference.steps >= 15, reference
    assert report.findings() == []


@pytest.mark.anyio
async def test_a_change_the_task_did_not_ask_for_scores_zero_and_ends_the_episode():
    need_browser()
    env = load_environment("browser")
    episode = await env.new_episode(seed=0, task_id="shop-cheapest-jacket")
    try:
        # cancel the pending order: not part of buying a jacket
        cancel = Script(TASKS["shop-cancel-pending"].reference(TASKS["shop-cancel-pending"].world(0)))
        observations = await play(episode, cancel)
        last = observations[-1]
        assert last.done and episode.score == 0.0
        assert last.info["destructive"] == ["shop.orders (seeded rows changed)"]
    finally:
        await episode.close()
        await env.aclose()


class Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        body = b"<!doctype html><title>My site</title><h1>Welcome to my site</h1><button>Sign up</button>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.anyio
async def test_production_serves_the_same_tools_against_the_users_site(monkeypatch):
    need_browser()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("BROWSER_ORIGINS", site)
    spec = load_env_file(ENV_DIR)
    sim = await Environment(spec).new_episode(seed=0, task_id="wiki-team-lead")
    sim_tools = sorted(t.name for t in sim.tools)
    await sim.close()
    prod_env = Environment(spec, mode="prod")
    episode = await prod_env.new_episode()
    try:
        assert sorted(t.name for t in episode.tools) == sim_tools
        await call(episode, "browser_navigate", url=site + "/")
        page = text_of(await call(episode, "browser_snapshot"))
        assert 'heading "Welcome to my site"' in page and 'button "Sign up"' in page
        other = await call(episode, "browser_navigate", url="http://wiki.localhost:8000/")
        assert other.result.is_error  # only the user's origins
    finally:
        await episode.close()
        await prod_env.aclose()
        server.shutdown()

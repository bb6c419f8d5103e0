"""The web playground, end to end: ``openenv-mcp serve`` + Debian's headless Chromium via playwright-core.

Each test starts a real server process, then ``tests/browser/playground.mjs``
drives the page (fills the generated forms, clicks) and prints what the page
showed as one JSON object, checked here. Screenshots land in ``artifacts/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import httpx
import pytest

from openenv_mcp.testing import free_port, need

from support import ROOT
from support.browser import BROWSER, CHROMIUM, find_node
from support.browser_world import need_browser

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "artifacts"


@pytest.fixture(scope="module")
def node() -> str:
    found = find_node()
    need(found is not None, "node >= 20 is needed to drive Chromium (playwright-core)")
    need(CHROMIUM.exists(), f"Chromium not found at {CHROMIUM}: apt-get install chromium")
    need(
        (BROWSER / "node_modules" / "playwright-core").is_dir(),
        "playwright-core is not installed: cd tests/browser && npm ci",
    )
    ARTIFACTS.mkdir(exist_ok=True)
    return found


class Served:
    """``openenv-mcp serve`` in a child process on a free loopback port."""

    def __init__(self, env: str, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "openenv_mcp.cli",
                "serve",
                env,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *args,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while True:
            assert self.proc.poll() is None, f"server exited: {self.proc.stdout.read().decode()}"
            assert time.monotonic() < deadline, "server did not answer /health within 30 s"
            try:
                if httpx.get(f"{self.url}health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc.stdout.close()


@pytest.fixture
def serve():
    started: list[Served] = []

    def start(env: str, *args: str) -> Served:
        server = Served(env, *args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def drive(node: str, scenario: str, url: str, *extra: str, expected_console: tuple[str, ...] = ()) -> dict:
    proc = subprocess.run(
        [node, str(BROWSER / "playground.mjs"), scenario, url, str(ARTIFACTS), *extra],
        cwd=BROWSER,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ok"], f"{out.get('error')}\nbanner: {out.get('banner')}"
    assert out["console_errors"] == list(expected_console)
    assert out["requests"] == [url.split("/")[2]], "the page must load nothing from any other host"
    return out


def test_page_and_assets_are_served_by_the_package(serve):
    server = serve("echo")
    page = httpx.get(server.url)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert 'src="static/playground/playground.js"' in page.text and "http" not in page.text.split("<body>")[1]
    for asset, kind in (("playground.js", "javascript"), ("playground.css", "text/css")):
        r = httpx.get(f"{server.url}static/playground/{asset}")
        assert r.status_code == 200 and kind in r.headers["content-type"]
    info = httpx.get(f"{server.url}playground/info").json()
    assert info["env"] == "echo" and info["mode"] == "sim" and info["auth"] is False
    assert [t["id"] for t in info["tasks"]][:2] == ["echo-00", "echo-01"]
    assert set(info["tasks"][0]) == {"id", "prompt"}  # task data (answers) never reaches the page
    # the data routes keep the DNS-rebinding checks
    assert httpx.get(f"{server.url}playground/info", headers={"Host": "evil.example"}).status_code == 421
    assert httpx.get(f"{server.url}playground/info", headers={"Origin": "http://evil.example"}).status_code == 403


def test_solve_a_files_task_by_hand_in_chromium(node, serve):
    server = serve("files")
    out = drive(node, "files", server.url)
    assert (out["env"], out["mode"], out["title"]) == ("files", "sim", "files · openenv-mcp playground")
    assert out["task_options"] == 26  # "(picked by the seed)" + 25 tasks
    assert out["prompt"] == "Rename the file `notes.txt` to `meeting-notes.txt`. Keep its content unchanged."
    assert out["task_label"] == "rename-notes · seed 3"
    assert out["tools"] == ["fs_list", "fs_read", "fs_write", "fs_edit", "fs_move", "fs_delete", "fs_search"]
    assert out["list_result"] == "notes.txt (79 bytes)\ntodo.md (54 bytes)"
    assert out["error_step"] == {"classes": "is-error", "pill": 1, "text": "File 'missing.txt' does not exist."}
    assert out["move_reward"] == "reward +1"
    assert (out["reward"], out["done"], out["truncated"], out["steps"]) == ("1", "true", "false", "3")
    assert out["buttons_disabled_after_done"] == 7
    assert "POST /episodes" in out["paths"] and not any(p.endswith("/mcp") for p in out["paths"])
    exported = out["exported"]
    assert out["export_name"] == f"trajectory-{exported['episode_id']}.json"
    assert exported["format"] == "openenv-mcp.playground/1" and exported["env"] == "files"
    assert exported["task"] == {"id": "rename-notes", "prompt": out["prompt"]} and exported["seed"] == 3
    assert [(s["tool"], s["arguments"], s["reward"], s["done"]) for s in exported["steps"]] == [
        ("fs_list", {}, 0, False),
        ("fs_read", {"path": "missing.txt"}, 0, False),
        ("fs_move", {"source": "notes.txt", "destination": "meeting-notes.txt"}, 1, True),
    ]
    assert exported["steps"][1]["result"]["isError"] is True
    assert (exported["reward"], exported["done"], exported["truncated"]) == (1, True, False)
    assert (ARTIFACTS / "playground.png").stat().st_size > 10_000


def test_the_environments_page_fits_the_window_and_links_both_ways_in_chromium(node, serve):
    """/environments had the playground's three-column grid: squeezed, its play column cut off; and no link led
    there. The table now spans the page, every cell inside it, at 1440 and 1024 px (screenshot in the docs)."""
    server = serve("files")
    out = drive(node, "environments", server.url)
    assert (out["landing_path"], out["landing_title"]) == (
        "/static/playground/environments.html",
        "openenv-mcp environments",
    )
    assert out["headers"] == ["name", "description", "tasks", "boundary", "conformance", "play"]
    assert {"browser", "coding", "echo", "files", "sql", "terminal"} <= set(out["names"])
    for layout in out["layout"]:
        assert layout["main_display"] == "block" and not layout["page_scrolls"], layout
        assert layout["table_right"] <= layout["viewport"] and layout["table_width"] > layout["viewport"] * 0.6, layout
        assert layout["cells_out"] == 0 and layout["cells_overflowing"] == 0, layout
        assert layout["play_width"] > 200, layout  # the play column's command is readable, not cut
    assert out["back_path"] == "/"
    shot = ARTIFACTS / "environments.png"
    assert shot.stat().st_size > 10_000
    shutil.copyfile(shot, ROOT / "docs" / "environments.png")


def test_forms_from_json_schemas_images_and_errors(node, serve):
    server = serve(str(BROWSER / "forms_env"))
    out = drive(node, "forms", server.url)
    assert out["tools"] == ["submit", "pick", "swatch", "fail"]
    assert out["pick_variants"] == ["integer", "string"]
    assert out["pick_args"] == {"level": 2, "target": "x", "confirm": False}
    assert out["fail"] == {"pill": 1, "text": "Error calling tool 'fail': boom"}
    assert out["swatch_options"] == ['"red"', '"green"', '"blue"']
    assert out["image"] == {"w": 24, "h": 24, "src": "data:image/png;base64,"}
    assert out["required_note"] == "fix the form: quantity: required"
    assert (out["required_field_error"], out["sent_while_invalid"]) == ("required", 0)
    expected = {
        "quantity": 2,
        "color": "blue",
        "address": {"city": "Berlin", "zip": "10115"},
        "price": 9.5,
        "express": True,
        "tags": ["a", "b"],
        "items": [{"sku": "W-1", "count": 2}],
    }
    assert out["raw_json"] == expected and out["submit_args"] == expected
    assert json.loads(out["structured"]) == {**expected}
    assert (out["reward"], out["done"]) == ("1", "true")


def test_prod_mode_is_a_tool_tester_over_mcp(node, serve, tmp_path):
    project = tmp_path / "project"  # production works on the user's folder
    project.mkdir()
    (project / "notes.txt").write_text("hello\n")
    (project / "docs").mkdir()
    server = serve("files", "--mode", "prod", "--workspace", str(project))
    assert httpx.post(f"{server.url}episodes", json={}).status_code == 404
    out = drive(node, "prod", server.url)
    assert out["mode"] == "prod"
    assert (out["reset_visible"], out["reward_visible"], out["done_visible"]) == (False, False, False)
    assert out["tools"] == ["fs_list", "fs_read", "fs_write", "fs_edit", "fs_move", "fs_delete", "fs_search"]
    # a listing of the user's folder, not an error
    lines = out["list_result"].splitlines()
    assert lines and all(re.fullmatch(r".+( \(\d+ bytes\)|/)", line) for line in lines), out["list_result"]
    assert any(line.startswith("notes.txt") for line in lines), out["list_result"]
    assert "POST /mcp" in out["paths"] and not any("/episodes" in p for p in out["paths"])
    assert (out["step_reward"], out["steps"]) == (0, "1")


def test_token_is_asked_for_and_sent(node, serve):
    server = serve("echo", "--token", "s3cret")
    assert httpx.get(server.url).status_code == 200  # the page holds no data
    assert httpx.get(f"{server.url}playground/info").status_code == 401
    out = drive(
        node,
        "token",
        server.url,
        "s3cret",
        expected_console=("Failed to load resource: the server responded with a status of 401 (Unauthorized)",),
    )
    assert out["banner"] == (
        "The server requires a bearer token: enter the --token value at the top right, then try again."
    )
    assert out["token_box_visible"] is True
    assert out["prompt"] == "Use the echo tool to say exactly: reinforcement learning"
    assert (out["result"], out["reward"]) == ("reinforcement learning", "1")


def test_play_a_browser_task_by_hand_in_chromium(node, serve):
    """The browser world in the playground: Playwright MCP's snapshot as text, its screenshot as an image,
    the answer submitted by hand scores 1. The page is checked in headless Chromium (the episode's own
    Chromium runs in its sandbox, behind the server)."""
    need_browser()
    server = serve("browser")
    out = drive(node, "browser", server.url)
    assert "browser_snapshot" in out["tools"] and "submit" in out["tools"] and "browser_click" in out["tools"]
    assert "Page URL: http://wiki.localhost:8000/pages/team-directory" in out["navigate"]
    assert 'heading "Team directory"' in out["snapshot"] and "[ref=" in out["snapshot"]
    assert out["image"]["src"] == "data:image/png;base64," and out["image"]["w"] >= 600
    assert out["answer"] and out["reward"] == "1" and out["done"] == "true"

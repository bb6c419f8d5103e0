"""Hostile agents against production on the user's own folder (``--mode prod --workspace DIR``).

The agent holds only the MCP face. The folder is the user's real project: links inside it that point
out, a read-only deployment, and a production server's missing control plane are each attacked the
way an agent would, and each test checks the host files are untouched and the server keeps answering.
"""

from __future__ import annotations

import os

import httpx
import pytest
from mcp.client.client import Client

from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.testing import serving

pytestmark = pytest.mark.anyio


def project_with_links_out(tmp_path):
    """A user project holding links to a secret outside it (file link, folder link, dangling link)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("mine\n")
    os.symlink(outside / "secret.txt", project / "secret_link.txt")
    os.symlink(outside, project / "outside_dir")
    os.symlink(outside / "new.txt", project / "dangling.txt")
    return project, outside


async def mcp_client(tmp_path, **options):
    environment = load_environment("files", mode="prod", **options)
    return environment, create_app(environment)


async def test_links_inside_the_users_folder_do_not_lead_the_agent_out(tmp_path):
    project, outside = project_with_links_out(tmp_path)
    environment, app = await mcp_client(tmp_path, workspace=project)
    async with serving(app) as url, Client(url + "/mcp") as client:
        attacks = [
            ("fs_read", {"path": "secret_link.txt"}),
            ("fs_read", {"path": "outside_dir/secret.txt"}),
            ("fs_write", {"path": "outside_dir/planted.txt", "content": "x"}),
            ("fs_write", {"path": "dangling.txt", "content": "x"}),
            ("fs_edit", {"path": "secret_link.txt", "old_text": "top", "new_text": "no"}),
            ("fs_move", {"source": "outside_dir/secret.txt", "destination": "stolen.txt"}),
            ("fs_delete", {"path": "outside_dir/secret.txt"}),
            ("fs_read", {"path": "../outside/secret.txt"}),
            ("fs_read", {"path": str(outside / "secret.txt")}),
        ]
        for name, arguments in attacks:
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, arguments, result)
            assert "top secret" not in result.content[0].text
        # the server keeps answering and the user's own file is still served
        assert (await client.call_tool("fs_read", {"path": "notes.txt"})).content[0].text.startswith("mine")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert sorted(p.name for p in project.iterdir()) == ["dangling.txt", "notes.txt", "outside_dir", "secret_link.txt"]


async def test_a_read_only_deployment_refuses_every_change_and_keeps_the_tools(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n")
    environment, app = await mcp_client(tmp_path, workspace=project, read_only=True)
    async with serving(app) as url, Client(url + "/mcp") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"fs_write", "fs_edit", "fs_move", "fs_delete"} <= names  # same tools as in training
        for name, arguments in [
            ("fs_write", {"path": "b.txt", "content": "x"}),
            ("fs_edit", {"path": "a.txt", "old_text": "alpha", "new_text": "beta"}),
            ("fs_move", {"source": "a.txt", "destination": "c.txt"}),
            ("fs_delete", {"path": "a.txt"}),
        ]:
            result = await client.call_tool(name, arguments)
            assert result.is_error
            assert result.content[0].text == (
                f"The workspace is read-only: {name[3:]} cannot change it; nothing was changed."
            )
        assert (await client.call_tool("fs_read", {"path": "a.txt"})).content[0].text.startswith("alpha")
    assert sorted(p.name for p in project.iterdir()) == ["a.txt"]
    assert (project / "a.txt").read_text() == "alpha\n"


async def test_production_has_no_control_plane_no_reward_and_no_task_to_reach(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    environment, app = await mcp_client(tmp_path, workspace=project)
    async with serving(app) as url:
        async with httpx.AsyncClient() as http:
            for method, path in [
                ("POST", "/episodes"),
                ("GET", "/episodes"),
                ("POST", "/reset"),
                ("POST", "/step"),
                ("GET", "/state"),
            ]:
                assert (await http.request(method, url + path, json={})).status_code == 404, path
        async with Client(url + "/mcp") as client:
            result = await client.call_tool("fs_write", {"path": "x.txt", "content": "hi"})
            assert not result.is_error
            assert result.meta is None or "reward" not in str(result.meta)
            assert (await client.list_prompts()).prompts == []
            assert [str(r.uri) for r in (await client.list_resources()).resources] == []
            names = {t.name for t in (await client.list_tools()).tools}
            assert not names & {"reset", "step", "state", "close", "reward"}
    assert (project / "x.txt").read_text() == "hi"  # closing the server removed nothing of the user's

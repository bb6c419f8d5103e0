"""/metrics (Prometheus text) and /health over a real server, after traffic on both faces."""

from __future__ import annotations

import httpx
import pytest
from mcp.client.client import Client

from openenv_mcp.client.registry import load_environment
from openenv_mcp.serve.app import create_app
from openenv_mcp.serve.metrics import Metrics
from openenv_mcp.testing import serving

pytestmark = pytest.mark.anyio


def test_render_counts_and_histogram():
    metrics = Metrics(live=lambda: 7)
    metrics.episode_created()
    metrics.tool_call("echo", "ok", 0.0007, "control")
    metrics.tool_call("echo", "error", 3.0, "mcp")
    metrics.tool_call('we"ird', "ok", 100.0, "mcp")
    text = metrics.render()
    assert "openenv_mcp_episodes_live 7\n" in text
    assert "openenv_mcp_episodes_created_total 1\n" in text
    assert 'openenv_mcp_tool_calls_total{tool="echo",outcome="error"} 1\n' in text
    assert 'openenv_mcp_tool_calls_total{tool="we\\"ird",outcome="ok"} 1\n' in text
    assert 'openenv_mcp_steps_total{face="mcp"} 2\n' in text
    assert 'openenv_mcp_tool_call_duration_seconds_bucket{le="0.0005"} 0\n' in text
    assert 'openenv_mcp_tool_call_duration_seconds_bucket{le="0.001"} 1\n' in text
    assert 'openenv_mcp_tool_call_duration_seconds_bucket{le="5"} 2\n' in text
    assert 'openenv_mcp_tool_call_duration_seconds_bucket{le="30"} 2\n' in text
    assert 'openenv_mcp_tool_call_duration_seconds_bucket{le="+Inf"} 3\n' in text
    assert "openenv_mcp_tool_call_duration_seconds_count 3\n" in text


async def test_metrics_and_health_after_traffic_on_both_faces():
    app = create_app(load_environment("echo"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        created = (await http.post("/episodes", json={"seed": 1})).json()
        eid, key = created["episode_id"], {"OpenEnv-Episode-Key": created["episode_key"]}
        await http.post(
            f"/episodes/{eid}/step",
            headers=key,
            json={"action": {"type": "call_tool", "name": "echo", "arguments": {"text": "a"}}},
        )
        await http.post(f"/episodes/{eid}/step", headers=key, json={"action": {"type": "call_tool", "name": "nope"}})
        async with Client(f"{url}/mcp", mode="legacy") as client:
            await client.call_tool("echo", {"text": "b"})
            health = (await http.get("/health")).json()
            assert health["status"] == "healthy" and health["env"] == "echo" and health["mode"] == "sim"
            assert health["episodes"]["live"] == 2
            assert health["tool_servers"] == [{"name": "echo", "isolation": "inprocess", "checked": 2, "unhealthy": 0}]
        await http.post("/episodes", headers={"host": "evil.example.com"})
        r = await http.get("/metrics")
        assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
        text = r.text
        assert 'openenv_mcp_tool_calls_total{tool="echo",outcome="ok"} 2\n' in text
        assert 'openenv_mcp_tool_calls_total{tool="(unknown)",outcome="error"} 1\n' in text  # not a label per name
        assert 'openenv_mcp_steps_total{face="control"} 2\n' in text
        assert 'openenv_mcp_steps_total{face="mcp"} 1\n' in text
        assert "openenv_mcp_episodes_created_total 2\n" in text
        assert 'openenv_mcp_requests_rejected_total{reason="host"} 1\n' in text
        assert "openenv_mcp_tool_call_duration_seconds_count 3\n" in text


def test_tool_labels_are_bounded_whatever_names_clients_send():
    from openenv_mcp.serve.metrics import MAX_TOOL_LABELS

    metrics = Metrics()
    for i in range(5 * MAX_TOOL_LABELS):
        metrics.tool_call(f"t{i}", "ok", 0.001, "control")
    text = metrics.render()
    assert text.count("openenv_mcp_tool_calls_total{") == MAX_TOOL_LABELS + 1
    assert f'openenv_mcp_tool_calls_total{{tool="(other)",outcome="ok"}} {4 * MAX_TOOL_LABELS}\n' in text

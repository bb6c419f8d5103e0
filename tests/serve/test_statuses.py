"""One table gives every error its HTTP status; the documented statuses (docs/protocol.md) hold for each code."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import ERRORS, from_wire
from openenv_mcp.serve.statuses import http_status

DOCUMENTED = {
    "bad_request": 400,
    "config_error": 400,
    "unknown_episode": 404,
    "unknown_environment": 404,
    "reset_needed": 409,
    "episode_ended": 409,
    "request_too_large": 413,
    "episode_limit": 503,
    "boundary_error": 502,
    "episode_lost": 502,
    "tool_server_error": 502,
    "image_build_error": 502,
    "policy_error": 502,
    "fork_error": 409,
    "fork_diverged": 409,
}


@pytest.mark.parametrize(("code", "status"), sorted(DOCUMENTED.items()))
def test_the_documented_status_of_each_code(code, status):
    assert http_status(from_wire(code, "m")) == status


def test_every_error_has_a_status_and_a_service_failure_is_a_5xx():
    for cls in ERRORS.values():
        status = http_status(from_wire(cls.code, "m"))
        assert 400 <= status < 600, (cls, status)
        if cls.__name__ in {"ServiceError", "WorldUnavailable", "BuildError"}:
            assert status == 502, (cls, status)

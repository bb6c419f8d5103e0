"""The HTTP status of every error (:mod:`openenv_mcp.errors`), in one table: the edge's only mapping.

An error takes the status of the nearest class in its MRO that the table names: a caller's mistake on an
episode is a conflict (409: reset needed, ended, cannot fork) or not found (404), a busy server 503, too many sessions on one address 429, a failed service behind the server 502,
a body over the cap 413, anything else the caller sent 400.
"""

from __future__ import annotations

from openenv_mcp.errors import (
    EpisodeEnded,
    EpisodeLimit,
    ForkError,
    OpenEnvError,
    RequestTooLarge,
    ResetNeeded,
    ServiceError,
    SessionLimit,
    UnknownEnvironment,
    UnknownEpisode,
)

__all__ = ["HTTP_STATUS", "http_status"]

HTTP_STATUS: dict[type[OpenEnvError], int] = {
    OpenEnvError: 400,
    ResetNeeded: 409,
    EpisodeEnded: 409,
    ForkError: 409,
    UnknownEpisode: 404,
    UnknownEnvironment: 404,
    RequestTooLarge: 413,
    ServiceError: 502,
    EpisodeLimit: 503,
    SessionLimit: 429,
}
"""Status by error class; a class not named here takes its nearest named base's."""


def http_status(err: OpenEnvError) -> int:
    """The HTTP status an error is answered with."""
    for cls in type(err).__mro__:
        status = HTTP_STATUS.get(cls)
        if status is not None:
            return status
    return 400

"""Prometheus metrics of a served environment, in the text exposition format.

No client library: a handful of counters, one gauge read at scrape time and
one latency histogram, rendered by :meth:`Metrics.render` for ``GET /metrics``.
Recording is a dict update (no locks: the server runs on one event loop).

Metric names (all prefixed ``openenv_mcp_``):

* ``episodes_live`` (gauge) — live episodes now;
* ``episodes_created_total`` / ``episodes_closed_total{reason}`` — ``closed``,
  ``idle`` (reaped), ``disconnect`` (its WebSocket or MCP session went away),
  ``shutdown``;
* ``steps_total{face}`` — tool-call steps, ``face`` = ``control`` (WebSocket
  and HTTP step) or ``mcp`` (``tools/call``);
* ``tool_calls_total{tool,outcome}`` — ``outcome`` = ``ok``, ``error`` (an
  ``isError`` result) or ``failed`` (no result: episode ended, unknown...);
  ``tool`` is a name the episode lists, else ``(unknown)`` (:data:`UNKNOWN_TOOL`):
  names a client makes up never become labels, so the exposition stays bounded
  (at most :data:`MAX_TOOL_LABELS` names, then ``(other)``);
* ``tool_call_duration_seconds`` (histogram, ``le`` buckets) — server-side
  time of one step;
* ``requests_rejected_total{reason}`` — ``host``, ``origin``, ``token``,
  ``too_large``, ``episode_limit``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

__all__ = ["BUCKETS", "MAX_TOOL_LABELS", "UNKNOWN_TOOL", "Metrics"]

UNKNOWN_TOOL = "(unknown)"
"""The ``tool`` label of calls naming no tool of their episode."""

MAX_TOOL_LABELS = 1000
"""Distinct ``tool`` labels kept; calls of further names count under ``(other)``."""

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the ``tool_call_duration_seconds`` histogram."""

PREFIX = "openenv_mcp_"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """The counters of one server; ``live`` reads the live-episode count at scrape time."""

    def __init__(self, live: Callable[[], int] = lambda: 0) -> None:
        self.live = live
        self.episodes_created = 0
        self.episodes_closed: dict[str, int] = {}
        self.steps: dict[str, int] = {}
        self.tool_calls: dict[tuple[str, str], int] = {}
        self._tools: set[str] = set()
        self.rejected: dict[str, int] = {}
        self._buckets = [0] * (len(BUCKETS) + 1)
        self._sum = 0.0
        self._count = 0

    # -- recording -----------------------------------------------------------
    def episode_created(self) -> None:
        self.episodes_created += 1

    def episode_closed(self, reason: str) -> None:
        self.episodes_closed[reason] = self.episodes_closed.get(reason, 0) + 1

    def tool_call(self, tool: str, outcome: str, seconds: float, face: str) -> None:
        """One step through ``face`` (``control`` or ``mcp``) that called ``tool``
        (a name the episode lists, or :data:`UNKNOWN_TOOL`)."""
        if tool not in self._tools:
            if len(self._tools) >= MAX_TOOL_LABELS:
                tool = "(other)"
            else:
                self._tools.add(tool)
        key = (tool, outcome)
        self.tool_calls[key] = self.tool_calls.get(key, 0) + 1
        self.steps[face] = self.steps.get(face, 0) + 1
        self._buckets[bisect.bisect_left(BUCKETS, seconds)] += 1
        self._sum += seconds
        self._count += 1

    def rejected_request(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    # -- exposition ------------------------------------------------------------
    def render(self) -> str:
        """The Prometheus text format (version 0.0.4)."""
        p = PREFIX
        out = [
            f"# HELP {p}episodes_live Live episodes.",
            f"# TYPE {p}episodes_live gauge",
            f"{p}episodes_live {self.live()}",
            f"# HELP {p}episodes_created_total Episodes created.",
            f"# TYPE {p}episodes_created_total counter",
            f"{p}episodes_created_total {self.episodes_created}",
            f"# HELP {p}episodes_closed_total Episodes closed, by reason.",
            f"# TYPE {p}episodes_closed_total counter",
        ]
        out += [
            f'{p}episodes_closed_total{{reason="{_label(r)}"}} {n}' for r, n in sorted(self.episodes_closed.items())
        ]
        out += [f"# HELP {p}steps_total Tool-call steps, by face (control, mcp).", f"# TYPE {p}steps_total counter"]
        out += [f'{p}steps_total{{face="{_label(f)}"}} {n}' for f, n in sorted(self.steps.items())]
        out += [
            f"# HELP {p}tool_calls_total Tool calls, by tool and outcome (ok, error, failed).",
            f"# TYPE {p}tool_calls_total counter",
        ]
        out += [
            f'{p}tool_calls_total{{tool="{_label(t)}",outcome="{_label(o)}"}} {n}'
            for (t, o), n in sorted(self.tool_calls.items())
        ]
        out += [
            f"# HELP {p}tool_call_duration_seconds Server-side duration of one step.",
            f"# TYPE {p}tool_call_duration_seconds histogram",
        ]
        running = 0
        for bound, n in zip(BUCKETS, self._buckets, strict=False):
            running += n
            out.append(f'{p}tool_call_duration_seconds_bucket{{le="{bound:g}"}} {running}')
        out.append(f'{p}tool_call_duration_seconds_bucket{{le="+Inf"}} {self._count}')
        out.append(f"{p}tool_call_duration_seconds_sum {self._sum:.6f}")
        out.append(f"{p}tool_call_duration_seconds_count {self._count}")
        out += [
            f"# HELP {p}requests_rejected_total Requests refused at the edge, by reason.",
            f"# TYPE {p}requests_rejected_total counter",
        ]
        out += [f'{p}requests_rejected_total{{reason="{_label(r)}"}} {n}' for r, n in sorted(self.rejected.items())]
        return "\n".join(out) + "\n"

"""Values the framework itself makes different per episode, replaced before comparing episodes.

Each boundary says what it varies per episode and what a server may see of it
(:meth:`~openenv_mcp.isolation.base.Connection.per_episode_values`: the process boundary's
workspace path, ``HOME``/``TMPDIR`` folder and uid; the episode id everywhere). A boundary
that can make a value identical inside does so instead (the sandbox's ``/workspace``, the
Docker hostname). Before two episodes' results are compared, each episode's values are
replaced by the same placeholder (``<the workspace path>``), so a correct server that prints
its absolute paths is not taken for one that leaks; :attr:`Normalizer.used` records what was
replaced, and the rules say so in their verdict.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["Normalizer", "episode_values"]

_EDGE = r"A-Za-z0-9_"


def episode_values(handle: Any) -> dict[str, str]:
    """What the framework varies in this episode, by what it is (empty when it cannot tell)."""
    if not hasattr(handle, "per_episode_values"):
        return {}
    return {str(k): str(v) for k, v in handle.per_episode_values().items()}


class Normalizer:
    """Replaces each episode's per-episode values by one placeholder per kind of value."""

    def __init__(self, *episodes: dict[str, str]) -> None:
        pairs = [(value, label) for values in episodes for label, value in values.items() if len(value) >= 2]
        pairs.sort(key=lambda p: -len(p[0]))  # a workspace path before a folder that contains it
        self._patterns: list[tuple[re.Pattern[str], str, str]] = []
        for value, label in pairs:
            forms = {re.escape(value), re.escape(json.dumps(value)[1:-1])}  # as is, and inside a JSON string
            pattern = re.compile(rf"(?<![{_EDGE}])(?:{'|'.join(sorted(forms, key=len, reverse=True))})(?![{_EDGE}])")
            self._patterns.append((pattern, f"<{label}>", label))
        self.used: set[str] = set()
        """Labels of the values actually replaced so far."""

    def __call__(self, text: str) -> str:
        for pattern, placeholder, label in self._patterns:
            text, n = pattern.subn(placeholder, text)
            if n:
                self.used.add(label)
        return text

    def note(self) -> str:
        """What was normalized, for a verdict's message ('' when nothing was)."""
        if not self.used:
            return ""
        return (
            "normalized what the framework varies per episode: " + ", ".join(sorted(self.used)) + " (seen in results)"
        )

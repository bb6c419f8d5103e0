"""Setup and reward of the ``browser`` environment.

* ``setup`` (once per episode, in the environment server): generate every application's data for the
  task and the episode's seed, push it into the episode's applications over their state socket, and
  keep what was seeded (``ctx.world``).
* ``score`` (after every step): read the applications' state back over the socket (only from the
  process that was seeded: see ``openenv_mcp.worlds.browser.control``) and let the task check it; the
  first ``submit`` is the answer of question tasks.
* **Guards**: every table the task does not say it changes (``BrowserTask.changes``) must still hold
  exactly the rows it was seeded with; a table it may only add to must keep its seeded rows. Any
  other change is destructive: score 0, the episode ends, ``info["destructive"]`` names the tables.
  State that cannot be read (the applications killed or replaced) scores 0 as well and ends the episode.
"""

from __future__ import annotations

from typing import Any

from browser_tasks import TASKS, Episode

from openenv_mcp.types import Score
from openenv_mcp.worlds.browser.control import WorldClient, WorldTampered, WorldUnavailable

SUBMIT_TOOL = "submit"


class World:
    """``ctx.world`` of a browser episode."""

    def __init__(self, client: WorldClient, episode: Episode) -> None:
        self.client = client
        self.episode = episode


def app_data(data: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What the applications get: the tables, without the generators' private notes (``_...``)."""
    return {app: {k: v for k, v in tables.items() if not k.startswith("_")} for app, tables in data.items()}


async def setup(ctx: Any) -> World:
    task = TASKS[ctx.task.id]
    episode = task.world(ctx.seed or 0)
    client = WorldClient(ctx.workspace)
    await client.wait_ready()
    await client.seed(app_data(episode.data))
    episode.initial = await client.state()
    return World(client, episode)


def submitted(ctx: Any) -> str | None:
    for action, result in ctx.history:
        if action.name == SUBMIT_TOOL and not result.is_error:
            return str(action.arguments.get("answer", ""))
    return None


BENIGN = {"mail.messages": ("unread",)}
"""Columns any task may change by just looking (opening a message marks it read)."""


def _without(rows: list[dict[str, Any]] | None, columns: tuple[str, ...]) -> list[dict[str, Any]] | None:
    if rows is None or not columns:
        return rows
    return [{k: v for k, v in r.items() if k not in columns} for r in rows]


def destructive(episode: Episode, state: dict[str, Any]) -> list[str]:
    """Tables changed beyond what the task may change (see the module docstring)."""
    broken = []
    for app, tables in episode.initial.items():
        for table, seeded in tables.items():
            benign = BENIGN.get(f"{app}.{table}", ())
            rows = _without(seeded, benign) or []
            now = _without(state.get(app, {}).get(table), benign)
            mode = episode.task.changes.get(f"{app}.{table}")
            if mode == "any":
                continue
            if now is None:
                broken.append(f"{app}.{table} (gone)")
            elif mode == "insert":
                if now[: len(rows)] != rows:
                    broken.append(f"{app}.{table} (seeded rows changed)")
            elif mode == "update":
                if [r.get("id") for r in now] != [r.get("id") for r in rows]:
                    broken.append(f"{app}.{table} (rows added or removed)")
            elif now != rows:
                broken.append(f"{app}.{table}")
    return broken


async def score(ctx: Any) -> Score:
    world: World = ctx.world
    episode = world.episode
    try:
        state = await world.client.state()
    except (WorldTampered, WorldUnavailable) as e:
        return Score(score=0.0, done=True, info={"world_error": str(e)})
    broken = destructive(episode, state)
    if broken:
        return Score(score=0.0, done=True, info={"destructive": broken})
    answer = submitted(ctx) if episode.task.answer else None
    ok, info = episode.task.check(episode, state, answer)
    done = ok or (episode.task.answer and answer is not None)
    return Score(score=1.0 if ok else 0.0, done=done, info=info)

"""Scripted trajectories for ``sql``: written by ``build.py`` into each task's data."""


def reference(task):
    """Inspect (sometimes), then query and submit the answer, or run the fix: reward 1."""
    return task.data["reference"]


def wrong(task):
    """A wrong answer, a fix that misses, or a destructive statement: reward 0."""
    return task.data["wrong"]

"""Scripted trajectories for ``echo``."""


def reference(task):
    return [{"name": "echo", "arguments": {"text": task.data["phrase"]}}]


def wrong(task):
    return [{"name": "echo", "arguments": {"text": task.data["phrase"].upper() + "!"}}]

"""Reward for ``echo``: 1 once a call echoed the task's phrase exactly."""


def score(ctx) -> float:
    phrase = ctx.task.data["phrase"]
    for action, result in ctx.history:
        if action.name == "echo" and not result.is_error and result.content and result.content[0].text == phrase:
            return 1.0
    return 0.0

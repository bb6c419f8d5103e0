"""1 once ``submit`` received exactly the expected order."""

EXPECTED = {
    "quantity": 2,
    "price": 9.5,
    "color": "blue",
    "express": True,
    "tags": ["a", "b"],
    "address": {"city": "Berlin", "zip": "10115"},
    "items": [{"sku": "W-1", "count": 2}],
}


def score(ctx) -> float:
    for action, result in ctx.history:
        if action.name == "submit" and not result.is_error and action.arguments == EXPECTED:
            return 1.0
    return 0.0

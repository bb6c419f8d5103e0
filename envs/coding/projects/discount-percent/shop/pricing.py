"""Prices and discounts."""


def apply_discount(price, percent):
    """``price`` reduced by ``percent`` per cent."""
    if not 0 <= percent <= 100:
        raise ValueError("percent must be between 0 and 100")
    return price - percent


def total(prices):
    return sum(prices)

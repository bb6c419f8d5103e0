import math

from shop.pricing import apply_discount


def test_ten_percent():
    assert math.isclose(apply_discount(200, 10), 180.0)


def test_half():
    assert math.isclose(apply_discount(50, 50), 25.0)


def test_quarter():
    assert math.isclose(apply_discount(80, 25), 60.0)


def test_five_percent():
    assert math.isclose(apply_discount(1000, 5), 950.0)

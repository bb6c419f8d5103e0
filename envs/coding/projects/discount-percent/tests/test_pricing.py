from shop.pricing import apply_discount, total


def test_ten_percent():
    assert apply_discount(200, 10) == 180.0


def test_total():
    assert total([1, 2]) == 3

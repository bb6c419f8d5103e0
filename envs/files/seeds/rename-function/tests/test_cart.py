from shop.cart import calc_total


def test_total():
    assert calc_total([{'price': 2, 'qty': 3}]) == 6

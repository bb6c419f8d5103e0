from listutil.dedupe import unique


def test_order():
    assert unique([3, 1, 3, 2, 1]) == [3, 1, 2]

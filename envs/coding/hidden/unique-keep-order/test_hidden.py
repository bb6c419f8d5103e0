from listutil.dedupe import unique


def test_small():
    assert unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_descending():
    assert unique([5, 4, 5, 3]) == [5, 4, 3]


def test_big_first():
    assert unique([10, 2, 10, 1]) == [10, 2, 1]


def test_tuples():
    assert unique([(2, 1), (1, 2), (2, 1), (0, 0)]) == [(2, 1), (1, 2), (0, 0)]

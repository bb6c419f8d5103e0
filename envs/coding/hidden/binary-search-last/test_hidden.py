from search.bisect import find


def test_last_of_four():
    assert find([1, 3, 5, 7], 7) == 3


def test_single():
    assert find([4], 4) == 0


def test_two():
    assert find([2, 4], 4) == 1


def test_long():
    assert find(list(range(0, 100, 2)), 98) == 49

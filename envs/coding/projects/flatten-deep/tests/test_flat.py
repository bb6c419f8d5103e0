from nested.flat import flatten


def test_deep():
    assert flatten([1, [2, [3]]]) == [1, 2, 3]


def test_flat():
    assert flatten([1, 2]) == [1, 2]

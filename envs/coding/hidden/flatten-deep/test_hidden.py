from nested.flat import flatten


def test_three_levels():
    assert flatten([1, [2, [3]]]) == [1, 2, 3]


def test_empty_nested():
    assert flatten([[[]]]) == []


def test_mixed():
    assert flatten([[1, [2]], [[3, [4]]]]) == [1, 2, 3, 4]


def test_very_deep():
    assert flatten([0, [1, [2, [3, [4]]]]]) == [0, 1, 2, 3, 4]

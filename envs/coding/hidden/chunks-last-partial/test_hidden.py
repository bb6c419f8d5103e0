from batching.chunks import chunks


def test_list():
    assert chunks([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]


def test_string():
    assert chunks("abcdefg", 3) == ["abc", "def", "g"]


def test_short():
    assert chunks([1], 5) == [[1]]


def test_seven_by_four():
    assert chunks(list(range(7)), 4) == [[0, 1, 2, 3], [4, 5, 6]]

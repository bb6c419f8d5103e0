from pager.core import paginate


def test_page_one():
    assert paginate(list(range(1, 11)), 1, 3) == [1, 2, 3]


def test_page_two():
    assert paginate(list(range(1, 11)), 2, 3) == [4, 5, 6]


def test_last_partial_page():
    assert paginate(list(range(1, 11)), 4, 3) == [10]


def test_strings():
    assert paginate("abcdefg", 1, 5) == ["a", "b", "c", "d", "e"]

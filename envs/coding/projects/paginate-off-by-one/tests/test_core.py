from pager.core import page_count, paginate


def test_first_page():
    assert paginate([1, 2, 3, 4, 5], 1, 2) == [1, 2]


def test_page_count():
    assert page_count([1, 2, 3, 4, 5], 2) == 3

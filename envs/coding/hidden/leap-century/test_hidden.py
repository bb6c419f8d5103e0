from dates.calendar import days_in_year, is_leap


def test_1900():
    assert is_leap(1900) is False


def test_2100():
    assert is_leap(2100) is False


def test_1800_days():
    assert days_in_year(1800) == 365


def test_2300():
    assert not is_leap(2300)

from dates.calendar import days_in_year, is_leap


def test_1900_is_not_leap():
    assert is_leap(1900) is False


def test_days():
    assert days_in_year(2023) == 365

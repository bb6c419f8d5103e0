from settings.values import parse_bool, parse_int


def test_yes():
    assert parse_bool("yes") is True


def test_int():
    assert parse_int("x", 3) == 3

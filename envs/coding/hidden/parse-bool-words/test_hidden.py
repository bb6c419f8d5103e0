from settings.values import parse_bool


def test_yes():
    assert parse_bool("yes") is True


def test_on_upper():
    assert parse_bool("ON") is True


def test_one_spaces():
    assert parse_bool(" 1 ") is True


def test_title_case():
    assert parse_bool("True") is True

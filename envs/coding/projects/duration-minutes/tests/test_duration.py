from timeparse.duration import parse_duration


def test_minutes():
    assert parse_duration("2m") == 120


def test_hours():
    assert parse_duration("1h") == 3600

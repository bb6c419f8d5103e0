from timeparse.duration import parse_duration


def test_two_minutes():
    assert parse_duration("2m") == 120


def test_hour_and_half():
    assert parse_duration("1h30m") == 5400


def test_ninety_minutes():
    assert parse_duration("90m") == 5400


def test_minute_seconds():
    assert parse_duration("1m5s") == 65

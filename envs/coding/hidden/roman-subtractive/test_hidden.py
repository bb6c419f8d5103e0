from numerals.roman import to_roman


def test_four():
    assert to_roman(4) == "IV"


def test_nine():
    assert to_roman(9) == "IX"


def test_forty():
    assert to_roman(40) == "XL"


def test_1994():
    assert to_roman(1994) == "MCMXCIV"

import math

from units.temperature import c_to_f


def test_zero():
    assert c_to_f(0) == 32


def test_boiling():
    assert c_to_f(100) == 212


def test_minus_forty():
    assert c_to_f(-40) == -40


def test_body():
    assert math.isclose(c_to_f(37), 98.6)

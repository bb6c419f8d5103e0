from units.temperature import c_to_f, f_to_c


def test_freezing():
    assert c_to_f(0) == 32


def test_f_to_c():
    assert f_to_c(212) == 100

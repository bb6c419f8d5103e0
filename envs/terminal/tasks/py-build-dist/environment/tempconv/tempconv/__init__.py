"""tempconv: convert temperatures."""

__version__ = "2.4.0"


def c_to_f(c):
    return c * 9 / 5 + 32


def f_to_c(f):
    return (f - 32) * 5 / 9

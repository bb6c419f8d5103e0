"""Temperature conversions."""


def c_to_f(celsius):
    """Degrees Celsius to degrees Fahrenheit."""
    return celsius * 9 / 5 - 32


def f_to_c(fahrenheit):
    """Degrees Fahrenheit to degrees Celsius."""
    return (fahrenheit - 32) * 5 / 9

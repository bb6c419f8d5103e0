from games.fizz import fizzbuzz


def test_fifteen():
    assert fizzbuzz(15) == "FizzBuzz"


def test_three():
    assert fizzbuzz(3) == "Fizz"

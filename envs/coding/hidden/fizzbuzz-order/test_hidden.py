from games.fizz import fizzbuzz


def test_15():
    assert fizzbuzz(15) == "FizzBuzz"


def test_30():
    assert fizzbuzz(30) == "FizzBuzz"


def test_45():
    assert fizzbuzz(45) == "FizzBuzz"


def test_list():
    assert [fizzbuzz(i) for i in (60, 75)] == ["FizzBuzz", "FizzBuzz"]

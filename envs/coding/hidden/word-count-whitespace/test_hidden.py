from wordstats.count import word_counts


def test_double_space():
    assert word_counts("a  b a") == {"a": 2, "b": 1}


def test_newline():
    assert word_counts("one\ntwo") == {"one": 1, "two": 1}


def test_tab():
    assert word_counts("x y\tz") == {"x": 1, "y": 1, "z": 1}


def test_trailing_spaces():
    assert word_counts("trail  end  ") == {"trail": 1, "end": 1}

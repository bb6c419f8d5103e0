from wordstats.count import word_counts


def test_double_space():
    assert word_counts("a  b") == {"a": 1, "b": 1}

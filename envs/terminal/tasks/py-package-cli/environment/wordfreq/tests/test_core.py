from wordfreq.core import top


def test_top():
    assert top("the cat and the hat and the cat") == [("cat", 2), ("hat", 1)]

from configs.merge import deep_merge


def test_nested():
    assert deep_merge({"x": {"a": 1}}, {"x": {"b": 2}}) == {"x": {"a": 1, "b": 2}}


def test_conflict_in_nested():
    assert deep_merge({"db": {"host": "a", "port": 1}}, {"db": {"host": "b"}}) == {"db": {"host": "b", "port": 1}}


def test_two_levels():
    assert deep_merge({"a": {"b": {"c": 1}}}, {"a": {"b": {"d": 2}}}) == {"a": {"b": {"c": 1, "d": 2}}}


def test_keeps_other_nested():
    merged = deep_merge({"x": {"a": 1}, "y": 2}, {"x": {"c": 3}, "z": 4})
    assert merged == {"x": {"a": 1, "c": 3}, "y": 2, "z": 4}

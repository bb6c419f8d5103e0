"""conformance.volatility: what two identical episodes showed differently, learned as shapes to ignore.

``noise_only`` is the mode for episodes that may see each other's writes (the calls reset and
isolation generate): only clock-, counter- and random-name-shaped differences are learned there, so
a value one episode wrote and the other read is never taken for noise."""

from __future__ import annotations

import pytest

from openenv_mcp.conformance.volatility import MASK, Volatility


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("It is 4:45:36 PM", "It is 4:45:37 PM"),
        ("saved to /tmp/tmpyj7tri9v.txt", "saved to /tmp/tmpjzubqd1_.txt"),
        ("saved to /tmp/tmpqhzkwbad.txt", "saved to /tmp/tmpjzubqd1_.txt"),  # a random name without a digit
        ("EISDIR: notes.8f3a9c0d1e2f.tmp", "EISDIR: notes.1b2c3d4e5f60.tmp"),
        ("modified: 2026-12-01T05:53:14.123Z", "modified: 2026-12-01T05:53:15.9Z"),
    ],
)
def test_noise_only_learns_clocks_counters_and_random_names(a: str, b: str) -> None:
    volatile = Volatility()
    assert volatile.learn("tool t", "step 1", a, b, noise_only=True)
    assert volatile.mask("tool t", a) == volatile.mask("tool t", b)
    assert MASK in volatile.mask("tool t", a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("unset", "UTC"),  # a value one episode wrote, the other read
        ("Asia/Tokyo", "Europe/Paris"),
        ('{"entities": []}', '{"entities": [{"name": "k-3fa2c1"}]}'),  # an entry in one only
        ('{"isError": false, "text": "created"}', '{"isError": true, "text": "already exists"}'),
    ],
)
def test_noise_only_leaves_written_values_to_the_leak_rules(a: str, b: str) -> None:
    volatile = Volatility()
    assert not volatile.learn("tool t", "step 1", a, b, noise_only=True)
    assert volatile.channels() == []
    assert volatile.mask("tool t", b) == b


def test_the_full_mode_learns_any_difference_as_before() -> None:
    volatile = Volatility()
    assert volatile.learn("tool t", "step 1", "unset", "UTC")
    assert volatile.channels() == ["tool t"]

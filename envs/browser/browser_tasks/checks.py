"""Comparisons the tasks' checks share."""

from __future__ import annotations

import re


def norm(text: object) -> str:
    """Lower case, single spaces, no surrounding punctuation."""
    return re.sub(r"\s+", " ", str(text)).strip().strip(".,;:!\"'").lower()


def same_answer(answer: str | None, expected: object) -> bool:
    """The submitted answer names ``expected`` and nothing else (case and spacing aside; numbers
    compared as numbers)."""
    if answer is None:
        return False
    got, want = norm(answer), norm(expected)
    if got == want:
        return True
    try:
        return abs(float(got.replace(",", "").lstrip("€$").rstrip("eur").strip()) - float(want)) < 1e-6
    except ValueError:
        return False

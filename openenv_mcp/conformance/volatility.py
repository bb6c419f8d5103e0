"""The server's own nondeterminism: values that changed between two identical episodes.

``env.determinism`` replays one trajectory in two episodes of the same seed, in lockstep,
with a wall-clock second boundary between the two runs of each tool's first call (and of
the channel snapshots), so a clock printed to the second, a random file name or a hash
order shows. Every value that differed is *learned* here as a shape (``4:45:36`` gives
``\\d+:\\d+:\\d+``; ``/tmp/tmpa8Xk2.txt`` gives ``/tmp/\\w+\\.txt``) on the channel it
came from (a tool, a resource, the reward). Determinism reports each one; the rules that
compare episodes for leaked state or face differences (reset, isolation, parity) then ignore
exactly those shapes on exactly those channels, so a clock is one finding, the same on every
run, and never a leak.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

__all__ = ["MASK", "Volatility"]

MASK = "<nondeterministic>"
_SPLIT = re.compile(r'(\s+|\\[nrt]|["\[\]{},])')
_RUNS = re.compile(r"\w+|\W+")
_EDGE = r'(?<![^\s"\[\]{},])'
_END = r'(?![^\s"\[\]{},])'


def _tokens(text: str) -> list[str]:
    return [t for t in _SPLIT.split(text) if t]


def _word(run: str) -> bool:
    return bool(re.fullmatch(r"\w+", run))


def _shape(a: str, b: str) -> str:
    """A regex matching both tokens and their kind: separators literal, changing parts general."""
    runs_a, runs_b = _RUNS.findall(a), _RUNS.findall(b)
    aligned = len(runs_a) == len(runs_b) and all(
        _word(x) == _word(y) and (_word(x) or x == y) for x, y in zip(runs_a, runs_b, strict=True)
    )
    if not aligned:
        prefix = ""
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            prefix += x
        return re.escape(prefix) + r'[^\s"\[\]{},]*'
    parts = []
    for x, y in zip(runs_a, runs_b, strict=True):
        if not _word(x) or (x == y and x.isalpha()):
            parts.append(re.escape(x))
        elif x.isdigit() and y.isdigit():
            parts.append(r"\d+")
        else:
            parts.append(r"\w+")
    return "".join(parts)


RANDOM_NAME = 8
"""Changing word parts of this many characters or more, the same length on both sides, are taken
for random names even without a digit (``tmpqhzkwbad`` and ``tmpjzubq_d1``)."""


def _noise_like(a: str, b: str) -> bool:
    """Two values of one shape whose every changing part is a number, or carries a digit, or is a
    random-looking name (``4:45:36 PM`` and ``4:45:37 PM``, ``notes.8f3a….tmp`` and
    ``notes.1b2c….tmp``); not two words (``unset`` and ``UTC``), nor an entry or an error in one only."""
    runs_a, runs_b = _RUNS.findall(a.strip()), _RUNS.findall(b.strip())
    if not runs_a or len(runs_a) != len(runs_b):
        return False
    for x, y in zip(runs_a, runs_b, strict=True):
        if x == y:
            continue
        if not (_word(x) and _word(y)):
            return False
        digits = any(c.isdigit() for c in x) and any(c.isdigit() for c in y)
        if not (digits or len(x) == len(y) >= RANDOM_NAME):
            return False
    return True


@dataclass
class Finding:
    """One value that changed: where, and the two values."""

    channel: str
    where: str
    a: str
    b: str


@dataclass
class Volatility:
    """The learned shapes, per channel, and the findings they came from."""

    shapes: dict[str, list[re.Pattern[str]]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def learn(self, channel: str, where: str, a: str, b: str, noise_only: bool = False) -> bool:
        """Learn what differs between ``a`` and ``b`` on ``channel``; False when nothing was learned.

        ``noise_only``: learn only differences shaped like a clock, a counter or a random name
        (the same shape on both sides, every changing part carrying a digit), for comparisons
        whose episodes might have seen each other's writes: a word, an entry or an error
        present in one only is then left to the rules that look for leaked state."""
        if a == b:
            return False
        ta, tb = _tokens(a), _tokens(b)
        pairs: list[tuple[str, str]] = []
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes():
            if op == "equal":
                continue
            x, y = "".join(ta[i1:i2]), "".join(tb[j1:j2])
            if op == "replace" and i2 - i1 == j2 - j1:
                pairs += [(p, q) for p, q in zip(ta[i1:i2], tb[j1:j2], strict=True) if p != q]
            else:
                pairs.append((x, y))
        if noise_only:
            pairs = [(x, y) for x, y in pairs if _noise_like(x, y)]
            if not pairs:
                return False
        known = self.shapes.setdefault(channel, [])
        for x, y in pairs:
            if x.strip() and y.strip():
                shape = re.compile(_EDGE + _shape(x, y) + _END)
                if all(s.pattern != shape.pattern for s in known):
                    known.append(shape)
                self.findings.append(Finding(channel, where, x, y))
            else:  # something present in one run only: the whole channel is unreliable
                known.append(re.compile(r"(?s).+"))
                self.findings.append(Finding(channel, where, x or "(nothing)", y or "(nothing)"))
        return True

    def mask(self, channel: str, text: str) -> str:
        """``text`` of ``channel`` with every learned shape replaced by ``<nondeterministic>``."""
        for shape in self.shapes.get(channel, []):
            text = shape.sub(MASK, text)
        return text

    def channels(self) -> list[str]:
        return [c for c, s in self.shapes.items() if s]

    def note(self) -> str:
        """What the rules comparing episodes ignored, for their verdict ('' when nothing)."""
        if not self.channels():
            return ""
        return "ignored the values env.determinism found nondeterministic on " + ", ".join(self.channels())

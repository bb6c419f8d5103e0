"""The conformance report: one row per rule, a summary, JSON, and known failures.

A :class:`Result` is one rule's verdict: ``passed``, ``failed``, ``skipped``
(the rule does not apply to this target, with the reason), ``inconclusive``
(the rule ran, but most of the tool calls it made failed, so it found nothing
either way; the message says how to give it calls that work) or ``known`` (it
failed, and a known-failures file gives the reason it is accepted).

Exit code: 1 when a rule of severity ``error`` failed; otherwise 0, also when
rules are inconclusive (the environment was not shown to break a rule), but the
summary then reads ``INCONCLUSIVE`` instead of ``CONFORMANT``, and
``exit_code(strict=True)`` (``openenv-mcp conformance --strict``) gives 2 so a
CI job can insist on every rule being decided.

Known-failures files (TOML or JSON) must give a reason for every rule::

    # known-failures.toml
    [known."env.determinism"]
    reason = "the clock tool returns the wall-clock time by design"

or ``{"known": {"env.determinism": {"reason": "..."}}}`` in JSON.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openenv_mcp.errors import ConfigError

__all__ = ["KnownFailure", "KnownFailures", "Report", "Result", "load_known_failures"]

Severity = Literal["error", "warning"]
Status = Literal["passed", "failed", "skipped", "inconclusive", "known"]


class Result(BaseModel):
    """One rule's verdict."""

    rule: str
    """Stable rule id (e.g. ``tools.schema``); ``official.<scenario>`` for the official suite."""
    severity: Severity
    """``error`` fails the run; ``warning`` is reported but does not."""
    status: Status
    """``passed`` | ``failed`` | ``skipped`` (does not apply, see message) | ``inconclusive`` (its calls
    mostly failed: it decided nothing, see message) | ``known``."""
    message: str = ""
    """What was checked, or what went wrong: the call and the actual value."""
    duration: float = 0.0
    """Seconds the rule took."""
    title: str = ""
    """One line saying what the rule promises."""
    section: str = "openenv-mcp"
    """``openenv-mcp`` for this checker's rules, ``official`` for the official suite."""


class KnownFailure(BaseModel):
    """One accepted failure: the rule id and why it is accepted."""

    model_config = ConfigDict(extra="forbid")

    reason: str

    @field_validator("reason")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("reason must say why the failure is accepted")
        return value.strip()


class KnownFailures(BaseModel):
    """The content of a known-failures file."""

    model_config = ConfigDict(extra="forbid")

    known: dict[str, KnownFailure] = Field(default_factory=dict)


def load_known_failures(path: str | Path) -> dict[str, str]:
    """Rule id -> reason from a TOML or JSON known-failures file (validated)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"known-failures file {str(path)!r} does not exist")
    text = path.read_text()
    try:
        raw = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: cannot parse known-failures file: {e}") from e
    try:
        data = KnownFailures.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors())
        raise ConfigError(
            f"{path}: invalid known-failures file ({problems}); expected "
            '[known."RULE"] tables each with reason = "why it is accepted"'
        ) from e
    return {rule: entry.reason for rule, entry in data.known.items()}


class Report(BaseModel):
    """Every rule's verdict for one target."""

    target: str
    """What was checked (name, path or URL)."""
    results: list[Result] = Field(default_factory=list)
    duration: float = 0.0
    """Seconds the whole run took."""

    # -- verdict ----------------------------------------------------------------
    def result(self, rule: str) -> Result:
        """The row of ``rule`` (KeyError when it was not run)."""
        for r in self.results:
            if r.rule == rule:
                return r
        raise KeyError(rule)

    @property
    def errors(self) -> list[Result]:
        """Failed rules of severity ``error`` (these fail the run)."""
        return [r for r in self.results if r.status == "failed" and r.severity == "error"]

    @property
    def warnings(self) -> list[Result]:
        """Failed rules of severity ``warning``."""
        return [r for r in self.results if r.status == "failed" and r.severity == "warning"]

    @property
    def failed(self) -> list[Result]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def inconclusive(self) -> list[Result]:
        """Rules that ran but decided nothing (most of their calls failed)."""
        return [r for r in self.results if r.status == "inconclusive"]

    @property
    def ok(self) -> bool:
        """True when no rule of severity ``error`` failed (inconclusive rules do not fail the run)."""
        return not self.errors

    @property
    def exit_code(self) -> int:
        """1 when an ``error`` rule failed, else 0 (see :meth:`exit_code_for`)."""
        return self.exit_code_for(strict=False)

    def exit_code_for(self, strict: bool = False) -> int:
        """1 when an ``error`` rule failed; 2 when ``strict`` and a rule is inconclusive; else 0."""
        if not self.ok:
            return 1
        return 2 if strict and self.inconclusive else 0

    def counts(self) -> dict[str, int]:
        out = {"passed": 0, "failed": 0, "skipped": 0, "inconclusive": 0, "known": 0}
        for r in self.results:
            out[r.status] += 1
        return out

    def summary(self) -> str:
        """One line: the verdict and the counts."""
        c = self.counts()
        verdict = "NOT CONFORMANT" if not self.ok else "INCONCLUSIVE" if self.inconclusive else "CONFORMANT"
        return (
            f"{verdict}: {self.target}: {c['passed']} passed, {len(self.errors)} errors, "
            f"{len(self.warnings)} warnings, {c['inconclusive']} inconclusive, {c['known']} known failures, "
            f"{c['skipped']} skipped in {self.duration:.1f} s"
        )

    def apply_known(self, known: dict[str, str]) -> None:
        """Mark failures listed in ``known`` as accepted (their reason is appended)."""
        for r in self.results:
            if r.status == "failed" and r.rule in known:
                r.status = "known"
                r.message = f"{r.message} [known failure: {known[r.rule]}]"

    # -- output -------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "ok": self.ok,
            "summary": self.summary(),
            "counts": self.counts() | {"errors": len(self.errors), "warnings": len(self.warnings)},
            "duration": round(self.duration, 3),
            "results": [r.model_dump() | {"duration": round(r.duration, 3)} for r in self.results],
        }

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n")

    def table(self) -> Any:
        """A rich table of every row: rule, verdict, time, and the message (the rule's promise when it passed)."""
        from rich.table import Table

        table = Table(title=f"openenv-mcp conformance · {self.target}")
        table.add_column("rule", style="bold", no_wrap=True)
        table.add_column("verdict", no_wrap=True)
        table.add_column("time", justify="right", no_wrap=True)
        table.add_column("message", overflow="fold", ratio=1)
        section = None
        for r in self.results:
            if r.section != section and section is not None:
                table.add_section()
            section = r.section
            if r.status == "failed":
                verdict = "[bold red]FAIL[/]" if r.severity == "error" else "[yellow]warn[/]"
            else:
                verdict = {
                    "passed": "[green]pass[/]",
                    "skipped": "[dim]skip[/]",
                    "inconclusive": "[magenta]inconclusive[/]",
                    "known": "[yellow]known[/]",
                }[r.status]
            message = r.message if r.message else f"[dim]{r.title}[/]"
            table.add_row(r.rule, verdict, f"{r.duration:.2f}s", message)
        return table

    def print(self, console: Any = None) -> None:
        from rich.console import Console

        console = console or Console()
        console.print(self.table())
        colour = "red" if not self.ok else "magenta" if self.inconclusive else "green"
        console.print(f"[bold {colour}]{self.summary()}[/]")

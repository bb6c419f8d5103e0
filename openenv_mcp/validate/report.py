"""Views of a :class:`~openenv_mcp.validate.ValidationReport`: a rich table and an HTML page.

The HTML page is self-contained: inline CSS and inline SVG plots, no script,
no CDN, no external request (it opens from a file, offline).
"""

from __future__ import annotations

import html
from typing import Any

from openenv_mcp.validate import ValidationReport
from openenv_mcp.validate.probes import is_probe

__all__ = ["html_report", "print_report"]

_MARK = {True: "[green]ok[/green]", False: "[red]FAIL[/red]", None: "[dim]-[/dim]"}


def _task_rows(report: ValidationReport) -> list[dict[str, Any]]:
    rows = []
    stats = {s.task_id: s for s in report.rollouts}
    for task_id in report.tasks:
        checks = {c.check: c for c in report.checks if c.task_id == task_id}
        ref, wrong = checks.get("reference"), checks.get("wrong")
        scoring = [p for p in checks if is_probe(p) and (checks[p].score > 0 or checks[p].error)]
        rows.append(
            {
                "task_id": task_id,
                "reference": None if ref is None else (not ref.error and ref.success),
                "wrong": None if wrong is None else (not wrong.error and not wrong.success),
                "probes": None if not any(is_probe(p) for p in checks) else not scoring,
                "scoring": scoring,
                "stats": stats.get(task_id),
            }
        )
    return rows


def print_report(report: ValidationReport, console: Any) -> None:
    """The per-task table, the summary and the findings."""
    from rich.table import Table

    table = Table(title=f"validate: {report.env}" + (f" · {report.model} · k={report.k}" if report.rollouts else ""))
    table.add_column("task", overflow="fold")  # a long task id wraps, never cut
    for col in ("reference", "wrong", "probes"):
        table.add_column(col)
    if report.rollouts:
        for col in ("pass@1", f"pass@{report.k}", "reward mean", "variance", "flag"):
            table.add_column(col, justify="right")
    for row in _task_rows(report):
        cells = [
            row["task_id"],
            _MARK[row["reference"]],
            _MARK[row["wrong"]],
            _MARK[row["probes"]] + (f" ({', '.join(row['scoring'])})" if row["scoring"] else ""),
        ]
        s = row["stats"]
        if report.rollouts:
            cells += (
                ["-"] * 5
                if s is None
                else [
                    f"{s.pass_at_1:.2f}",
                    f"{s.pass_at_k:.0f}",
                    f"{s.reward_mean:.2f}",
                    f"{s.reward_variance:.3f}",
                    s.flag or "",
                ]
            )
        table.add_row(*cells)
    console.print(table)
    summary = report.to_json()["summary"]
    if report.rollouts:
        console.print(
            f"pass@1 {summary['pass@1']:.2f} · pass@{report.k} {summary[f'pass@{report.k}']:.2f} · "
            f"reward mean {summary['reward_mean']:.2f} · tasks with reward variance "
            f"{summary['variance_share']:.0%} · too easy {len(summary['too_easy'])} · "
            f"too hard {len(summary['too_hard'])}"
        )
    findings = report.findings()
    if not findings:
        console.print(f"[green]{report.env}: every check passed[/green]")
    for line in findings:
        console.print(f"finding: {line}", markup=False, highlight=False)


# -- HTML ---------------------------------------------------------------------------
GOOD, BAD = "#22c55e", "#ef4444"
LABELS = {
    "reference_failures": "reference failures",
    "wrong_successes": "wrong solutions that succeed",
    "scoring_probes": "probes that score",
    "steps_with_reward_errors": "steps with reward errors",
    "reward_mean": "reward mean",
    "variance_share": "tasks with reward variance",
    "too_easy": "too easy",
    "too_hard": "too hard",
}
"""Human labels of the summary's keys (the JSON keeps the keys)."""


def _bars(
    title: str,
    labels: list[str],
    values: list[float],
    vmax: float = 1.0,
    color: str | list[str] = "#3b82f6",
    fmt: str = "{:.2f}",
) -> str:
    """A vertical bar chart as inline SVG; ``color`` one for every bar or one per bar. Labels are whole
    (rotated; the chart grows to fit the longest)."""
    n = max(len(values), 1)
    colors = color if isinstance(color, list) else [color] * len(values)
    longest = max((len(label) for label in labels), default=0)
    width, height, left, bottom = max(360, 28 * n + 60 + 4 * longest), 160 + 5 * longest, 40, 14 + 5 * longest
    bw = (width - left - 10) / n
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{html.escape(title)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f'<text x="{width / 2}" y="14" text-anchor="middle" class="t">{html.escape(title)}</text>',
    ]
    plot_h = height - bottom - 24
    for tick in (0, 0.5, 1):
        y = 24 + plot_h * (1 - tick)
        parts.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" class="g"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" class="a">{round(tick * vmax, 2):g}</text>'
        )
    for i, (label, value, fill) in enumerate(zip(labels, values, colors, strict=True)):
        h = plot_h * (value / vmax if vmax else 0)
        x = left + i * bw + bw * 0.15
        parts.append(
            f'<rect x="{x:.1f}" y="{24 + plot_h - h:.1f}" width="{bw * 0.7:.1f}" height="{h:.1f}" '
            f'fill="{fill}"><title>{html.escape(label)}: {fmt.format(value)}</title></rect>'
        )
        parts.append(
            f'<text transform="translate({x + bw * 0.35:.1f},{height - bottom + 12}) rotate(40)" '
            f'class="a">{html.escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _histogram(values: list[float], bins: int = 10) -> tuple[list[str], list[float]]:
    lo, hi = 0.0, max([1.0, *values])
    counts = [0.0] * bins
    for v in values:
        i = min(int((v - lo) / (hi - lo) * bins), bins - 1) if hi > lo else 0
        counts[max(i, 0)] += 1
    return [f"{lo + (hi - lo) * i / bins:.1f}" for i in range(bins)], counts


_CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#111}h1{font-size:20px}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
.ok{color:#15803d}.fail{color:#b91c1c;font-weight:600}.plots{display:flex;flex-wrap:wrap;gap:16px}
svg{background:#fafafa;border:1px solid #eee}.t{font-size:13px;font-weight:600}.a{font-size:10px;fill:#555}
.g{stroke:#e5e5e5}.summary span{margin-right:18px}li{margin:2px 0}"""


def html_report(report: ValidationReport) -> str:
    """A self-contained HTML page (inline SVG plots; no script, no external resource)."""
    data = report.to_json()
    esc = html.escape
    rows = _task_rows(report)
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>validate: {esc(report.env)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>openenv-mcp validate: {esc(report.env)}</h1>",
    ]
    s = data["summary"]
    out.append(
        "<p class='summary'>"
        + "".join(
            f"<span><b>{esc(LABELS.get(str(k)) or str(k))}</b> {esc(f'{v:.2f}' if isinstance(v, float) else str(v if not isinstance(v, list) else len(v)))}</span>"
            for k, v in s.items()
        )
        + "</p>"
    )
    verdict = "every check passed" if data["ok"] else f"{len(data['findings'])} finding(s)"
    out.append(f"<p class='{'ok' if data['ok'] else 'fail'}' id='verdict'>{esc(verdict)}</p>")
    if data["findings"]:
        out.append("<ul id='findings'>" + "".join(f"<li>{esc(f)}</li>" for f in data["findings"]) + "</ul>")
    out.append("<div class='plots'>")
    if report.rollouts:
        out.append(
            _bars("pass@1 per task", [r.task_id for r in report.rollouts], [r.pass_at_1 for r in report.rollouts])
        )
        labels, counts = _histogram([x for r in report.rollouts for x in r.rewards])
        out.append(_bars("reward histogram (all rollouts)", labels, counts, max(counts) or 1, "#8b5cf6", "{:.0f}"))
        labels, counts = _histogram([r.pass_at_1 for r in report.rollouts], 5)
        out.append(_bars("difficulty: tasks by pass@1", labels, counts, max(counts) or 1, "#f59e0b", "{:.0f}"))
    else:
        ids = [c.task_id for c in report.checks if c.check == "reference"]
        out.append(
            _bars(
                "reference score per task",
                ids,
                [c.final_score for c in report.checks if c.check == "reference"],
                max([1.0, *(c.final_score for c in report.checks)]),
                GOOD,
            )
        )
        probes = [c for c in report.checks if is_probe(c.check)]
        labels, counts = _histogram([c.score for c in probes if c.score > 0])
        labels, counts = ["0", ">0", *labels[1:]], [float(sum(c.score <= 0 for c in probes)), *counts]
        colors = [GOOD] + [BAD] * (len(counts) - 1)  # a probe at 0 is the good outcome
        out.append(_bars("probe score histogram", labels, counts, max(counts) or 1, colors, "{:.0f}"))
    out.append("</div><table id='tasks'><tr><th>task</th><th>reference</th><th>wrong</th><th>probes</th>")
    if report.rollouts:
        out.append(f"<th>pass@1</th><th>pass@{report.k}</th><th>reward mean</th><th>variance</th><th>flag</th>")
    out.append("</tr>")
    cell = {True: "<td class='ok'>ok</td>", False: "<td class='fail'>FAIL</td>", None: "<td>-</td>"}
    for row in rows:
        out.append(f"<tr><td>{esc(row['task_id'])}</td>{cell[row['reference']]}{cell[row['wrong']]}")
        probes_cell = cell[row["probes"]]
        if row["scoring"]:
            probes_cell = f"<td class='fail'>FAIL ({esc(', '.join(row['scoring']))})</td>"
        out.append(probes_cell)
        st = row["stats"]
        if report.rollouts:
            out.append(
                "<td>-</td>" * 5
                if st is None
                else f"<td>{st.pass_at_1:.2f}</td><td>{st.pass_at_k:.0f}</td><td>{st.reward_mean:.2f}</td>"
                f"<td>{st.reward_variance:.3f}</td><td>{esc(st.flag or '')}</td>"
            )
        out.append("</tr>")
    out.append("</table></body></html>")
    return "".join(out)

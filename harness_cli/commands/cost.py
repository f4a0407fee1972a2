"""harness cost [--since …] [--project …] [--case …] [--by …] — what the model calls cost, summed
from the cost log (``$HARNESS_HOME/logs/cost/``): total, then per day, project, case and workflow
(and, with ``--by``, per role, model or investigation iteration)."""

from __future__ import annotations

from datetime import datetime

import typer

from harness_cli import clock
from harness_cli.commands import new_app
from harness_cli.cost.meter import GROUPS, totals
from harness_cli.errors import HarnessError, InputError
from harness_cli.intake.admin_parser import AdminUsage, parse_duration
from harness_cli.output import emit
from harness_cli.result import Result

app = new_app("What the model calls cost: per day, project, case and workflow.")


@app.command()
def cost(
    since: str | None = typer.Option(
        None,
        "--since",
        metavar="WHEN",
        help="A duration back from now (7d, 24h, 30m) or an "
        "ISO-8601 date or instant (2026-11-01). Default: everything logged.",
    ),
    project: str | None = typer.Option(None, "--project", "-p", help="Only this project."),
    case: str | None = typer.Option(None, "--case", help="Only this case."),
    by: str = typer.Option(
        "day,project,case,workflow",
        "--by",
        metavar="GROUPS",
        help="Tables to print: any of day, project, case, workflow, role, model, iteration "
        "(an investigation iteration of a case: CASE #N).",
    ),
) -> None:
    """Sum every recorded model call: tokens (input, output, cache write, cache read) and $."""

    wanted = [g.strip() for g in by.split(",") if g.strip()]
    bad = [g for g in wanted if g not in GROUPS]
    if bad:
        raise InputError(f"--by {bad[0]!r} is not a group", hint=f"use {', '.join(GROUPS)}")
    report = totals(since=_since(since) if since else None, project=project, case=case)
    result = Result("cost", data=report.to_json())
    t = report.total
    result.messages.append(
        f"total{' since ' + report.since if report.since else ''}: {t.text()} "
        f"(input {t.input:,}, output {t.output:,}, cache write {t.cache_write:,}, "
        f"cache read {t.cache_read:,})"
    )
    result.columns = ["group", "key", "calls", "tokens", "usd"]
    for name in wanted:
        for key, tally in sorted(report.groups[name].items()):
            result.rows.append(
                [name, key, str(tally.calls), f"{tally.tokens:,}", f"${tally.usd:.4f}"]
            )
    if report.unreadable_lines:
        result.messages.append(f"{report.unreadable_lines} unreadable line(s) skipped")
    emit(result)


def _since(text: str) -> datetime:
    try:
        return clock.now() - parse_duration(text)
    except AdminUsage:
        pass
    try:
        return clock.parse_instant(text, source="--since")
    except HarnessError:
        raise InputError(
            f"--since {text!r} is neither a duration nor a date",
            hint="e.g. --since 7d, --since 24h or --since 2026-11-01",
        ) from None

"""The one renderer: a command's Result becomes rich text on a terminal or JSON on stdout."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import typer

from harness_cli.redaction import redact
from harness_cli.result import Result


@dataclass
class Options:
    """Global options, set by the CLI edge before any command runs."""

    json: bool = False
    verbose: bool = False

    def reset(self) -> None:
        self.json = False
        self.verbose = False


OPTIONS = Options()


def emit(result: Result) -> None:
    """Print the result once and end the command with its exit code. What is printed passes
    the one redaction point (cron appends stdout to its logs)."""
    if OPTIONS.json:
        sys.stdout.write(redact(json.dumps(result.to_json(), default=str)) + "\n")
    else:
        _human(_redacted(result))
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def _redacted(result: Result) -> Result:
    from dataclasses import replace

    return replace(
        result,
        changed=[redact(x) for x in result.changed],
        skipped=[redact(x) for x in result.skipped],
        messages=[redact(x) for x in result.messages],
        errors=[redact(x) for x in result.errors],
        rows=[[redact(str(c)) for c in row] for row in result.rows],
    )


def _human(result: Result) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    out = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if result.rows:
        # The first column names the thing (a case id, a check): it is never cut or folded;
        # the last one (a title, a detail) gives way first.
        table = Table(box=None, pad_edge=False)
        first = max((len(row[0]) for row in result.rows), default=0)
        for i, column in enumerate(result.columns):
            if i == 0:
                table.add_column(column, no_wrap=True, min_width=max(first, len(column)))
            elif i == len(result.columns) - 1:
                table.add_column(column, overflow="fold", ratio=1)
            else:
                table.add_column(column)
        for row in result.rows:
            table.add_row(*row)
        out.print(table)
    for line in result.messages:
        out.print(line, markup=False)
    for line in result.changed:
        out.print(f"[green]✓[/green] {escape(line)}")
    for line in result.skipped:
        out.print(f"[dim]skipped: {escape(line)}[/dim]")
    for line in result.errors:
        err.print(f"[red]✗[/red] {escape(line)}")

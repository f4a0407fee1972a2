"""harness doctor — what is missing on this machine, each with the fix. Exit 1 if anything
required is missing; warnings alone exit 0."""

from __future__ import annotations

import typer

from harness_cli.commands import new_app
from harness_cli.doctor import run_checks
from harness_cli.output import emit
from harness_cli.result import Result

app = new_app("Check config, tokens, services and the machine.")


@app.command()
def doctor(
    offline: bool = typer.Option(
        False, "--offline", help="Skip the network checks (tokens, remote, MCP servers)."
    ),
) -> None:
    """Check config, tokens, reachability of each service, and the machine (git, claude CLI)."""
    from rich.markup import escape

    checks = run_checks(offline=offline)
    marks = {"ok": "[green]ok[/green]", "warn": "[yellow]warn[/yellow]", "fail": "[red]FAIL[/red]"}
    result = Result(
        "doctor", data=[c.__dict__ for c in checks], columns=["", "check", "detail", "fix"]
    )
    result.rows = [
        [
            marks[c.status],
            escape(c.name),
            escape(c.detail),
            escape(c.fix if c.status != "ok" else ""),
        ]
        for c in checks
    ]
    failed = [c for c in checks if c.status == "fail"]
    if failed:
        result.errors.append(f"{len(failed)} check(s) failed: {', '.join(c.name for c in failed)}")
        result.exit_code = 1
    emit(result)

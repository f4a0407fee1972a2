"""harness doctor — what is missing on this machine and in the services, each with the fix.
Exit 1 if anything required is missing; warnings alone exit 0.

Rendered as one block per check, wrapped to the terminal: a path is never cut (a line may run
long only when one path alone is wider than the terminal)."""

from __future__ import annotations

import typer

from harness_cli.commands import new_app
from harness_cli.ops.doctor.check import Check
from harness_cli.ops.doctor.run import run_checks
from harness_cli.output import OPTIONS, emit
from harness_cli.result import Result

app = new_app("Check config, tokens, services and the machine.")

MARKS = {"ok": "ok", "warn": "warn", "fail": "FAIL"}
INDENT = 6


@app.command()
def doctor(
    offline: bool = typer.Option(
        False, "--offline", help="Skip the network checks (tokens, remote, MCP servers)."
    ),
) -> None:
    """Check config, tokens, reachability of each service, and the machine (git, claude CLI)."""
    import shutil

    checks = run_checks(offline=offline)
    result = Result("doctor", data=[c.__dict__ for c in checks])
    width = max(shutil.get_terminal_size((80, 24)).columns, 40)
    if not OPTIONS.json:
        for check in checks:
            result.messages.extend(render(check, width))
    failed = [c for c in checks if c.status == "fail"]
    if failed:
        result.errors.append(f"{len(failed)} check(s) failed: {', '.join(c.name for c in failed)}")
        result.exit_code = 1
    emit(result)


def render(check: Check, width: int) -> list[str]:
    """``FAIL  name: detail`` wrapped under itself, then ``fix: …`` for what is not ok."""
    import textwrap

    def wrap(text: str, first: str) -> list[str]:
        return textwrap.wrap(
            text,
            width=width,
            initial_indent=first,
            subsequent_indent=" " * INDENT,
            break_long_words=False,  # a path stays whole, even when it runs past the edge
            break_on_hyphens=False,
        ) or [first.rstrip()]

    lines = wrap(f"{check.name}: {check.detail}", f"{MARKS[check.status]:<{INDENT}}")
    if check.status != "ok" and check.fix:
        lines += wrap(f"fix: {check.fix}", " " * INDENT)
    return lines

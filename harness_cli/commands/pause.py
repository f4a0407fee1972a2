"""harness pause [DURATION] — mute automatic dispatch (same as `admin: oncall pause`)."""

from __future__ import annotations

import typer

from harness_cli.commands import new_app
from harness_cli.errors import InputError
from harness_cli.intake.admin import execute
from harness_cli.intake.admin_parser import AdminUsage, parse_admin
from harness_cli.intake.pause import view
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.wiring import local_context

app = new_app("Pause automatic dispatch (optionally for a DURATION).")


@app.command()
def pause(
    duration: str | None = typer.Argument(None, help="e.g. 30m, 2h, 1d; none = until resume"),
) -> None:
    """Silence dispatch caused by other people's activity; your own commands still work."""

    try:
        command = parse_admin(f"oncall pause {duration or ''}")
    except AdminUsage as exc:
        raise InputError(str(exc), hint="e.g. harness pause 2h") from None
    result = Result("pause")
    result.changed.append(execute(local_context(), command))

    # the reply reads like a time ("until 14:30 UTC, in 29 min"); scripts get the instant
    until = view().until
    result.data = {"paused": True, "until": until.isoformat() if until else None}
    emit(result)

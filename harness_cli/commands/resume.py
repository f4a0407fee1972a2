"""harness resume — end a pause (same as `admin: oncall resume`)."""

from __future__ import annotations

from harness_cli.commands import new_app
from harness_cli.intake.admin import execute
from harness_cli.intake.admin_parser import AdminCommand
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.wiring import local_context

app = new_app("End a pause.")


@app.command()
def resume() -> None:
    """End the pause and list what it held back."""

    result = Result("resume")
    result.changed.append(execute(local_context(), AdminCommand("oncall-resume")))
    emit(result)

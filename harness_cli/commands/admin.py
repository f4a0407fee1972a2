"""harness admin "TEXT" — one admin command line, run here through the parser the self-DM uses."""

from __future__ import annotations

import typer

from harness_cli.commands import new_app
from harness_cli.intake.admin import execute
from harness_cli.intake.admin_parser import AdminUsage, parse_admin
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.wiring import local_context

app = new_app('Run one admin command line, e.g. harness admin "oncall status".')


@app.command()
def admin(text: str = typer.Argument(..., help='The command, e.g. "oncall pause 2h".')) -> None:
    """Run one admin command; the reply is printed instead of posted."""

    try:
        command = parse_admin(text)
    except AdminUsage as exc:
        result = Result("admin", data={"reply": exc.reply}, exit_code=2)
        result.errors.append(exc.reply)
        emit(result)
        return
    reply = execute(local_context(), command)
    result = Result("admin", data={"verb": command.verb, "reply": reply})
    result.messages.append(reply)
    emit(result)

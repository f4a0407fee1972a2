"""harness followup CASE — case_followup: answer the newest replies in a case thread with the
whole conversation; an approval hands the case to the dev-agent."""

from __future__ import annotations

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.output import emit
from harness_cli.workflows import runner

app = new_app("Answer the operator's newest replies in a case thread.")


@app.command()
def followup(
    case: str | None = typer.Argument(None, help="The case id (or give --payload)."),
    payload: str | None = typer.Option(None, "--payload", help="Dispatch payload file."),
    no_post: bool = typer.Option(False, "--no-post", help="Do not post to Slack (dry run)."),
) -> None:
    """Answer the replies past the case's watermark (the payload's thread, else the case
    thread in the operator's self-DM)."""

    run = runner.resolve("followup", case, payload, doors=wiring.doors(), post=not no_post)
    emit(runner.run(run))

"""harness dev-agent CASE --mode task|address_review|fix_ci — hands-on code work in the case's
worktree; the harness runs the checks, pushes with recovery, and opens or updates the MR."""

from __future__ import annotations

import typer

from harness_cli import wiring
from harness_cli.commands import _progress, new_app
from harness_cli.errors import InputError
from harness_cli.output import emit
from harness_cli.workflows import runner

app = new_app("Hands-on code work in the case's worktree; push; open/update the MR.")


@app.command()
def dev_agent(
    case: str | None = typer.Argument(None, help="The case id (or give --payload)."),
    mode: str | None = typer.Option(None, "--mode", help="task, address_review or fix_ci."),
    payload: str | None = typer.Option(None, "--payload", help="Dispatch payload file."),
    auto: bool = typer.Option(False, "--auto", help="task: do not wait for the plan's OK."),
    no_post: bool = typer.Option(False, "--no-post", help="Do not post to Slack."),
) -> None:
    """Run one dev-agent mode on a case."""

    run = runner.resolve("dev-agent", case, payload, doors=wiring.doors(), post=not no_post)
    args = dict(run.payload.args) if run.payload else {}
    if run.payload is not None and run.payload.repo:
        args["repo"] = run.payload.repo
    chosen = mode or str(args.get("mode") or "")
    if not chosen:
        raise InputError("dev-agent needs --mode task|address_review|fix_ci")
    if auto:
        args["auto"] = True
    run.args = {**args, "mode": chosen}
    emit(runner.run(run, shown=_progress.live(f"dev-agent {run.case_id} ({chosen})")))

"""harness dev-agent CASE --mode task|address_review|fix_ci — hands-on code work in the case's
worktree; the harness runs the checks, pushes with recovery, and opens or updates the MR."""

from __future__ import annotations

import typer

from harness_cli.commands import _progress, new_app
from harness_cli.delivery.run import run_dev_agent
from harness_cli.errors import InputError
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.sessions.lifecycle import finish
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

    inv = runner.resolve("dev-agent", case, payload)
    args = dict(inv.payload.args) if inv.payload else {}
    if inv.payload is not None and inv.payload.repo:
        args["repo"] = inv.payload.repo
    chosen = mode or str(args.get("mode") or "")
    if not chosen:
        raise InputError("dev-agent needs --mode task|address_review|fix_ci")
    if auto:
        args["auto"] = True

    inv.args = {**args, "mode": chosen}
    with runner.running(inv), _progress.live(f"dev-agent {inv.case_id} ({chosen})"):
        outcome = run_dev_agent(inv.case_id, chosen, args, post=not no_post)
        failed = chosen == "task" and outcome.get("state") == "failed"
        # the harness's own facts only: the run's message quotes third-party text
        sha = str(outcome.get("pushed_sha") or "")
        mr_url = str((outcome.get("mr") or {}).get("web_url") or "")
        said = f"pushed {sha[:8]}" if sha else str(outcome.get("state") or "nothing pushed")
        finish(f"dev-agent {chosen}: {said}" + (f", MR {mr_url}" if mr_url else ""), failed=failed)
    result = Result("dev-agent", data=outcome)
    mr = outcome.get("mr") or {}
    if mr:
        state = "ready" if mr.get("ready") else "draft"
        result.changed.append(f"MR {mr.get('web_url')} ({state})")
    pushed = "pushed" if outcome.get("pushed") else "nothing pushed"
    said = str(outcome.get("message") or f"{chosen}: {outcome.get('state') or pushed}")
    if (chosen == "task" and outcome.get("state") == "failed") or outcome.get("waiting"):
        result.errors.append(said)  # the work failed: exit 1, and the case says so
        result.exit_code = 1
    else:
        result.messages.append(said)
    emit(result)

"""harness investigate CASE — the on-call investigation loop up to its exit; writes
ANALYSIS.md and TASK.md, posts the validated draft into the case thread."""

from __future__ import annotations

import typer

from harness_cli.agents.factory import credentials_problem
from harness_cli.commands import _progress, new_app
from harness_cli.config import load_config
from harness_cli.intake.admin_task import auto_after_investigation
from harness_cli.investigation.run import investigate_case
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.sessions.lifecycle import finish
from harness_cli.workflows import runner
from harness_cli.workspace import registry

app = new_app("Run the gated investigation loop on a case.")


@app.command()
def investigate(
    case: str | None = typer.Argument(None, help="The case id (or give --payload)."),
    payload: str | None = typer.Option(None, "--payload", help="Dispatch payload file."),
    no_post: bool = typer.Option(
        False,
        "--no-post",
        help="Dry run: write the case folder, but post nothing to Slack and commit or push "
        "nothing.",
    ),
) -> None:
    """Investigate one case until the loop names its exit.

    Exits 0 for each of the reference's five exits (complete, blocked, stalled, degrading,
    timeout); 1 for ``exit=failed`` (the model unreachable, or no readable report round after
    round) and 2 when the model's credentials or the runtime's setup were refused."""

    inv = runner.resolve("investigate", case, payload)
    # A run that will refuse — no such case, no way to reach the model (#34 items 5, 15) —
    # still meets the lock and the session gate first, but leaves no outcome report and no
    # commit behind; investigate_case refuses before it moves the case.
    real = (
        not no_post
        and registry.case_file(inv.case_id).exists()
        and credentials_problem(load_config()) is None
    )
    with runner.running(inv, sync=not no_post, write_outcome=real, commit=real):
        budget = load_config().harness.investigation.max_iterations
        with _progress.live(f"investigate {inv.case_id}", max_iterations=budget):
            outcome = investigate_case(inv.case_id, post=not no_post)
        finish(str(outcome["exit_line"]), failed=bool(outcome["exit_code"]))
    result = Result("investigate", data=outcome, exit_code=outcome["exit_code"])
    result.messages.append(outcome["exit_line"])
    if not no_post and outcome["status"] == "awaiting_approval":
        started = auto_after_investigation(inv.case_id)  # #34 item 10: `task --auto`
        if started:
            result.messages.append(started)
    if outcome.get("owed"):
        result.messages.append(f"the result post is owed: {outcome['owed']}")
    if outcome["exit_code"]:
        result.errors.append(f"case {inv.case_id}: {outcome['reason']}")
    suffix = " (dry run: nothing posted, committed or pushed)" if no_post else ""
    result.changed.append(f"case {inv.case_id} → {outcome['status']}{suffix}")
    emit(result)

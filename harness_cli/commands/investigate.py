"""harness investigate CASE — the on-call investigation loop up to its exit; writes
ANALYSIS.md and TASK.md, posts the validated draft into the case thread."""

from __future__ import annotations

import typer

from harness_cli.commands import new_app
from harness_cli.output import emit
from harness_cli.result import Result

app = new_app("Run the gated investigation loop on a case.")


@app.command()
def investigate(
    case: str | None = typer.Argument(None, help="The case id (or give --payload)."),
    payload: str | None = typer.Option(None, "--payload", help="Dispatch payload file."),
    no_post: bool = typer.Option(False, "--no-post", help="Do not post to Slack (dry run)."),
) -> None:
    """Investigate one case until the loop names its exit."""
    from harness_cli.commands import _progress, _workflow
    from harness_cli.config import load_config
    from harness_cli.investigation.run import investigate_case

    inv = _workflow.resolve("investigate", case, payload)
    with _workflow.running(inv):
        budget = load_config().harness.investigation.max_iterations
        with _progress.live(f"investigate {inv.case_id}", max_iterations=budget):
            outcome = investigate_case(inv.case_id, post=not no_post)
    result = Result("investigate", data=outcome)
    result.messages.append(outcome["exit_line"])
    result.changed.append(f"case {inv.case_id} → {outcome['status']}")
    emit(result)

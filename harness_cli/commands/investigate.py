"""harness investigate CASE — the on-call investigation loop up to its exit; writes
ANALYSIS.md and TASK.md, posts the validated draft into the case thread."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from harness_cli import wiring
from harness_cli.agents.factory import credentials_problem
from harness_cli.commands import _progress, new_app
from harness_cli.config import load_config
from harness_cli.intake.admin_task import auto_after_investigation
from harness_cli.output import emit
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

    run = runner.resolve("investigate", case, payload, doors=wiring.doors(), post=not no_post)
    # A run that will refuse — no such case, no way to reach the model (#34 items 5, 15) —
    # still meets the lock and the session gate first, but leaves no outcome report and no
    # commit behind; the entry refuses before it moves the case.
    real = (
        run.post
        and registry.case_file(run.case_id).exists()
        and credentials_problem(load_config()) is None
    )
    outcome = runner.run(run, shown=_shown(run.case_id), sync=run.post, write_outcome=real,
                         commit=real)  # fmt: skip
    if run.post and outcome.data["status"] == "awaiting_approval":
        started = auto_after_investigation(wiring.local_context(), run.case_id)  # #34 item 10
        if started:
            outcome.messages.insert(1, started)
    emit(outcome)


@contextmanager
def _shown(case_id: str) -> Iterator[None]:
    """The live progress line, once the run holds its lock (the config is read then: a
    second start exits 3 before anything else)."""
    budget = load_config().harness.investigation.max_iterations
    with _progress.live(f"investigate {case_id}", max_iterations=budget):
        yield

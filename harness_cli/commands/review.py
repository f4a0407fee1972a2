"""harness review CASE — the adversarial review (D1-D15) and the isolated red-team review (G5)
of a finished investigation, run on their own (investigate runs them inside its loop)."""

from __future__ import annotations

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.output import emit
from harness_cli.workflows import runner

app = new_app("Adversarial review (D1-D15) and red-team review (G5) of a case.")


@app.command()
def review(
    case: str | None = typer.Argument(None, help="The case id (or give --payload)."),
    payload: str | None = typer.Option(None, "--payload", help="Dispatch payload file."),
) -> None:
    """Review the case's latest completion report; prints the gates' verdict with the review.

    Each reviewer runs in a fresh folder holding only what its role may see; the slate they
    are shown is the locked one (a changed kickoff_precommitment.json is put back first)."""

    run = runner.resolve("review", case, payload, doors=wiring.doors())
    emit(runner.run(run))

"""harness finalize CASE | --due — roll a case's gap reports into one MR against the harness's
own repository (idle cases with ``--due``, from cron; one case by name, or ``--payload`` from
``admin: finalize <case>``)."""

from __future__ import annotations

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.dispatch.run import Run
from harness_cli.errors import InputError
from harness_cli.eval.before_after import measure_for_mr
from harness_cli.improvement.finalize import MEASURE_EVAL, Services, finalize_due, summarize
from harness_cli.improvement.thresholds import thresholds_from
from harness_cli.output import emit
from harness_cli.workflows import runner

app = new_app("Roll an idle case's gap reports into one MR against the harness.")


@app.command()
def finalize(
    case: str | None = typer.Argument(None, help="The case id (or give --payload or --due)."),
    payload: str | None = typer.Option(None, "--payload", help="Dispatch payload file."),
    due: bool = typer.Option(False, "--due", help="Every case idle for finalize_idle_hours."),
    no_post: bool = typer.Option(False, "--no-post", help="Do not DM the operator."),
) -> None:
    """Finalize one case, or every due one; a finalized case is skipped (and says so)."""
    cfg = load_config()
    doors = wiring.doors(cfg)
    if not due:
        run = runner.resolve("finalize", case, payload, doors=doors, post=not no_post)
        run.options[MEASURE_EVAL] = measure_for_mr
        emit(runner.run(run))
        return
    if case or payload:
        raise InputError("--due takes no CASE or --payload", hint="harness finalize --due")
    outcomes = finalize_due(
        cfg,
        Services(doors, measure_for_mr),
        thresholds_from(cfg.harness),
        notify=not no_post,
        enter=lambda case_id: runner.running(Run("finalize", case_id, doors=doors)),
    )
    emit(summarize(outcomes, due=True))

"""harness finalize CASE | --due — roll a case's gap reports into one MR against the harness's
own repository (idle cases with ``--due``, from cron; one case by name, or ``--payload`` from
``admin: finalize <case>``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from harness_cli import wiring
from harness_cli.agents.factory import configured_runtime
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.errors import EXIT_REFUSED, InputError
from harness_cli.improvement.finalize import Services, finalize_case, finalize_due
from harness_cli.improvement.thresholds import thresholds_from
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.workflows import runner

if TYPE_CHECKING:
    from harness_cli.config import Config
    from harness_cli.improvement.finalize import FinalizeOutcome, Services

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
    th = thresholds_from(cfg.harness)
    services = _services(cfg)
    if due:
        if case or payload:
            raise InputError("--due takes no CASE or --payload", hint="harness finalize --due")
        outcomes = finalize_due(
            cfg,
            services,
            th,
            notify=not no_post,
            enter=lambda case_id: runner.running(runner.Invocation("finalize", case_id, None)),
        )
    else:
        inv = runner.resolve("finalize", case, payload)
        with runner.running(inv):
            outcome = finalize_case(
                cfg, inv.case_id, services, th, notify=not no_post, tell_skip=payload is not None
            )
        outcomes = [outcome]
    emit(_result(outcomes, due=due))


def _services(cfg: Config) -> Services:
    return Services(
        make_gitlab=wiring.gitlab,
        make_outbound=lambda: wiring.outbound(cfg, wiring.lazy_slack()),
        make_runtime=lambda: configured_runtime(cfg),
    )


def _result(outcomes: list[FinalizeOutcome], *, due: bool) -> Result:
    result = Result("finalize", data={"cases": [o.to_json() for o in outcomes]})
    for o in outcomes:
        line = f"{o.case_id}: {o.message}"
        if o.status in ("open", "no_gaps"):
            result.changed.append(line)
        elif o.status == "failed":
            result.errors.append(line)
        else:
            result.skipped.append(line)
        result.errors += [f"{o.case_id}: {e}" for e in o.errors]
    if due and not outcomes:
        result.messages.append("no case with gap reports is due")
    if any(o.status == "failed" for o in outcomes):
        result.exit_code = 1
    elif any(o.status == "denied" for o in outcomes):
        result.exit_code = EXIT_REFUSED  # a reservation held: it runs once its holder is done
    return result

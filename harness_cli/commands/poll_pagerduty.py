"""harness poll-pagerduty — one PagerDuty poll: incidents that name a known case surface its
context in the case's thread in the operator's self-DM; the others are logged."""

from __future__ import annotations

import typer

from harness_cli import clock, wiring
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.errors import InputError
from harness_cli.intake.pagerduty import workflow as pagerduty
from harness_cli.output import emit

app = new_app("One PagerDuty poll: incidents that name a known case surface its context.")


@app.command()
def poll_pagerduty(
    since: str | None = typer.Option(
        None, "--since", help="ISO-8601 instant to look back to (default: the saved cursor)."
    ),
    status: list[str] = typer.Option(
        [], "--status", help="Only incidents in this status (repeatable): triggered, …"
    ),
) -> None:
    """Poll PAGERDUTY_API_URL with PAGERDUTY_TOKEN for incidents created since the last poll."""

    bad = [s for s in status if s not in ("triggered", "acknowledged", "resolved")]
    if bad:
        raise InputError(
            f"--status {bad[0]!r} is not a PagerDuty status",
            hint="use triggered, acknowledged or resolved",
        )
    start = clock.parse_instant(since, source="--since") if since else None
    settings = pagerduty.PagerDutySettings.from_env()
    cfg = load_config()
    result = pagerduty.poll(
        cfg, settings, wiring.outbound(cfg), since=start, statuses=status or None
    )
    emit(result.to_result("poll-pagerduty"))

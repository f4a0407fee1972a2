"""harness ingest-pagerduty FILE|- — one PagerDuty webhook v3 payload (as a receiver saved it,
or piped in): incidents that name a known case surface its context; the others are logged."""

from __future__ import annotations

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.errors import InputError
from harness_cli.intake.pagerduty import workflow as pagerduty
from harness_cli.output import emit

app = new_app("Ingest a PagerDuty webhook v3 payload (FILE or -).")


@app.command()
def ingest_pagerduty(
    source: str = typer.Argument(..., metavar="FILE|-", help="The payload file, or - for stdin."),
) -> None:
    """Read a webhook v3 payload ({"event": {…}} or a list of them) and ingest its incidents.
    With PAGERDUTY_TOKEN set, incidents are also looked up for their description and details."""
    import sys
    from pathlib import Path

    if source == "-":
        text, name = sys.stdin.read(), "stdin"
    else:
        try:
            text, name = Path(source).read_text(encoding="utf-8"), source
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise InputError(
                f"cannot read {source}: {reason}", hint="pass a readable file, or - for stdin"
            ) from None
    incidents = pagerduty.load_webhook(text, source=name)
    cfg = load_config()
    # With a REST key, an incident whose webhook names nothing known is looked up for its
    # description and body details (v3 incident data carries neither).
    settings = pagerduty.PagerDutySettings.optional_from_env()
    enrich = pagerduty.rest_enricher(pagerduty.PagerDutyClient(settings)) if settings else None
    result = pagerduty.ingest(incidents, cfg=cfg, outbound=wiring.outbound(cfg), enrich=enrich)
    emit(result.to_result("ingest-pagerduty"))

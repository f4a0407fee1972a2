"""harness gap-patterns — gap reports across cases clustered into recurring failure modes; a
ranked report (markdown, or ``--json``) and the hand-off of the largest clusters to finalize."""

from __future__ import annotations

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.config import Config, load_config
from harness_cli.errors import HarnessError
from harness_cli.improvement import gap_patterns as gp
from harness_cli.improvement.gap_patterns import render_markdown, report_path, run_gap_patterns
from harness_cli.improvement.thresholds import thresholds_from
from harness_cli.outbox import notify
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.state.locks import hold

app = new_app("Cluster gap reports across cases into recurring failure modes.")


@app.command()
def gap_patterns(
    top: int = typer.Option(0, "--top", min=0, help="Show only the N largest clusters."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the report; write nothing, hand nothing to finalize."
    ),
    no_post: bool = typer.Option(
        False, "--no-post", help="Do not DM the operator the summary of what is new."
    ),
) -> None:
    """Cluster every case's gap reports (TF-IDF + agglomerative) and rank the clusters."""

    cfg = load_config()
    th = thresholds_from(cfg.harness)
    with hold("gap-patterns", timeout=0, what="gap-patterns"):
        before = gp.fingerprint(gp.patterns_file().read())
        report = run_gap_patterns(th, write=not dry_run)
    data = report.model_dump(mode="json")
    if top:
        data["clusters"] = [c for c in data["clusters"] if 0 < c["rank"] <= top]
    result = Result("gap-patterns", data=data)
    result.messages.append(render_markdown(report, top=top or None))
    if not dry_run:
        handed = [c.id for c in report.clusters if c.handoff and not c.handed_to]
        result.changed.append(
            f"{len(report.ranked())} recurring cluster(s) from {report.reports} reports → "
            f"{report_path()}" + (f"; for the next finalize: {', '.join(handed)}" if handed else "")
        )
        if not no_post and report.ranked() and gp.fingerprint(report) != before:
            _tell(cfg, gp.slack_summary(report), result)
    emit(result)


def _tell(cfg: object, text: str, result: Result) -> None:
    """The summary DM; Slack being unreachable does not fail the clustering (it is on disk)."""

    assert isinstance(cfg, Config)
    try:
        notify.dm(wiring.outbound(cfg), cfg, "gap_patterns", text)
        result.changed.append("told the operator what is new (self-DM)")
    except HarnessError as exc:
        result.messages.append(f"the summary DM was not sent: {exc.line()}")

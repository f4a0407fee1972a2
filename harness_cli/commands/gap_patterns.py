"""harness gap-patterns — gap reports across cases clustered into recurring failure modes; a
ranked report (markdown, or ``--json``) and the hand-off of the largest clusters to finalize."""

from __future__ import annotations

import typer

from harness_cli.commands import new_app
from harness_cli.output import emit
from harness_cli.result import Result

app = new_app("Cluster gap reports across cases into recurring failure modes.")


@app.command()
def gap_patterns(
    top: int = typer.Option(0, "--top", min=0, help="Show only the N largest clusters."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the report; write nothing, hand nothing to finalize."
    ),
) -> None:
    """Cluster every case's gap reports (TF-IDF + agglomerative) and rank the clusters."""
    from harness_cli.config import load_config
    from harness_cli.improvement.gap_patterns import render_markdown, report_path, run_gap_patterns
    from harness_cli.improvement.thresholds import thresholds_from
    from harness_cli.state.locks import hold

    th = thresholds_from(load_config().harness)
    with hold("gap-patterns", timeout=0, what="gap-patterns"):
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
    emit(result)

"""harness kb-update — the weekly knowledge-updater: each project's last cases tallied by failure
mode into SOP suggestions (a file for review beside the project's SOP) and alerts (a DM)."""

from __future__ import annotations

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.errors import InputError
from harness_cli.improvement.kb_update import kb_update as run
from harness_cli.improvement.thresholds import thresholds_from
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.state.locks import hold

app = new_app("Tally failure modes per project into SOP suggestions.")


@app.command()
def kb_update(
    project: list[str] = typer.Option(
        None, "--project", "-p", help="Only this project (repeatable); default: all."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the suggestions; write nothing, send nothing."
    ),
) -> None:
    """Draft SOP suggestions from the last cases of each project. Nothing is auto-applied."""

    cfg = load_config()
    unknown = [p for p in project or [] if p not in cfg.projects.projects]
    if unknown:
        raise InputError(
            f"no project {', '.join(unknown)} in projects.yaml",
            hint=f"known: {', '.join(sorted(cfg.projects.projects))}",
        )
    th = thresholds_from(cfg.harness)
    out = None if dry_run else wiring.outbound(cfg, wiring.lazy_slack())
    with hold("kb-update", timeout=0, what="kb-update"):
        outcomes = run(cfg, th, out, projects=project or None, dry_run=dry_run)
    data = []
    result = Result("kb-update")
    for o in outcomes:
        suggestions = o.tally.at_least(th.kb_suggest_at)
        data.append(
            {
                "project": o.project,
                "cases": o.tally.window,
                "suggestions": [
                    {"mode": m.id, "label": m.label, "count": m.count, "cases": m.cases,
                     "alert": m.count >= th.kb_alert_at, "rule": m.rule}
                    for m in suggestions
                ],
                "path": str(o.path),
                "written": o.written,
                "alerted": o.alerted,
                "text": o.text,
            }
        )  # fmt: skip
        summary = f"{o.project}: {len(suggestions)} suggestion(s) from {len(o.tally.window)} cases"
        if dry_run:
            result.messages.append(o.text)
        elif o.written:
            result.changed.append(f"{summary} → {o.path}")
        else:
            result.skipped.append(f"{summary}; {o.path.name} unchanged")
        result.changed += [f"{o.project}: alert sent for {m}" for m in o.alerted]
        result.errors += o.errors
    result.data = {"projects": data, "dry_run": dry_run}
    emit(result)

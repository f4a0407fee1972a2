"""harness status — pause state, auto-monitor, what was held back, open cases, MRs, and the
last 24 hours from the logs (runs, exits, escalations, token spend)."""

from __future__ import annotations

from harness_cli import run_slots
from harness_cli.commands import new_app
from harness_cli.intake import pause
from harness_cli.intake.admin import status_text
from harness_cli.ops.summary import last_24h
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.wiring import local_context
from harness_cli.workspace import registry

app = new_app("Report pause state, open cases and monitored MRs.")


@app.command()
def status() -> None:
    """Same answer as `admin: oncall status` in the self-DM."""

    ctx = local_context()
    view = pause.view()
    result = Result(
        "status",
        data={
            "paused": view.paused,
            "since": view.since.isoformat() if view.since else None,
            "until": view.until.isoformat() if view.until else None,
            "by": view.by,
            "held_back_total": view.held_back_total,
            "held_back": [h.model_dump(mode="json") for h in view.held_back],
            "held_work": [
                h.model_dump(mode="json", exclude={"payload", "schema_version"})
                for h in view.held_work
            ],
            "auto_monitor": {p: ctx.auto_monitor(p) for p in ctx.cfg.projects.projects},
            "last_24h": last_24h().to_json(),
        },
    )

    result.data["unreadable_cases"] = [
        {"id": c["id"], "problem": c["problem"]}
        for c in registry.list_cases(include_broken=True, status=registry.BROKEN)
    ]
    result.messages.append(status_text(ctx))
    waiting = run_slots.queued()
    result.data["waiting_for_a_slot"] = waiting
    if waiting:
        result.messages.append(
            f"{len(waiting)} run(s) wait for a free workflow slot (max_running_workflows: "
            f"{ctx.cfg.harness.max_running_workflows}), oldest first: {', '.join(waiting)}"
        )
    emit(result)

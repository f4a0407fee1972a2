"""harness consolidate CASE | --due — memory consolidation of transcripts into TASK.md, when
consolidate_trigger fires, behind the output-size guard and the per-case lock."""

from __future__ import annotations

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.dispatch.run import Run
from harness_cli.errors import EXIT_FAILED, EXIT_REFUSED, InputError
from harness_cli.memory.consolidate import report
from harness_cli.memory.consolidate_due import consolidate_due
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.workflows import runner

app = new_app("Consolidate transcripts into TASK.md (guarded).")


@app.command()
def consolidate(
    case: str | None = typer.Argument(None, help="The case id (or --payload, or --due)."),
    due: bool = typer.Option(False, "--due", help="Every open case whose trigger fires."),
    force: bool = typer.Option(False, "--force", help="CASE: run even if no signal fires."),
    payload: str | None = typer.Option(None, "--payload", help="Dispatch payload file."),
    no_post: bool = typer.Option(False, "--no-post", help="Do not tell the operator on Slack."),
) -> None:
    """Fold the unconsolidated followup transcripts into TASK.md (UPDATE, not REWRITE)."""
    cfg = load_config()
    doors = wiring.doors(cfg)
    if not due:
        run = runner.resolve("consolidate", case, payload, doors=doors, post=not no_post)
        run.options["force"] = force
        emit(runner.run(run))
        return
    if case or payload or force:
        raise InputError("--due walks every open case: give no CASE, --payload or --force")
    walk = consolidate_due(
        cfg,
        doors=doors,
        out=None if no_post else doors.out,
        enter=lambda case_id: runner.running(Run("consolidate", case_id, doors=doors)),
    )
    result = Result("consolidate", data=walk.to_json())
    for done in walk.done:
        report(result, done)
    result.skipped += [f"{c}: another consolidation holds its lock" for c in walk.locked]
    result.skipped += walk.denied + walk.waiting
    result.errors += walk.failed
    if not (walk.done or walk.locked or walk.failed or walk.denied or walk.waiting):
        result.skipped.append(f"no case due ({len(walk.not_due)} open case(s) checked)")
    refused = any(d.outcome == "refused" for d in walk.done) or bool(walk.denied)
    result.exit_code = EXIT_FAILED if walk.failed else EXIT_REFUSED if refused else 0
    emit(result)

"""harness consolidate CASE | --due — memory consolidation of transcripts into TASK.md, when
consolidate_trigger fires, behind the output-size guard and the per-case lock."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.errors import EXIT_FAILED, EXIT_REFUSED, InputError
from harness_cli.memory.consolidate import consolidate_case
from harness_cli.memory.consolidate_due import consolidate_due
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.workflows import runner

if TYPE_CHECKING:
    from harness_cli.memory.consolidate import Consolidation

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
    out = None if no_post else wiring.outbound(cfg, wiring.lazy_slack())
    if due:
        if case or payload or force:
            raise InputError("--due walks every open case: give no CASE, --payload or --force")

        walk = consolidate_due(
            cfg,
            out=out,
            enter=lambda case_id: runner.running(runner.Invocation("consolidate", case_id, None)),
        )
        result = Result("consolidate", data=walk.to_json())
        for done in walk.done:
            _report(result, done)
        result.skipped += [f"{c}: another consolidation holds its lock" for c in walk.locked]
        result.skipped += walk.denied + walk.waiting
        result.errors += walk.failed
        if not (walk.done or walk.locked or walk.failed or walk.denied or walk.waiting):
            result.skipped.append(f"no case due ({len(walk.not_due)} open case(s) checked)")
        refused = any(d.outcome == "refused" for d in walk.done) or bool(walk.denied)
        result.exit_code = EXIT_FAILED if walk.failed else EXIT_REFUSED if refused else 0
        emit(result)
        return

    inv = runner.resolve("consolidate", case, payload)
    kind = inv.payload.trigger.kind if inv.payload else None
    with runner.running(inv):
        done = consolidate_case(inv.case_id, cfg=cfg, force=force, trigger_kind=kind, out=out)
    result = Result("consolidate", data=done.to_json())
    _report(result, done)
    if done.outcome == "refused":
        result.exit_code = EXIT_REFUSED
    emit(result)


def _report(result: Result, done: Consolidation) -> None:
    if done.outcome == "written":
        result.changed.append(
            f"{done.case_id}: TASK.md {done.bytes_before} B → {done.bytes_after} B from "
            f"{len(done.transcripts)} transcript(s) ({', '.join(done.signals) or 'forced'})"
        )
    elif done.outcome == "refused":
        result.errors.append(f"{done.case_id}: refused — {done.note}; TASK.md kept")
    else:
        reason = done.note or "; ".join(done.reasons)
        result.skipped.append(f"{done.case_id}: {reason}")

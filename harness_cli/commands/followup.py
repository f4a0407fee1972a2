"""harness followup CASE — case_followup: answer the newest replies in a case thread with the
whole conversation; an approval hands the case to the dev-agent."""

from __future__ import annotations

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.memory.followup import Followup
from harness_cli.memory.replies import Thread
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.workflows import runner

app = new_app("Answer the operator's newest replies in a case thread.")


@app.command()
def followup(
    case: str | None = typer.Argument(None, help="The case id (or give --payload)."),
    payload: str | None = typer.Option(None, "--payload", help="Dispatch payload file."),
    no_post: bool = typer.Option(False, "--no-post", help="Do not post to Slack (dry run)."),
) -> None:
    """Answer the replies past the case's watermark (the payload's thread, else the case
    thread in the operator's self-DM)."""

    inv = runner.resolve("followup", case, payload)
    cfg = load_config()
    thread, kind, ts = None, "manual", None
    if inv.payload is not None:
        kind, ts = inv.payload.trigger.kind, inv.payload.trigger.ts or None
        if inv.payload.channel and inv.payload.thread_ts:
            dm = cfg.harness.operator.self_dm_channel
            thread = Thread(inv.payload.channel, inv.payload.thread_ts, inv.payload.channel == dm)
    with runner.running(inv):
        slack = wiring.slack()
        out = None if no_post else wiring.outbound(cfg, slack)
        run = Followup(cfg, slack, out).run(
            inv.case_id, thread=thread, trigger_kind=kind, trigger_ts=ts
        )
    result = Result("followup", data=run.to_json())
    if run.note:
        result.skipped.append(f"{inv.case_id}: {run.note}")
    for turn in run.turns:
        what = "approved: handed to the dev-agent" if turn.approval else "answered"
        result.changed.append(f"{turn.transcript}: {len(turn.replies)} reply(ies) {what}")
    result.changed += [f"{name}: gap report written" for name in run.gap_reports]
    if run.consolidation:
        result.messages.append(f"consolidation triggered ({', '.join(run.consolidation)})")
    emit(result)

"""harness poll-slack — one poll cycle over the support channels, the self-DM and the live
case threads; new tickets, replies and admin commands become dispatches."""

from __future__ import annotations

import typer

from harness_cli.commands import new_app
from harness_cli.intake.admin_parser import strip_prefix
from harness_cli.intake.context import Tally
from harness_cli.intake.poller import poll_cycle
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.sessions.waiting import expire_due
from harness_cli.state import dedup
from harness_cli.state.locks import hold
from harness_cli.wiring import intake_context
from harness_cli.workflows.cycle import tend

app = new_app("One Slack poll cycle: new tickets, thread replies, admin commands.")


@app.command()
def poll_slack(
    retry_parked: bool = typer.Option(
        False,
        "--retry-parked",
        help="Give messages parked after repeated failures another try in this cycle.",
    ),
) -> None:
    """Run one cycle and exit (cron runs it every minute; safe to run twice at once, and to
    kill at any point: the next cycle finishes what this one left)."""

    with hold("poll-slack", timeout=0, what="poll-slack"):
        ctx = intake_context()
        if retry_parked:
            ctx.tally.recovered += [f"unparked {k}" for k in dedup.unpark()]
        poll_cycle(ctx)

        # 004: a run nobody approves within approval_ttl_hours is cancelled by the next look.
        ctx.tally.recovered += [f"cancelled unapproved run {r}" for r in expire_due()]
        tended = tend(ctx.cfg, ctx.out, backend=ctx.backend, jira=ctx.jira)
    result = tally_result("poll-slack", ctx.tally)
    result.messages += tended
    emit(result)


def tally_result(action: str, tally: object) -> Result:
    from dataclasses import asdict

    assert isinstance(tally, Tally)
    result = Result(action, data=asdict(tally))
    result.changed += [f"new case {c}" for c in tally.new_cases]
    result.changed += [f"dispatched {d}" for d in tally.dispatched]
    # the line as the operator typed it, prefix or not: "admin: admin: task X" before
    result.changed += [f"admin: {strip_prefix(a)}" for a in tally.admin]
    result.changed += [f"replayed held work: {r}" for r in tally.replayed]
    result.changed += [f"finished what an earlier run left: {r}" for r in tally.recovered]
    result.skipped += [f"held back while paused: {h}" for h in tally.held_back]
    result.skipped += [f"evicted dead thread {e}" for e in tally.evicted]
    result.skipped += [f"already held as a case: {c}" for c in tally.recognised]
    result.skipped += [f"history (older than this install): {h}" for h in tally.history]
    result.skipped += [f"folded by flood control: {f}" for f in tally.folded]
    result.messages += [
        f"channel failing (the operator was told): {c}" for c in tally.channel_errors
    ]
    result.messages += [f"parked after repeated failures: {p}" for p in tally.parked]
    if tally.ended_early:
        result.messages.append(f"cycle ended early: {tally.ended_early}")
    result.errors += tally.errors
    if not (tally.new_cases or tally.dispatched or tally.admin or tally.replayed):
        result.messages.append(f"nothing new ({tally.calls} Slack calls)")
    if tally.errors:
        result.exit_code = 1
    return result

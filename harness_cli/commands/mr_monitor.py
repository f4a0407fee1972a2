"""harness mr-monitor — one cycle over the monitored MRs (CI fixes, reviewer notes, merges), or
``--watch GROUP/PROJECT!IID --case CASE`` to adopt an existing MR."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import typer

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.delivery.monitor.act import MonitorCtx, adopt
from harness_cli.delivery.monitor.cycle import run_cycle
from harness_cli.delivery.monitor.thresholds import thresholds_from
from harness_cli.delivery.worktrees import prune_stale
from harness_cli.dispatch.backends import choose_backend
from harness_cli.errors import InputError
from harness_cli.intake.admin import parse_mr
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.services.forge import ForgeRouter
from harness_cli.state.locks import hold
from harness_cli.workflows.ci_follow import poll
from harness_cli.workflows.cycle import tend
from harness_cli.workspace.case import validate_case_id

if TYPE_CHECKING:
    from harness_cli.delivery.monitor.act import CycleReport, MonitorCtx

app = new_app("One cycle over monitored MRs: CI, reviewer notes, merges.")


@app.command()
def mr_monitor(
    watch: str = typer.Option(
        None, "--watch", metavar="GROUP/PROJECT!IID", help="Adopt this open MR (or its URL)."
    ),
    case: str = typer.Option(None, "--case", help="The case the adopted MR belongs to."),
) -> None:
    """Run one cycle and exit (cron runs it every few minutes; a second copy exits 3)."""

    if (watch is None) != (case is None):
        raise InputError("--watch and --case go together", hint="e.g. --watch g/p!12 --case AAA-1")
    ctx = _context()
    if watch is not None:
        changed, message = adopt(ctx, parse_mr(watch), validate_case_id(case))
        result = Result("mr-monitor", data={"watch": parse_mr(watch), "case": case})
        (result.changed if changed else result.skipped).append(message)
        emit(result)
        return

    with hold("mr-monitor", timeout=0, what="mr-monitor"):
        report = run_cycle(ctx)
        # worktrees whose MR never reported back (the case was abandoned) go too
        pruned = prune_stale(ctx.cfg.harness.delivery.stale_worktree_days)

        # CI dispatch: failed/stuck jobs free their sessions
        followed = poll(wiring.ci_client, ctx.out, ctx.backend)
        tended = tend(ctx.cfg, ctx.out, backend=ctx.backend, gitlab=ctx.gitlab)
    result = cycle_result(report)
    result.changed += [f"pruned stale worktree {p}" for p in pruned]
    result.changed += followed
    result.messages += tended
    emit(result)


def _context() -> MonitorCtx:
    cfg = load_config()
    thresholds = thresholds_from(cfg.harness)
    gitlab = wiring.gitlab()
    if isinstance(gitlab, ForgeRouter):
        gitlab.tune(
            deadline=time.monotonic() + thresholds.cycle_budget_seconds,
            max_retries=thresholds.gitlab_max_retries,
        )
    return MonitorCtx(
        cfg=cfg,
        gitlab=gitlab,
        out=wiring.outbound(cfg, wiring.lazy_slack()),
        backend=choose_backend(cfg.harness.dispatch),
        thresholds=thresholds,
    )


def cycle_result(report: CycleReport) -> Result:
    from dataclasses import asdict

    result = Result("mr-monitor", data=asdict(report))
    result.changed += report.dispatched
    result.changed += [f"escalated {k}" for k in report.escalated]
    result.changed += [f"finished {k}" for k in report.finished]
    result.changed += [f"dropped {k} (404)" for k in report.dropped]
    result.skipped += [f"held back while paused: {h}" for h in report.held_back]
    result.skipped += [f"muted (MR paused): {m}" for m in report.muted]
    result.skipped += [f"deferred to the next cycle: {d}" for d in report.deferred]
    if report.ended_early:
        result.messages.append(f"cycle ended early: {report.ended_early}; cursors kept")
    result.messages.append(
        f"{report.monitored} monitored, {len(report.examined)} examined, "
        f"{report.calls} forge API calls"
    )
    result.errors += report.errors
    if report.errors:
        result.exit_code = 1
    return result

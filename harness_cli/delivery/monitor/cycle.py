"""mr-monitor: one cycle over the monitored MRs (reference, Layer 1 and Layer 4).

"GitLab doesn't push review comments into the pipeline, so polling is the only option, and
scaling the polling itself proved the hard part." So a cycle is incremental:

- per GitLab project, one listing of the MRs changed since the project's cursor
  (``updated_after``, which is "on or after": the cursor sits at the newest ``updated_at``
  seen, less a small lag, and an MR listed again with the ``updated_at`` already handled is
  skipped by value, so nothing is skipped at equal timestamps and nothing is done twice);
- per project, one listing of the pipelines changed since the project's pipeline cursor: a
  pipeline re-run on an unchanged MR (a new pipeline id, the same sha), a retry or a pipeline
  that finished touches no MR, and is seen on the next cycle, not hours later;
- per target branch, its head: a push there can make open MRs conflict without touching them,
  so when it moved, the open MRs targeting it are listed once with their merge status
  (``with_merge_status_recheck``) and those whose status changed are examined;
- only changed MRs cost further calls (the MR, its discussions; the failed job's log when a
  fix is dispatched), plus the few that must be re-read whatever their ``updated_at``: new or
  adopted, ``admin: mr rescan``, work left pending or held, a dev-agent result to act on, a
  pipeline still running, and a bounded few not examined for hours (a safety net);
- a project's cursor moves only once its listing was handled completely, so a cycle cut short
  by rate limits or a crash resumes where it stopped;
- an MR (or project) GitLab answers 404 for in ``drop_after_not_found_cycles`` cycles in a row
  is dropped and the operator told — one 404 may be a blip, and the dead-cursor storm of
  "12 retries per cycle for hours" cannot come back.

The loops it closes — CI auto-fix capped at three in a row then one escalation, reviewer
auto-reply deduplicated by author — are decided in :mod:`decide` and carried out in
:mod:`act`; this module is the order of events and the bookkeeping between them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from harness_cli import clock
from harness_cli.delivery.monitor import decide as decide
from harness_cli.delivery.monitor.act import (
    CycleReport,
    EndCycle,
    Gone,
    MonitorCtx,
    call,
    dm,
    finish,
)
from harness_cli.delivery.monitor.examine import Examination
from harness_cli.delivery.monitor.watch import (
    format_stamp,
    parse_stamp,
    pipelines_changed,
    settle,
    targets_moved,
)
from harness_cli.errors import HarnessError
from harness_cli.intake import pause
from harness_cli.logs import event
from harness_cli.services.gitlab import MergeRequest
from harness_cli.state import files
from harness_cli.state.models import MonitoredMr

__all__ = ["CycleReport", "MonitorCtx", "run_cycle"]

log = logging.getLogger("harness.mr_monitor")
TERMINAL = frozenset({"merged", "closed"})


def run_cycle(ctx: MonitorCtx) -> CycleReport:
    state = files.monitored_mrs().read()
    report = ctx.report
    report.monitored = len(state.mrs)
    if not state.mrs:
        return report
    before = ctx.gitlab.calls
    try:
        me = state.bot_username or _whoami(ctx)
        paused = pause.is_paused()
        stale_left = [ctx.thresholds.stale_recheck_per_cycle]
        for project in sorted({e.project for e in state.mrs.values()}):
            if ctx.over_budget():
                raise EndCycle(f"cycle budget spent before {project}")
            entries = {k: e for k, e in state.mrs.items() if e.project == project}
            _poll_project(ctx, project, entries, state.cursors.get(project), me, paused, stale_left)
    except EndCycle as exc:
        report.ended_early = str(exc)
        event(log, "mr_monitor_ended_early", logging.WARNING, reason=str(exc))
    finally:
        report.calls = ctx.gitlab.calls - before
        _tell_dropped(ctx)
    return report


def _whoami(ctx: MonitorCtx) -> str:
    me = call(ctx, ctx.gitlab.whoami, missing_is_gone=False)
    with files.monitored_mrs().update() as state:
        state.bot_username = me
    return me


def _poll_project(
    ctx: MonitorCtx,
    project: str,
    entries: dict[str, MonitoredMr],
    cursor: str | None,
    me: str,
    paused: bool,
    stale_left: list[int],
) -> None:
    now = clock.now()
    th = ctx.thresholds
    forced = [
        k
        for k, e in entries.items()
        if _forced_reason(e, paused)
        and (
            _forced_reason(e, paused) != "held notes"
            or decide.review_round_allowed(
                e,
                now,
                budget=th.review_round_budget,
                window_hours=th.review_round_window_hours,
                ceiling=th.review_round_ceiling,
            )
        )
    ]
    stale = _stale(ctx, entries, forced, now, stale_left)
    cursor = cursor or _min_seen(entries.values(), 0.0)
    listed: dict[int, MergeRequest] = {}
    if cursor is not None:
        try:
            found = call(ctx, lambda: ctx.gitlab.list_mrs(project, updated_after=cursor))
        except Gone:
            for key in entries:
                _not_found(ctx, key, f"project {project} not found")
            return
        except HarnessError as exc:  # a 5xx, a malformed answer: this project waits a cycle
            _error(ctx, f"{project} (listing)", exc)
            return
        listed = {m.iid: m for m in found}
    changed = [
        k
        for k, e in entries.items()
        if k not in forced and e.iid in listed and listed[e.iid].updated_at != e.seen_updated_at
    ]
    skip = {*forced, *changed}
    pipes = pipelines_changed(ctx, project, entries, skip, cursor)
    targets = targets_moved(ctx, project, entries, skip | set(pipes.keys))
    complete = True
    for key in dict.fromkeys([*forced, *changed, *pipes.keys, *targets.keys, *stale]):
        if ctx.over_budget():
            raise EndCycle(f"cycle budget spent at {key}")
        entry = files.monitored_mrs().read().mrs.get(key)  # fresh: admin may have changed it
        if entry is None:
            continue
        try:
            _examine(ctx, key, entry, listed.get(entry.iid), me, paused)
        except Gone:
            _not_found(ctx, key, "merge request not found")
        except HarnessError as exc:
            complete = False
            _error(ctx, key, exc)
    if complete:
        _move_cursor(project, cursor, listed, ctx.thresholds.cursor_lag_seconds)
        settle(project, pipes, targets, ctx.thresholds.cursor_lag_seconds)


def _forced_reason(entry: MonitoredMr, paused: bool) -> str:
    """Why an MR is read this cycle whatever the listing says ("" = it is not)."""
    if entry.rescan_requested:
        return "rescan"
    if entry.not_found_cycles:
        return "404 last cycle"
    if not entry.seen_updated_at:
        return "new"
    if entry.escalated and not entry.paused:
        return "resumed"
    if entry.pending and not paused:
        return "pending"
    if entry.held and not entry.paused and not paused:
        return "held notes"
    if entry.fix_result is not None and entry.fix_result.id != entry.fix_result_seen:
        return "dev-agent result"
    if entry.ci_status in decide.ACTIVE_PIPELINE:
        return "pipeline running"  # its end is in the pipeline listing too; this is cheap
    if entry.merge_status in decide.TRANSIENT_MERGE_STATUSES:
        return "merge status"
    return ""


def _stale(
    ctx: MonitorCtx,
    entries: dict[str, MonitoredMr],
    forced: list[str],
    now: datetime,
    stale_left: list[int],
) -> list[str]:
    limit = now - timedelta(hours=ctx.thresholds.stale_recheck_hours)
    old = [
        (e.examined_at, k)
        for k, e in entries.items()
        if k not in forced and e.examined_at is not None and e.examined_at < limit
    ]
    chosen = [k for _, k in sorted(old)][: max(stale_left[0], 0)]
    stale_left[0] -= len(chosen)
    return chosen


def _min_seen(entries: Iterable[MonitoredMr], lag: float) -> str | None:
    """A project's first cursor: the oldest ``updated_at`` any of its MRs was examined at
    (every later change has a later timestamp). None while none was examined yet."""
    seen = [parse_stamp(e.seen_updated_at) for e in entries if e.seen_updated_at]
    return format_stamp(min(seen) - timedelta(seconds=lag)) if seen else None


def _move_cursor(
    project: str, cursor: str | None, listed: dict[int, MergeRequest], lag: float
) -> None:
    with files.monitored_mrs().update() as state:
        if listed:
            newest = max(parse_stamp(m.updated_at) for m in listed.values() if m.updated_at)
            old = parse_stamp(cursor) if cursor is not None else None
            # The lag covers an update whose transaction committed after a later one was
            # listed; once a listing starting ``lag`` before ``newest`` found nothing newer,
            # that window has been read twice and the cursor may close up to ``newest``.
            settled = old is not None and newest <= old + timedelta(seconds=lag)
            target = newest if settled else newest - timedelta(seconds=lag)
            if old is not None:
                target = max(target, old)
            state.cursors[project] = format_stamp(target)
        elif cursor is not None:
            state.cursors[project] = cursor
        else:
            mine = [e for e in state.mrs.values() if e.project == project]
            first = _min_seen(mine, lag)
            if first is not None:
                state.cursors[project] = first


def _examine(
    ctx: MonitorCtx,
    key: str,
    entry: MonitoredMr,
    listed: MergeRequest | None,
    me: str,
    paused: bool,
) -> None:
    if listed is not None and listed.state in TERMINAL:
        mr = listed
    else:
        mr = call(ctx, lambda: ctx.gitlab.get_mr(entry.project, entry.iid))
    if entry.not_found_cycles:
        _found_again(key)
    ctx.report.examined.append(key)
    if mr.state in TERMINAL:
        finish(ctx, key, entry, mr)
        return
    Examination(ctx, key, entry, mr, me=me, globally_paused=paused).run()


def _not_found(ctx: MonitorCtx, key: str, why: str) -> None:
    """A 404 this cycle: counted, and the MR dropped once the count reaches the threshold."""
    limit = ctx.thresholds.drop_after_not_found_cycles
    with files.monitored_mrs().update() as state:
        entry = state.mrs.get(key)
        if entry is None:
            return
        entry.not_found_cycles += 1
        count = entry.not_found_cycles
    if count >= limit:
        _drop(ctx, key, f"{why} (404 in {count} cycles in a row)")
        return
    event(log, "mr_not_found", logging.WARNING, mr=key, why=why, cycles=count, limit=limit)
    ctx.report.deferred.append(f"{key}: {why} (404, {count} of {limit} before it is dropped)")


def _found_again(key: str) -> None:
    with files.monitored_mrs().update() as state:
        entry = state.mrs.get(key)
        if entry is not None:
            entry.not_found_cycles = 0


def _drop(ctx: MonitorCtx, key: str, why: str) -> None:
    """GitLab no longer has it: out of the monitored set at once, never polled again."""
    with files.monitored_mrs().update() as state:
        entry = state.mrs.pop(key, None)
    event(
        log,
        "mr_dropped",
        logging.WARNING,
        mr=key,
        why=why,
        case_id=entry.case_id if entry else "",
    )
    ctx.report.dropped.append(key)


def _tell_dropped(ctx: MonitorCtx) -> None:
    if not ctx.report.dropped:
        return
    listing = ", ".join(ctx.report.dropped[:20])
    more = len(ctx.report.dropped) - 20
    cycles = ctx.thresholds.drop_after_not_found_cycles
    text = (
        f"mr-monitor stopped watching {len(ctx.report.dropped)} MR(s) GitLab no longer has "
        f"(404 in {cycles} cycles in a row): {listing}"
        + (f" and {more} more" if more > 0 else "")
        + ". `harness mr-monitor --watch GROUP/PROJECT!IID --case CASE` watches one again."
    )
    try:
        dm(ctx, None, text)
    except HarnessError as exc:
        ctx.report.errors.append(f"DM about dropped MRs: {exc.line()}")


def _error(ctx: MonitorCtx, key: str, exc: HarnessError) -> None:
    ctx.report.errors.append(f"{key}: {exc.line()}")
    event(log, "mr_monitor_error", logging.WARNING, mr=key, error=exc.line())
    if len(ctx.report.errors) >= ctx.thresholds.max_errors_per_cycle:
        raise EndCycle(f"{len(ctx.report.errors)} errors this cycle; the rest waits")

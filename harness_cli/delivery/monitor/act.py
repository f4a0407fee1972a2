"""What mr-monitor does about what it found: dev-agent dispatches, the operator's DMs, the CI
log files, and the end of an MR (merged, closed or gone).

Every function here either acts once and returns, or raises before acting: the caller records
"handled" only after an action returned, so a crash or a 429 never turns into a lost event,
and an event already recorded is never acted on twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness_cli import clock
from harness_cli.config import Config
from harness_cli.delivery import worktrees
from harness_cli.delivery.monitor.thresholds import MonitorThresholds
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch.backends import BackendName
from harness_cli.dispatch.payload import Payload, Trigger
from harness_cli.errors import HarnessError, InputError, LockHeld, ServiceError, StateConflict
from harness_cli.improvement.retrospective import write_retrospective
from harness_cli.logs import event
from harness_cli.outbox import notify
from harness_cli.outbox.outbound import Outbound
from harness_cli.services.gitlab import GitLab, MergeRequest
from harness_cli.state import files
from harness_cli.state.locks import hold
from harness_cli.state.models import MonitoredMr
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import registry
from harness_cli.workspace.case import TRANSITIONS, CaseMr

log = logging.getLogger("harness.mr_monitor")

T = TypeVar("T")


@dataclass
class CycleReport:
    """What one mr-monitor cycle did, for the command's result."""

    monitored: int = 0
    examined: list[str] = field(default_factory=list)
    dispatched: list[str] = field(default_factory=list)
    held_back: list[str] = field(default_factory=list)
    muted: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    escalated: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    """GitLab API calls this cycle (the wrapper's counter; python-gitlab's own 429 retries of
    one call are not counted again)."""
    ended_early: str = ""


@dataclass
class MonitorCtx:
    cfg: Config
    gitlab: GitLab
    out: Outbound
    backend: BackendName
    thresholds: MonitorThresholds = field(default_factory=MonitorThresholds)
    report: CycleReport = field(default_factory=CycleReport)
    started: float = field(default_factory=time.monotonic)

    def over_budget(self) -> bool:
        return time.monotonic() - self.started > self.thresholds.cycle_budget_seconds


def http_status(exc: ServiceError) -> int | None:
    """The HTTP status behind a GitLab ServiceError (404: gone; 429: rate limited)."""
    return exc.status


class EndCycle(Exception):
    """Stop this cycle now, cursors where they are (rate limited, budget spent, errors)."""


class Gone(Exception):
    """GitLab answered 404 for the MR or its project."""


def call(ctx: MonitorCtx, fn: Callable[[], T], *, missing_is_gone: bool = True) -> T:
    """One GitLab call. python-gitlab has already honoured Retry-After / RateLimit-Reset
    (``obey_rate_limit``) for its bounded retries; a 429 that outlasted them ends the cycle
    instead of moving on to the next MR, which would only be refused too."""
    try:
        return fn()
    except ServiceError as exc:
        status = http_status(exc)
        if status == 404 and missing_is_gone:
            raise Gone(exc.message) from None
        if status == 429:
            raise EndCycle(f"rate limited after python-gitlab's retries ({exc.message})") from None
        raise


def case_dir_of(entry: MonitoredMr) -> str:
    return entry.case_dir or str(registry.case_dir(entry.case_id).resolve())


def dm(
    ctx: MonitorCtx, case_id: str | None, text: str, *, terminal: bool = False,
    event_key: str = "",
) -> None:  # fmt: skip
    """One message to the operator: in the case thread when there is one, else top-level in
    the self-DM (the only place the harness speaks). ``terminal``: the MR's end or an
    escalation — the message carries the case's cost so far. ``event_key`` names the event it
    is about (an MR's end, an escalation): the DM is owed once per event, so a cycle killed
    after it and redone posts nothing twice, and one Slack refused is delivered by a later run."""
    key = f"mr-monitor:{event_key}" if event_key else None
    notify.dm(ctx.out, ctx.cfg, "mr_monitor", text, case_id=case_id, terminal=terminal, key=key)


def dev_agent_busy(case_id: str) -> bool:
    """A dev-agent already runs on this case (it holds its per-(workflow, case) lock): a second
    dispatch would exit 3 and its event would be lost, so the work waits a cycle."""
    try:
        with hold(f"dev-agent-{case_id}", timeout=0):
            return False
    except LockHeld:
        return True


def start_dev_agent(
    ctx: MonitorCtx, entry: MonitoredMr, args: dict[str, Any], trigger: Trigger
) -> bool:
    """Dispatch the dev-agent; False when the backend refused to start it (systemd already
    runs that unit), so the caller keeps the work for the next cycle."""
    thread = registry.case_thread(entry.case_id)
    payload = Payload(
        workflow="dev-agent",
        case_id=entry.case_id,
        case_dir=case_dir_of(entry),
        channel=thread.channel if thread else "",
        thread_ts=thread.thread_ts if thread else "",
        trigger=trigger,
        args=args,
        repo=entry.project,
    )
    started = dispatch.dispatch(payload, backend=ctx.backend)
    return started.started or started.backend == "record"


def save_trace(entry: MonitoredMr, pipeline_id: int, job_id: int, text: str) -> Path:
    """``<case_dir>/ci/<pipeline>-<job>.log``: the failed job's whole log, for the fix run."""
    path = Path(case_dir_of(entry)) / "ci" / f"{pipeline_id}-{job_id}.log"
    atomic_write_text(path, text)
    return path


# -- the end of an MR -----------------------------------------------------------------------
def finish(ctx: MonitorCtx, key: str, entry: MonitoredMr, mr: MergeRequest) -> None:
    """Merged or closed: worktree removed, case status moved, one DM, MR dropped. Each step is
    idempotent, so a crash before the drop repeats the steps, not their effects."""
    merged = mr.state == "merged"
    others = [
        k
        for k, e in files.monitored_mrs().read().mrs.items()
        if k != key and e.case_id == entry.case_id and e.state == "opened"
    ]
    same_repo = [k for k in others if k.rsplit("!", 1)[0] == entry.project]
    removed = [] if same_repo else remove_worktrees(entry.case_id, entry.project)
    case_line = _move_case(ctx, key, entry, mr, others)
    _mark_patch_pr(entry.case_id, mr)
    retrospective_hook(ctx.cfg, entry.case_id, key)  # "at case end (merged, closed …)"
    if not others:
        consolidate_hook(ctx, entry, mr)
    verb = "merged" if merged else "closed without merging"
    parts = [f"{key} {verb}.", case_line]
    if removed:
        parts.append(f"Worktree removed ({len(removed)} folder(s)).")
    dm(ctx, entry.case_id, " ".join(p for p in parts if p), terminal=True,
       event_key=f"{key}:{mr.state}")  # fmt: skip
    with files.monitored_mrs().update() as state:
        state.mrs.pop(key, None)
    event(log, "mr_finished", case_id=entry.case_id, mr=key, state=mr.state)
    ctx.report.finished.append(f"{key} {mr.state}")


def remove_worktrees(case_id: str, project: str) -> list[Path]:
    """The case's worktree of that repository goes once its last MR there is merged or closed
    (the ticket's and the improvement MR's worktrees end separately)."""

    removed: list[Path] = []
    for key in worktrees.keys_for_case(case_id, project):
        try:
            removed += worktrees.remove_for_case(key)
        except HarnessError as exc:  # the MR's end is still recorded; the stale pruner retries
            event(log, "worktree_remove_failed", logging.WARNING, case_id=case_id, error=exc.line())
    return removed


def consolidate_hook(ctx: MonitorCtx, entry: MonitoredMr, mr: MergeRequest) -> None:
    """ "A review thread that just closed" is one of consolidate_trigger's four signals: the
    case's last MR ended, so TASK.md is consolidated now (the workflow decides whether there
    is anything to fold in; a failure to start it is logged, never a reason to keep the MR)."""
    kind = "mr_merged" if mr.state == "merged" else "mr_closed"
    thread = registry.case_thread(entry.case_id)
    payload = Payload(
        workflow="consolidate",
        case_id=entry.case_id,
        case_dir=case_dir_of(entry),
        channel=thread.channel if thread else "",
        thread_ts=thread.thread_ts if thread else "",
        trigger=Trigger(kind=kind, ts=mr.updated_at),
    )
    try:
        dispatch.dispatch(payload, backend=ctx.backend)
    except HarnessError as exc:
        event(log, "consolidate_dispatch_failed", logging.WARNING, case_id=entry.case_id,
              error=exc.line())  # fmt: skip


def retrospective_hook(cfg: Config, case_id: str, key: str) -> None:
    """A merged or closed MR ends its case: auto_retrospective records the failure modes that
    kb-update tallies. A failure here is logged, never a reason to keep the MR monitored."""

    try:
        write_retrospective(cfg, case_id, reason=f"{key} finished")
    except HarnessError as exc:
        event(
            log, "retrospective_failed", logging.WARNING, case_id=case_id, mr=key, error=exc.line()
        )


def _move_case(
    ctx: MonitorCtx, key: str, entry: MonitoredMr, mr: MergeRequest, others: list[str]
) -> str:
    """merged: ``mr_open → merged → closed``. Closed without merging: ``mr_open → escalated``
    — the ticket is not solved, and only the operator can say whether it is abandoned
    (``admin: close-case``) or needs another MR. Another open MR of the same case keeps the
    case where it is. A case in another state (e.g. a finalize case) is left alone."""
    thresholds = ctx.cfg.harness.thresholds
    try:
        with registry.update_case(entry.case_id, thresholds, f"MR {key} {mr.state}") as case:
            for known in case.mrs:
                if known.project == mr.project and known.iid == mr.iid:
                    known.state = mr.state
            if others:
                return f"Case {case.id} stays {case.status}: {len(others)} more MR(s) open."
            if mr.state == "merged":
                for step in ("merged", "closed"):
                    if step in TRANSITIONS[case.status]:
                        case.move(step, by="mr-monitor", note=key)
            elif "escalated" in TRANSITIONS[case.status] and case.status == "mr_open":
                case.move("escalated", by="mr-monitor", note=f"{key} closed without merge")
                return (
                    f"Case {case.id} is escalated: `admin: close-case {case.id}` if it is "
                    f"abandoned."
                )
            return f"Case {case.id} is {case.status}."
    except InputError:
        return f"No case {entry.case_id} in the workspace."
    except StateConflict as exc:
        return f"Case {entry.case_id} left as it was ({exc.message})."


def _mark_patch_pr(case_id: str, mr: MergeRequest) -> None:
    """A finalize case's improvement MR (the harness's own repo) ends the same way; its
    ``patch-pr-state.json`` entry follows when it has one."""
    if case_id not in files.patch_pr_state().read().cases:
        return
    with files.patch_pr_state().update() as state:
        entry = state.cases.get(case_id)
        if entry is not None and (not entry.mr_url or entry.mr_url == mr.web_url):
            entry.status = "merged" if mr.state == "merged" else "closed"
            entry.updated_at = clock.now()


# -- adopting an MR -------------------------------------------------------------------------
def adopt(ctx: MonitorCtx, key: str, case_id: str) -> tuple[bool, str]:
    """``--watch GROUP/PROJECT!IID --case CASE``: watch an MR the harness did not open (or
    lost track of). It is examined in full on the next cycle. Returns (changed, message)."""
    project, _, iid_text = key.rpartition("!")
    case = registry.load_case(case_id)
    try:
        mr = ctx.gitlab.get_mr(project, int(iid_text))
    except ServiceError as exc:
        if http_status(exc) == 404:
            raise InputError(
                f"GitLab has no MR {key}", hint="check the project path and IID"
            ) from None
        raise
    if mr.state != "opened":
        raise StateConflict(f"{key} is {mr.state}", hint="only open MRs can be watched")
    with files.monitored_mrs().update() as state:
        existing = state.mrs.get(key)
        if existing is not None:
            if existing.case_id != case.id:
                raise StateConflict(
                    f"{key} is already watched for case {existing.case_id}",
                    hint="one MR belongs to one case",
                )
            return False, f"{key} is already watched for {case.id}"
        state.mrs[key] = MonitoredMr(
            project=project,
            iid=mr.iid,
            case_id=case.id,
            case_dir=str(registry.case_dir(case.id).resolve()),
            web_url=mr.web_url,
            source_branch=mr.source_branch,
            last_sha=mr.sha,
            state=mr.state,
            adopted=True,
        )
    with registry.update_case(case.id, ctx.cfg.harness.thresholds, f"watch MR {key}") as c:
        if not any(m.project == project and m.iid == mr.iid for m in c.mrs):
            c.mrs.append(CaseMr(project=project, iid=mr.iid, web_url=mr.web_url, state=mr.state))
        if "mr_open" in TRANSITIONS[c.status]:
            c.move("mr_open", by="mr-monitor", note=f"watching {key}")
    event(log, "mr_adopted", case_id=case.id, mr=key)
    return True, f"watching {key} for case {case.id}"

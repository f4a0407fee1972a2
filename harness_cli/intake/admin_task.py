"""``admin: task <jira> [--auto]`` (reference Layer 6: "runs the entire analyze, implement and
MR pipeline, and adding --auto makes it unattended").

The case gets a case thread like any ticket's, so the "reply to approve" its investigation asks
for is read; ``--auto`` is kept on the case, so it reaches the dev-agent whichever approval
comes after the investigation.
"""

from __future__ import annotations

import logging

from harness_cli.config import resolve_project
from harness_cli.delivery import reopen
from harness_cli.errors import HarnessError, InputError, LockHeld
from harness_cli.intake import case_thread, jira_source
from harness_cli.intake.context import Intake
from harness_cli.logs import event
from harness_cli.outbox import notify
from harness_cli.state.locks import hold
from harness_cli.workspace import registry
from harness_cli.workspace.case import validate_case_id

log = logging.getLogger("harness.intake")


def task(ctx: Intake, key: str, *, auto: bool) -> str:
    """``task <jira> [--auto]``: investigate (a new or failed case), or start the dev-agent on
    an approved one. ``--auto`` is remembered on the case, so the approval that comes after the
    investigation — a reply "approve" in the case thread, or ``admin: task`` without it — still
    runs the task unattended."""
    case_id = validate_case_id(key)
    t = ctx.cfg.harness.thresholds
    try:
        case = registry.load_case(case_id)
        created = False
    except InputError:
        case = None
    got = None
    if ctx.jira is not None and (case is None or case.status in ("new", "failed", "closed")):
        # The issue is the task: read it first (again for a case about to be re-investigated).
        got = jira_source.read(ctx.jira, case_id)
        if got.unknown and case is None:
            return (
                f"{case_id} is not an issue in Jira ({got.error}); nothing was opened. "
                "Check the key, or `harness case new` for work Jira does not know."
            )
    if case is None:
        project = resolve_project(ctx.cfg.projects, jira_key=case_id)
        title = f"{case_id}: {got.issue.summary}" if got and got.issue else case_id
        opened = registry.open_case(
            t,
            case_id=case_id,
            project=project,
            title=title[:120],
            kind="task",
            jira=case_id,
            message={"text": f"admin: task {case_id}"},
            sync_now=not ctx.deferred,
        )
        case, created = opened.case, opened.created
    else:
        created = False
    if got is not None and got.issue is not None:
        jira_source.attach(case_id, got.issue)
    if auto and not case.task_auto:
        with registry.update_case(case_id, t, "task --auto", sync_now=not ctx.deferred) as fresh:
            fresh.task_auto = True
        case.task_auto = True
    auto = auto or case.task_auto
    note = ""
    try:
        case_thread.ensure(
            ctx,
            case,
            text=f"Task {case_thread.marker(case_id)} ({case.project}), asked with "
            f"`admin: task {case_id}{' --auto' if auto else ''}`: reply here to steer or "
            "approve.",
            fresh=created,
            since=ctx.command_ts,
        )
    except HarnessError as exc:
        if ctx.deferred:
            raise  # from Slack: the lifecycle retries the whole command
        note = f" (no case thread yet: {exc.line()})"
    case_dir = str(registry.case_dir(case_id))
    if case.status == "awaiting_approval":
        with registry.update_case(case_id, t, "approved") as fresh:
            fresh.move("approved", by="operator", note="admin task")
        ctx.start(
            "dev-agent",
            case_id=case_id,
            case_dir=case_dir,
            trigger=ctx.trigger(),
            args={"mode": "task", "auto": auto},
        )
        return f"approved {case_id}: dev-agent started (mode task{', auto' if auto else ''}){note}"
    if case.status in ("approved", "in_progress") and case.plan_pending:
        with registry.update_case(case_id, t, "plan approved") as fresh:
            fresh.plan_pending = False
        ctx.start(
            "dev-agent",
            case_id=case_id,
            case_dir=case_dir,
            trigger=ctx.trigger(),
            args={"mode": "task", "auto": auto, "plan_approved": True},
        )
        return f"plan approved for {case_id}: dev-agent implements it now"
    if (
        case.status in ("new", "failed", "closed")
        and got is not None
        and got.issue is None
        and not got.unknown
        and not jira_source.attached(registry.case_dir(case_id))
    ):
        jira_source.wait(
            case_id, t, got.error, {
                "workflow": "investigate",
                "trigger": ctx.trigger().model_dump(mode="json"),
                "args": {"then": "task", "auto": auto},
            }, sync_now=not ctx.deferred,
        )  # fmt: skip
        return (
            f"{case_id}: Jira did not answer ({got.error}). The case waits; each poll-slack "
            f"cycle tries Jira again and starts the investigation once it reads the issue{note}"
        )
    if case.status in ("new", "failed", "closed"):
        ctx.start(
            "investigate",
            case_id=case_id,
            case_dir=case_dir,
            trigger=ctx.trigger(),
            args={"then": "task", "auto": auto},
        )
        return (
            f"{case_id}: investigation started; the task follows once it is approved"
            + (" (auto)" if auto else "")
            + note
        )
    return f"{case_id} is already {case.status}; nothing started"


RETRYABLE = ("approved", "in_progress", "failed", "escalated")
"""Statuses a dev-agent run may leave a case in when it fails (``approved``: it failed before
it began — a clone, a git identity)."""


def retry(ctx: Intake, key: str) -> str:
    """``retry <case>`` (#34 item 2): the one command every dev-agent failure message names,
    whatever the run left the case in. Before, the message said the case was ``failed`` and to
    ``reopen`` then ``task`` it; a run that failed before it began left it ``approved``, where
    both refused, and only a shell moved it. An MR still open is the monitor's (``mr rescan``);
    a case with no finished investigation is investigated (``task``)."""

    case_id = validate_case_id(key)
    case = registry.load_case(case_id)
    if case.status not in RETRYABLE:
        task_acts = case.status not in ("mr_open", "merged", "closed")
        return f"{case_id} is {case.status}: nothing to retry" + (
            f"; `admin: task {case_id}` acts on it" if task_acts else ""
        )
    try:
        with hold(f"dev-agent-{case_id}", timeout=0):
            pass
    except LockHeld:
        return f"a dev-agent run is working on {case_id} right now; it reports in the case thread"
    if case.status != "approved":
        reopened = reopen.reopen_case(ctx.cfg, case_id, by=ctx.operator)
        if reopened.status != "awaiting_approval":
            return reopened.message
        case = registry.load_case(case_id)
    auto = case.task_auto
    if case.status == "awaiting_approval":
        with registry.update_case(case_id, ctx.cfg.harness.thresholds, "approved") as fresh:
            fresh.move("approved", by="operator", note="admin retry")
    with registry.update_case(case_id, ctx.cfg.harness.thresholds, "retry") as fresh:
        fresh.plan_pending = False
    ctx.start(
        "dev-agent",
        case_id=case_id,
        case_dir=str(registry.case_dir(case_id)),
        trigger=ctx.trigger(),
        args={"mode": "task", "auto": auto},
    )
    return f"{case_id}: dev-agent started again (mode task{', auto' if auto else ''})"


def auto_after_investigation(ctx: Intake, case_id: str) -> str | None:
    """#34 item 10: "adding --auto makes it unattended" — an investigation that ends waiting
    for approval on a case the operator asked for with ``admin: task <jira> --auto`` is
    approved here and the dev-agent starts (plan included), with no reply awaited. Before, the
    flag was read only when ``admin: task`` was typed again. ``task_auto`` lives in the case's
    control folder, which only harness code writes, and only the operator's own command sets
    it ([hardening-2] R4): nothing an agent wrote can make a case unattended."""
    case = registry.load_case(case_id)
    if not case.task_auto or case.status != "awaiting_approval":
        return None
    answer = task(ctx, case_id, auto=False)  # what `admin: task <case>` runs
    try:
        notify.dm(ctx.out, ctx.cfg, "task_auto",
                  f"no approval awaited (`admin: task {case_id} --auto`): {answer}",
                  case_id=case_id)  # fmt: skip
    except HarnessError as exc:  # the dev-agent's own status message says it in the thread
        event(log, "task_auto_notice_failed", logging.WARNING, case_id=case_id, error=exc.line())
    return answer

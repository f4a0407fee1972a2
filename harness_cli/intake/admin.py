"""Carry out one admin command (reference Layer 6), from the self-DM or ``harness admin``.

Admin commands are the operator's own intent: the pause never silences them. Whatever goes
wrong becomes the reply — a usage text or a one-line reason — never a crash of the poller.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qs, urlsplit

from harness_cli import dispatch
from harness_cli.config import resolve_project
from harness_cli.errors import HarnessError, InputError
from harness_cli.intake import pause
from harness_cli.intake.admin_parser import (
    USAGE,
    AdminCommand,
    AdminUsage,
    parse_admin,
    parse_amount,
)
from harness_cli.intake.context import Intake
from harness_cli.logs import event
from harness_cli.state import files
from harness_cli.workspace import registry
from harness_cli.workspace.case import validate_case_id

log = logging.getLogger("harness.admin")

_PERMALINK = re.compile(r"/archives/(?P<channel>[A-Z0-9]+)/p(?P<sec>\d{10})(?P<frac>\d{6})")
_MR_URL = re.compile(r"https?://[^/]+/(?P<project>.+?)/-/merge_requests/(?P<iid>\d+)")
_MR_REF = re.compile(r"^(?P<project>[\w.\-/]+)!(?P<iid>\d+)$")


def from_slack(
    ctx: Intake, text: str, *, channel: str, ts: str, thread_ts: str | None = None
) -> None:
    """An admin line seen in the self-DM: run it, answer in a thread under it."""
    reply = run_line(ctx, text)
    ctx.out.post(channel, reply, thread_ts=thread_ts or ts)
    ctx.tally.admin.append(text.strip()[:80])


def run_line(ctx: Intake, text: str) -> str:
    try:
        command = parse_admin(text)
    except AdminUsage as exc:
        event(log, "admin_usage", logging.WARNING, text=text[:200])
        return exc.reply
    try:
        reply = execute(ctx, command)
    except HarnessError as exc:
        reply = f"could not do that: {exc.line()}"
    event(log, "admin_command", verb=command.verb, args=list(command.args))
    return reply


def execute(ctx: Intake, cmd: AdminCommand) -> str:
    verb = cmd.verb
    if verb == "help":
        return USAGE
    if verb == "oncall-pause":
        state = pause.pause(cmd.duration, by=ctx.operator)
        until = state.paused_until.isoformat() if state.paused_until else "`oncall resume`"
        return f"paused: automatic dispatch is muted until {until}; your commands still work"
    if verb == "oncall-resume":
        was, held = pause.resume(by=ctx.operator)
        if not was:
            return "not paused; nothing to resume"
        lines = [f"resumed. held back while paused: {len(held)}"]
        lines += [
            f"• {h.trigger} → `harness {h.detail.split(' ')[0]} {h.case_id}`" for h in held[-10:]
        ]
        return "\n".join(lines)
    if verb == "oncall-status":
        return status_text(ctx)
    if verb == "oncall-toggle":
        with files.oncall_state().update() as state:
            current = state.auto_monitor
            now_on = not (ctx.cfg.harness.auto_monitor if current is None else current)
            state.auto_monitor = now_on
        return f"auto-monitor of new tickets is now {'on' if now_on else 'off'}"
    if verb in ("mr-rescan", "mr-pause", "mr-resume"):
        return _mr(verb, cmd.args[0])
    if verb == "task":
        return _task(ctx, cmd.args[0], auto="--auto" in cmd.flags)
    if verb == "oncall-run":
        return _oncall_run(ctx, cmd.args[0])
    if verb == "finalize":
        case = registry.load_case(validate_case_id(cmd.args[0]))
        ctx.start(
            "finalize",
            case_id=case.id,
            case_dir=str(registry.case_dir(case.id)),
            trigger=_trigger(ctx),
        )
        return f"finalize started for {case.id}"
    if verb == "register-thread":
        channel, thread_ts = parse_permalink(cmd.args[0])
        case = registry.load_case(validate_case_id(cmd.args[1]))
        added = registry.register_thread(case, channel=channel, thread_ts=thread_ts)
        return f"thread {channel}/{thread_ts} {'linked to' if added else 'already on'} {case.id}"
    if verb == "close-case":
        case_id = validate_case_id(cmd.args[0])
        with registry.update_case(case_id, ctx.cfg.harness.thresholds, "closed") as case:
            moved = case.move("closed", by="operator", note="admin close-case")
        registry.close_threads(case)
        if moved:
            from harness_cli.improvement.retrospective import write_retrospective

            write_retrospective(ctx.cfg, case_id, reason="admin close-case")
        return f"{case_id} {'closed' if moved else 'was already closed'}"
    if verb == "budget":
        return _budget(ctx, validate_case_id(cmd.args[0]), parse_amount(cmd.args[1]))
    if verb == "gap-patterns":
        dispatch.spawn(["gap-patterns"], backend=ctx.backend)
        return "gap-patterns started"
    raise AdminUsage(f"unknown admin command {verb!r}")  # the parser admits nothing else


def _budget(ctx: Intake, case_id: str, amount: float) -> str:
    """``admin: budget <case> <amount>``: the case's own limit (case.json ``budget_usd``),
    which the cost meter's case budget reads instead of harness.yaml's."""
    with registry.update_case(case_id, ctx.cfg.harness.thresholds, f"budget ${amount:g}") as case:
        before = case.budget_usd
        case.budget_usd = amount
    spent = float((case.cost or {}).get("usd", 0.0))
    default = ctx.cfg.harness.cost.budgets.case_usd
    was = f"${before:g}" if before is not None else (f"${default:g}" if default else "no limit")
    return (
        f"{case_id}: budget ${amount:g} (was {was}; spent ${spent:.4f} so far). Run the "
        f"workflow again to go on, e.g. `harness investigate {case_id}`."
    )


def status_text(ctx: Intake) -> str:
    view = pause.view()
    if view.paused:
        until = view.until.isoformat() if view.until else "resume"
        head = f"paused since {view.since.isoformat() if view.since else '?'} until {until}"
        head += f" by {view.by}; held back: {view.held_back_total}"
    else:
        head = "not paused"
    auto = {p: ctx.auto_monitor(p) for p in ctx.cfg.projects.projects}
    lines = [
        head,
        "auto-monitor: " + ", ".join(f"{p} {'on' if on else 'off'}" for p, on in auto.items()),
    ]
    lines += [f"• held: {h.trigger} {h.case_id} ({h.detail})" for h in view.held_back[-10:]]
    open_cases = [c for c in registry.list_cases() if c.get("status") not in ("closed",)]
    mrs = files.monitored_mrs().read().mrs
    lines.append(
        f"open cases: {len(open_cases)}; monitored MRs: {len(mrs)}"
        + (f" ({sum(1 for m in mrs.values() if m.paused)} paused)" if mrs else "")
    )
    from harness_cli.ops.summary import last_24h

    lines += last_24h().lines()
    return "\n".join(lines)


def parse_permalink(url: str) -> tuple[str, str]:
    """A Slack permalink → (channel, thread ts): a reply's link names its parent."""
    match = _PERMALINK.search(url)
    if not match:
        raise InputError(
            f"{url!r} is not a Slack message link", hint="copy the link with Slack's 'Copy link'"
        )
    query = parse_qs(urlsplit(url).query)
    ts = query.get("thread_ts", [f"{match['sec']}.{match['frac']}"])[0]
    return match["channel"], ts


def parse_mr(ref: str) -> str:
    """``group/project!12`` or an MR URL → the monitored-mrs key ``group/project!12``."""
    match = _MR_URL.search(ref) or _MR_REF.match(ref)
    if not match:
        raise InputError(f"{ref!r} is not an MR", hint="use group/project!IID or the MR's URL")
    return f"{match['project']}!{int(match['iid'])}"


def _mr(verb: str, ref: str) -> str:
    key = parse_mr(ref)
    with files.monitored_mrs().update() as state:
        entry = state.mrs.get(key)
        if entry is None:
            return f"{key} is not a monitored MR"
        if verb == "mr-pause":
            entry.paused = True
            return f"{key}: auto-replies paused"
        if verb == "mr-resume":
            entry.paused = False
            return f"{key}: auto-replies resumed"
        entry.rescan_requested = True
    return f"{key}: will be rescanned on the next mr-monitor cycle"


def _task(ctx: Intake, key: str, *, auto: bool) -> str:
    case_id = validate_case_id(key)
    try:
        case = registry.load_case(case_id)
    except InputError:
        project = resolve_project(ctx.cfg.projects, jira_key=case_id)
        case = registry.open_case(
            ctx.cfg.harness.thresholds,
            case_id=case_id,
            project=project,
            title=case_id,
            kind="task",
            jira=case_id,
            message={"text": f"admin: task {case_id}"},
        ).case
    case_dir = str(registry.case_dir(case_id))
    if case.status == "awaiting_approval":
        with registry.update_case(case_id, ctx.cfg.harness.thresholds, "approved") as fresh:
            fresh.move("approved", by="operator", note="admin task")
        ctx.start(
            "dev-agent",
            case_id=case_id,
            case_dir=case_dir,
            trigger=_trigger(ctx),
            args={"mode": "task", "auto": auto},
        )
        return f"approved {case_id}: dev-agent started (mode task{', auto' if auto else ''})"
    if case.status in ("approved", "in_progress") and case.plan_pending:
        with registry.update_case(case_id, ctx.cfg.harness.thresholds, "plan approved") as fresh:
            fresh.plan_pending = False
        ctx.start(
            "dev-agent",
            case_id=case_id,
            case_dir=case_dir,
            trigger=_trigger(ctx),
            args={"mode": "task", "auto": auto, "plan_approved": True},
        )
        return f"plan approved for {case_id}: dev-agent implements it now"
    if case.status in ("new", "failed", "closed"):
        ctx.start(
            "investigate",
            case_id=case_id,
            case_dir=case_dir,
            trigger=_trigger(ctx),
            args={"then": "task", "auto": auto},
        )
        return f"{case_id}: investigation started; the task follows once it is approved" + (
            " (auto)" if auto else ""
        )
    return f"{case_id} is already {case.status}; nothing started"


def _oncall_run(ctx: Intake, url: str) -> str:
    from harness_cli.intake.messages import open_ticket

    channel, ts = parse_permalink(url)
    thread = ctx.call(lambda: ctx.slack.replies(channel, ts))
    if not thread:
        raise InputError(f"no message at {url}")
    case_id = open_ticket(ctx, channel, thread[0], trigger_kind="admin_command")
    return f"investigating {case_id}"


def _trigger(ctx: Intake) -> dispatch.Trigger:
    return dispatch.Trigger(kind="admin_command", user=ctx.operator)

"""Carry out one admin command (reference Layer 6), from the self-DM or ``harness admin``.

Admin commands are the operator's own intent: the pause never silences them. Whatever goes
wrong becomes the reply — a usage text or a one-line reason — never a crash of the poller.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qs, urlsplit

from harness_cli import clock
from harness_cli.delivery import reopen
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.errors import HarnessError, InputError
from harness_cli.improvement.retrospective import write_retrospective
from harness_cli.intake import held as held_work
from harness_cli.intake import pause
from harness_cli.intake.admin_parser import (
    USAGE,
    AdminCommand,
    AdminUsage,
    parse_admin,
    parse_amount,
)
from harness_cli.intake.admin_task import retry, task
from harness_cli.intake.context import Intake
from harness_cli.intake.tickets import open_ticket
from harness_cli.investigation import hand
from harness_cli.logs import event
from harness_cli.loop import outage
from harness_cli.ops.summary import last_24h
from harness_cli.outbox.outbound import is_own_post
from harness_cli.sessions import waiting
from harness_cli.state import files
from harness_cli.workspace import registry
from harness_cli.workspace.case import validate_case_id
from harness_cli.workspace.repair import repair_case

log = logging.getLogger("harness.admin")

_PERMALINK = re.compile(r"/archives/(?P<channel>[A-Z0-9]+)/p(?P<sec>\d{10})(?P<frac>\d{6})")
_MR_URL = re.compile(r"https?://[^/]+/(?P<project>.+?)/-/merge_requests/(?P<iid>\d+)")
_MR_REF = re.compile(r"^(?P<project>[\w.\-/]+)!(?P<iid>\d+)$")


def from_slack(
    ctx: Intake, text: str, *, channel: str, ts: str, thread_ts: str | None = None
) -> None:
    """An admin line seen in the self-DM: run it, answer in a thread under it (and read that
    thread for a while: the next command may come as a reply there). A redelivered command
    whose answer is already in Slack was carried out: it is not run twice."""
    # threads runs admin lines: a two-module pair
    from harness_cli.intake import threads  # noqa: PLC0415

    if thread_ts is None:
        threads.track_admin(ctx, ts)
    if ctx.redelivery and _answered(ctx, channel, ts, thread_ts or ts):
        event(log, "admin_already_answered", ts=ts)
        return
    ctx.command_ts = ts
    try:
        reply = run_line(ctx, text)
    finally:
        ctx.command_ts = ""
    ctx.out.post(channel, reply, thread_ts=thread_ts or ts)
    ctx.tally.admin.append(text.strip()[:80])


def _answered(ctx: Intake, channel: str, ts: str, thread_ts: str) -> bool:
    """Our answer follows the command in its thread before anything else the operator says."""

    for message in ctx.call(lambda: ctx.slack.replies(channel, thread_ts, oldest=ts)):
        if float(message.get("ts", 0)) <= float(ts):
            continue
        if is_own_post(message):
            return True
        if message.get("user") == ctx.operator:
            return False
    return False


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
        until = clock.human(state.paused_until) if state.paused_until else "`oncall resume`"
        return f"paused: automatic dispatch is muted until {until}; your commands still work"
    if verb == "oncall-resume":
        was, _ = pause.resume(by=ctx.operator)
        replayed = held_work.replay(ctx.backend)
        ctx.tally.replayed += replayed
        if not was and not replayed:
            return "not paused; nothing to resume"
        lines = ["resumed." if was else "not paused."]
        lines.append(f"replayed {len(replayed)} held dispatch(es), in the order they were held")
        lines += [f"• {r}" for r in replayed[:10]]
        if len(replayed) > 10:
            lines.append(f"• … and {len(replayed) - 10} more")
        return "\n".join(lines)
    if verb == "oncall-status":
        return status_text(ctx)
    if verb == "oncall-toggle":
        return _toggle(ctx, cmd.args[0] if cmd.args else None)
    if verb in ("mr-rescan", "mr-pause", "mr-resume"):
        return _mr(verb, cmd.args[0])
    if verb == "task":
        return task(ctx, cmd.args[0], auto="--auto" in cmd.flags)
    if verb == "retry":
        return retry(ctx, cmd.args[0])
    if verb == "oncall-run":
        return _oncall_run(ctx, cmd.args[0])
    if verb == "finalize":
        case = registry.load_case(validate_case_id(cmd.args[0]))
        ctx.start(
            "finalize",
            case_id=case.id,
            case_dir=str(registry.case_dir(case.id)),
            trigger=ctx.trigger(),
        )
        return f"finalize started for {case.id}"
    if verb == "register-thread":
        channel, thread_ts = parse_permalink(cmd.args[0])
        case = registry.load_case(validate_case_id(cmd.args[1]))
        added = registry.register_thread(case, channel=channel, thread_ts=thread_ts)
        return f"thread {channel}/{thread_ts} {'linked to' if added else 'already on'} {case.id}"
    if verb == "close-case":
        case_id = validate_case_id(cmd.args[0])
        # Closing stops its threads' polling (registry.update_case, for every close path).
        with registry.update_case(case_id, ctx.cfg.harness.thresholds, "closed") as case:
            moved = case.move("closed", by="operator", note="admin close-case")
        if moved:
            write_retrospective(ctx.cfg, case_id, reason="admin close-case")
        return f"{case_id} {'closed' if moved else 'was already closed'}"
    if verb == "repair":
        return repair_case(cmd.args[0], ctx.cfg.harness.thresholds).reply()
    if verb == "budget":
        return _budget(ctx, validate_case_id(cmd.args[0]), parse_amount(cmd.args[1]))
    if verb in ("reopen", "accept-checks"):
        case_id = validate_case_id(cmd.args[0])
        if verb == "reopen":
            return reopen.reopen_case(ctx.cfg, case_id, by=ctx.operator).message
        return reopen.accept_checks(ctx.cfg, case_id, ctx.forge, by=ctx.operator)[1]
    if verb == "approve":
        return waiting.approve(cmd.args[0], backend=ctx.backend)
    if verb == "run":
        return hand.run_one(
            ctx.cfg, validate_case_id(cmd.args[0]), int(cmd.args[1]), ctx.jira, ctx.out,
            confirm="--confirm" in cmd.flags,
        )  # fmt: skip
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
        until = clock.human(view.until) if view.until else "resume"
        head = f"paused since {clock.human(view.since) if view.since else '?'} until {until}"
        head += f" by {view.by}; held back: {view.held_back_total}"
    else:
        head = "not paused"
    auto = {p: ctx.auto_monitor(p) for p in ctx.cfg.projects.projects}
    lines = [
        head,
        "auto-monitor: " + ", ".join(f"{p} {'on' if on else 'off'}" for p, on in auto.items()),
    ]
    lines += [f"• held: {h.trigger} {h.case_id} ({h.detail})" for h in view.held_back[-10:]]
    if view.held_work:
        when = "when the pause ends" if view.paused else "by the next poll-slack cycle"
        lines.append(f"waiting to be replayed {when}: {len(view.held_work)}")
        lines += [f"• {h.workflow} {h.case_id} ({h.trigger})" for h in view.held_work[:10]]
    found = registry.list_cases(include_broken=True)
    open_cases = [c for c in found if c.get("status") not in ("closed", registry.BROKEN)]
    broken = [c for c in found if c.get("status") == registry.BROKEN]
    mrs = files.monitored_mrs().read().mrs
    lines.append(
        f"open cases: {len(open_cases)}; monitored MRs: {len(mrs)}"
        + (f" ({sum(1 for m in mrs.values() if m.paused)} paused)" if mrs else "")
    )

    waiting = outage.current()
    if waiting is not None and waiting.waiting:
        lines.append(
            f"waiting for the model API ({waiting.why}) since {waiting.since[:16]}: "
            + ", ".join(sorted(waiting.waiting))
            + " (tried again by poll-slack)"
        )
    failing = {c: cur for c, cur in files.slack_cursors().read().channels.items() if cur.failing}
    for channel, cursor in sorted(failing.items()):  # #34 item 2: the DM points here
        since = clock.human(cursor.failing_since) if cursor.failing_since else "?"
        lines.append(f"• cannot read <#{channel}> since {since}: {cursor.failing}")
    if broken:  # a case nobody can read is work nobody is doing: said, never hidden
        lines.append(f"unreadable cases: {len(broken)}")
        lines += [f"• {c['id']}: {c['problem']}" for c in broken[:10]]

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


def _oncall_run(ctx: Intake, url: str) -> str:
    channel, ts = parse_permalink(url)
    thread = ctx.call(lambda: ctx.slack.replies(channel, ts))
    if not thread:
        raise InputError(f"no message at {url}")
    case_id = open_ticket(
        ctx, channel, thread[0], trigger_kind="admin_command", trigger_ts=ctx.command_ts
    )
    return f"investigating {case_id}"


def _toggle(ctx: Intake, project: str | None) -> str:
    """``oncall-toggle``: flip the default; ``oncall-toggle <project>``: flip one project. A
    project's own ``auto_monitor`` in projects.yaml wins over the default (the reply says so)."""
    projects = ctx.cfg.projects.projects
    if project is not None and project not in projects:
        raise InputError(f"unknown project {project!r}", hint=f"one of: {', '.join(projects)}")
    with files.oncall_state().update() as state:
        if project is not None:
            now_on = not ctx.auto_monitor(project)
            state.auto_monitor_projects[project] = now_on
        else:
            current = state.auto_monitor
            now_on = not (ctx.cfg.harness.auto_monitor if current is None else current)
            state.auto_monitor = now_on
    word = "on" if now_on else "off"
    if project is not None:
        return f"auto-monitor of new tickets in {project} is now {word}"
    lines = [f"auto-monitor of new tickets is now {word} (the default)"]
    state = files.oncall_state().read()
    for name, conf in projects.items():
        if name in state.auto_monitor_projects:
            own = "on" if state.auto_monitor_projects[name] else "off"
            lines.append(f"• {name} keeps its own toggle ({own}, `oncall-toggle {name}`)")
        elif conf.auto_monitor is not None:
            own = "on" if conf.auto_monitor else "off"
            lines.append(f"• {name} keeps its own setting ({own}, projects.yaml)")
    return "\n".join(lines)

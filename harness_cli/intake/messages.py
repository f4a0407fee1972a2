"""What one Slack message means, decided in one place for the poller and the Socket Mode
listener alike: a new ticket, a reply in a case thread, an admin command, the harness's own
post, or noise.

Every message arrives here already recorded as seen in the shared ledger (see
:mod:`harness_cli.intake.lifecycle`), so it is handled once, whichever path saw it first — and,
after a crash, handled again with every effect idempotent.
"""

from __future__ import annotations

import contextlib
import logging

from harness_cli.config import all_jira_prefixes, extract_jira_key, resolve_project
from harness_cli.dispatch.payload import Trigger
from harness_cli.errors import InputError, ServiceError
from harness_cli.faults import crash_point
from harness_cli.intake import admin, case_thread, flood, jira_source, pause
from harness_cli.intake.admin_parser import is_admin_text
from harness_cli.intake.context import BudgetExhausted, Intake
from harness_cli.logs import event
from harness_cli.outbox.outbound import is_own_post
from harness_cli.services.slack import Message
from harness_cli.state.models import ThreadEntry
from harness_cli.workspace import registry
from harness_cli.workspace.case import Source, derive_case_id

log = logging.getLogger("harness.intake")

IGNORED_SUBTYPES = frozenset(
    {
        "bot_message",
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "message_changed",
        "message_deleted",
        "pinned_item",
        "tombstone",
    }
)


def is_noise(message: Message, channel: str | None = None) -> bool:
    """Bots (filter on bot_id, as Bolt's ignoring_self_events does), system subtypes, and the
    harness's own posts (by their Slack metadata, or the ts recorded in ``channel``)."""
    return (
        bool(message.get("bot_id"))
        or message.get("subtype") in IGNORED_SUBTYPES
        or is_own_post(message, channel)
    )


def top_level(ctx: Intake, channel: str, message: Message) -> None:
    """A top-level message in a polled channel (a support channel or the self-DM)."""
    ts, user, text = str(message["ts"]), str(message.get("user", "")), str(message.get("text", ""))
    if is_noise(message, channel):
        return
    if channel == ctx.self_dm:
        if user == ctx.operator and is_admin_text(text):
            if is_history(ctx, ts):
                ctx.tally.history.append(f"{channel}/{ts}: {text.strip()[:80]}")
                return
            admin.from_slack(ctx, text, channel=channel, ts=ts)
        else:
            ctx.tally.ignored.append(f"{channel}/{ts}: not an admin command")
        return
    if is_admin_text(text):
        # "admin:" from anyone, inside a ticket channel, is text — never a command.
        event(log, "admin_text_ignored", logging.WARNING, channel=channel, ts=ts, user=user)
    project_of = ctx.support_channels()
    if channel not in project_of:
        ctx.tally.ignored.append(f"{channel}/{ts}: not a support channel")
        return
    if flood.admit(ctx, channel, message):  # past the intake rate: folded, one case, one DM
        open_ticket(ctx, channel, message, trigger_kind="new_ticket")


def open_ticket(
    ctx: Intake, channel: str, message: Message, *, trigger_kind: str, trigger_ts: str = ""
) -> str:
    """A ticket → its case (dir, message.json, case.json, thread maps, a case thread in the
    self-DM) → ``investigate`` when auto-monitor is on. Returns the case id.

    Idempotent, and safe to redo after a crash at any step: each effect is keyed (see
    :mod:`harness_cli.intake.lifecycle`). A ticket seen for the first time whose case already
    exists — another machine's, or a second ticket naming the same Jira key — joins that case
    and starts nothing; only a redelivery of the case's own originating message (a run died
    half way) goes on to the dispatch, which the payload key makes happen once."""
    ts, user, text = str(message["ts"]), str(message.get("user", "")), str(message.get("text", ""))
    jira = extract_jira_key(text, all_jira_prefixes(ctx.cfg.projects))
    project = resolve_project(ctx.cfg.projects, jira_key=jira, channel=channel)
    case_id = registry.case_by_source(channel, ts) or derive_case_id(
        jira=jira, channel=channel, ts=ts
    )
    linked_to = ""
    if case_id == jira and registry.is_closed(case_id):
        # A closed case is not reopened from outside: this ticket is a new case, linked to it.
        linked_to, case_id = case_id, derive_case_id(jira=None, channel=channel, ts=ts)
    permalink = _permalink(ctx, channel, ts)
    opened = registry.open_case(
        ctx.cfg.harness.thresholds,
        case_id=case_id,
        project=project,
        title=_title(text),
        kind="oncall",
        jira=jira,
        message={**message, "channel": channel, "permalink": permalink},
        source=Source(channel=channel, thread_ts=ts, user=user, permalink=permalink),
        sync_now=not ctx.deferred,
        linked_to=linked_to,
    )
    project = opened.case.project
    if opened.case.linked_to:
        registry.link_cases(opened.case.linked_to, case_id, ctx.cfg.harness.thresholds,
                            sync_now=not ctx.deferred)  # fmt: skip
    linked = (
        f"\nIt names {opened.case.linked_to}, which is closed: a new case, linked to it "
        f"(`admin: reopen {opened.case.linked_to}` to work on the old one instead)."
        if opened.case.linked_to
        else ""
    )
    registry.register_thread(opened.case, channel=channel, thread_ts=ts, role="ticket")
    crash_point("intake.thread_map")
    jira_note, jira_waits = _read_jira(ctx, opened, jira)
    linked += jira_note
    if trigger_kind not in pause.OPERATOR and pause.is_paused():
        # #34 item 15: the operator hears of the ticket now and of its start only later
        linked += "\nHeld: the harness is paused; `admin: oncall resume` starts its investigation."
    own = opened.case.source.channel == channel and opened.case.source.thread_ts == ts
    case_thread.ensure(
        ctx,
        opened.case,
        text=f"New ticket in <#{channel}> → {case_thread.marker(case_id)} ({project})\n"
        f"{permalink}\n> {_title(text, 300)}{linked}",
        fresh=opened.created,
        since=ts,
    )
    if opened.created:
        ctx.tally.new_cases.append(case_id)
        event(log, "ticket_opened", case_id=case_id, project=project, channel=channel, ts=ts)
    elif trigger_kind == "new_ticket" and not (own and ctx.redelivery):
        # Already held as a case: by another machine (or an earlier install), or this is a
        # second ticket naming the same Jira key. It joins the case; nothing new starts.
        ctx.tally.recognised.append(case_id)
        return case_id
    if jira_waits:
        jira_source.wait(
            case_id, ctx.cfg.harness.thresholds, jira_waits, {
                "workflow": "investigate",
                "trigger": {"kind": trigger_kind, "ts": trigger_ts or ts, "user": user},
                "channel": channel, "thread_ts": ts,
            } if trigger_kind == "admin_command" or ctx.auto_monitor(project) else {},
            sync_now=not ctx.deferred,
        )  # fmt: skip
        ctx.tally.ignored.append(f"{case_id}: waits for Jira ({jira_waits[:80]})")
    elif trigger_kind == "admin_command" or ctx.auto_monitor(project):
        ctx.start(
            "investigate",
            case_id=case_id,
            case_dir=str(opened.dir),
            trigger=Trigger(kind=trigger_kind, ts=trigger_ts or ts, user=user),
            channel=channel,
            thread_ts=ts,
        )
    else:
        ctx.tally.ignored.append(f"{case_id}: auto-monitor off for {project}")
    return case_id


def _read_jira(ctx: Intake, opened: registry.Opened, key: str | None) -> tuple[str, str]:
    """A ticket naming a key of a configured prefix gets the issue attached (#30). Returns
    (a line for the case thread's opening post, the error the case waits on — "" when none)."""
    if key is None or ctx.jira is None or opened.case.jira != key:
        return "", ""
    if jira_source.attached(opened.dir) and not opened.case.jira_wait:
        return "", ""  # a redelivery: read already
    got = jira_source.read(ctx.jira, key)
    if got.issue is not None:
        jira_source.attach(opened.case.id, got.issue)
        return f"\nJira {key}: {got.issue.summary} ({got.issue.status}) — attached.", ""
    if got.unknown:
        return f"\n{key} is not an issue in Jira: the ticket's own text is all there is.", ""
    return (
        f"\nJira did not answer for {key} ({got.error}): the investigation waits for the "
        "issue; each poll-slack cycle tries again.",
        got.error,
    )


def reply(ctx: Intake, entry: ThreadEntry, message: Message) -> None:
    """A reply in a tracked thread: the operator's own → followup (never gated); anyone
    else's in a ticket thread → followup as automatic activity (gated while paused)."""
    ts, user, text = str(message["ts"]), str(message.get("user", "")), str(message.get("text", ""))
    if is_noise(message, entry.channel) or ts == entry.thread_ts:
        return
    if is_history(ctx, ts):
        ctx.tally.history.append(f"{entry.channel}/{ts}: {text.strip()[:80]}")
        return
    if user == ctx.operator:
        if entry.channel == ctx.self_dm and is_admin_text(text):
            admin.from_slack(ctx, text, channel=entry.channel, ts=ts, thread_ts=entry.thread_ts)
            return
        if entry.role == "admin":
            ctx.tally.ignored.append(f"{entry.channel}/{ts}: not an admin command")
            return
        kind = "operator_reply"
    elif entry.channel == ctx.self_dm:
        ctx.tally.ignored.append(f"{entry.channel}/{ts}: someone else in the self-DM")
        return
    else:
        kind = "ticket_reply"
        if is_admin_text(text):
            event(
                log, "admin_text_ignored", logging.WARNING, channel=entry.channel, ts=ts, user=user
            )
    if entry.case_id:
        # #34 item 4: an unreadable case file raises StateError here, in intake, where the
        # message is kept and retried — not in a detached followup that dies unheard.
        with contextlib.suppress(InputError):  # no such case: the followup says so itself
            registry.load_case(entry.case_id)
    ctx.start(
        "followup",
        case_id=entry.case_id,
        case_dir=entry.case_dir,
        trigger=Trigger(kind=kind, ts=ts, user=user),
        channel=entry.channel,
        thread_ts=entry.thread_ts,
    )


def _permalink(ctx: Intake, channel: str, ts: str) -> str:
    """A link for the operator; without one the case still opens (the ts identifies it)."""
    try:
        return ctx.call(lambda: ctx.slack.permalink(channel, ts))
    except BudgetExhausted:
        raise
    except ServiceError as exc:
        event(
            log, "permalink_unavailable", logging.WARNING, channel=channel, ts=ts, error=exc.line()
        )
        return f"{channel}/{ts}"


def is_history(ctx: Intake, ts: str) -> bool:
    """Older than this HARNESS_HOME's install: what the operator said before this machine was
    listening is history, not intent (a fresh home must not re-run the last hour)."""
    try:
        return bool(ctx.history_before) and float(ts) < ctx.history_before
    except ValueError:
        return False


def _title(text: str, limit: int = 80) -> str:
    first = " ".join((text or "").split())
    return first if len(first) <= limit else first[: limit - 1] + "…"

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

from harness_cli.dispatch.payload import Trigger
from harness_cli.errors import InputError
from harness_cli.intake import admin, flood
from harness_cli.intake.admin_parser import is_admin_text
from harness_cli.intake.context import Intake
from harness_cli.intake.tickets import open_ticket
from harness_cli.logs import event
from harness_cli.outbox.outbound import is_own_post
from harness_cli.services.slack import Message
from harness_cli.state.models import ThreadEntry
from harness_cli.workspace import registry

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


def is_history(ctx: Intake, ts: str) -> bool:
    """Older than this HARNESS_HOME's install: what the operator said before this machine was
    listening is history, not intent (a fresh home must not re-run the last hour)."""
    try:
        return bool(ctx.history_before) and float(ts) < ctx.history_before
    except ValueError:
        return False

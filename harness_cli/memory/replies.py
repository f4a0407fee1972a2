"""The replies a followup turn answers: read from the Slack thread, past the case's watermark,
minus noise; and the one decision made without the model — an approval.

Who counts: in the case thread (the operator's self-DM) only the operator, and never an
``admin:`` line (intake runs those itself); in a ticket thread, anyone but bots and the harness.
Only the operator, in the case thread, can approve: "go" typed by a customer in a support
channel is conversation, not consent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness_cli.approval import is_approval_text
from harness_cli.bounds import bound
from harness_cli.intake.admin_parser import is_admin_text
from harness_cli.logs import event
from harness_cli.outbox.outbound import is_own_post
from harness_cli.services.slack import Message, Slack

log = logging.getLogger("harness.memory")

_NOISE_SUBTYPES = frozenset(
    {"bot_message", "channel_join", "channel_leave", "message_changed", "message_deleted"}
)


@dataclass(frozen=True)
class Reply:
    ts: str
    user: str
    text: str
    where: str
    """``case thread`` (the operator's self-DM) or ``ticket thread`` (a support channel)."""


@dataclass(frozen=True)
class Thread:
    channel: str
    thread_ts: str
    in_self_dm: bool

    @property
    def key(self) -> str:
        return f"{self.channel}/{self.thread_ts}"


def counts(message: Message, thread: Thread, operator: str) -> bool:
    """Whether a message of the thread is conversation the followup answers."""
    ts, user = str(message.get("ts", "")), str(message.get("user", ""))
    if not ts or ts == thread.thread_ts:
        return False
    if (
        message.get("bot_id")
        or message.get("subtype") in _NOISE_SUBTYPES
        or is_own_post(message, thread.channel)
    ):
        return False
    if thread.in_self_dm:
        return user == operator and not is_admin_text(str(message.get("text", "")))
    return True


def new_replies(
    slack: Slack,
    thread: Thread,
    operator: str,
    *,
    after: str | None,
    limit: int | None = None,
) -> list[Reply]:
    """Replies newer than ``after`` (the watermark), oldest first; each cut to ``limit``
    characters (``inputs.reply_chars``) with a note, the whole text staying in Slack."""
    floor = float(after) if after else 0.0
    where = "case thread" if thread.in_self_dm else "ticket thread"
    found = []
    for m in slack.replies(thread.channel, thread.thread_ts):
        if not counts(m, thread, operator) or float(m["ts"]) <= floor:
            continue
        text = str(m.get("text", ""))
        if limit is not None:
            place = f"the Slack message {thread.channel}/{m['ts']}"
            text = bound(text, limit, what="this reply", where=place)
        found.append(Reply(str(m["ts"]), str(m.get("user", "")), text, where))
    return found


def read_until_visible(
    read: Callable[[], list[Reply]],
    wanted_ts: str | None,
    *,
    attempts: int,
    wait_seconds: float,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Reply]:
    """Read again while the reply that woke us is not visible yet (Slack's read-after-write
    lag); give up after ``attempts`` and answer what is there."""
    found = read()
    for _ in range(attempts - 1):
        if not wanted_ts or any(r.ts == wanted_ts for r in found):
            return found
        event(log, "followup_reply_not_visible_yet", logging.WARNING, ts=wanted_ts)
        sleep(wait_seconds)
        found = read()
    return found


def is_approval(reply: Reply, operator: str) -> bool:
    """The operator's approval in the case thread. (``admin: task <case>`` in the thread is the
    admin command itself: intake carries it out through the same ``admin.execute`` and never
    dispatches it here.)"""
    if reply.where != "case thread" or reply.user != operator:
        return False
    return is_approval_text(reply.text)

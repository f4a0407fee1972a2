"""The one door out. Every Slack write — post, update, reaction — passes ``Outbound``, which
checks the destination against ``outbound_allowlist`` (default: the operator's self-DM only).

From the reference ("Two more layers of safety"): a misconfigured token could write to team
channels and nobody could have told the agent's posts from a human's. "The agent speaks outward
only through the operator's mailbox."
"""

from __future__ import annotations

import logging

from harness_cli.config import Thresholds
from harness_cli.errors import PolicyRefused
from harness_cli.logs import event
from harness_cli.redaction import redact
from harness_cli.services.slack import Message, Slack
from harness_cli.state import dedup

log = logging.getLogger("harness.outbound")

SIGNATURE = "\u2063"
"""An invisible separator ending every harness post. The harness posts as the operator (into
the operator's own self-DM), so ``user`` cannot tell its posts from the operator's; this mark
can, and so can the dedup entry each post leaves behind."""


def is_own_post(message: Message) -> bool:
    return str(message.get("text", "")).endswith(SIGNATURE)


class Outbound:
    def __init__(
        self, slack: Slack, allowlist: list[str], thresholds: Thresholds | None = None
    ) -> None:
        self.slack = slack
        self.allowlist = frozenset(allowlist)
        self.thresholds = thresholds or Thresholds()

    def check(self, channel: str, action: str) -> None:
        """Refuse (and log) any write to a channel outside the allowlist; nothing is sent."""
        if channel not in self.allowlist:
            event(log, "outbound_refused", logging.ERROR, channel=channel, action=action)
            raise PolicyRefused(
                f"refused to {action} in {channel}: not in outbound_allowlist",
                hint="the harness speaks only through the operator's self-DM; the operator "
                "forwards what should go elsewhere",
            )

    def post(self, channel: str, text: str, *, thread_ts: str | None = None) -> str:
        self.check(channel, "post")
        ts = self.slack.post(channel, redact(text) + SIGNATURE, thread_ts=thread_ts)
        # Our own post must never come back as input (poll-slack and listen both read the DM).
        dedup.claim(
            [dedup.message_key(channel, ts)],
            ttl_hours=self.thresholds.dedup_ttl_hours,
            max_entries=self.thresholds.dedup_max_entries,
        )
        return ts

    def update(self, channel: str, ts: str, text: str) -> None:
        self.check(channel, "update a message")
        self.slack.update(channel, ts, redact(text) + SIGNATURE)

    def react(self, channel: str, ts: str, name: str) -> None:
        self.check(channel, "react")
        self.slack.react(channel, ts, name)

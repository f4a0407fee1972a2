"""The one door out. Every Slack write — post, update, reaction — passes ``Outbound``, which
checks the destination against ``outbound_allowlist`` (default: the operator's self-DM only),
masks secrets (the one redaction point) and defuses mentions, and marks the post as the
harness's own the Slack-native way.

From the reference ("Two more layers of safety"): a misconfigured token could write to team
channels and nobody could have told the agent's posts from a human's. "The agent speaks outward
only through the operator's mailbox."
"""

from __future__ import annotations

import logging
import re
from typing import Any

from harness_cli import paths
from harness_cli.config import Thresholds
from harness_cli.errors import PolicyRefused
from harness_cli.logs import event
from harness_cli.outbox.thresholds import ObligationThresholds
from harness_cli.redaction import redact
from harness_cli.services.slack import Message, Slack
from harness_cli.state import dedup, files

log = logging.getLogger("harness.outbound")

OWN_EVENT_TYPE = "harness_post"
"""The Slack message-metadata ``event_type`` every harness post carries. The harness posts as
the operator (into the operator's own self-DM), so ``user`` cannot tell its posts from the
operator's; Slack's message metadata can — it is set only through the API, and read back with
``include_all_metadata`` — and so can the ts each post records (``OWN_KEY``). Never a character
in the text: a customer's ticket or the operator's ``admin:`` line could end with it too."""
OWN_KEY = "own:"
"""Prefix of the dedup entries recording the ts of each harness post."""

_MENTION = re.compile(
    r"<(?P<kind>[!@])(?P<target>(?:subteam\^)?[A-Za-z0-9_.\-]+)(?:\|(?P<label>[^>]*))?>"
)
"""Slack's mention syntax: ``<!channel>``, ``<!here>``, ``<!everyone>``, ``<@U…>`` (with an
optional ``|label``) and ``<!subteam^S…>``. ``<#C…>`` channel links notify nobody and stay."""


def defuse_mentions(text: str) -> str:
    """Mentions become plain text (``@here``, ``@U0CUSTOMER``): the harness never sets
    ``link_names`` or ``parse=full``, so plain ``@…`` notifies nobody. Third-party text — a
    ticket quoted in the case thread, a model's draft quoting it — cannot ping a channel
    through the harness."""

    def plain(match: re.Match[str]) -> str:
        target = match.group("target").removeprefix("subteam^")
        return "@" + (match.group("label") or target)

    return _MENTION.sub(plain, text)


def own_metadata(kind: str = "post") -> dict[str, Any]:
    return {"event_type": OWN_EVENT_TYPE, "event_payload": {"kind": kind}}


def is_own_post(message: Message, channel: str | None = None) -> bool:
    """The harness's own post: its metadata says so, or (given the channel) its ts is one the
    harness recorded when posting."""
    metadata = message.get("metadata")
    if isinstance(metadata, dict) and metadata.get("event_type") == OWN_EVENT_TYPE:
        return True
    ts = message.get("ts")
    if not channel or not ts:
        return False
    return f"{OWN_KEY}{dedup.message_key(channel, str(ts))}" in _recorded()


_recorded_cache: tuple[float, int, frozenset[str]] | None = None


def _recorded() -> frozenset[str]:
    """The recorded own-post keys, re-read only when the dedup file changes (a followup checks
    every message of a long thread)."""
    global _recorded_cache
    path = paths.state_file("socket-dedup")
    try:
        stat = path.stat()
    except OSError:
        return frozenset()
    cached = _recorded_cache
    if cached and cached[0] == stat.st_mtime and cached[1] == stat.st_size:
        return cached[2]

    keys = frozenset(k for k in files.socket_dedup().read().done if k.startswith(OWN_KEY))
    _recorded_cache = (stat.st_mtime, stat.st_size, keys)
    return keys


def outgoing(text: str) -> str:
    """What any text becomes on its way out: secrets masked, mentions defused."""
    return defuse_mentions(redact(text))


class Outbound:
    """The one door out. Every write is also an obligation (:mod:`harness_cli.outbox`):
    recorded before it is attempted, confirmed by Slack, retried by a later run when Slack
    refused it — and never made twice, even when Slack's answer was lost."""

    def __init__(
        self,
        slack: Slack,
        allowlist: list[str],
        thresholds: Thresholds | None = None,
        limits: ObligationThresholds | None = None,
    ) -> None:
        self.slack = slack
        self.allowlist = frozenset(allowlist)
        self.thresholds = thresholds or Thresholds()
        self.limits = limits or ObligationThresholds()
        self.wait_left = self.limits.outbox_inline_wait_seconds
        """Seconds of 429 Retry-After this run may still wait out in the call itself."""

    def check(self, channel: str, action: str) -> None:
        """Refuse (and log) any write to a channel outside the allowlist; nothing is sent."""
        if channel not in self.allowlist:
            event(log, "outbound_refused", logging.ERROR, channel=channel, action=action)
            raise PolicyRefused(
                f"refused to {action} in {channel}: not in outbound_allowlist",
                hint="the harness speaks only through the operator's self-DM; the operator "
                "forwards what should go elsewhere",
            )

    def post(
        self,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        purpose: str = "post",
        owed: bool = True,
        key: str | None = None,
    ) -> str:
        """Post once. ``purpose`` names what the post is for (part of its idempotency key);
        ``owed=False`` is best effort (a status placeholder: never delivered late); ``key``
        names the event that owes it when no run scope does (an mr-monitor DM). Raises
        ``Owed`` when Slack refused it for now: it is delivered by a later run."""
        # the door delivers through it: a two-module pair
        from harness_cli.outbox import slack_door  # noqa: PLC0415

        self.check(channel, "post")
        return slack_door.post(
            self, channel, outgoing(text), thread_ts=thread_ts, purpose=purpose, owed=owed,
            key=key, metadata=own_metadata(purpose),
        )  # fmt: skip

    def mark_own(self, channel: str, ts: str) -> None:
        """Our own post must never come back as input (poll-slack and listen both read the
        DM), and stays known as ours (followup reads whole threads)."""
        key = dedup.message_key(channel, ts)
        dedup.claim(
            [key, OWN_KEY + key],
            ttl_hours=self.thresholds.dedup_ttl_hours,
            max_entries=self.thresholds.dedup_max_entries,
        )

    def update(
        self, channel: str, ts: str, text: str, *, owed: bool = False, purpose: str = "edit"
    ) -> None:
        """Edit a message. ``owed``: the edit must land (a run's closing line) — recorded and
        retried like a post; otherwise best effort (the live status in between)."""
        self.check(channel, "update a message")
        if not owed:
            self.slack.update(channel, ts, outgoing(text), metadata=own_metadata())
            return
        # the door delivers through it: a two-module pair
        from harness_cli.outbox import slack_door  # noqa: PLC0415

        slack_door.update(
            self, channel, ts, outgoing(text), purpose=purpose, metadata=own_metadata(purpose)
        )

    def react(self, channel: str, ts: str, name: str) -> None:
        # the door delivers through it: a two-module pair
        from harness_cli.outbox import slack_door  # noqa: PLC0415

        self.check(channel, "react")
        slack_door.react(self, channel, ts, name)

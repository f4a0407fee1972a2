"""One poll-slack cycle: the self-DM, every support channel, then the live case threads.

Production scars that shape it (reference, Layer 1, and issue #13):
- *Eventual consistency*: history lags 1–30 s, so a cursor that jumps to "now" on an empty poll
  skips, for good, what was still invisible. Cursors freeze on empty polls and otherwise stay
  ``read_lag_window_seconds`` behind the newest message; the shared ledger drops repeats.
- *Kills mid-cycle*: every message is recorded before it is acted on and marked done only after
  the workspace commit (:mod:`harness_cli.intake.lifecycle`); a cycle starts by finishing what a
  killed run left.
- *One broken channel*: the self-DM is polled first and always; a channel that fails is reported
  to the operator once per change and the others go on.
- *Dead-thread storms and fairness*: see :mod:`harness_cli.intake.threads`.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from harness_cli import clock
from harness_cli.errors import HarnessError, ServiceError
from harness_cli.intake import bootstrap, held, pause, threads
from harness_cli.intake.context import BudgetExhausted, Intake
from harness_cli.intake.jira_source import retry_waiting
from harness_cli.intake.lifecycle import Lifecycle
from harness_cli.logs import event
from harness_cli.services.slack import Message
from harness_cli.state import files
from harness_cli.state.models import ChannelCursor

log = logging.getLogger("harness.poll")


def poll_cycle(ctx: Intake) -> None:
    life = Lifecycle(ctx, label="poll-slack")
    ctx.lifecycle = life
    try:
        try:
            pause.tell_if_unreadable(ctx.out, ctx.self_dm)
        except ServiceError as exc:  # Slack unreachable: error.log has it; the DM waits a cycle
            ctx.tally.errors.append(f"DM about the unreadable kill switch: {exc.line()}")
        bootstrap.ensure(ctx)
        replayed = held.replay(ctx.backend)  # a timed pause that ran out
        ctx.tally.replayed += replayed
        ctx.tally.dispatched += replayed
        life.recover()
        channels = list(dict.fromkeys([ctx.self_dm, *ctx.support_channels()]))
        failures = [f for f in (poll_channel(ctx, life, c) for c in channels) if f is not None]
        if len(failures) == len(channels):
            raise failures[0]  # not one channel: Slack itself (the network, the token) fails
        threads.poll_threads(ctx)
    except BudgetExhausted as exc:
        ctx.tally.ended_early = f"rate limited past the cycle budget ({exc}); cursors kept"
        event(log, "poll_cycle_ended_early", logging.WARNING, reason=str(exc))
    finally:
        life.close()
        ctx.lifecycle = None
    try:
        ctx.tally.recovered += retry_waiting(ctx)  # cases that wait for Jira (#30)
    except HarnessError as exc:
        ctx.tally.errors.append(f"cases waiting for Jira: {exc.line()}")
    bootstrap.report(ctx)


def poll_channel(ctx: Intake, life: Lifecycle, channel: str) -> ServiceError | None:
    """Read one channel from its cursor and hand what is new to the lifecycle; a Slack error
    is returned (and reported once), never raised: the other channels go on."""
    t = ctx.cfg.harness.thresholds
    cursor = files.slack_cursors().read().channels.get(channel)
    if cursor is None:
        start = clock.now() - timedelta(minutes=t.first_poll_lookback_minutes)
        cursor = ChannelCursor(oldest=f"{start.timestamp():.6f}")
    oldest = cursor.oldest
    try:
        found = ctx.call(lambda: ctx.slack.history(channel, oldest=oldest, inclusive=True))
    except BudgetExhausted:
        raise
    except ServiceError as exc:
        _failing(ctx, channel, exc)
        return exc
    held_now = life.record(channel, found, kind="top")
    _advance(ctx, channel, cursor, found)
    life.run(held_now)
    return None


def _advance(ctx: Intake, channel: str, cursor: ChannelCursor, found: list[Message]) -> None:
    """Move the cursor (what was found is recorded in the ledger already) and note the channel
    reads fine again if it had been failing."""
    t = ctx.cfg.harness.thresholds
    healed = ""
    with files.slack_cursors().update() as state:
        current = state.channels.setdefault(channel, ChannelCursor(oldest=cursor.oldest))
        current.updated_at = clock.now()
        if current.failing:
            healed, current.failing, current.failing_since = current.failing, "", None
        if not found:
            current.empty_polls += 1  # frozen: the next poll reads the same window again
        else:
            current.empty_polls = 0
            newest = max(float(m["ts"]) for m in found)
            target = max(float(current.oldest), newest - t.read_lag_window_seconds)
            if target > float(current.oldest):
                current.oldest = f"{target:.6f}"
    if healed:
        _tell(ctx, channel, f"<#{channel}> ({channel}) reads again; its tickets flow as usual.")


def _failing(ctx: Intake, channel: str, exc: ServiceError) -> None:
    """Say it once, then stay quiet until the error changes (or heals)."""
    line = exc.line()
    ctx.tally.channel_errors.append(f"{channel}: {line}")
    state = files.slack_cursors().read().channels.get(channel)
    if state is not None and state.failing == line:
        event(log, "channel_still_failing", logging.WARNING, channel=channel, error=line)
        return
    event(log, "channel_failing", logging.ERROR, channel=channel, error=line)
    where = (
        "your self-DM (admin commands cannot reach me)"
        if channel == ctx.self_dm
        else (f"<#{channel}> ({channel})")
    )
    way_on = _way_on(channel, exc, own=channel == ctx.self_dm)
    told = _tell(
        ctx,
        channel,
        f"I cannot read {where}: {line}. Its messages wait in Slack until it reads again; "
        f"the other channels go on. {way_on} I will say it again only if the error changes.",
    )
    if told:
        with files.slack_cursors().update() as fresh:
            cursor = fresh.channels.get(channel)
            if cursor is None:
                start = clock.now() - timedelta(
                    minutes=ctx.cfg.harness.thresholds.first_poll_lookback_minutes
                )
                cursor = fresh.channels[channel] = ChannelCursor(oldest=f"{start.timestamp():.6f}")
            cursor.failing, cursor.failing_since = line, cursor.failing_since or clock.now()


_NOT_MEMBER = frozenset({"not_in_channel"})
_MISCONFIGURED = frozenset({"channel_not_found", "is_archived"})
_TOKEN = frozenset({"invalid_auth", "not_authed", "token_revoked", "token_expired",
                    "account_inactive", "missing_scope"})  # fmt: skip


def _way_on(channel: str, exc: ServiceError, *, own: bool) -> str:
    """#34 item 2: the one thing that gets the channel read again, done from Slack where it
    can be; a service error the operator cannot change is waited out by itself. (``own``:
    the self-DM itself fails, so no admin command would be read.)"""
    if exc.code in _NOT_MEMBER:
        fix = (
            f"To fix: in Slack, join <#{channel}> with the account whose token I use; the "
            "next cycle reads it by itself."
        )
    elif exc.code in _MISCONFIGURED:
        fix = (
            f"To fix: the channel id {channel} in projects.yaml names no channel I can read "
            "(deleted or archived); correct it there, `harness doctor` checks it."
        )
    elif exc.code in _TOKEN:
        fix = (
            "To fix: SLACK_USER_TOKEN in $HARNESS_HOME/env is refused; put a valid user token "
            "there (`harness doctor` checks it)."
        )
    else:
        fix = "Nothing to do: I try again every cycle by itself and say when it reads."
    return fix if own else f"{fix} `admin: oncall status` lists the channels I cannot read."


def _tell(ctx: Intake, channel: str, text: str) -> bool:
    try:
        ctx.out.post(ctx.self_dm, text)
    except HarnessError as exc:
        event(log, "channel_dm_failed", logging.ERROR, channel=channel, error=exc.line())
        return False
    return True

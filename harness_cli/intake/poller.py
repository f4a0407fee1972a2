"""One poll-slack cycle: every support channel and the self-DM, then the live case threads.

Two production scars shape it (reference, Layer 1):
- *Eventual consistency*: history lags 1–30 s, so a cursor that jumps to "now" on an empty poll
  skips, for good, what was still invisible. Cursors freeze on empty polls and otherwise stay
  ``read_lag_window_seconds`` behind the newest message; the shared dedup set drops repeats.
- *Dead-thread storms*: polling threads whose parent was deleted cost a call each per cycle and
  caused hours of 429s (12 retries a cycle). A thread answering ``thread_not_found`` is evicted
  at once; closed cases are not polled.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from harness_cli import clock
from harness_cli.errors import ServiceError
from harness_cli.intake import messages, pause
from harness_cli.intake.context import BudgetExhausted, Intake
from harness_cli.logs import event
from harness_cli.services.slack import Message, ThreadGone
from harness_cli.state import dedup, files
from harness_cli.state.models import ChannelCursor, ThreadEntry, ThreadMap

log = logging.getLogger("harness.poll")


def poll_cycle(ctx: Intake) -> None:
    channels = [*ctx.support_channels(), ctx.self_dm]
    ctx.batch_sync = True
    try:
        pause.tell_if_unreadable(ctx.out, ctx.self_dm)
    except ServiceError as exc:  # Slack unreachable: error.log has it; the DM waits a cycle
        ctx.tally.errors.append(f"DM about the unreadable kill switch: {exc.line()}")
    try:
        for channel in dict.fromkeys(channels):
            poll_channel(ctx, channel)
        for entry in live_threads():
            poll_thread(ctx, entry)
    except BudgetExhausted as exc:
        ctx.tally.ended_early = f"rate limited past the cycle budget ({exc}); cursors kept"
        event(log, "poll_cycle_ended_early", logging.WARNING, reason=str(exc))
    finally:
        ctx.flush()


def poll_channel(ctx: Intake, channel: str) -> None:
    t = ctx.cfg.harness.thresholds
    cursor = files.slack_cursors().read().channels.get(channel)
    if cursor is None:
        start = clock.now() - timedelta(minutes=t.first_poll_lookback_minutes)
        cursor = ChannelCursor(oldest=f"{start.timestamp():.6f}")
    found = ctx.call(lambda: ctx.slack.history(channel, oldest=cursor.oldest, inclusive=True))
    failed = _handle(ctx, channel, found, lambda m: messages.top_level(ctx, channel, m))
    with files.slack_cursors().update() as state:
        current = state.channels.setdefault(channel, ChannelCursor(oldest=cursor.oldest))
        current.updated_at = clock.now()
        if not found:
            current.empty_polls += 1  # frozen: the next poll reads the same window again
            return
        current.empty_polls = 0
        newest = max(float(m["ts"]) for m in found)
        target = max(float(current.oldest), newest - t.read_lag_window_seconds)
        if failed:  # never move past a message that still has to be handled
            target = min(target, min(float(ts) for ts in failed))
        if target > float(current.oldest):
            current.oldest = f"{target:.6f}"


def live_threads() -> list[ThreadEntry]:
    """Threads that can have new activity: not closed, not evicted."""
    entries: list[ThreadEntry] = []
    for handle in (files.oncall_thread_map(), files.task_thread_map()):
        entries += [t for t in handle.read().threads.values() if not t.closed and not t.evicted]
    return entries


def poll_thread(ctx: Intake, entry: ThreadEntry) -> None:
    t = ctx.cfg.harness.thresholds
    oldest = entry.thread_ts
    if entry.last_seen_ts:
        behind = float(entry.last_seen_ts) - t.read_lag_window_seconds
        oldest = f"{max(float(entry.thread_ts), behind):.6f}"
    try:
        found = ctx.call(lambda: ctx.slack.replies(entry.channel, entry.thread_ts, oldest=oldest))
    except ThreadGone:
        evict(entry)
        ctx.tally.evicted.append(f"{entry.channel}/{entry.thread_ts}")
        return
    replies = [m for m in found if m.get("ts") != entry.thread_ts]
    _handle(ctx, entry.channel, replies, lambda m: messages.reply(ctx, entry, m))
    if replies:
        newest = max(str(m["ts"]) for m in replies)
        if newest != entry.last_seen_ts:
            _update_entry(entry, last_seen_ts=newest)


def evict(entry: ThreadEntry) -> None:
    """thread_not_found: the thread drops out of every later cycle, at once."""
    _update_entry(entry, evicted=True)
    event(
        log,
        "thread_evicted",
        case_id=entry.case_id,
        channel=entry.channel,
        thread_ts=entry.thread_ts,
    )


def _update_entry(entry: ThreadEntry, **changes: object) -> None:
    key = ThreadMap.key(entry.channel, entry.thread_ts)
    for handle in (files.oncall_thread_map(), files.task_thread_map()):
        with handle.update() as tmap:
            if key in tmap.threads and tmap.threads[key].case_id == entry.case_id:
                for name, value in changes.items():
                    setattr(tmap.threads[key], name, value)


def _handle(ctx: Intake, channel: str, found: list[Message], handler: object) -> list[str]:
    """Claim each message in the shared dedup set, handle the ones we won; a failure gives the
    claim back so the next cycle retries it. Returns the ts values that failed."""
    t = ctx.cfg.harness.thresholds
    keys = {dedup.message_key(channel, str(m["ts"])): m for m in found if "ts" in m}
    won = dedup.claim(list(keys), ttl_hours=t.dedup_ttl_hours, max_entries=t.dedup_max_entries)
    failed: list[str] = []
    for key in won:
        message = keys[key]
        try:
            handler(message)  # type: ignore[operator]
        except BudgetExhausted:
            dedup.release([key, *won[won.index(key) + 1 :]])
            raise
        except Exception as exc:  # noqa: BLE001 - one bad message must not stop the cycle
            dedup.release([key])
            failed.append(str(message["ts"]))
            ctx.tally.errors.append(f"{key}: {type(exc).__name__}: {exc}")
            event(log, "message_failed", logging.ERROR, key=key, error=repr(exc))
    return failed

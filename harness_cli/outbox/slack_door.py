"""Slack writes through the outbox: recorded, attempted, confirmed — never made twice.

A post carries its obligation's digest in the Slack message ``metadata`` (``event_payload.key``,
beside the harness's own ``event_type``). When an attempt's answer was lost — a dropped socket,
a 5xx, a process killed mid-call — the next attempt first reads the channel (or the thread)
since the obligation was recorded and takes a post carrying that key as the confirmation, so a
post whose response was lost is never posted twice. A 429 or an ``ok:false`` answer means
nothing was posted: the obligation is simply tried again.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from harness_cli import clock
from harness_cli.errors import HarnessError, LockHeld, ServiceError
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.outbox import ledger, scope
from harness_cli.outbox.ledger import Obligation
from harness_cli.services.slack import RateLimited, ThreadGone

if TYPE_CHECKING:
    from harness_cli.outbox.outbound import Outbound

log = logging.getLogger("harness.outbox")


class Owed(ServiceError):
    """The write could not be made now; it is recorded and the next run makes it."""

    def __init__(self, ob: Obligation, cause: str, *, rate_limited: bool = False) -> None:
        super().__init__(
            f"{ob.describe()} not delivered yet ({cause})",
            hint="it is owed, not lost: the next poll-slack, mr-monitor or run on the case "
            "delivers it",
        )
        self.key = ob.key
        self.status = 429 if rate_limited else None


def post(
    out: Outbound,
    channel: str,
    text: str,
    *,
    thread_ts: str | None,
    purpose: str,
    owed: bool,
    key: str | None,
    metadata: dict[str, Any],
) -> str:
    """Record the post, then make it (or find that it was made). Returns its ts; raises Owed
    (owed posts) or the Slack error (best-effort ones, which are then forgotten)."""
    full, case_id = scope.key_for(purpose, f"{channel}/{thread_ts or '-'}", key)
    target = {"channel": channel, "thread_ts": thread_ts or ""}
    current = scope.current()
    ob, _ = ledger.create(
        ledger.new(
            full,
            case_id=case_id,
            retried_by=current.retried_by if current else "",
            action="post",
            purpose=purpose,
            target=target,
            text=text,
            owed=owed,
        )
    )
    if ob.state == "done":
        return ob.result
    return attempt(out, ob, inline=True, metadata=metadata)


def update(
    out: Outbound, channel: str, ts: str, text: str, *, purpose: str, metadata: dict[str, Any]
) -> None:
    """An owed edit (a run's closing status line): the newest text for that message wins; an
    edit is idempotent, so a retry needs no lookup. An edit made before with the same text is
    made again: a best-effort edit since (the next try of a case a model outage left waiting
    goes on in the same status message) may have changed what the message shows."""
    full = f"edit:{channel}/{ts}|{purpose}"
    case_id = (scope.current() or scope.Scope("")).case_id
    ob = ledger.find(full)
    fresh = ledger.new(
        full,
        case_id=case_id,
        action="update",
        purpose=purpose,
        target={"channel": channel, "ts": ts},
        text=text,
    )
    if ob is None:
        ob, _ = ledger.create(fresh)
    if ob.text != text or ob.state != "owed":
        ob.text, ob.state, ob.attempts = text, "owed", 0
        ledger.save(ob)
    attempt(out, ob, inline=True, metadata=metadata)


def react(out: Outbound, channel: str, ts: str, name: str) -> None:
    full = f"react:{channel}/{ts}/{name}"
    case_id = (scope.current() or scope.Scope("")).case_id
    ob, _ = ledger.create(
        ledger.new(
            full,
            case_id=case_id,
            action="react",
            purpose="reaction",
            target={"channel": channel, "ts": ts, "name": name},
        )
    )
    if ob.state != "done":
        attempt(out, ob, inline=True, metadata={})


def attempt(
    out: Outbound, ob: Obligation, *, inline: bool, metadata: dict[str, Any] | None = None
) -> str:
    """One attempt (waiting out short 429s when ``inline``); returns the result or raises Owed.
    LockHeld: another run is attempting it right now."""
    with ledger.attempt_lock(ob, timeout=5.0 if inline else 0):
        fresh = ledger.find(ob.key) or ob
        if fresh.state == "done":
            return fresh.result
        return _attempt_locked(out, fresh, inline, metadata)


def _attempt_locked(
    out: Outbound, ob: Obligation, inline: bool, metadata: dict[str, Any] | None
) -> str:
    # the door's own-post mark: a two-module pair
    from harness_cli.outbox.outbound import own_metadata  # noqa: PLC0415

    meta = metadata or own_metadata(ob.purpose)
    key = ob.digest
    if ob.action == "update":  # an edit keeps the post's key: a resumed run still finds it
        key = _POSTED.get(f"{ob.target['channel']}/{ob.target['ts']}", key)
    meta = {**meta, "event_payload": {**meta.get("event_payload", {}), "key": key}}
    if ob.action == "post" and ob.inflight:
        try:
            found = _look_up(out, ob)
        except ThreadGone:
            found = ""  # no thread to find it in: it was not posted there
        except ServiceError as exc:  # cannot tell whether it landed: do not post blind
            ob.attempts += 1  # a lookup that keeps failing counts against the bound too
            raise _failed(out, ob, exc, uncertain=True) from None
        if found:
            event(log, "owed_post_found", key=ob.key, ts=found)
            return _done(out, ob, found)
    ob.inflight, ob.attempts, ob.last_attempt_at = True, ob.attempts + 1, clock.now()
    ledger.save(ob)  # from here the write may land whatever happens to this process
    crash_point("outbox.attempting")
    while True:
        try:
            result = _call(out, ob, meta)
        except RateLimited as exc:
            if inline and exc.retry_after <= out.wait_left:
                out.wait_left -= exc.retry_after
                event(log, "owed_write_waits", logging.WARNING, key=ob.key, wait=exc.retry_after)
                time.sleep(exc.retry_after)
                continue
            raise _failed(out, ob, exc, uncertain=False, rate_limited=True) from None
        except ServiceError as exc:
            uncertain = exc.status is None or exc.status >= 500
            raise _failed(out, ob, exc, uncertain=uncertain) from None
        crash_point("outbox.landed")
        return _done(out, ob, result)


def settle(out: Outbound, ob: Obligation) -> bool:
    """Whether the post of ``ob`` landed (then it is recorded done); never posts."""
    found = _look_up(out, ob) if ob.action == "post" else ""
    if found:
        _done(out, ob, found)
    return bool(found)


def _call(out: Outbound, ob: Obligation, meta: dict[str, Any]) -> str:
    t = ob.target
    if ob.action == "post":
        return out.slack.post(
            t["channel"], ob.text, thread_ts=t.get("thread_ts") or None, metadata=meta
        )
    if ob.action == "update":
        out.slack.update(t["channel"], t["ts"], ob.text, metadata=meta)
        return t["ts"]
    if ob.action == "react":
        out.slack.react(t["channel"], t["ts"], t["name"])
        return t["ts"]
    raise ServiceError(f"not a Slack write: {ob.action}")


def _look_up(out: Outbound, ob: Obligation) -> str:
    """The ts of a post carrying this obligation's key, made since it was recorded; ""."""
    channel, thread = ob.target["channel"], ob.target.get("thread_ts", "")
    oldest = f"{max(ob.created_epoch - 60, 0):.6f}"
    if thread:
        found = out.slack.replies(channel, thread, oldest=oldest)
    else:
        found = out.slack.history(channel, oldest=oldest, inclusive=True)
    for message in found:
        meta = message.get("metadata")
        payload = meta.get("event_payload") if isinstance(meta, dict) else None
        if isinstance(payload, dict) and payload.get("key") == ob.digest:
            return str(message.get("ts", ""))
    return ""


def _done(out: Outbound, ob: Obligation, result: str) -> str:
    ob.state, ob.result, ob.inflight, ob.done_at = "done", result, False, clock.now()
    ob.last_error = ""
    ledger.save(ob)
    if ob.action == "post":
        out.mark_own(ob.target["channel"], result)
        _POSTED[f"{ob.target['channel']}/{result}"] = ob.digest
    return result


_POSTED: dict[str, str] = {}
"""``channel/ts`` → the key of the post that made it (posted or found by this process): the
key its edits carry in their metadata, since an edit replaces the message's metadata."""


def _failed(
    out: Outbound, ob: Obligation, exc: ServiceError, *, uncertain: bool, rate_limited: bool = False
) -> HarnessError:
    """Record the failure; return what to raise (Owed, or the error for a best-effort write)."""
    cause = exc.message
    if not ob.owed:
        ledger.drop(ob)  # a placeholder is worth nothing later
        return exc
    ledger.failed(ob, cause, inflight=uncertain, limit=out.limits.outbox_max_attempts)
    event(
        log,
        "owed_write_failed",
        logging.WARNING,
        key=ob.key,
        case_id=ob.case_id,
        attempts=ob.attempts,
        error=cause,
    )
    return Owed(ob, cause, rate_limited=rate_limited)


__all__ = ["LockHeld", "Owed", "attempt", "post", "react", "update"]

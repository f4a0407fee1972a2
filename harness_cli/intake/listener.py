"""``harness listen``: Socket Mode through slack_sdk's own client — the optional fast path.

"Socket Mode delivers thread replies with sub-second latency, but WebSocket connections drop.
The poller acts as the safety net [...] and both share a socket-dedup file so no message is
dispatched twice." So: ack every envelope at once (Slack wants it within 3 s), then run the
message through the same lifecycle as the poller (:mod:`harness_cli.intake.lifecycle`): recorded
as seen before anything else, done after its commit. Reconnection after a drop is slack_sdk's
(``auto_reconnect_enabled``); losing this process — even mid-message — loses nothing: the next
poll-slack cycle takes over what it left in flight.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Literal

from harness_cli.errors import ConfigError
from harness_cli.intake import bootstrap
from harness_cli.intake.context import Intake
from harness_cli.intake.lifecycle import Lifecycle, find_thread
from harness_cli.logs import event
from harness_cli.outbox.outbound import is_own_post
from harness_cli.state.models import ThreadMap

log = logging.getLogger("harness.listen")


OWN_POST_GRACE_SECONDS = 1.0
"""How long an event posted as the operator waits for the harness's record of its own posts.
The harness posts as the operator, a message event need not carry the post's metadata, and
the event can arrive before the posting process has recorded the ts it got back."""


def handle_event(ctx: Intake, payload: dict[str, Any]) -> str:
    """One events_api payload → what happened (for logs and tests)."""
    ev = payload.get("event") or {}
    if ev.get("type") != "message" or "ts" not in ev or "channel" not in ev:
        return "ignored: not a message"
    channel, ts = str(ev["channel"]), str(ev["ts"])
    if ev.get("user") == ctx.operator and _own_post(ev, channel):
        return "ignored: the harness's own post"
    thread_ts = str(ev.get("thread_ts") or "")
    if thread_ts and thread_ts != ts:
        key = ThreadMap.key(channel, thread_ts)
        entry = find_thread(key)
        if entry is None or entry.closed or entry.evicted:
            return "ignored: reply in an untracked thread"
        return _through_lifecycle(ctx, channel, ev, kind="reply", thread=key) or "reply"
    if channel not in ctx.support_channels() and channel != ctx.self_dm:
        return "ignored: not a polled channel"
    return _through_lifecycle(ctx, channel, ev, kind="top") or "top-level"


def _own_post(ev: dict[str, Any], channel: str) -> bool:
    deadline = time.monotonic() + OWN_POST_GRACE_SECONDS
    while True:
        if is_own_post(ev, channel):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def _through_lifecycle(
    ctx: Intake,
    channel: str,
    ev: dict[str, Any],
    *,
    kind: Literal["top", "reply"],
    thread: str = "",
) -> str:
    """Seen → handled → done, as in a poll cycle; "" when it went through."""
    ctx.started = time.monotonic()  # each event gets the whole rate-limit budget
    life = Lifecycle(ctx, label="listen")
    ctx.lifecycle = life
    try:
        bootstrap.ensure(ctx)
        held = life.record(channel, [ev], kind=kind, thread=thread)
        if not held:
            return "duplicate"
        life.run(held)
    except Exception as exc:  # noqa: BLE001 - the poller takes over; keep listening
        event(log, "listen_event_failed", logging.ERROR, channel=channel, ts=ev.get("ts"),
              error=repr(exc))  # fmt: skip
    finally:
        life.close()
        ctx.lifecycle = None
    return ""


def listen(ctx: Intake, *, stop: threading.Event, ping_interval: float = 5.0) -> None:
    """Connect and serve until ``stop`` is set; then return within seconds: a message in hand
    stops at its next Slack call (``Intake.stop``) and is left in flight for the poller."""
    ctx.stop = stop
    from slack_sdk import WebClient
    from slack_sdk.socket_mode import SocketModeClient
    from slack_sdk.socket_mode.client import BaseSocketModeClient
    from slack_sdk.socket_mode.request import SocketModeRequest
    from slack_sdk.socket_mode.response import SocketModeResponse

    app_token = os.environ.get("SLACK_APP_TOKEN")
    if not app_token:
        raise ConfigError(
            "SLACK_APP_TOKEN is not set",
            hint="listen needs the app-level token (xapp-…) for Socket Mode",
        )
    web = WebClient(base_url=os.environ.get("SLACK_API_URL", "https://slack.com/api/"))
    client = SocketModeClient(
        app_token=app_token,
        web_client=web,
        auto_reconnect_enabled=True,
        ping_interval=ping_interval,
    )

    def on_request(sm: BaseSocketModeClient, req: SocketModeRequest) -> None:
        sm.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
        if req.type != "events_api" or stop.is_set():
            return  # stopping: poll-slack reads it from history (nothing was recorded yet)
        outcome = handle_event(ctx, req.payload)
        event(log, "socket_event", outcome=outcome, retry_attempt=req.retry_attempt)

    client.socket_mode_request_listeners.append(on_request)
    client.connect()
    event(log, "listening")
    try:
        while not stop.wait(0.2):
            pass
    finally:
        client.auto_reconnect_enabled = False
        client.close()

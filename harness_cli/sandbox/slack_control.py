"""The test-facing half of the Slack emulator: seeding, injecting messages as other users,
faults (lag, deletions, dropped sockets, per-method rate limits, Slack-shaped errors per
channel or thread), call counts and the state snapshot.

Every action exists as a Python method and as ``POST /_control/<action>`` with a JSON body
of the same keyword arguments (see :meth:`SlackControl.control`).
"""

from __future__ import annotations

import contextlib
import math
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from harness_cli.sandbox.httpbase import Emulator, Fault, Request
from harness_cli.sandbox.slack_socket import SocketModeHub
from harness_cli.sandbox.slack_state import TEAM_ID, Channel, Message, SlackError, User, Workspace

__all__ = ["APP_ID", "OPERATOR", "SlackControl", "Token"]

OPERATOR = "U0OPERATOR"
APP_ID = "A0HARNESS"


@dataclass
class Token:
    token: str
    user_id: str | None
    revoked: bool = False

    @property
    def kind(self) -> str:
        """``bot`` (xoxb-), ``app`` (xapp-) or ``user`` (xoxp- and anything else)."""
        if self.token.startswith("xoxb-"):
            return "bot"
        return "app" if self.token.startswith("xapp-") else "user"


class SlackControl(Emulator):
    """Workspace, tokens and Socket Mode hub, plus the control actions over them."""

    name = "slack"

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        ack_timeout: float = 3.0,
        max_retries: int = 3,
        disconnect_grace: float = 2.0,
        push_bot_messages: bool = False,
        seed: bool = True,
    ) -> None:
        super().__init__()
        self.workspace = Workspace(clock)
        self.tokens: dict[str, Token] = {}
        self.push_bot_messages = push_bot_messages
        self.socket_mode = SocketModeHub(
            app_id=APP_ID,
            ack_timeout=ack_timeout,
            max_retries=max_retries,
            disconnect_grace=disconnect_grace,
        )
        # Messages to push over Socket Mode once the state lock is released.
        self._outbox: list[Message] = []
        # method → (calls allowed per window, window seconds, window start, calls in it)
        self._rate_limits: dict[str, list[float]] = {}
        if seed:
            self.add_user(OPERATOR, "operator", real_name="Operator")
            self.add_user("U0CUSTOMER", "customer", real_name="Customer")
            self.add_user("U0REVIEWER", "reviewer", real_name="Reviewer")
            self.add_channel("C0SUPPORT", "support")
            self.add_channel("D0SELF", "D0SELF", is_im=True, members=[OPERATOR], user=OPERATOR)

    def stop(self) -> None:
        self.socket_mode.shutdown()
        if self._server is not None:
            # serve_forever() notices shutdown() only at its next 0.5 s poll; a throwaway
            # connection wakes it at once, which keeps a test's teardown from idling.
            poke = threading.Timer(0.01, _poke, (self.port,))
            poke.daemon = True
            poke.start()
        super().stop()

    # -- seeding ----------------------------------------------------------------------------
    def add_user(
        self, id: str, name: str, is_bot: bool = False, real_name: str = ""
    ) -> dict[str, Any]:
        with self.lock:
            user = User(id=id, name=name, real_name=real_name, is_bot=is_bot)
            self.workspace.users[id] = user
            return user.to_api()

    def add_channel(
        self,
        id: str,
        name: str,
        is_im: bool = False,
        members: list[str] | None = None,
        user: str | None = None,
    ) -> dict[str, Any]:
        """Add (or replace) a channel, or with ``is_im`` a DM whose other party is ``user``
        (default: the last member). Empty ``members`` means anyone may read and post."""
        with self.lock:
            people = list(members or [])
            other = user or (people[-1] if is_im and people else None)
            ch = Channel(id=id, name=name, is_im=is_im, user=other, members=people)
            self.workspace.channels[id] = ch
            return ch.to_api()

    def add_token(self, token: str, user_id: str | None, revoked: bool = False) -> None:
        with self.lock:
            self.tokens[token] = Token(token, user_id, revoked)

    def revoke_token(self, token: str) -> None:
        """Later calls with ``token`` answer ``invalid_auth``."""
        with self.lock:
            known = self.tokens.get(token)
            user_id = known.user_id if known else OPERATOR
            self.tokens[token] = Token(token, user_id, revoked=True)

    # -- injecting --------------------------------------------------------------------------
    def post_as(
        self,
        channel: str,
        user: str,
        text: str,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Post as another (human) user, as if from the Slack client — or, with ``metadata``,
        as an app posting with that user's token; also pushes the Socket Mode event. Honours
        the channel's lag like any other post."""
        with self.lock:
            ch = self.workspace.channel(channel)
            msg = self.workspace.post(ch, text, user=user, thread_ts=thread_ts, metadata=metadata)
            out = msg.to_api(include_metadata=True)
        self.publish_event(msg)
        return out

    def delete_message(self, channel: str, ts: str) -> None:
        """Remove a message; replies to a deleted parent then answer thread_not_found."""
        with self.lock:
            self.workspace.delete(self.workspace.channel(channel), ts)

    def set_lag(self, channel: str, polls: int = 0, seconds: float = 0.0) -> None:
        """Read-after-write lag: messages posted from now on into ``channel`` stay invisible to
        history and replies for the next ``polls`` reads of that channel and for ``seconds``
        (both when both are set), while keeping their true ts. ``0, 0`` turns it off."""
        with self.lock:
            ch = self.workspace.channel(channel)
            ch.lag_polls, ch.lag_seconds = int(polls), float(seconds)

    def set_rate_limit(self, method: str, calls: int = 0, seconds: float = 60.0) -> None:
        """Slack's per-method tiers: more than ``calls`` requests to ``method`` within a window
        of ``seconds`` (by the emulator's clock) answer HTTP 429 ``ratelimited`` with an integer
        ``Retry-After`` until the window ends. ``calls=0`` removes the limit."""
        with self.lock:
            if calls <= 0:
                self._rate_limits.pop(method, None)
            else:
                self._rate_limits[method] = [float(calls), float(seconds), -math.inf, 0.0]

    def rate_limited(self, method: str) -> int | None:
        """Count one request to ``method``: None when it may pass, else the Retry-After."""
        with self.lock:
            limit = self._rate_limits.get(method)
            if limit is None:
                return None
            calls, seconds, start, used = limit
            now = self.workspace.clock()
            if now >= start + seconds:
                limit[2], limit[3] = now, 0.0
                start, used = now, 0.0
            if used < calls:
                limit[3] = used + 1
                return None
            return max(1, math.ceil(start + seconds - now))

    def fail(
        self,
        method: str,
        error: str,
        channel: str | None = None,
        ts: str | None = None,
        times: int = 1,
        status: int = 200,
    ) -> None:
        """Answer ``method`` (for ``channel``/``ts`` if given) with Slack's error shape ``times``
        times (-1: until cleared): ``channel_not_found``, ``not_in_channel``, a transient
        ``thread_not_found``, or with ``status`` 5xx a server error."""
        where = {k: v for k, v in (("channel", channel), ("ts", ts)) if v}
        body = {"ok": False, "error": error}
        self.add_fault(
            Fault(kind="status", match=method, status=status, body=body, times=times, where=where)
        )

    def drop_sockets(self, with_disconnect: bool = False, reason: str = "refresh_requested") -> int:
        """Drop every Socket Mode connection (see :meth:`SocketModeHub.drop`); returns how many."""
        return self.socket_mode.drop(with_disconnect=with_disconnect, reason=reason)

    def publish_event(self, msg: Message) -> bool:
        """Push ``msg`` to a Socket Mode client; False when none is connected (dropped)."""
        with self.lock:
            ch = self.workspace.channels.get(msg.channel)
            if ch is None:
                return False
            payload = event_payload(
                msg, ch, app_id=APP_ID, authed_user=OPERATOR, now=self.workspace.clock()
            )
        return self.socket_mode.publish(payload)

    # -- observing --------------------------------------------------------------------------
    def messages(self, channel: str, metadata: bool = False) -> list[dict[str, Any]]:
        """Every message of ``channel`` in ts order, replies included, lag ignored (with their
        metadata when ``metadata``)."""
        with self.lock:
            return [
                m.to_api(include_metadata=metadata)
                for m in self.workspace.channel(channel).messages
            ]

    def calls(self, method: str | None = None, channel: str | None = None) -> int:
        """Web API requests that reached ``method`` (any if None), optionally only those
        naming ``channel``. Faulted ones count too: they reached the server."""
        count = 0
        for rec in self.recorded("/api/"):
            if method is not None and rec.path != "/api/" + method:
                continue
            if channel is not None:
                req = Request(rec.method, rec.path, rec.query, rec.headers, rec.body)
                if req.arg("channel") != channel:
                    continue
            count += 1
        return count

    def calls_by_method(self) -> dict[str, int]:
        return dict(Counter(r.path[len("/api/") :] for r in self.recorded("/api/")))

    def acks(self) -> list[dict[str, Any]]:
        with self.socket_mode.lock:
            return [asdict(a) for a in self.socket_mode.acks]

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            channels = [
                {
                    "id": ch.id,
                    "name": ch.name,
                    "is_im": ch.is_im,
                    "messages": [_snapshot_message(m) for m in ch.messages],
                }
                for ch in self.workspace.channels.values()
            ]
            users = [u.to_api() for u in self.workspace.users.values()]
        return {
            "channels": channels,
            "users": users,
            "requests": len(self.recorded("/api/")),
            "requests_by_method": self.calls_by_method(),
            "socket_mode": self.socket_mode.stats(),
        }

    # -- the HTTP control API ---------------------------------------------------------------
    def control(self, action: str, body: dict[str, Any]) -> Any:
        actions: dict[str, Callable[..., Any]] = {
            "add_user": self.add_user,
            "add_channel": self.add_channel,
            "add_token": self.add_token,
            "revoke_token": self.revoke_token,
            "post_as": self.post_as,
            "delete_message": self.delete_message,
            "set_lag": self.set_lag,
            "set_rate_limit": self.set_rate_limit,
            "fail": self.fail,
            "drop_sockets": self.drop_sockets,
            "messages": self.messages,
            "calls": self.calls,
            "acks": self.acks,
        }
        if action not in actions:
            return super().control(action, body)
        try:
            result = actions[action](**body)
        except SlackError as exc:
            return {"ok": False, "error": exc.error}
        except TypeError as exc:  # wrong JSON keys: say which, do not crash the handler
            return {"ok": False, "error": f"bad arguments: {exc}"}
        return {"ok": True, "result": result}


def event_payload(
    msg: Message, ch: Channel, *, app_id: str, authed_user: str, now: float
) -> dict[str, Any]:
    """The ``event_callback`` for a message posted in ``ch`` (``message`` event shape)."""
    event: dict[str, Any] = {
        "type": "message",
        "user": msg.user,
        "text": msg.text,
        "ts": msg.ts,
        "channel": ch.id,
        "channel_type": ch.channel_type,
        "event_ts": msg.ts,
        "team": TEAM_ID,
    }
    if msg.bot_id is not None:
        event.update(bot_id=msg.bot_id, subtype="bot_message")
    else:
        event["client_msg_id"] = str(uuid.uuid4())
    if msg.thread_ts is not None:
        event["thread_ts"] = msg.thread_ts
        parent = ch.find(msg.thread_ts)
        if msg.is_reply and parent is not None and parent.user is not None:
            event["parent_user_id"] = parent.user
    return {
        "type": "event_callback",
        "team_id": TEAM_ID,
        "api_app_id": app_id,
        "event_id": "Ev" + uuid.uuid4().hex[:10].upper(),
        "event_time": int(now),
        "authorizations": [
            {
                "team_id": TEAM_ID,
                "user_id": authed_user,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "event": event,
    }


def _poke(port: int) -> None:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
        pass


def _snapshot_message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ts": m.ts,
        "thread_ts": m.thread_ts,
        "user": m.user,
        "bot_id": m.bot_id,
        "text": m.text,
    }
    if m.reactions:
        out["reactions"] = {k: list(v) for k, v in m.reactions.items()}
    if m.metadata is not None:
        out["metadata"] = dict(m.metadata)
    return out

"""The Slack emulator: Web API methods under ``/api/<method>`` and Socket Mode under
``/link/``, on one local HTTP server that the real ``slack_sdk`` talks to unchanged::

    emu = SlackEmulator(); emu.start()
    web = WebClient(token="xoxb-any", base_url=emu.url + "/api/")

Platform errors are HTTP 200 ``{"ok": false, "error": …}`` (the SDK raises on them);
injected 429s look like Slack's (``Retry-After`` seconds, ``error: ratelimited``).
Workspace state lives in :mod:`slack_state`, Socket Mode in :mod:`slack_socket`, and the
test-facing control actions in :mod:`slack_control`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from harness_cli.sandbox.httpbase import Fault, Request, Response
from harness_cli.sandbox.slack_control import OPERATOR, SlackControl, Token
from harness_cli.sandbox.slack_state import (
    TEAM_ID,
    Channel,
    Message,
    SlackError,
    Window,
    decode_cursor,
    ts_micros,
)

__all__ = ["BOT_ID", "OPERATOR", "SlackEmulator", "Token"]

BOT_ID = "B0HARNESS"
PERMALINK_HOST = "https://sandbox.slack.local"
_REACTION = re.compile(r"^[a-z0-9_+'\-]+$")
_FAULT_ERRORS = {500: "internal_error", 503: "service_unavailable", 504: "request_timeout"}


Handler = Callable[[Request, Token], dict[str, Any]]


class SlackEmulator(SlackControl):
    """A one-team Slack: seeded with users U0OPERATOR/U0CUSTOMER/U0REVIEWER, channel
    C0SUPPORT and the operator's self-DM D0SELF.

    ``clock`` supplies epoch seconds for ``ts`` values and lag deadlines (tests pass a fake
    one); ``accept_any_token`` maps any unregistered ``xoxp-``/``xoxb-`` token to the
    operator; ``push_bot_messages`` also sends bot posts over Socket Mode;
    ``ack_timeout``/``max_retries`` govern Socket Mode redelivery.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        ack_timeout: float = 3.0,
        max_retries: int = 3,
        disconnect_grace: float = 2.0,
        accept_any_token: bool = True,
        push_bot_messages: bool = False,
        seed: bool = True,
    ) -> None:
        super().__init__(
            clock=clock,
            ack_timeout=ack_timeout,
            max_retries=max_retries,
            disconnect_grace=disconnect_grace,
            push_bot_messages=push_bot_messages,
            seed=seed,
        )
        self.accept_any_token = accept_any_token
        self._methods: dict[str, Handler] = {
            "auth.test": self._auth_test,
            "conversations.history": self._history,
            "conversations.replies": self._replies,
            "conversations.open": self._open,
            "conversations.info": self._info,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.getPermalink": self._permalink,
            "reactions.add": self._reactions_add,
            "users.info": self._users_info,
            "apps.connections.open": self._connections_open,
        }

    # -- HTTP -------------------------------------------------------------------------------
    def route(self, req: Request) -> Response:
        if req.path.startswith("/link"):
            return self.socket_mode.upgrade(req)
        if not req.path.startswith("/api/"):
            return Response.text("not found", status=404)
        method = req.path[len("/api/") :]
        handler = self._methods.get(method)
        events: list[Message] = []
        retry_after = self.rate_limited(method)
        if retry_after is not None:
            return Response.json(
                {"ok": False, "error": "ratelimited"}, 429, {"Retry-After": str(retry_after)}
            )
        try:
            if handler is None:
                raise SlackError("unknown_method")
            with self.lock:
                token = self._authenticate(req, method)
                self._outbox = []
                body = handler(req, token)
                events = self._outbox
        except SlackError as exc:
            return Response.json({"ok": False, "error": exc.error})
        for msg in events:  # outside the lock: a slow socket must not stall the Web API
            self.publish_event(msg)
        return Response.json({"ok": True, **body})

    def fault_response(self, fault: Fault, req: Request) -> Response:
        """Injected statuses in Slack's shape: 429 with an integer ``Retry-After`` and
        ``ratelimited``; 5xx with Slack's ``internal_error``-style codes."""
        if fault.status == 429:
            body = fault.body or {"ok": False, "error": "ratelimited"}
            return Response.json(body, 429, {"Retry-After": "1", **fault.headers})
        error = _FAULT_ERRORS.get(fault.status, "fatal_error")
        body = fault.body or {"ok": False, "error": error}
        return Response.json(body, fault.status, dict(fault.headers))

    def _authenticate(self, req: Request, method: str) -> Token:
        auth = req.headers.get("authorization", "")
        raw = auth[len("Bearer ") :].strip() if auth.startswith("Bearer ") else req.arg("token")
        if not raw:
            raise SlackError("not_authed")
        token = self.tokens.get(raw)
        if token is None:
            if raw.startswith("xapp-"):
                token = Token(raw, None)
            elif self.accept_any_token and raw.startswith(("xoxp-", "xoxb-")):
                token = Token(raw, OPERATOR)
            else:
                raise SlackError("invalid_auth")
        if token.revoked:
            raise SlackError("invalid_auth")
        if (token.kind == "app") != (method == "apps.connections.open"):
            raise SlackError("not_allowed_token_type")
        return token

    # -- helpers ----------------------------------------------------------------------------
    def _readable(self, req: Request, token: Token) -> Channel:
        ch = self.workspace.channel(req.arg("channel"))
        if ch.members and token.user_id not in ch.members:
            # Slack hides DMs you are not part of; public channels say not_in_channel.
            raise SlackError("channel_not_found" if ch.is_im or ch.is_mpim else "not_in_channel")
        return ch

    def _window(self, req: Request) -> Window:
        win = Window(inclusive=(req.arg("inclusive") or "").lower() in ("1", "true"))
        for name in ("oldest", "latest"):
            raw = req.arg(name)
            if raw:
                try:
                    setattr(win, name, ts_micros(raw))
                except ValueError:
                    raise SlackError(f"invalid_ts_{name}") from None
        try:
            limit = int(req.arg("limit") or 0)
        except ValueError:
            raise SlackError("invalid_limit") from None
        win.limit = 100 if limit <= 0 else min(limit, 999)
        cursor = req.arg("cursor")
        win.cursor = decode_cursor(cursor) if cursor else None
        return win

    def _message(self, ch: Channel, ts: str | None) -> Message:
        msg = ch.find(ts) if ts else None
        if msg is None:
            raise SlackError("message_not_found")
        return msg

    # -- methods ----------------------------------------------------------------------------
    def _auth_test(self, req: Request, token: Token) -> dict[str, Any]:
        user = self.workspace.user(token.user_id)
        out: dict[str, Any] = {
            "url": PERMALINK_HOST + "/",
            "team": "Sandbox",
            "user": user.name,
            "team_id": TEAM_ID,
            "user_id": user.id,
            "is_enterprise_install": False,
        }
        if token.kind == "bot":
            out["bot_id"] = BOT_ID
        return out

    def _history(self, req: Request, token: Token) -> dict[str, Any]:
        ch = self._readable(req, token)
        return self.workspace.history(
            ch, self._window(req), metadata=_flag(req, "include_all_metadata")
        )

    def _replies(self, req: Request, token: Token) -> dict[str, Any]:
        ch = self._readable(req, token)
        metadata = _flag(req, "include_all_metadata")
        return self.workspace.replies(ch, req.arg("ts"), self._window(req), metadata=metadata)

    def _info(self, req: Request, token: Token) -> dict[str, Any]:
        """Slack answers ``channel_not_found`` for a channel that does not exist and for one the
        token's user may not see (a DM or private channel they are not in); a public channel
        they have not joined comes back with ``is_member: false``."""
        ch = self.workspace.channel(req.arg("channel"))
        member = not ch.members or token.user_id in ch.members
        if ch.members and not member:
            raise SlackError("channel_not_found")
        info = {
            **ch.to_api(),
            "is_channel": not (ch.is_im or ch.is_mpim),
            "is_private": bool(ch.members) and not ch.is_im,
            "is_archived": False,
            "is_member": member,
        }
        return {"channel": info}

    def _open(self, req: Request, token: Token) -> dict[str, Any]:
        if req.arg("channel"):
            ch, existed = self._readable(req, token), True
        else:
            users = [u for u in (req.arg("users") or "").split(",") if u]
            if not users:
                raise SlackError("users_list_not_supplied")
            for uid in users:
                self.workspace.user(uid)
            ch, existed = self.workspace.dm(token.user_id or OPERATOR, users)
        full = (req.arg("return_im") or "").lower() in ("1", "true")
        out: dict[str, Any] = {"channel": ch.to_api() if full else {"id": ch.id}}
        if existed:
            out.update(no_op=True, already_open=True)
        return out

    def _post_message(self, req: Request, token: Token) -> dict[str, Any]:
        ref = req.arg("channel")
        if ref in self.workspace.users:  # a user id posts into the DM with that user
            ch, _ = self.workspace.dm(token.user_id or OPERATOR, [ref or ""])
        else:
            ch = self._readable(req, token)
        text, blocks = req.arg("text") or "", _json_list(req.arg("blocks"))
        if not text and not blocks:
            raise SlackError("no_text")
        bot = token.kind == "bot"
        msg = self.workspace.post(
            ch,
            text,
            user=token.user_id,
            bot_id=BOT_ID if bot else None,
            thread_ts=req.arg("thread_ts") or None,
            blocks=blocks,
            metadata=_metadata(req.arg("metadata")),
        )
        if not bot or self.push_bot_messages:
            self._outbox.append(msg)
        return {"channel": ch.id, "ts": msg.ts, "message": msg.to_api(include_metadata=True)}

    def _update(self, req: Request, token: Token) -> dict[str, Any]:
        ch = self._readable(req, token)
        msg = self._message(ch, req.arg("ts"))
        if msg.user != token.user_id or (msg.bot_id is not None) != (token.kind == "bot"):
            raise SlackError("cant_update_message")
        text, blocks = req.arg("text"), _json_list(req.arg("blocks"))
        if text is None and blocks is None:
            raise SlackError("no_text")
        if text is not None:
            msg.text = text
        if blocks is not None:
            msg.blocks = blocks
        if req.arg("metadata"):  # absent: the message keeps the metadata it has
            msg.metadata = _metadata(req.arg("metadata"))
        msg.edited = {"user": token.user_id or "", "ts": self.workspace.next_ts()}
        return {"channel": ch.id, "ts": msg.ts, "text": msg.text, "message": msg.to_api()}

    def _permalink(self, req: Request, token: Token) -> dict[str, Any]:
        ch = self._readable(req, token)
        msg = self._message(ch, req.arg("message_ts"))
        link = f"{PERMALINK_HOST}/archives/{ch.id}/p{msg.ts.replace('.', '')}"
        if msg.is_reply:
            link += f"?thread_ts={msg.thread_ts}&cid={ch.id}"
        return {"channel": ch.id, "permalink": link}

    def _reactions_add(self, req: Request, token: Token) -> dict[str, Any]:
        ch = self._readable(req, token)
        name = (req.arg("name") or "").strip(":")
        if not _REACTION.match(name):
            raise SlackError("invalid_name")
        msg = self._message(ch, req.arg("timestamp"))
        users = msg.reactions.setdefault(name, [])
        who = token.user_id or ""
        if who in users:
            raise SlackError("already_reacted")
        users.append(who)
        return {}

    def _users_info(self, req: Request, token: Token) -> dict[str, Any]:
        return {"user": self.workspace.user(req.arg("user")).to_api()}

    def _connections_open(self, req: Request, token: Token) -> dict[str, Any]:
        ticket = self.socket_mode.new_ticket()
        return {"url": f"ws://127.0.0.1:{self.port}/link/?ticket={ticket}"}


def _flag(req: Request, name: str) -> bool:
    return (req.arg(name) or "").lower() in ("1", "true")


def _metadata(raw: str | None) -> dict[str, Any] | None:
    """Message metadata as Slack takes it: a JSON object with a string ``event_type`` and an
    object ``event_payload``; anything else is ``invalid_metadata_format``."""
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        raise SlackError("invalid_metadata_format") from None
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("event_type"), str)
        or not isinstance(value.get("event_payload", {}), dict)
    ):
        raise SlackError("invalid_metadata_format")
    return {"event_type": value["event_type"], "event_payload": value.get("event_payload", {})}


def _json_list(raw: str | None) -> list[Any] | None:
    if raw is None or raw == "":
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        raise SlackError("invalid_blocks") from None
    if not isinstance(value, list):
        raise SlackError("invalid_blocks")
    return value

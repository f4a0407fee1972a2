"""The in-memory workspace behind the Slack emulator: users, conversations, messages, the
``ts`` clock and the read-after-write lag.

Everything here is plain data plus the two read paths (``history`` and ``replies``) with
Slack's windowing and cursor rules; the HTTP layer in :mod:`slack_api` only parses
parameters and shapes replies. Callers hold the emulator lock around every call.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "TEAM_ID",
    "Channel",
    "Message",
    "SlackError",
    "User",
    "Window",
    "Workspace",
    "ts_micros",
]

TEAM_ID = "T0SANDBOX"

# A thread_ts Slack would accept as a timestamp at all; anything else is invalid_thread_ts
# (jenkinsci/slack-plugin#584), while a well-formed unknown one silently orphans the reply.
_TS_SHAPE = re.compile(r"^\d{1,12}(\.\d{1,6})?$")


class SlackError(Exception):
    """A platform error: answered as HTTP 200 ``{"ok": false, "error": <error>}``."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def ts_micros(ts: str) -> int:
    """``"1732870000.0001"`` → 1732870000000100; raises ValueError on a malformed ts."""
    if not _TS_SHAPE.match(ts):
        raise ValueError(ts)
    whole, _, frac = ts.partition(".")
    return int(whole) * 1_000_000 + int((frac or "0").ljust(6, "0"))


def is_ts(value: str) -> bool:
    return bool(_TS_SHAPE.match(value))


def _fmt_ts(micros: int) -> str:
    return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"


def encode_cursor(ts: str) -> str:
    # Slack's cursors are opaque base64 ("bmV4dF90czox..." decodes to "next_ts:1...").
    return base64.b64encode(f"next_ts:{ts}".encode()).decode()


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.b64decode(cursor.encode(), validate=True).decode()
        prefix, _, ts = text.partition(":")
        if prefix != "next_ts":
            raise ValueError(cursor)
        return ts_micros(ts)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise SlackError("invalid_cursor") from None


@dataclass
class User:
    id: str
    name: str
    real_name: str = ""
    is_bot: bool = False

    def to_api(self) -> dict[str, Any]:
        real = self.real_name or self.name
        return {
            "id": self.id,
            "team_id": TEAM_ID,
            "name": self.name,
            "real_name": real,
            "deleted": False,
            "is_bot": self.is_bot,
            "is_admin": False,
            "tz": "UTC",
            "profile": {
                "real_name": real,
                "real_name_normalized": real,
                "display_name": self.name,
                "display_name_normalized": self.name,
                "team": TEAM_ID,
            },
        }


@dataclass
class Message:
    ts: str
    channel: str
    text: str
    user: str | None
    bot_id: str | None = None
    thread_ts: str | None = None
    blocks: list[Any] | None = None
    reactions: dict[str, list[str]] = field(default_factory=dict)
    edited: dict[str, str] | None = None
    metadata: dict[str, Any] | None = None
    """``{"event_type": …, "event_payload": {…}}`` as posted; read back only by calls that set
    ``include_all_metadata`` (as Slack does)."""
    # Read-after-write lag: hidden for this many more reads of the channel, and until then.
    hidden_reads: int = 0
    hidden_until: float = 0.0

    @property
    def is_reply(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts

    def visible(self, now: float) -> bool:
        return self.hidden_reads <= 0 and now >= self.hidden_until

    def to_api(self, *, include_metadata: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "message", "ts": self.ts, "text": self.text}
        if self.user is not None:
            out["user"] = self.user
        if self.bot_id is not None:
            out.update(bot_id=self.bot_id, subtype="bot_message", app_id="A0HARNESS")
        out["team"] = TEAM_ID
        if self.thread_ts is not None:
            out["thread_ts"] = self.thread_ts
        if self.blocks is not None:
            out["blocks"] = self.blocks
        if self.edited is not None:
            out["edited"] = dict(self.edited)
        if include_metadata and self.metadata is not None:
            out["metadata"] = dict(self.metadata)
        if self.reactions:
            out["reactions"] = [
                {"name": name, "users": list(users), "count": len(users)}
                for name, users in self.reactions.items()
            ]
        return out


@dataclass
class Channel:
    id: str
    name: str
    is_im: bool = False
    is_mpim: bool = False
    user: str | None = None  # the other party of an IM (the owner, for a self-DM)
    members: list[str] = field(default_factory=list)  # empty: open to everyone
    messages: list[Message] = field(default_factory=list)  # replies included, ts order
    lag_polls: int = 0
    lag_seconds: float = 0.0

    @property
    def channel_type(self) -> str:
        return "im" if self.is_im else "mpim" if self.is_mpim else "channel"

    def find(self, ts: str) -> Message | None:
        return next((m for m in self.messages if m.ts == ts), None)

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "is_im": self.is_im, "is_mpim": self.is_mpim}
        if self.is_im:
            out["user"] = self.user
        else:
            out["name"] = self.name
        return out


@dataclass
class Window:
    """The ``oldest``/``latest``/``inclusive``/``limit``/``cursor`` parameters of a read."""

    oldest: int | None = None
    latest: int | None = None
    inclusive: bool = False
    limit: int = 100
    cursor: int | None = None

    def contains(self, ts: str) -> bool:
        at = ts_micros(ts)
        low = self.oldest is None or at > self.oldest or (self.inclusive and at == self.oldest)
        high = self.latest is None or at < self.latest or (self.inclusive and at == self.latest)
        return low and high


class Workspace:
    """Users and conversations of one sandbox team; ``clock`` gives epoch seconds."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.users: dict[str, User] = {}
        self.channels: dict[str, Channel] = {}
        self._last_micros = 0

    # -- ids and lookups --------------------------------------------------------------------
    def next_ts(self) -> str:
        """A fresh ts, strictly increasing across the workspace even within one microsecond."""
        micros = max(int(self.clock() * 1_000_000), self._last_micros + 1)
        self._last_micros = micros
        return _fmt_ts(micros)

    def channel(self, ref: str | None) -> Channel:
        """By id or by name (with or without ``#``); ``channel_not_found`` otherwise."""
        if ref:
            if ref in self.channels:
                return self.channels[ref]
            name = ref.lstrip("#")
            for ch in self.channels.values():
                if not ch.is_im and ch.name == name:
                    return ch
        raise SlackError("channel_not_found")

    def user(self, user_id: str | None) -> User:
        if user_id and user_id in self.users:
            return self.users[user_id]
        raise SlackError("user_not_found")

    def dm(self, me: str, others: list[str]) -> tuple[Channel, bool]:
        """The IM (one other user, possibly ``me``) or MPIM for these users; created if new."""
        people = sorted({me, *others})
        for ch in self.channels.values():
            if len(others) == 1 and ch.is_im and sorted({ch.user or "", *ch.members}) == people:
                return ch, True
            if len(others) > 1 and ch.is_mpim and sorted(ch.members) == people:
                return ch, True
        # Stable ids (not hash(): that is salted per process) so reruns name the same DM.
        digest = hashlib.sha1(",".join(people).encode()).hexdigest()[:9].upper()
        if len(others) == 1:
            cid = "D" + digest
            ch = Channel(id=cid, name=cid, is_im=True, user=others[0], members=people)
        else:
            cid = "G" + digest
            ch = Channel(id=cid, name="mpdm-" + "--".join(people), is_mpim=True, members=people)
        self.channels[cid] = ch
        return ch, False

    # -- writes -----------------------------------------------------------------------------
    def post(
        self,
        ch: Channel,
        text: str,
        *,
        user: str | None,
        bot_id: str | None = None,
        thread_ts: str | None = None,
        blocks: list[Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        if thread_ts is not None and not is_ts(thread_ts):
            raise SlackError("invalid_thread_ts")
        msg = Message(
            ts=self.next_ts(),
            channel=ch.id,
            text=text,
            user=user,
            bot_id=bot_id,
            thread_ts=thread_ts,
            blocks=blocks,
            metadata=metadata,
            hidden_reads=ch.lag_polls,
            hidden_until=self.clock() + ch.lag_seconds if ch.lag_seconds > 0 else 0.0,
        )
        ch.messages.append(msg)
        return msg

    def delete(self, ch: Channel, ts: str) -> None:
        msg = ch.find(ts)
        if msg is None:
            raise SlackError("message_not_found")
        ch.messages.remove(msg)

    # -- reads ------------------------------------------------------------------------------
    def _read(self, ch: Channel) -> list[Message]:
        """What this read sees; counts the read against every still-lagging message."""
        now = self.clock()
        seen = [m for m in ch.messages if m.visible(now)]
        for m in ch.messages:
            if m.hidden_reads > 0:
                m.hidden_reads -= 1
        return seen

    def _with_thread_fields(
        self, msg: Message, replies: list[Message], metadata: bool = False
    ) -> dict[str, Any]:
        out = msg.to_api(include_metadata=metadata)
        if replies:
            users = list(dict.fromkeys(r.user or r.bot_id or "" for r in replies))
            out.update(
                thread_ts=msg.ts,
                reply_count=len(replies),
                reply_users=users,
                reply_users_count=len(users),
                latest_reply=replies[-1].ts,
            )
        return out

    def history(self, ch: Channel, win: Window, *, metadata: bool = False) -> dict[str, Any]:
        """Parents only (replies and orphans excluded), newest first, one page of ``win``."""
        seen = self._read(ch)
        threads: dict[str, list[Message]] = {}
        for m in seen:
            if m.is_reply:
                threads.setdefault(m.thread_ts or "", []).append(m)
        parents = [m for m in reversed(seen) if not m.is_reply and win.contains(m.ts)]
        if win.cursor is not None:
            parents = [m for m in parents if ts_micros(m.ts) <= win.cursor]
        page, rest = parents[: win.limit], parents[win.limit :]
        return {
            "messages": [
                self._with_thread_fields(m, threads.get(m.ts, []), metadata) for m in page
            ],
            "has_more": bool(rest),
            "pin_count": 0,
            "response_metadata": {"next_cursor": encode_cursor(rest[0].ts) if rest else ""},
        }

    def replies(
        self, ch: Channel, ts: str | None, win: Window, *, metadata: bool = False
    ) -> dict[str, Any]:
        """The thread holding ``ts``: the parent first (first page only, whatever the window,
        as Slack does), then replies ascending. A deleted, lagging or unknown parent, like an
        unknown ``ts``, is ``thread_not_found`` (bolt-js#2307)."""
        seen = self._read(ch)
        target = next((m for m in seen if m.ts == ts), None) if ts else None
        if target is None:
            raise SlackError("thread_not_found")
        root_ts = target.thread_ts if target.is_reply else target.ts
        root = next((m for m in seen if m.ts == root_ts and not m.is_reply), None)
        if root is None:
            raise SlackError("thread_not_found")
        thread = [m for m in seen if m.is_reply and m.thread_ts == root_ts]
        items = [m for m in thread if win.contains(m.ts)]
        head: list[dict[str, Any]] = []
        if win.cursor is not None:
            items = [m for m in items if ts_micros(m.ts) >= win.cursor]
        else:
            head = [self._with_thread_fields(root, thread, metadata)]
        room = max(win.limit - len(head), 0)
        page, rest = items[:room], items[room:]
        body = [*head]
        for m in page:
            out = m.to_api(include_metadata=metadata)
            if root.user is not None:
                out["parent_user_id"] = root.user
            body.append(out)
        return {
            "messages": body,
            "has_more": bool(rest),
            "response_metadata": {"next_cursor": encode_cursor(rest[0].ts) if rest else ""},
        }

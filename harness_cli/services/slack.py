"""Slack behind a small Protocol: only the calls the harness makes, with Slack's failure modes
turned into typed errors (thread gone, rate limited) that the loops above decide about.

The live implementation wraps ``slack_sdk.WebClient`` (imported here, lazily, never at CLI
start-up); the sandbox's emulator serves the same wire protocol, so tests run this very code.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from harness_cli.errors import ConfigError, ServiceError

Message = dict[str, Any]


class ThreadGone(ServiceError):
    """``thread_not_found`` / ``message_not_found``: the parent is deleted or never existed."""


class RateLimited(ServiceError):
    """HTTP 429: Slack says to wait ``retry_after`` seconds."""

    def __init__(self, method: str, retry_after: float) -> None:
        super().__init__(f"Slack rate-limited {method}; retry after {retry_after:g} s")
        self.retry_after = retry_after


class Slack(Protocol):
    def whoami(self) -> str: ...

    def history(self, channel: str, *, oldest: str, inclusive: bool = False) -> list[Message]: ...

    def replies(self, channel: str, ts: str, *, oldest: str | None = None) -> list[Message]: ...

    def message(self, channel: str, ts: str) -> Message | None: ...

    def post(
        self,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str: ...

    def update(
        self, channel: str, ts: str, text: str, *, metadata: dict[str, Any] | None = None
    ) -> None: ...

    def permalink(self, channel: str, ts: str) -> str: ...

    def react(self, channel: str, ts: str, name: str) -> None: ...


@dataclass
class SlackSettings:
    base_url: str
    token: str

    @classmethod
    def from_env(cls) -> SlackSettings:
        token = os.environ.get("SLACK_USER_TOKEN")
        if not token:
            raise ConfigError(
                "SLACK_USER_TOKEN is not set",
                hint="put the operator's user token (xoxp-…) in $HARNESS_HOME/env as "
                "SLACK_USER_TOKEN=… (or export it); `harness doctor` checks it",
            )
        base = os.environ.get("SLACK_API_URL", "https://slack.com/api/")
        return cls(base_url=base if base.endswith("/") else base + "/", token=token)


class LiveSlack:
    """``Slack`` over slack_sdk's WebClient (Web API, bearer token)."""

    page_limit = 200

    def __init__(self, settings: SlackSettings, *, timeout: float = 30.0) -> None:
        from slack_sdk import WebClient

        self._client = WebClient(
            token=settings.token, base_url=settings.base_url, timeout=int(timeout)
        )
        # Writes are never re-sent by the SDK: its default handler retries a connection that
        # dropped before the answer — a post that may have been made, made again. The outbox
        # retries them itself, after looking the post up (harness_cli.outbox).
        self._writer = WebClient(
            token=settings.token,
            base_url=settings.base_url,
            timeout=int(timeout),
            retry_handlers=[],
        )
        self._me: str | None = None

    def whoami(self) -> str:
        if self._me is None:
            self._me = str(self._call("auth_test")["user_id"])
        return self._me

    def history(self, channel: str, *, oldest: str, inclusive: bool = False) -> list[Message]:
        """Every top-level message after ``oldest``, oldest first (all pages)."""
        found: list[Message] = []
        for page in self._pages(
            "conversations_history",
            channel=channel,
            oldest=oldest,
            inclusive=inclusive,
            limit=self.page_limit,
            include_all_metadata=True,  # the harness knows its own posts by their metadata
        ):
            found.extend(page.get("messages", []))
        return sorted(found, key=lambda m: float(m["ts"]))

    def replies(self, channel: str, ts: str, *, oldest: str | None = None) -> list[Message]:
        """The thread, parent first then replies in order (all pages)."""
        params: dict[str, Any] = {
            "channel": channel,
            "ts": ts,
            "limit": self.page_limit,
            "include_all_metadata": True,
        }
        if oldest:
            params["oldest"] = oldest
        found: list[Message] = []
        for page in self._pages("conversations_replies", **params):
            found.extend(page.get("messages", []))
        return found

    def message(self, channel: str, ts: str) -> Message | None:
        """The top-level message ``ts`` as history shows it; None when history does not show it
        (deleted — a tombstone counts as deleted — or not visible yet)."""
        reply = self._call(
            "conversations_history",
            channel=channel,
            oldest=ts,
            latest=ts,
            inclusive=True,
            limit=1,
            include_all_metadata=True,
        )
        for found in reply.get("messages", []):
            if found.get("ts") == ts and found.get("subtype") != "tombstone":
                return dict(found)
        return None

    def post(
        self,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        params: dict[str, Any] = {"channel": channel, "text": text}
        if thread_ts:
            params["thread_ts"] = thread_ts
        if metadata:
            params["metadata"] = metadata
        return str(self._call("chat_postMessage", writer=True, **params)["ts"])

    def update(
        self, channel: str, ts: str, text: str, *, metadata: dict[str, Any] | None = None
    ) -> None:
        params: dict[str, Any] = {"channel": channel, "ts": ts, "text": text}
        if metadata:
            params["metadata"] = metadata
        self._call("chat_update", writer=True, **params)

    def permalink(self, channel: str, ts: str) -> str:
        return str(self._call("chat_getPermalink", channel=channel, message_ts=ts)["permalink"])

    def react(self, channel: str, ts: str, name: str) -> None:
        try:
            self._call("reactions_add", channel=channel, timestamp=ts, name=name)
        except ServiceError as exc:
            if "already_reacted" not in str(exc):
                raise

    # -- plumbing -------------------------------------------------------------------------------
    def _pages(self, method: str, **params: Any) -> Iterator[dict[str, Any]]:
        cursor = None
        while True:
            reply = self._call(method, **params, **({"cursor": cursor} if cursor else {}))
            yield reply
            cursor = (reply.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return

    def _call(self, method: str, *, writer: bool = False, **params: Any) -> dict[str, Any]:
        from slack_sdk.errors import SlackApiError

        try:
            reply = getattr(self._writer if writer else self._client, method)(**params)
        except SlackApiError as exc:
            resp = exc.response
            if resp.status_code == 429:
                retry = float(
                    resp.headers.get("Retry-After") or resp.headers.get("retry-after") or 1
                )
                raise RateLimited(method, retry) from None
            error = resp.get("error", "unknown_error") if hasattr(resp, "get") else "unknown"
            if error in ("thread_not_found", "message_not_found"):
                raise ThreadGone(f"Slack {method}: {error}") from None
            failure = ServiceError(
                f"Slack {method} failed: {error}", hint=_HINTS.get(str(error), "")
            )
            failure.status, failure.code = resp.status_code, str(error)
            raise failure from None
        except OSError as exc:
            raise ServiceError(
                f"Slack {method}: cannot reach {self._client.base_url} ({exc})",
                hint="check SLACK_API_URL and the network",
            ) from None
        return dict(reply.data) if isinstance(reply.data, dict) else {}


_HINTS = {
    "invalid_auth": "SLACK_USER_TOKEN is wrong or revoked; issue a new user token",
    "not_authed": "SLACK_USER_TOKEN is empty",
    "channel_not_found": "check the channel ids in projects.yaml / harness.yaml",
    "not_in_channel": "the operator's account must be a member of that channel",
}

"""The Slack Web API emulator, driven through the real slack_sdk WebClient."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from harness_cli.sandbox.httpbase import Fault
from harness_cli.sandbox.slack_api import SlackEmulator

T0 = 1_732_870_000.0


class FakeClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def emu(clock: FakeClock) -> Iterator[SlackEmulator]:
    emulator = SlackEmulator(clock=clock)
    emulator.start()
    yield emulator
    emulator.stop()


def client(emu: SlackEmulator, token: str | None = "xoxp-operator") -> WebClient:
    return WebClient(token=token, base_url=emu.url + "/api/")


@pytest.fixture
def web(emu: SlackEmulator) -> WebClient:
    return client(emu)


def error_of(call: Callable[[], Any]) -> str:
    with pytest.raises(SlackApiError) as info:
        call()
    assert info.value.response.status_code == 200  # platform errors are HTTP 200
    return str(info.value.response["error"])


def texts(resp: Any) -> list[str]:
    return [m["text"] for m in resp["messages"]]


# -- auth -------------------------------------------------------------------------------------
def test_auth_test_user_and_bot_tokens(emu: SlackEmulator) -> None:
    user = client(emu, "xoxp-1").auth_test()
    assert user["user_id"] == "U0OPERATOR" and user["team_id"] == "T0SANDBOX"
    assert "bot_id" not in user.data
    assert client(emu, "xoxb-1").auth_test()["bot_id"] == "B0HARNESS"


def test_auth_errors_and_token_registry(emu: SlackEmulator) -> None:
    assert error_of(client(emu, None).auth_test) == "not_authed"
    assert error_of(client(emu, "garbage").auth_test) == "invalid_auth"
    assert error_of(client(emu, "xapp-1").auth_test) == "not_allowed_token_type"
    emu.add_token("xoxp-customer", "U0CUSTOMER")
    assert client(emu, "xoxp-customer").auth_test()["user_id"] == "U0CUSTOMER"
    emu.revoke_token("xoxp-customer")
    assert error_of(client(emu, "xoxp-customer").auth_test) == "invalid_auth"
    emu.add_token("xoxb-revoked", "U0OPERATOR", revoked=True)
    assert error_of(client(emu, "xoxb-revoked").auth_test) == "invalid_auth"


def test_strangers_cannot_read_the_operators_self_dm(emu: SlackEmulator) -> None:
    emu.add_token("xoxp-customer", "U0CUSTOMER")
    stranger = client(emu, "xoxp-customer")
    assert error_of(lambda: stranger.conversations_history(channel="D0SELF")) == (
        "channel_not_found"
    )


# -- posting ----------------------------------------------------------------------------------
def test_user_post_has_user_and_no_bot_id(web: WebClient) -> None:
    resp = web.chat_postMessage(channel="C0SUPPORT", text="hello")
    assert resp["channel"] == "C0SUPPORT" and resp["message"]["ts"] == resp["ts"]
    assert resp["message"]["user"] == "U0OPERATOR"
    assert "bot_id" not in resp["message"] and "subtype" not in resp["message"]


def test_bot_post_carries_bot_id(emu: SlackEmulator) -> None:
    bot = client(emu, "xoxb-harness")
    msg = bot.chat_postMessage(channel="#support", text="on it")["message"]
    assert msg["bot_id"] == "B0HARNESS" and msg["subtype"] == "bot_message"
    history = client(emu).conversations_history(channel="C0SUPPORT")["messages"]
    assert history[0]["bot_id"] == "B0HARNESS"


def test_ts_strictly_increases_within_one_second(web: WebClient, emu: SlackEmulator) -> None:
    stamps = [web.chat_postMessage(channel="C0SUPPORT", text=str(i))["ts"] for i in range(3)]
    stamps.append(emu.post_as("C0SUPPORT", "U0CUSTOMER", "x")["ts"])
    assert stamps == ["1732870000.000000", "1732870000.000001", "1732870000.000002",
                      "1732870000.000003"]  # fmt: skip


NO_TEXT_WARNING = "ignore:The top-level `text` argument is missing"


@pytest.mark.filterwarnings(NO_TEXT_WARNING)
def test_post_errors(web: WebClient) -> None:
    assert error_of(lambda: web.chat_postMessage(channel="C404", text="x")) == "channel_not_found"
    assert error_of(lambda: web.chat_postMessage(channel="C0SUPPORT", text="")) == "no_text"
    bad = lambda: web.chat_postMessage(channel="C0SUPPORT", text="x", thread_ts="yesterday")  # noqa: E731
    assert error_of(bad) == "invalid_thread_ts"


@pytest.mark.filterwarnings(NO_TEXT_WARNING)
def test_blocks_are_accepted_without_text(web: WebClient) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]
    resp = web.chat_postMessage(channel="C0SUPPORT", blocks=blocks)
    assert resp["message"]["blocks"] == blocks


def test_unknown_thread_ts_leaves_an_orphan_reply(web: WebClient, emu: SlackEmulator) -> None:
    resp = web.chat_postMessage(channel="C0SUPPORT", text="lost", thread_ts="1700000000.000100")
    assert resp["ok"] and resp["message"]["thread_ts"] == "1700000000.000100"
    assert web.conversations_history(channel="C0SUPPORT")["messages"] == []
    assert [m["text"] for m in emu.messages("C0SUPPORT")] == ["lost"]
    orphan = lambda: web.conversations_replies(channel="C0SUPPORT", ts=resp["ts"])  # noqa: E731
    assert error_of(orphan) == "thread_not_found"


def test_user_id_as_channel_posts_into_the_dm(web: WebClient) -> None:
    resp = web.chat_postMessage(channel="U0CUSTOMER", text="hi")
    opened = web.conversations_open(users="U0CUSTOMER")["channel"]["id"]
    assert resp["channel"] == opened and opened.startswith("D")


# -- history ----------------------------------------------------------------------------------
def test_history_pages_newest_first_with_cursor(web: WebClient, emu: SlackEmulator) -> None:
    for i in range(5):
        emu.post_as("C0SUPPORT", "U0CUSTOMER", f"m{i}")
    first = web.conversations_history(channel="C0SUPPORT", limit=2)
    assert texts(first) == ["m4", "m3"] and first["has_more"] is True
    assert first["pin_count"] == 0
    cursor = first["response_metadata"]["next_cursor"]
    second = web.conversations_history(channel="C0SUPPORT", limit=2, cursor=cursor)
    assert texts(second) == ["m2", "m1"] and second["has_more"] is True
    cursor = second["response_metadata"]["next_cursor"]
    last = web.conversations_history(channel="C0SUPPORT", limit=2, cursor=cursor)
    assert texts(last) == ["m0"] and last["has_more"] is False
    assert last["response_metadata"]["next_cursor"] == ""
    # The SDK's own cursor iteration walks the same pages and stops.
    pages = [texts(page) for page in web.conversations_history(channel="C0SUPPORT", limit=2)]
    assert pages == [["m4", "m3"], ["m2", "m1"], ["m0"]]
    bad = lambda: web.conversations_history(channel="C0SUPPORT", cursor="bm9wZQ==")  # noqa: E731
    assert error_of(bad) == "invalid_cursor"


def test_history_limit_is_capped_and_defaults(web: WebClient, emu: SlackEmulator) -> None:
    for i in range(3):
        emu.post_as("C0SUPPORT", "U0CUSTOMER", f"m{i}")
    assert len(web.conversations_history(channel="C0SUPPORT", limit=5000)["messages"]) == 3
    assert len(web.conversations_history(channel="C0SUPPORT")["messages"]) == 3


def test_history_window_boundaries(web: WebClient, emu: SlackEmulator) -> None:
    a, b, c = (emu.post_as("C0SUPPORT", "U0CUSTOMER", t)["ts"] for t in "abc")

    def window(**kw: Any) -> list[str]:
        return texts(web.conversations_history(channel="C0SUPPORT", **kw))

    assert window(oldest=a) == ["c", "b"]
    assert window(oldest=a, inclusive=True) == ["c", "b", "a"]
    assert window(latest=c) == ["b", "a"]
    assert window(latest=c, inclusive=True) == ["c", "b", "a"]
    assert window(oldest=a, latest=c) == ["b"]
    assert window(oldest=b, latest=b, inclusive=True) == ["b"]
    assert error_of(lambda: window(oldest="soon")) == "invalid_ts_oldest"


def test_history_shows_parents_only_with_thread_summary(web: WebClient, emu: SlackEmulator) -> None:
    parent = emu.post_as("C0SUPPORT", "U0CUSTOMER", "parent")["ts"]
    emu.post_as("C0SUPPORT", "U0REVIEWER", "r1", thread_ts=parent)
    last = web.chat_postMessage(channel="C0SUPPORT", text="r2", thread_ts=parent)["ts"]
    [msg] = web.conversations_history(channel="C0SUPPORT")["messages"]
    assert msg["text"] == "parent" and msg["thread_ts"] == parent
    assert msg["reply_count"] == 2 and msg["latest_reply"] == last
    assert msg["reply_users"] == ["U0REVIEWER", "U0OPERATOR"]


# -- replies ----------------------------------------------------------------------------------
def test_replies_parent_first_then_ascending(web: WebClient, emu: SlackEmulator) -> None:
    parent = emu.post_as("C0SUPPORT", "U0CUSTOMER", "parent")["ts"]
    r = [emu.post_as("C0SUPPORT", "U0REVIEWER", f"r{i}", thread_ts=parent)["ts"] for i in range(3)]
    resp = web.conversations_replies(channel="C0SUPPORT", ts=parent)
    assert texts(resp) == ["parent", "r0", "r1", "r2"]
    head, *replies = resp["messages"]
    assert head["reply_count"] == 3 and head["thread_ts"] == parent
    assert all(m["thread_ts"] == parent and m["parent_user_id"] == "U0CUSTOMER" for m in replies)
    # Any reply's ts names the same thread.
    assert texts(web.conversations_replies(channel="C0SUPPORT", ts=r[1])) == texts(resp)
    # The parent leads the first page whatever the window.
    windowed = web.conversations_replies(channel="C0SUPPORT", ts=parent, oldest=r[0])
    assert texts(windowed) == ["parent", "r1", "r2"]


def test_replies_pagination(web: WebClient, emu: SlackEmulator) -> None:
    parent = emu.post_as("C0SUPPORT", "U0CUSTOMER", "parent")["ts"]
    for i in range(3):
        emu.post_as("C0SUPPORT", "U0REVIEWER", f"r{i}", thread_ts=parent)
    first = web.conversations_replies(channel="C0SUPPORT", ts=parent, limit=2)
    assert texts(first) == ["parent", "r0"] and first["has_more"] is True
    cursor = first["response_metadata"]["next_cursor"]
    rest = web.conversations_replies(channel="C0SUPPORT", ts=parent, limit=2, cursor=cursor)
    assert texts(rest) == ["r1", "r2"] and rest["has_more"] is False
    assert rest["response_metadata"]["next_cursor"] == ""


def test_unthreaded_message_comes_back_alone(web: WebClient, emu: SlackEmulator) -> None:
    ts = emu.post_as("C0SUPPORT", "U0CUSTOMER", "solo")["ts"]
    [msg] = web.conversations_replies(channel="C0SUPPORT", ts=ts)["messages"]
    assert msg["text"] == "solo" and "thread_ts" not in msg and "reply_count" not in msg


def test_replies_thread_not_found(web: WebClient, emu: SlackEmulator) -> None:
    missing = lambda: web.conversations_replies(channel="C0SUPPORT", ts="1700000000.000001")  # noqa: E731
    assert error_of(missing) == "thread_not_found"
    parent = emu.post_as("C0SUPPORT", "U0CUSTOMER", "parent")["ts"]
    reply = emu.post_as("C0SUPPORT", "U0REVIEWER", "r", thread_ts=parent)["ts"]
    emu.delete_message("C0SUPPORT", parent)
    for ts in (parent, reply):
        gone = lambda ts=ts: web.conversations_replies(channel="C0SUPPORT", ts=ts)  # noqa: E731
        assert error_of(gone) == "thread_not_found"
    assert web.conversations_history(channel="C0SUPPORT")["messages"] == []


# -- read-after-write lag ---------------------------------------------------------------------
def test_lag_by_polls_hides_then_shows_with_true_ts(web: WebClient, emu: SlackEmulator) -> None:
    emu.set_lag("C0SUPPORT", polls=2)
    ts = emu.post_as("C0SUPPORT", "U0CUSTOMER", "late")["ts"]
    assert web.conversations_history(channel="C0SUPPORT")["messages"] == []
    assert web.conversations_history(channel="C0SUPPORT")["messages"] == []
    [msg] = web.conversations_history(channel="C0SUPPORT")["messages"]
    assert msg["ts"] == ts and msg["text"] == "late"


def test_lag_applies_to_thread_replies(web: WebClient, emu: SlackEmulator) -> None:
    parent = emu.post_as("C0SUPPORT", "U0CUSTOMER", "parent")["ts"]
    emu.set_lag("C0SUPPORT", polls=1)
    emu.post_as("C0SUPPORT", "U0CUSTOMER", "follow-up", thread_ts=parent)
    assert texts(web.conversations_replies(channel="C0SUPPORT", ts=parent)) == ["parent"]
    resp = web.conversations_replies(channel="C0SUPPORT", ts=parent)
    assert texts(resp) == ["parent", "follow-up"]


def test_lag_by_seconds(web: WebClient, emu: SlackEmulator, clock: FakeClock) -> None:
    emu.set_lag("C0SUPPORT", seconds=5)
    emu.post_as("C0SUPPORT", "U0CUSTOMER", "late")
    clock.advance(4.9)
    assert web.conversations_history(channel="C0SUPPORT")["messages"] == []
    clock.advance(0.2)
    assert texts(web.conversations_history(channel="C0SUPPORT")) == ["late"]


def _poll(web: WebClient, channel: str, clock: FakeClock, *, advance_on_empty: bool) -> list[str]:
    """Five one-minute polls of ``channel`` from an ``oldest`` cursor."""
    cursor, seen = f"{T0 - 60:.6f}", []
    for _ in range(5):
        clock.advance(60)
        msgs = web.conversations_history(channel=channel, oldest=cursor)["messages"]
        seen += [m["text"] for m in msgs]
        if msgs:
            cursor = max(m["ts"] for m in msgs)
        elif advance_on_empty:
            cursor = f"{clock():.6f}"  # the bug: "nothing new, so skip ahead to now"
    return seen


def test_lag_defeats_a_poller_that_advances_on_empty_polls(
    web: WebClient, emu: SlackEmulator, clock: FakeClock
) -> None:
    emu.add_channel("C0OTHER", "other")
    for channel in ("C0SUPPORT", "C0OTHER"):
        emu.set_lag(channel, polls=2)
        emu.post_as(channel, "U0CUSTOMER", "ticket")
    assert _poll(web, "C0SUPPORT", clock, advance_on_empty=True) == []
    assert _poll(web, "C0OTHER", clock, advance_on_empty=False) == ["ticket"]
    assert [m["text"] for m in emu.messages("C0SUPPORT")] == ["ticket"]


# -- faults -----------------------------------------------------------------------------------
def _ratelimit_replies(emu: SlackEmulator, channel: str = "C0SUPPORT") -> None:
    emu.add_fault(
        Fault(
            kind="status",
            match="conversations.replies",
            status=429,
            headers={"Retry-After": "1"},
            times=1,
            where={"channel": channel},
        )
    )


def test_429_without_retry_handler_raises_with_retry_after(
    web: WebClient, emu: SlackEmulator
) -> None:
    ts = emu.post_as("C0SUPPORT", "U0CUSTOMER", "p")["ts"]
    _ratelimit_replies(emu)
    with pytest.raises(SlackApiError) as info:
        web.conversations_replies(channel="C0SUPPORT", ts=ts)
    assert info.value.response.status_code == 429
    assert info.value.response.headers["Retry-After"] == "1"
    assert info.value.response["error"] == "ratelimited"


def test_429_with_rate_limit_handler_backs_off_and_succeeds(emu: SlackEmulator) -> None:
    web = client(emu)
    web.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=1))
    ts = emu.post_as("C0SUPPORT", "U0CUSTOMER", "p")["ts"]
    _ratelimit_replies(emu)
    started = time.monotonic()
    assert texts(web.conversations_replies(channel="C0SUPPORT", ts=ts)) == ["p"]
    assert time.monotonic() - started >= 1.0
    assert emu.calls("conversations.replies", channel="C0SUPPORT") == 2


def test_fault_where_filters_by_channel(web: WebClient, emu: SlackEmulator) -> None:
    emu.add_channel("C0OTHER", "other")
    ts = emu.post_as("C0SUPPORT", "U0CUSTOMER", "p")["ts"]
    _ratelimit_replies(emu, channel="C0OTHER")
    assert texts(web.conversations_replies(channel="C0SUPPORT", ts=ts)) == ["p"]


def test_5xx_fault_then_recovery(web: WebClient, emu: SlackEmulator) -> None:
    emu.add_fault(Fault(kind="status", match="conversations.history", status=503))
    with pytest.raises(SlackApiError) as info:
        web.conversations_history(channel="C0SUPPORT")
    assert info.value.response.status_code == 503
    assert info.value.response["error"] == "service_unavailable"
    assert web.conversations_history(channel="C0SUPPORT")["ok"]


# -- other methods ----------------------------------------------------------------------------
def test_chat_update(web: WebClient, emu: SlackEmulator) -> None:
    ts = web.chat_postMessage(channel="C0SUPPORT", text="draft")["ts"]
    resp = web.chat_update(channel="C0SUPPORT", ts=ts, text="final")
    assert (resp["channel"], resp["ts"], resp["text"]) == ("C0SUPPORT", ts, "final")
    assert resp["message"]["edited"]["user"] == "U0OPERATOR"
    assert texts(web.conversations_history(channel="C0SUPPORT")) == ["final"]
    missing = lambda: web.chat_update(channel="C0SUPPORT", ts="1700000000.000001", text="x")  # noqa: E731
    assert error_of(missing) == "message_not_found"
    theirs = emu.post_as("C0SUPPORT", "U0CUSTOMER", "mine")["ts"]
    foreign = lambda: web.chat_update(channel="C0SUPPORT", ts=theirs, text="x")  # noqa: E731
    assert error_of(foreign) == "cant_update_message"


def test_permalinks(web: WebClient, emu: SlackEmulator) -> None:
    parent = emu.post_as("C0SUPPORT", "U0CUSTOMER", "p")["ts"]
    reply = emu.post_as("C0SUPPORT", "U0CUSTOMER", "r", thread_ts=parent)["ts"]
    top = web.chat_getPermalink(channel="C0SUPPORT", message_ts=parent)["permalink"]
    assert top == f"https://sandbox.slack.local/archives/C0SUPPORT/p{parent.replace('.', '')}"
    sub = web.chat_getPermalink(channel="C0SUPPORT", message_ts=reply)["permalink"]
    assert sub == (
        f"https://sandbox.slack.local/archives/C0SUPPORT/p{reply.replace('.', '')}"
        f"?thread_ts={parent}&cid=C0SUPPORT"
    )


def test_reactions_add(web: WebClient, emu: SlackEmulator) -> None:
    ts = emu.post_as("C0SUPPORT", "U0CUSTOMER", "p")["ts"]
    assert web.reactions_add(channel="C0SUPPORT", name="eyes", timestamp=ts)["ok"]
    again = lambda: web.reactions_add(channel="C0SUPPORT", name="eyes", timestamp=ts)  # noqa: E731
    assert error_of(again) == "already_reacted"
    gone = lambda: web.reactions_add(channel="C0SUPPORT", name="eyes", timestamp="1.000001")  # noqa: E731
    assert error_of(gone) == "message_not_found"
    [msg] = web.conversations_history(channel="C0SUPPORT")["messages"]
    assert msg["reactions"] == [{"name": "eyes", "users": ["U0OPERATOR"], "count": 1}]


def test_users_info(web: WebClient) -> None:
    user = web.users_info(user="U0CUSTOMER")["user"]
    assert (user["id"], user["name"], user["is_bot"]) == ("U0CUSTOMER", "customer", False)
    assert user["profile"]["real_name"] == "Customer"
    assert error_of(lambda: web.users_info(user="U404")) == "user_not_found"


def test_conversations_open(web: WebClient) -> None:
    assert web.conversations_open(users="U0OPERATOR")["channel"]["id"] == "D0SELF"
    first = web.conversations_open(users=["U0CUSTOMER"])["channel"]["id"]
    again = web.conversations_open(users="U0CUSTOMER")
    assert again["channel"]["id"] == first and again["already_open"] is True
    assert error_of(lambda: web.conversations_open(users="U404")) == "user_not_found"
    assert error_of(lambda: web.conversations_open(users="")) == "users_list_not_supplied"


def test_apps_connections_open(emu: SlackEmulator) -> None:
    url = client(emu).apps_connections_open(app_token="xapp-1-A0HARNESS")["url"]
    assert url.startswith(f"ws://127.0.0.1:{emu.port}/link/?ticket=")
    bot = client(emu, "xoxb-1")
    assert error_of(lambda: bot.apps_connections_open(app_token="xoxb-1")) == (
        "not_allowed_token_type"
    )
    emu.revoke_token("xapp-old")
    assert error_of(lambda: bot.apps_connections_open(app_token="xapp-old")) == "invalid_auth"


# -- observation and control ------------------------------------------------------------------
def test_call_counts_and_snapshot(web: WebClient, emu: SlackEmulator) -> None:
    emu.add_channel("C0OTHER", "other")
    parent = web.chat_postMessage(channel="C0SUPPORT", text="p")["ts"]
    emu.post_as("C0SUPPORT", "U0CUSTOMER", "r", thread_ts=parent)
    web.conversations_replies(channel="C0SUPPORT", ts=parent)
    web.conversations_history(channel="C0OTHER")
    assert emu.calls("conversations.replies") == 1
    assert emu.calls("conversations.replies", channel="C0OTHER") == 0
    assert emu.calls(channel="C0SUPPORT") == 2
    assert emu.calls_by_method() == {
        "chat.postMessage": 1,
        "conversations.replies": 1,
        "conversations.history": 1,
    }
    snap = json.loads(json.dumps(emu.snapshot()))
    support = next(c for c in snap["channels"] if c["id"] == "C0SUPPORT")
    assert [(m["text"], m["thread_ts"], m["bot_id"]) for m in support["messages"]] == [
        ("p", None, None),
        ("r", parent, None),
    ]
    assert snap["requests"] == 3 and snap["requests_by_method"]["chat.postMessage"] == 1
    assert {u["id"] for u in snap["users"]} == {"U0OPERATOR", "U0CUSTOMER", "U0REVIEWER"}


def _control(emu: SlackEmulator, action: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(
        f"{emu.url}/_control/{action}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def test_http_control_api(web: WebClient, emu: SlackEmulator) -> None:
    posted = _control(emu, "post_as", {"channel": "D0SELF", "user": "U0OPERATOR", "text": "t"})
    assert posted["ok"] and posted["result"]["text"] == "t"
    _control(emu, "set_lag", {"channel": "D0SELF", "polls": 1})
    _control(emu, "post_as", {"channel": "D0SELF", "user": "U0OPERATOR", "text": "t2"})
    assert texts(web.conversations_history(channel="D0SELF")) == ["t"]
    assert [m["text"] for m in _control(emu, "messages", {"channel": "D0SELF"})["result"]] == [
        "t",
        "t2",
    ]
    _control(emu, "fault", {"kind": "status", "match": "users.info", "status": 500})
    with pytest.raises(SlackApiError) as info:
        web.users_info(user="U0CUSTOMER")
    assert info.value.response.status_code == 500
    assert _control(emu, "calls", {"method": "users.info"})["result"] == 1
    assert _control(emu, "delete_message", {"channel": "C404", "ts": "1.0"})["error"] == (
        "channel_not_found"
    )
    assert "bad arguments" in _control(emu, "post_as", {"nope": 1})["error"]
    assert _control(emu, "state", {})["channels"]

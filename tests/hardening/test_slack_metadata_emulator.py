"""L3: the Slack emulator keeps message metadata as Slack does — stored when posted, returned by
conversations.history / conversations.replies only with ``include_all_metadata`` — driven
through the real slack_sdk."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

META = {"event_type": "harness_post", "event_payload": {"kind": "post"}}


@pytest.fixture
def web(slack_emu: Any) -> WebClient:
    return WebClient(token="xoxp-0000000000-test-operator", base_url=slack_emu.url + "/api/")


def test_metadata_is_kept_and_returned_only_when_asked(web: WebClient) -> None:
    parent = web.chat_postMessage(channel="D0SELF", text="parent", metadata=META)
    web.chat_postMessage(channel="D0SELF", text="reply", thread_ts=parent["ts"], metadata=META)
    web.chat_postMessage(channel="D0SELF", text="plain", thread_ts=parent["ts"])
    plain = web.conversations_history(channel="D0SELF")["messages"]
    assert all("metadata" not in m for m in plain)
    full = web.conversations_history(channel="D0SELF", include_all_metadata=True)["messages"]
    assert [m.get("metadata") for m in full] == [META]
    thread = web.conversations_replies(
        channel="D0SELF", ts=parent["ts"], include_all_metadata=True
    )["messages"]
    assert [m.get("metadata") for m in thread] == [META, META, None]
    assert all(
        "metadata" not in m
        for m in web.conversations_replies(channel="D0SELF", ts=parent["ts"])["messages"]
    )


def test_malformed_metadata_is_refused_like_slack_does(web: WebClient) -> None:
    with pytest.raises(SlackApiError) as err:
        web.chat_postMessage(channel="D0SELF", text="x", metadata={"event_payload": {}})
    assert err.value.response["error"] == "invalid_metadata_format"

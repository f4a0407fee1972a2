"""The Slack emulator misbehaves the way Slack does, through the real slack_sdk: per-method rate
limits with Retry-After, and Slack-shaped errors for one channel or one thread."""

from __future__ import annotations

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from harness_cli.sandbox.slack_api import SlackEmulator


class Clock:
    now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_rate_limit_answers_429_with_retry_after_until_the_window_ends() -> None:
    clock = Clock()
    with SlackEmulator(clock=clock) as emu:
        assert isinstance(emu, SlackEmulator)
        web = WebClient(token="xoxp-1", base_url=emu.url + "/api/")
        emu.set_rate_limit("conversations.history", calls=2, seconds=60)
        for _ in range(2):
            web.conversations_history(channel="C0SUPPORT")
        clock.now += 15
        with pytest.raises(SlackApiError) as info:
            web.conversations_history(channel="C0SUPPORT")
        assert info.value.response.status_code == 429
        assert info.value.response.headers["Retry-After"] == "45"
        own = emu.post_as("D0SELF", "U0OPERATOR", "x")["ts"]
        web.conversations_replies(channel="D0SELF", ts=own)  # other methods are not limited
        clock.now += 45
        web.conversations_history(channel="C0SUPPORT")  # a fresh window


def test_fail_answers_one_channel_or_thread_with_slacks_error_shape() -> None:
    with SlackEmulator() as emu:
        assert isinstance(emu, SlackEmulator)
        web = WebClient(token="xoxp-1", base_url=emu.url + "/api/")
        emu.add_channel("C2", "two")
        parent = emu.post_as("C2", "U0CUSTOMER", "hello")["ts"]
        emu.fail("conversations.replies", "thread_not_found", channel="C2", ts=parent, times=1)
        emu.fail("conversations.history", "internal_error", channel="C2", times=-1, status=503)
        with pytest.raises(SlackApiError) as info:
            web.conversations_replies(channel="C2", ts=parent)
        assert info.value.response["error"] == "thread_not_found"
        assert web.conversations_replies(channel="C2", ts=parent)["messages"]  # once only
        for _ in range(2):
            with pytest.raises(SlackApiError) as info:
                web.conversations_history(channel="C2")
            assert info.value.response.status_code == 503
        web.conversations_history(channel="C0SUPPORT")  # other channels are unaffected

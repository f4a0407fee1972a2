"""A thread is evicted only once it is really gone, and never silently while its case is open
(issue #13, point 6). Slack answers thread_not_found for a parent it does not show yet (lag) and
now and then for no reason at all; neither may cost a live case its replies."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import payloads
from tests.intake.conftest import case_threads, poll, thread_replies


def test_a_transient_thread_not_found_does_not_evict_a_live_ticket_thread(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    ticket = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-81 payments bounce")
    poll(cli)
    slack_emu.fail(
        "conversations.replies", "thread_not_found", channel="C0SUPPORT", ts=ticket["ts"]
    )
    assert poll(cli)["evicted"] == []
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "it happened again", thread_ts=ticket["ts"])
    poll(cli)
    assert [p["trigger"]["kind"] for p in payloads(tmp_path, "followup")] == ["ticket_reply"]


def test_a_case_thread_still_lagging_after_it_was_posted_is_not_evicted(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    slack_emu.set_lag("D0SELF", polls=3)  # the harness's own post stays invisible a little while
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-82 reports are empty")
    data = poll(cli)
    assert data["new_cases"] == ["AAA-82"] and data["evicted"] == []
    slack_emu.set_lag("D0SELF", polls=0)
    assert poll(cli)["evicted"] == []
    [thread] = case_threads(slack_emu, "AAA-82")
    slack_emu.post_as("D0SELF", "U0OPERATOR", "start with the cron logs", thread_ts=thread["ts"])
    poll(cli)
    assert [p["trigger"]["kind"] for p in payloads(tmp_path, "followup")] == ["operator_reply"]


def test_a_deleted_ticket_thread_of_an_open_case_is_evicted_and_the_operator_told(
    cli,
    slack_emu,
    harness_ready: Path,  # type: ignore[no-untyped-def]
) -> None:
    ticket = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-83 login loops")
    poll(cli)
    [thread] = case_threads(slack_emu, "AAA-83")
    slack_emu.delete_message("C0SUPPORT", ticket["ts"])
    evicted: list[str] = []
    for _ in range(4):
        evicted += poll(cli)["evicted"]
    assert evicted == [f"C0SUPPORT/{ticket['ts']}"]
    said = [m["text"] for m in thread_replies(slack_emu, "D0SELF", thread["ts"])]
    assert len(said) == 1 and "no longer" in said[0]
    before = slack_emu.calls("conversations.replies", "C0SUPPORT")
    for _ in range(3):
        poll(cli)
    assert slack_emu.calls("conversations.replies", "C0SUPPORT") == before


def test_a_deleted_case_thread_is_evicted_and_said_in_the_self_dm(
    cli,
    slack_emu,
    harness_ready: Path,  # type: ignore[no-untyped-def]
) -> None:
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-84 refunds double")
    poll(cli)
    [thread] = case_threads(slack_emu, "AAA-84")
    slack_emu.delete_message("D0SELF", thread["ts"])  # the operator tidied the self-DM
    evicted: list[str] = []
    for _ in range(4):
        evicted += poll(cli)["evicted"]
    assert evicted == [f"D0SELF/{thread['ts']}"]
    said = [
        m["text"]
        for m in slack_emu.messages("D0SELF")
        if not m.get("thread_ts") and "no longer readable" in m["text"]
    ]
    assert len(said) == 1 and "AAA-84" in said[0] and "case thread" in said[0]

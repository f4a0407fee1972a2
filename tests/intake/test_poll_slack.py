"""poll-slack against the Slack emulator: tickets, replies, own posts, admin, pause."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import payloads


def _poll(cli) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, err
    return json.loads(out)["data"]


def test_a_ticket_becomes_a_case_a_case_thread_and_one_investigation(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    msg = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "Totals wrong for BBB-42 orders")
    data = _poll(cli)
    assert data["new_cases"] == ["BBB-42"]
    [payload] = payloads(tmp_path, "investigate")
    assert payload["case_id"] == "BBB-42" and payload["trigger"]["kind"] == "new_ticket"
    assert payload["channel"] == "C0SUPPORT" and payload["thread_ts"] == msg["ts"]
    case_dir = Path(payload["case_dir"])
    assert json.loads((case_dir / "message.json").read_text())["text"].startswith("Totals")
    dm = slack_emu.messages("D0SELF")
    assert len(dm) == 1 and "BBB-42" in dm[0]["text"]
    # the next cycles find nothing new: no second case thread, no second dispatch
    for _ in range(3):
        assert _poll(cli)["dispatched"] == []
    assert len(slack_emu.messages("D0SELF")) == 1
    assert len(payloads(tmp_path, "investigate")) == 1


def test_operator_reply_in_the_case_thread_dispatches_followup_and_own_posts_do_not(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "checkout is slow")
    _poll(cli)
    parent = slack_emu.messages("D0SELF")[0]
    slack_emu.post_as("D0SELF", "U0OPERATOR", "look at the db first", thread_ts=parent["ts"])
    data = _poll(cli)
    [followup] = payloads(tmp_path, "followup")
    assert followup["trigger"]["kind"] == "operator_reply"
    assert data["dispatched"] == [f"followup {followup['case_id']}"]
    assert _poll(cli)["dispatched"] == []


def test_admin_commands_in_the_self_dm_are_answered_in_thread(
    cli,
    slack_emu,
    harness_ready: Path,  # type: ignore[no-untyped-def]
) -> None:
    cmd = slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall status")
    data = _poll(cli)
    assert data["admin"] == ["admin: oncall status"]
    replies = [
        m
        for m in slack_emu.messages("D0SELF")
        if m.get("thread_ts") == cmd["ts"] and m["ts"] != cmd["ts"]
    ]
    assert len(replies) == 1 and "not paused" in replies[0]["text"]
    bad = slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: frobnicate now")
    _poll(cli)
    answer = [
        m
        for m in slack_emu.messages("D0SELF")
        if m.get("thread_ts") == bad["ts"] and m["ts"] != bad["ts"]
    ]
    assert "unknown admin command 'frobnicate'" in answer[0]["text"]
    assert "oncall pause [duration]" in answer[0]["text"]
    assert _poll(cli)["admin"] == []  # answered once, and our replies are not commands

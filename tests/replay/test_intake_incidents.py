"""Replays of the reference's Layer 1 and Layer 6 incidents, with their own parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import payloads


def _poll(cli) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, err
    return json.loads(out)["data"]


def _cursor(tmp_path: Path, channel: str) -> float:
    data = json.loads((tmp_path / "harness-home" / "slack-cursors.json").read_text())
    return float(data["channels"][channel]["oldest"])


def test_frozen_cursor_a_message_invisible_for_three_polls_is_not_skipped(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """ "A poller that sees an empty result and naively moves its cursor forward will skip,
    for good, any message whose ts falls inside that window." """
    _poll(cli)  # the channel's cursor exists, at the lookback start
    slack_emu.set_lag("C0SUPPORT", polls=3)
    late = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "visible only after three polls")
    for _ in range(3):
        assert _poll(cli)["new_cases"] == []
        assert _cursor(tmp_path, "C0SUPPORT") < float(late["ts"])  # frozen, not advanced
    assert len(_poll(cli)["new_cases"]) == 1
    for _ in range(3):
        assert _poll(cli)["new_cases"] == []
    assert len(payloads(tmp_path, "investigate")) == 1


def test_dead_thread_storm_evicted_threads_cost_zero_calls_in_later_cycles(
    cli,
    slack_emu,
    harness_ready: Path,  # type: ignore[no-untyped-def]
) -> None:
    """Before the fix a cycle made 12 retries for hours; after it, none. (Slack also answers
    thread_not_found for a thread it does not show yet, so a young thread is evicted only once
    the answer repeats across ``thread_gone_confirmations`` cycles.)"""
    for i in range(12):  # twelve customers: one would be folded by flood control (#28 R13)
        slack_emu.post_as("C0SUPPORT", f"U0CUSTOMER{i}", f"ticket {i}")
    _poll(cli)
    tickets = [m for m in slack_emu.messages("C0SUPPORT") if not m.get("thread_ts")]
    for msg in tickets:
        slack_emu.delete_message("C0SUPPORT", msg["ts"])
    evicted: list[str] = []
    for _ in range(3):
        evicted += _poll(cli)["evicted"]
    assert len(evicted) == 12
    # twelve open cases lost their ticket thread: the operator hears it once, not twelve times
    [told] = [m["text"] for m in slack_emu.messages("D0SELF") if "no longer readable" in m["text"]]
    assert "12 threads of open cases" in told
    before = slack_emu.calls("conversations.replies", "C0SUPPORT")
    for _ in range(5):
        assert _poll(cli)["evicted"] == []
    assert slack_emu.calls("conversations.replies", "C0SUPPORT") == before


def test_the_pause_that_paused_the_resume_command(
    cli,
    slack_emu,
    harness_ready: Path,  # type: ignore[no-untyped-def]
) -> None:
    """Version one paused everything, admin commands included: the operator could not resume."""
    slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall pause")
    _poll(cli)
    slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall resume")
    _poll(cli)
    _, out, _ = cli("status", "--json")
    assert json.loads(out)["data"]["paused"] is False


def test_the_auto_reply_that_fired_while_paused(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """A reply triggered by someone else's activity fired on another case while the pause
    looked in effect. Every automatic site asks the same gate."""
    ticket = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-3 reports are late")
    _poll(cli)
    cli("pause")
    slack_emu.post_as("C0SUPPORT", "U0REVIEWER", "same here, any news?", thread_ts=ticket["ts"])
    data = _poll(cli)
    assert data["held_back"] == ["followup AAA-3"]
    assert payloads(tmp_path, "followup") == []


def test_a_payload_dispatched_just_before_the_pause_does_not_run_during_it(
    cli,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """The same incident one step later: the dispatch happened, then the operator paused, then
    the worker started. The worker asks the gate again and stands down (exit 4)."""
    from harness_cli.dispatch.payload import Payload, Trigger, write_payload

    assert cli("case", "new", "--project", "team-a", "--title", "t", "--id", "AAA-4")[0] == 0
    payload = write_payload(
        Payload(
            workflow="followup",
            case_id="AAA-4",
            case_dir=str(tmp_path),
            trigger=Trigger(kind="ticket_reply", user="U0CUSTOMER"),
        )
    )
    cli("pause")
    code, _, err = cli("followup", "--payload", str(payload))
    assert code == 4 and "paused" in err
    _, out, _ = cli("status", "--json")
    assert json.loads(out)["data"]["held_back_total"] == 1
    # the operator's own reply is never held
    own = write_payload(
        Payload(
            workflow="consolidate",
            case_id="AAA-4",
            case_dir=str(tmp_path),
            trigger=Trigger(kind="operator_reply", user="U0OPERATOR"),
        )
    )
    code, _, err = cli("consolidate", "--payload", str(own))
    assert code != 4, err

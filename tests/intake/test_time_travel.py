"""Days of quiet under a moving HARNESS_NOW: a message the frozen cursor still re-reads must stay
deduplicated however long nothing new arrives (issue #13, point 2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import payloads
from tests.intake.conftest import case_threads, poll, thread_replies


def test_four_quiet_days_repeat_no_admin_command_and_no_followup(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    start = datetime.now(UTC)
    monkeypatch.setenv("HARNESS_NOW", start.isoformat())
    ticket = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-31 invoices are missing")
    poll(cli)
    [thread] = case_threads(slack_emu, "AAA-31")
    slack_emu.post_as("D0SELF", "U0OPERATOR", "check the export job", thread_ts=thread["ts"])
    command = slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall status")
    monkeypatch.setenv("HARNESS_NOW", (start + timedelta(seconds=1)).isoformat())
    poll(cli)
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "any news?", thread_ts=ticket["ts"])
    monkeypatch.setenv("HARNESS_NOW", (start + timedelta(seconds=2)).isoformat())
    poll(cli)
    assert len(payloads(tmp_path, "followup")) == 2
    assert len(thread_replies(slack_emu, "D0SELF", command["ts"])) == 1
    for hours in range(6, 4 * 24 + 1, 6):  # four days of quiet, a cycle every six hours
        monkeypatch.setenv("HARNESS_NOW", (start + timedelta(hours=hours)).isoformat())
        data = poll(cli)
        assert data["dispatched"] == [] and data["admin"] == [], f"after {hours} h: {data}"
    assert len(payloads(tmp_path, "followup")) == 2
    assert len(payloads(tmp_path, "investigate")) == 1
    assert len(thread_replies(slack_emu, "D0SELF", command["ts"])) == 1

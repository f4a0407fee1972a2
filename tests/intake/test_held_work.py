"""Work held during a pause is durable: resume and expiry replay it exactly once, in order, and
status lists it until then (issue #13, point 4)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import payloads
from tests.intake.conftest import poll, thread_replies


def _status(cli) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code, out, err = cli("status", "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)["data"]
    return data


def test_tickets_and_replies_held_by_a_pause_are_dispatched_once_at_resume(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    ticket = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-61 the invoice run is late")
    poll(cli)
    slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall pause")
    poll(cli)
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-62 refunds are stuck")
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "still late?", thread_ts=ticket["ts"])
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-63 and search is down")
    data = poll(cli)
    assert sorted(data["held_back"]) == [
        "followup AAA-61",
        "investigate AAA-62",
        "investigate AAA-63",
    ]
    held = _status(cli)["held_work"]
    assert [(h["workflow"], h["case_id"]) for h in held] == [
        ("investigate", "AAA-62"),
        ("investigate", "AAA-63"),
        ("followup", "AAA-61"),
    ]  # in the order they were held
    resume = slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall resume")
    poll(cli)
    [answer] = thread_replies(slack_emu, "D0SELF", resume["ts"])
    assert "replayed 3 held" in answer["text"]
    investigations = [p["case_id"] for p in payloads(tmp_path, "investigate")]
    assert investigations == ["AAA-61", "AAA-62", "AAA-63"]
    assert [p["case_id"] for p in payloads(tmp_path, "followup")] == ["AAA-61"]
    assert _status(cli)["held_work"] == []
    for _ in range(2):
        assert poll(cli)["dispatched"] == []
    assert len(payloads(tmp_path)) == 4


def test_a_timed_pause_that_expires_replays_what_it_held_once(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    start = datetime.now(UTC)
    monkeypatch.setenv("HARNESS_NOW", start.isoformat())
    assert cli("pause", "30m")[0] == 0
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-64 exports time out")
    assert poll(cli)["held_back"] == ["investigate AAA-64"]
    monkeypatch.setenv("HARNESS_NOW", (start + timedelta(minutes=20)).isoformat())
    poll(cli)
    status = _status(cli)
    assert status["paused"] is True and [h["case_id"] for h in status["held_work"]] == ["AAA-64"]
    monkeypatch.setenv("HARNESS_NOW", (start + timedelta(minutes=31)).isoformat())
    status = _status(cli)
    assert status["paused"] is False
    assert [h["case_id"] for h in status["held_work"]] == ["AAA-64"]  # until it is replayed
    data = poll(cli)
    assert data["dispatched"] == data["replayed"] == ["investigate AAA-64"]
    assert _status(cli)["held_work"] == []
    for minutes in (32, 33):
        monkeypatch.setenv("HARNESS_NOW", (start + timedelta(minutes=minutes)).isoformat())
        assert poll(cli)["dispatched"] == []
    assert [p["case_id"] for p in payloads(tmp_path, "investigate")] == ["AAA-64"]

"""One broken support channel must not stop intake: the self-DM is polled first and always, the
other channels go on, and the operator hears once per change (issue #13, point 5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import payloads
from tests.intake.conftest import poll, thread_replies


@pytest.fixture
def two_channels(slack_emu, harness_ready: Path) -> Any:  # type: ignore[no-untyped-def]
    projects = harness_ready / "projects.yaml"
    projects.write_text(
        projects.read_text().replace(
            'slack_channels: ["C0SUPPORT"]', 'slack_channels: ["C0BROKEN", "C0SUPPORT"]'
        )
    )
    return slack_emu


def _top_level_dms(emu: Any) -> list[str]:
    """The harness's top-level self-DM posts, case threads left out."""
    return [
        m["text"]
        for m in emu.messages("D0SELF")
        if not m.get("thread_ts") and "case *" not in m["text"]
    ]


def _break(emu: Any, how: str) -> str:
    """Make C0BROKEN fail the way Slack does; returns the Slack error the operator must see."""
    if how == "not_in_channel":
        emu.add_channel("C0BROKEN", "private-support", members=["U0CUSTOMER"])
    elif how == "channel_not_found":
        pass  # the channel does not exist (a typo in projects.yaml, or it was deleted)
    else:
        emu.add_channel("C0BROKEN", "support-2")
        emu.fail(
            "conversations.history", "internal_error", channel="C0BROKEN", times=-1, status=500
        )
        return "internal_error"
    return how


@pytest.mark.parametrize("how", ["not_in_channel", "channel_not_found", "server_error"])
def test_a_failing_channel_is_reported_once_and_the_others_go_on(
    cli,
    two_channels: Any,
    tmp_path: Path,
    how: str,  # type: ignore[no-untyped-def]
) -> None:
    emu = two_channels
    error = _break(emu, how)
    command = emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall pause 1h")
    emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-71 the cart is empty")
    data = poll(cli)
    assert data["new_cases"] == ["AAA-71"]
    assert len(thread_replies(emu, "D0SELF", command["ts"])) == 1  # the operator can still pause
    warnings = [t for t in _top_level_dms(emu) if "C0BROKEN" in t]
    assert len(warnings) == 1 and error in warnings[0]
    # #34 item 2: the DM names what gets it read again, and the command it points to shows it
    way_on = {"not_in_channel": "join <#C0BROKEN>", "channel_not_found": "projects.yaml",
              "server_error": "Nothing to do"}[how]  # fmt: skip
    assert way_on in warnings[0] and "`admin: oncall status`" in warnings[0], warnings[0]
    code, out, _ = cli("admin", "oncall status")
    assert code == 0 and "cannot read <#C0BROKEN> since" in out and error in out, out
    for _ in range(3):
        poll(cli)
    assert len([t for t in _top_level_dms(emu) if "C0BROKEN" in t]) == 1  # quiet until it changes
    # it heals: one word that it reads again, and its tickets flow
    emu.control("clear_faults", {})
    emu.add_channel("C0BROKEN", "support-2")
    emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall resume")
    emu.post_as("C0BROKEN", "U0CUSTOMER", "AAA-72 from the healed channel")
    data = poll(cli)
    assert "AAA-72" in data["new_cases"]
    notes = [t for t in _top_level_dms(emu) if "C0BROKEN" in t]
    assert len(notes) == 2 and "again" in notes[-1]
    assert {p["case_id"] for p in payloads(tmp_path, "investigate")} >= {"AAA-72"}

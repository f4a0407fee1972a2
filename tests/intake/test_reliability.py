"""poll-slack under Slack's real misbehaviour: read lag, 429 storms, dead threads, and the
Socket Mode listener racing the poller on the same messages."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import payloads
from tests.intake.conftest import no_intake_rate

CHANNELS = ["C0SUPPORT", "C0SUPPORT2", "C0SUPPORT3"]


@pytest.fixture
def three_channels(slack_emu, harness_ready: Path) -> Any:  # type: ignore[no-untyped-def]
    no_intake_rate(harness_ready)
    projects = harness_ready / "projects.yaml"
    text = projects.read_text().replace(
        'slack_channels: ["C0SUPPORT"]', 'slack_channels: ["C0SUPPORT", "C0SUPPORT2"]'
    )
    projects.write_text(text.replace("slack_channels: []", 'slack_channels: ["C0SUPPORT3"]'))
    slack_emu.add_channel("C0SUPPORT2", "support-2")
    slack_emu.add_channel("C0SUPPORT3", "support-3")
    return slack_emu


def _poll(cli) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, err
    return json.loads(out)["data"]


def test_fifty_lagging_messages_over_twenty_cycles_are_dispatched_exactly_once(
    cli,
    three_channels: Any,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    rng = random.Random(7)
    posted = 0
    for _cycle in range(20):
        for _ in range(rng.randint(2, 5) if posted < 50 else 0):
            if posted == 50:
                break
            channel = rng.choice(CHANNELS)
            three_channels.set_lag(channel, polls=rng.randint(0, 3))
            three_channels.post_as(channel, "U0CUSTOMER", f"ticket number {posted}")
            posted += 1
        _poll(cli)
    for _ in range(5):  # drain the last lags
        _poll(cli)
    assert posted == 50
    sent = payloads(tmp_path, "investigate")
    assert len(sent) == 50
    assert len({p["case_id"] for p in sent}) == 50


def test_a_429_storm_is_waited_out_and_nothing_is_lost_or_doubled(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from harness_cli.sandbox.httpbase import Fault

    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "first")
    slack_emu.add_fault(
        Fault(
            kind="status",
            match="conversations.history",
            status=429,
            headers={"Retry-After": "1"},
            times=2,
        )
    )
    started = time.monotonic()
    data = _poll(cli)
    assert time.monotonic() - started >= 2.0  # Retry-After honoured, twice
    assert data["rate_limited_waits"] == 2 and len(data["new_cases"]) == 1
    assert len(payloads(tmp_path, "investigate")) == 1


def test_a_retry_after_past_the_cycle_budget_ends_the_cycle_cleanly(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from harness_cli.sandbox.httpbase import Fault

    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "during the storm")
    slack_emu.add_fault(
        Fault(
            kind="status",
            match="conversations.history",
            status=429,
            headers={"Retry-After": "120"},
            times=1,
        )
    )
    data = _poll(cli)
    assert "cycle budget" in data["ended_early"]
    assert payloads(tmp_path, "investigate") == []
    cursors = tmp_path / "harness-home" / "slack-cursors.json"
    assert not cursors.exists() or "C0SUPPORT" not in json.loads(cursors.read_text())["channels"]
    assert len(_poll(cli)["new_cases"]) == 1  # the next cycle picks it up, once
    assert len(payloads(tmp_path, "investigate")) == 1


def test_poller_and_listener_racing_dispatch_each_message_once(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness_cli.intake.listener import listen
    from harness_cli.wiring import intake_context

    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-A0HARNESS-0000-test")
    no_intake_rate(harness_ready)
    stop = threading.Event()
    listener = threading.Thread(
        target=listen,
        args=(intake_context(),),
        kwargs={"stop": stop, "ping_interval": 0.5},
        daemon=True,
    )
    listener.start()
    deadline = time.monotonic() + 10
    while not slack_emu.snapshot()["socket_mode"]["connections"] and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        for i in range(20):
            slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"race {i}")
            if i % 4 == 0:
                _poll(cli)
        for _ in range(3):
            _poll(cli)
            time.sleep(0.3)
    finally:
        stop.set()
        listener.join(timeout=10)
    sent = payloads(tmp_path, "investigate")
    assert len(sent) == 20 and len({p["case_id"] for p in sent}) == 20
    assert slack_emu.acks(), "the listener took part in the race"

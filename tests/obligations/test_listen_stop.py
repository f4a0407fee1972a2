"""#20 point 6: ``harness listen`` stops within a few seconds of SIGTERM or SIGINT — also while
it handles a message and Slack makes it wait (429 Retry-After) — and what it left half done is
finished once by the next poll-slack cycle."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.httpbase import Fault
from tests.intake.conftest import assert_exactly_once, poll, spawn

STOP_WITHIN_S = 5.0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_listen_stops_within_seconds_of_a_signal_while_slack_makes_it_wait(
    cli: Any,
    slack_emu: Any,
    harness_ready: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sig: signal.Signals,
) -> None:
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-A0HARNESS-0000-test")
    poll(cli)  # cursors exist: the poller reads only what is new from here on
    before = slack_emu.snapshot()["socket_mode"]["connects"]
    proc = spawn("listen")
    deadline = time.monotonic() + 20
    while slack_emu.snapshot()["socket_mode"]["connects"] <= before:
        assert time.monotonic() < deadline, "listen never connected"
        time.sleep(0.05)
    # The ticket's handling asks Slack for its permalink; Slack says: wait 25 s, every time.
    slack_emu.add_fault(
        Fault(kind="status", match="chat.getPermalink", status=429,
              headers={"Retry-After": "25"}, times=-1)
    )  # fmt: skip
    ticket = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "checkout is down")
    deadline = time.monotonic() + 10
    while slack_emu.calls("chat.getPermalink") == 0:
        assert time.monotonic() < deadline, "listen never handled the ticket"
        time.sleep(0.05)
    signalled = time.monotonic()
    proc.send_signal(sig)
    try:
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    took = time.monotonic() - signalled
    assert took < STOP_WITHIN_S, f"listen took {took:.1f} s to stop after {sig.name}"
    assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else ""
    slack_emu.control("clear_faults", {})
    poll(cli)  # the message listen left in flight is taken over at once (its process is gone)
    assert_exactly_once(tmp_path, slack_emu, [ticket])

"""#17 point 8 for `mr-monitor`: SIGKILL the real cycle right after its escalation DM landed at
Slack (before the outbox recorded it) and right after it was recorded in flight; the next cycle
finishes the work exactly once — one "still red" DM, no second dispatch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from harness_cli.faults import ENV
from tests.delivery.test_mr_monitor import World, emu, world  # noqa: F401
from tests.obligations.campaign import FULL, assert_clean, record

STEPS = ["outbox.attempting:1", "outbox.landed:1"] if FULL else ["outbox.landed:1"]


@pytest.mark.parametrize("point", STEPS)
def test_a_cycle_killed_around_its_escalation_dm_tells_the_operator_exactly_once(
    world: World,  # noqa: F811
    point: str,
) -> None:
    world.open_mr("harness/AAA-1")
    world.cycle()
    for _ in range(3):
        world.push("harness/AAA-1")
        if len(world.dispatched()) < 3:
            world.cycle()
    proc = subprocess.run(
        [sys.executable, "-m", "harness_cli", "mr-monitor"],
        env={**os.environ, ENV: point},
        capture_output=True,
        timeout=180,
        check=False,
    )
    killed = proc.returncode == -signal.SIGKILL
    assert killed, (proc.returncode, proc.stderr[-1500:])
    for _ in range(3):
        world.cycle()
    told = [t for t in world.dms() if "still red" in t]
    figures = {
        "duplicates": max(0, len(told) - 1) + max(0, len(world.dispatched()) - 3),
        "lost": int(not told),
        "stuck": 0,
        "uncommitted": 0,
        "detail": world.dms(),
    }
    record("mr-monitor", point, {"killed": int(killed), **figures})
    assert_clean(figures)

"""SIGKILL poll-slack and listen at random instants and at every write step, with a slow Slack;
then one clean poll-slack cycle must leave every ticket with exactly one case (committed and
pushed), one case thread and one investigation dispatch (issue #13, point 1).

The heavy campaign (hundreds of kills) is bench/bench_crash.py; these are its small seeds."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from harness_cli.faults import ENV
from harness_cli.sandbox.httpbase import Fault
from harness_cli.services.git import Git
from tests.intake.conftest import assert_exactly_once, no_intake_rate, poll, spawn


@pytest.fixture
def remote(cli, config_dir: Path, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """`harness init` with a bare workspace remote, so pushes are part of what can crash."""
    bare = tmp_path / "workspace-remote.git"
    bare.mkdir()
    Git(bare).run("init", "-q", "--bare", "--initial-branch=main")
    code, _, err = cli("init", "--remote", f"file://{bare}")
    assert code == 0, err
    no_intake_rate(config_dir)
    return bare


def _pushed(bare: Path, tickets: list[dict[str, Any]]) -> list[str]:
    tree = Git(bare).run("ls-tree", "-r", "--name-only", "main")
    return [
        t["ts"] for t in tickets if f"slack-C0SUPPORT-{t['ts'].replace('.', '-')}/case.json" in tree
    ]


@pytest.mark.parametrize("seed", [1313, 2027])
def test_sigkill_at_random_instants_with_a_slow_slack_loses_and_doubles_nothing(
    cli,
    slack_emu,
    remote: Path,
    tmp_path: Path,
    seed: int,  # type: ignore[no-untyped-def]
) -> None:
    rng = random.Random(seed)
    slack_emu.add_fault(Fault(kind="delay", seconds=0.02, times=-1))
    tickets: list[dict[str, Any]] = []
    kills = 0
    for _ in range(6):
        for _ in range(rng.randint(1, 2)):
            n = len(tickets)
            tickets.append(slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"ticket number {n}"))
        proc = spawn("poll-slack")
        time.sleep(rng.uniform(0.35, 1.4))
        proc.send_signal(signal.SIGKILL)
        kills += proc.wait() == -signal.SIGKILL
    assert kills >= 3, "the kills must land while poll-slack runs"
    slack_emu.control("clear_faults", {})
    poll(cli)  # one clean cycle repairs everything
    assert_exactly_once(tmp_path, slack_emu, tickets)
    assert len(_pushed(remote, tickets)) == len(tickets)
    poll(cli)  # and the next cycle finds nothing to redo
    assert_exactly_once(tmp_path, slack_emu, tickets)


# Every durable step of a poll cycle that opens two new cases, by its crash point and hit.
POLL_STEPS = [
    "intake.claimed:1",
    "case.dir:1",
    "case.message:2",
    "case.json:1",
    "intake.thread_map:2",
    "intake.case_thread_posted:1",
    "intake.case_thread:2",
    "dispatch.payload:1",
    "dispatch.started:2",
    "intake.handled:2",
    "workspace.committed:1",
    "workspace.pushed:1",
    "intake.done:1",
]


def test_sigkill_at_every_write_step_of_poll_slack_then_one_clean_cycle_repairs(
    cli,
    slack_emu,
    remote: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    tickets: list[dict[str, Any]] = []
    for step in POLL_STEPS:
        for _ in range(2):
            n = len(tickets)
            tickets.append(slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"ticket number {n}"))
        proc = spawn("poll-slack", env={ENV: step})
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, f"{step} was never reached: {err.decode()}"
        poll(cli)
        assert_exactly_once(tmp_path, slack_emu, tickets)
        assert len(_pushed(remote, tickets)) == len(tickets), step


LISTEN_STEPS = [
    "intake.claimed",
    "case.json",
    "intake.case_thread_posted",
    "dispatch.payload",
    "workspace.committed",
    "intake.done",
]


def test_sigkill_of_listen_at_each_write_step_is_repaired_by_the_next_poll(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-A0HARNESS-0000-test")
    no_intake_rate(harness_ready)
    poll(cli)  # the cursors exist: the poller reads only what is new from here on
    tickets: list[dict[str, Any]] = []
    for step in LISTEN_STEPS:
        before = slack_emu.snapshot()["socket_mode"]["connects"]
        proc = spawn("listen", "--for", "30", env={ENV: step})
        deadline = time.monotonic() + 20
        while slack_emu.snapshot()["socket_mode"]["connects"] <= before:
            assert time.monotonic() < deadline, "listen never connected"
            time.sleep(0.05)
        tickets.append(slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"socket ticket {step}"))
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, f"{step} was never reached: {err.decode()}"
        poll(cli)
        assert_exactly_once(tmp_path, slack_emu, tickets)

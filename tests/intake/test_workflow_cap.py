"""At most ``max_running_workflows`` workflows run at once on one machine (#28 R13), end to end:
`harness poll-slack` with ``local`` dispatch on the emulators starts real `harness investigate`
processes (the harness's own loop, a scripted model). With a cap of 2 and three tickets, two
start and one waits in run-queue.json — on disk, so any later process starts them —
and each run that ends hands its slot to the oldest waiting one. Before, all three started at
once (a flood of 60 started 60)."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.runner import Sandbox
from tests.conftest import REPO
from tests.intake.conftest import poll

pytestmark = pytest.mark.slow

CAP = 2
"""Two at a time, in one HARNESS_HOME: each run's guard watches the pre-commitment records the
other's harness writes (agents/guard.py ``harness_write``); the third ticket waits."""
TICKETS = 3


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sb") as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        monkeypatch.setenv("HARNESS_DISPATCH", "local")
        shutil.copytree(REPO / "agent-config", tmp_path / "agent-config")
        shutil.copytree(REPO / "sops", tmp_path / "sops")
        config = tmp_path / "agent-config" / "harness.yaml"
        config.write_text(config.read_text() + f"max_running_workflows: {CAP}\n")
        sandbox.anthropic.load_script("inv_honest")
        yield sandbox


def _holding(home: Path) -> int:
    """Workflow slots held right now (their flocks in /proc/locks)."""
    # device and inode: another test's lock elsewhere may have the same inode number
    keys = {
        f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        for st in (p.stat() for p in (home / "locks").glob("workflow-slot-*.lock"))
    }
    table = [line.split() for line in Path("/proc/locks").read_text().splitlines()]
    return sum(1 for f in table if len(f) > 5 and f[1] == "FLOCK" and f[5] in keys)


def test_three_tickets_with_a_cap_of_two_run_two_at_a_time_in_order(
    cli: Any, box: Sandbox, tmp_path: Path
) -> None:
    assert cli("init")[0] == 0
    tickets = [
        box.slack.post_as("C0SUPPORT", f"U0CUSTOMER{n}", f"AAA-{101 + n} bulk discount wrong")
        for n in range(TICKETS)
    ]

    data = poll(cli)

    assert len(data["dispatched"]) == TICKETS  # all handed over: one running, two waiting
    started = tmp_path / "harness-home" / "payloads" / ".started"
    assert len(list(started.glob("*.json"))) == CAP  # before: all at once
    queue = (tmp_path / "harness-home" / "run-queue.json").read_text()
    assert all(f"AAA-{101 + n}" in queue for n in range(CAP, TICKETS)), queue
    _, out, _ = cli("status", "--json")  # the operator sees who waits, in order
    waiting = json.loads(out)["data"]["waiting_for_a_slot"]
    assert [name.rsplit("-", 1)[-1] for name in waiting] == [
        f"{101 + n}.json" for n in range(CAP, TICKETS)
    ], waiting
    peak, deadline, polled = 0, time.monotonic() + 300, time.monotonic()
    while time.monotonic() < deadline:
        peak = max(peak, _holding(tmp_path / "harness-home"))
        analyses = list((tmp_path / "workspace" / "case-workspaces").glob("AAA-*/ANALYSIS.md"))
        if len(analyses) == TICKETS and _holding(tmp_path / "harness-home") == 0:
            break
        if time.monotonic() - polled > 5:  # a cycle now and then, as cron would run it
            poll(cli)
            polled = time.monotonic()
        time.sleep(0.1)
    else:
        pytest.fail(f"not every investigation ended: {len(analyses)} of {TICKETS}")

    assert peak == CAP, f"{peak} investigations held a slot at once"
    # each started once, in the tickets' order (first in, first started)
    marks = sorted(started.glob("*.json"))
    assert len(marks) == TICKETS
    at = {m.name: datetime.fromisoformat(m.read_text().strip()) for m in marks}
    order = sorted(at, key=at.__getitem__)
    assert [name.rsplit("-", 2)[-2:] for name in order] == [
        ["AAA", f"{101 + n}.json"] for n in range(TICKETS)
    ]
    # the waiting ones started only once a run had ended (its ANALYSIS.md is its last write)
    cases = tmp_path / "workspace" / "case-workspaces"
    first_end = min((cases / f"AAA-{101 + n}" / "ANALYSIS.md").stat().st_mtime for n in range(CAP))
    assert all(at[name].timestamp() >= first_end for name in order[CAP:])
    assert "AAA" not in (tmp_path / "harness-home" / "run-queue.json").read_text()
    # each run's pre-commitment record is still there: no run's revert took another's
    records = sorted(p.name for p in (tmp_path / "harness-home" / "precommit").glob("*.json"))
    assert records == [f"AAA-{101 + n}.json" for n in range(TICKETS)]
    assert len(tickets) == TICKETS

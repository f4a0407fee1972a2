"""1,000 live threads and a Slack that allows 100 replies calls a minute: cycle after cycle,
every thread gets polled, the newest included (issue #13, point 7)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.httpbase import Request
from harness_cli.sandbox.slack_api import SlackEmulator
from harness_cli.state.models import ThreadEntry, ThreadMap
from tests.conftest import payloads
from tests.intake.conftest import poll

THREADS = 1000


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SlackEmulator, Clock]]:
    clock = Clock()
    emu = SlackEmulator(clock=clock)
    emu.start()
    monkeypatch.setenv("SLACK_API_URL", emu.url + "/api/")
    monkeypatch.setenv("SLACK_USER_TOKEN", "xoxp-0000000000-test-operator")
    try:
        yield emu, clock
    finally:
        emu.stop()


def _seed_threads(emu: SlackEmulator, clock: Clock, tmp_path: Path) -> list[str]:
    """1,000 ticket threads the harness already tracks, opened days ago (their cases are not
    what this test is about, so they are registered directly)."""
    now = clock.now
    clock.now -= 3 * 86400
    parents = [
        emu.post_as("C0SUPPORT", "U0CUSTOMER", f"old ticket {i}")["ts"] for i in range(THREADS)
    ]
    clock.now = now
    tmap = ThreadMap()
    for i, ts in enumerate(parents):
        entry = ThreadEntry(
            channel="C0SUPPORT",
            thread_ts=ts,
            case_id=f"OLD-{i}",
            case_dir=str(tmp_path / "workspace" / "case-workspaces" / f"OLD-{i}"),
            project="team-a",
        )
        tmap.threads[ThreadMap.key("C0SUPPORT", ts)] = entry
    home = tmp_path / "harness-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "oncall_thread_map.json").write_text(tmap.model_dump_json())
    return parents


def _polled(emu: SlackEmulator) -> Counter[str]:
    """Thread ts → successful replies calls for it."""
    return Counter(
        str(Request(r.method, r.path, r.query, r.headers, r.body).arg("ts"))
        for r in emu.recorded("conversations.replies")
        if r.status == 200
    )


def test_under_a_rate_limit_every_live_thread_is_polled_within_ten_cycles(
    cli,
    limited: tuple[SlackEmulator, Any],
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """No budget of ours (0: no cap); Slack's Tier limit alone ends each cycle early."""
    harness_yaml = harness_ready / "harness.yaml"
    harness_yaml.write_text(
        harness_yaml.read_text().replace("poll_thread_budget: 50", "poll_thread_budget: 0")
    )
    emu, clock = limited
    parents = _seed_threads(emu, clock, tmp_path)
    clock.now = time.time() + 1  # after `harness init`: news, not history
    emu.post_as("C0SUPPORT", "U0CUSTOMER", "the newest thread has news", thread_ts=parents[-1])
    emu.set_rate_limit("conversations.replies", calls=100, seconds=60)
    cycles = 0
    while len(_polled(emu)) < THREADS and cycles < 12:
        cycles += 1
        data = poll(cli)
        assert data["errors"] == []
        clock.now += 60  # cron: a minute later, a fresh window
    assert len(_polled(emu)) == THREADS, f"{THREADS - len(_polled(emu))} never polled"
    assert cycles <= 10
    assert [p["case_id"] for p in payloads(tmp_path, "followup")] == [f"OLD-{THREADS - 1}"]


def test_the_thread_budget_caps_replies_calls_per_cycle_and_rotates(
    cli,
    limited: tuple[SlackEmulator, Any],
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    emu, clock = limited
    harness_yaml = harness_ready / "harness.yaml"
    harness_yaml.write_text(
        harness_yaml.read_text().replace("poll_thread_budget: 50", "poll_thread_budget: 100")
    )
    _seed_threads(emu, clock, tmp_path)
    for cycle in range(10):
        before = len(emu.recorded("conversations.replies"))
        poll(cli)
        assert len(emu.recorded("conversations.replies")) - before == 100, cycle
    assert len(_polled(emu)) == THREADS
    state = json.loads((tmp_path / "harness-home" / "slack-cursors.json").read_text())
    assert state["threads_next"]  # where the next cycle starts

"""The operator's Slack view (#16 p6): results reach Slack once, no-ops ping nobody, every
message names its case, and times read like times — on the Slack emulator, through the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness_cli import clock, paths
from harness_cli.sandbox.runner import Sandbox
from tests.improvement.conftest import new_case
from tests.improvement.corpus import gap_report, planted_reports, write_reports

SELF_DM = "D0SELF"


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config_dir: Path) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sb") as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        yield sandbox


def dms(box: Sandbox) -> list[dict[str, Any]]:
    return box.slack.messages(SELF_DM, metadata=True)


def test_gap_patterns_results_reach_slack_once_and_a_rerun_that_finds_nothing_new_is_quiet(
    box: Sandbox, cli: Any
) -> None:
    root = paths.cases_root()
    root.mkdir(parents=True)
    write_reports(root, planted_reports(60))
    assert cli("gap-patterns", "--no-post")[0] == 0
    assert dms(box) == []  # --no-post
    paths.state_file("gap-patterns.json").unlink()
    assert cli("gap-patterns")[0] == 0
    [summary] = dms(box)
    assert (
        summary["text"].startswith(":mag: gap-patterns:")
        and "recurring failure mode" in summary["text"]
    )
    assert "gap-patterns.md" in summary["text"]
    assert cli("gap-patterns")[0] == 0  # the same clusters again: nothing to tell
    assert len(dms(box)) == 1


def test_the_cron_sweep_with_nothing_to_propose_pings_nobody(
    box: Sandbox, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = new_case("AAA-7", status="closed")
    (folder / "gap_report_001.md").write_text(gap_report(confidence=10))  # dropped by the filter
    monkeypatch.setenv("HARNESS_NOW", "2027-06-01T00:00:00Z")  # long idle: due
    code, out, _ = cli("finalize", "--due", "--json")
    assert code == 0 and "nothing to propose" in out, out
    assert [m["text"] for m in dms(box)] == []
    # asked for by name, the operator gets the answer where they look
    folder = new_case("AAA-8", status="closed")
    (folder / "gap_report_001.md").write_text(gap_report(confidence=10))
    code, out, _ = cli("finalize", "AAA-8", "--json")
    assert code == 0 and "nothing to propose" in out
    [dm] = [m["text"] for m in dms(box)]
    assert dm.startswith("finalize AAA-8: no gap survived the filters"), dm


def test_every_notification_about_a_case_names_it(box: Sandbox, config_dir: Path) -> None:
    from harness_cli import wiring
    from harness_cli.config import load_config
    from harness_cli.outbox import notify

    cfg = load_config()
    notify.dm(wiring.outbound(cfg), cfg, "mr_merged", ":tada: acme/x!3 merged.", case_id="AAA-9")
    [message] = dms(box)
    assert message["text"] == "*AAA-9*: :tada: acme/x!3 merged."


def test_pause_times_read_like_times(
    box: Sandbox, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_NOW", "2026-12-01T14:01:00Z")
    code, out, _ = cli("admin", "oncall pause 29m", "--json")
    assert code == 0
    assert "until 14:30 UTC (in 29 min)" in out, out
    _, status, _ = cli("admin", "oncall status")
    assert "paused since 14:01 UTC (just now) until 14:30 UTC (in 29 min)" in status, status
    assert "T14:30:00" not in status  # never raw ISO


def test_human_and_relative_times() -> None:
    ref = datetime(2026, 12, 1, 14, 1, tzinfo=UTC)
    assert clock.human(datetime(2026, 12, 1, 14, 30, 12, 345, tzinfo=UTC), ref) == (
        "14:30 UTC (in 29 min)"
    )
    assert (
        clock.human(datetime(2026, 12, 3, 9, 0, tzinfo=UTC), ref) == "Dec 3 09:00 UTC (in 2 days)"
    )
    assert clock.relative(datetime(2026, 12, 1, 11, 0, tzinfo=UTC), ref) == "3 h ago"
    assert clock.relative(ref, ref) == "just now"

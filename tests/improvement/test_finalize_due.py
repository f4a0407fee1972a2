"""finalize without a model or GitLab: the idle timer on the harness clock (HARNESS_NOW), the
no_gaps outcome, idempotence, and the admin path (payload → workflow, lock → exit 3). A case
whose gaps are all dropped never builds a GitLab client or a runtime: none is configured here,
so one being built would fail the test."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness_cli.state.locks import workflow_lock
from tests.conftest import payloads
from tests.improvement.conftest import new_case
from tests.improvement.corpus import gap_report

T0 = "2026-11-29T08:00:00Z"


def finalize(cli: Any, *args: str, expect: int = 0) -> dict[str, Any]:
    code, out, err = cli("finalize", *args, "--json")
    assert code == expect, f"finalize exited {code}: {err}{out}"
    data: dict[str, Any] = json.loads(out.splitlines()[-1])
    return data


def patch_state(root: Path) -> dict[str, Any]:
    path = root / "harness-home" / "patch-pr-state.json"
    data: dict[str, Any] = json.loads(path.read_text())["cases"] if path.exists() else {}
    return data


def test_idle_timer_is_exact_on_the_harness_clock(
    ready: Path, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_NOW", T0)
    folder = new_case("AAA-21", status="closed")
    (folder / "gap_report_001.md").write_text(
        gap_report(confidence=20, created_at="2026-11-29T07:00:00Z")
    )
    new_case("AAA-22", status="closed")  # no gap report: never due
    monkeypatch.setenv("HARNESS_NOW", "2026-11-29T11:59:00Z")  # 3 h 59 m
    data = finalize(cli, "--due")
    assert [(c["case_id"], c["status"]) for c in data["data"]["cases"]] == [("AAA-21", "not_due")]
    assert data["data"]["cases"][0]["message"] == "idle 3h59m of 4h00m"
    assert patch_state(tmp_path) == {} and not (folder / "finalize.json").exists()
    monkeypatch.setenv("HARNESS_NOW", "2026-11-29T12:00:00Z")  # 4 h exactly
    data = finalize(cli, "--due")
    assert [(c["case_id"], c["status"]) for c in data["data"]["cases"]] == [("AAA-21", "no_gaps")]
    assert patch_state(tmp_path)["AAA-21"]["status"] == "no_gaps"
    monkeypatch.setenv("HARNESS_NOW", "2026-11-30T12:00:00Z")
    assert finalize(cli, "--due")["data"]["cases"] == []  # settled: not even listed


def test_a_newer_gap_report_restarts_the_idle_timer(
    ready: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_NOW", T0)
    folder = new_case("AAA-23", status="closed")
    (folder / "gap_report_001.md").write_text(
        gap_report(confidence=20, created_at="2026-11-29T10:30:00Z")
    )
    monkeypatch.setenv("HARNESS_NOW", "2026-11-29T14:29:00Z")
    assert finalize(cli, "--due")["data"]["cases"][0]["status"] == "not_due"
    monkeypatch.setenv("HARNESS_NOW", "2026-11-29T14:30:00Z")
    assert finalize(cli, "--due")["data"]["cases"][0]["status"] == "no_gaps"


def test_a_case_the_operator_chatted_on_minutes_ago_is_not_idle(
    ready: Path, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#14 point 12: idle counted only case.json and the gap reports, so a case the operator
    was talking about 11 minutes ago counted as idle for 4 h."""
    from harness_cli.memory import transcripts
    from harness_cli.memory.transcripts import TranscriptMeta
    from harness_cli.state import files
    from harness_cli.state.models import ThreadEntry

    monkeypatch.setenv("HARNESS_NOW", T0)
    folder = new_case("AAA-26", status="closed")
    (folder / "gap_report_001.md").write_text(
        gap_report(confidence=20, created_at="2026-11-29T08:00:00Z")
    )
    chat = datetime(2026, 11, 29, 12, 49, tzinfo=UTC)  # 11 minutes before "now" below
    opened = f"{datetime(2026, 11, 29, 8, tzinfo=UTC).timestamp():.6f}"
    with files.oncall_thread_map().update() as threads:  # a reply poll-slack read in the thread
        threads.threads[f"D0SELF/{opened}"] = ThreadEntry(
            channel="D0SELF", thread_ts=opened, case_id="AAA-26",
            case_dir=str(folder), role="case_thread", last_seen_ts=f"{chat.timestamp():.6f}",
        )  # fmt: skip
    monkeypatch.setenv("HARNESS_NOW", "2026-11-29T13:00:00Z")  # 5 h after the case and report
    [case] = finalize(cli, "--due")["data"]["cases"]
    assert (case["case_id"], case["status"]) == ("AAA-26", "not_due")
    assert case["message"] == "idle 0h11m of 4h00m"
    with files.oncall_thread_map().update() as threads:
        threads.threads.clear()
    transcripts.write(  # and a followup turn answered then
        folder, TranscriptMeta(turn=1, case_id="AAA-26", at=chat, trigger="operator_reply"), "hi"
    )
    [case] = finalize(cli, "--due")["data"]["cases"]
    assert case["status"] == "not_due" and case["message"] == "idle 0h11m of 4h00m"
    assert patch_state(tmp_path) == {}


def test_zero_surviving_gaps_is_no_gaps_and_a_rerun_says_so(
    ready: Path, cli: Any, tmp_path: Path, slack_emu: Any
) -> None:
    folder = new_case("AAA-24", status="awaiting_approval")
    (folder / "gap_report_001.md").write_text(gap_report(confidence=40))
    (folder / "gap_report_002.md").write_text(gap_report(category="other", confidence=99))
    (folder / "gap_report_003.md").write_text("garbage without front matter\n")
    data = finalize(cli, "AAA-24")
    [case] = data["data"]["cases"]
    assert case["status"] == "no_gaps" and case["kept"] == []
    assert (
        case["message"]
        == "no gap survived the filters (2 gap report(s), 2 dropped); nothing to propose"
    )
    entry = patch_state(tmp_path)["AAA-24"]
    assert entry["status"] == "no_gaps" and entry["reports"] == [
        "gap_report_001.md", "gap_report_002.md",
    ]  # fmt: skip
    assert "status: false_positive" in (folder / "gap_report_001.md").read_text()
    assert json.loads((folder / "retrospective.json").read_text())["ended_by"] == "finalized"
    [dm] = [m["text"] for m in slack_emu.messages("D0SELF")]
    assert dm.startswith("finalize AAA-24: no gap survived the filters")
    again = finalize(cli, "AAA-24")
    assert again["data"]["cases"][0]["status"] == "skipped"
    assert "already finalized: no gap survived the filters" in again["skipped"][0]
    assert len(slack_emu.messages("D0SELF")) == 1
    # a new report reopens the question; the settled ones stay dropped
    (folder / "gap_report_004.md").write_text(gap_report(confidence=10))
    [case] = finalize(cli, "AAA-24")["data"]["cases"]
    assert case["status"] == "no_gaps" and len(case["dropped"]) == 3
    assert {d["reason"] for d in case["dropped"]} >= {"already false positive"}


def test_admin_finalize_dispatches_the_workflow_and_a_second_copy_exits_3(
    ready: Path, cli: Any, tmp_path: Path, slack_emu: Any
) -> None:
    folder = new_case("AAA-25", status="closed")
    (folder / "gap_report_001.md").write_text(gap_report(confidence=10))
    code, _, err = cli("admin", "finalize AAA-25")
    assert code == 0, err
    [payload] = payloads(tmp_path, "finalize")
    assert payload["case_id"] == "AAA-25"
    [path] = sorted((tmp_path / "harness-home" / "payloads").glob("*finalize*.json"))
    with workflow_lock("finalize", "AAA-25"):
        code, _, err = cli("finalize", "--payload", str(path))
        assert code == 3 and "locked" in err
    [case] = finalize(cli, "--payload", str(path))["data"]["cases"]
    assert case["status"] == "no_gaps" and case["case_id"] == "AAA-25"
    [case] = finalize(cli, "--payload", str(path))["data"]["cases"]
    assert case["status"] == "skipped"
    # asked from Slack: the answer goes back there, "already finalized" included
    assert [m["text"][:45] for m in slack_emu.messages("D0SELF")] == [
        "finalize AAA-25: no gap survived the filters ",
        "finalize AAA-25: already finalized: no gap su",
    ]
    finalize(cli, "AAA-25")  # by name on the command line: the answer is the output
    assert len(slack_emu.messages("D0SELF")) == 2


def test_usage_errors(ready: Path, cli: Any) -> None:
    code, _, err = cli("finalize")
    assert code == 2 and "CASE or --payload" in err
    code, _, err = cli("finalize", "AAA-1", "--due")
    assert code == 2 and "--due takes no CASE" in err
    code, _, err = cli("finalize", "NOPE-1")
    assert code == 2 and "no case 'NOPE-1'" in err

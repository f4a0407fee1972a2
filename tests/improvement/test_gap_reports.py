"""L0/L1: the tolerant gap-report reader and finalize's false-positive filter, on files in a
temp case folder."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness_cli.improvement import gap_reports
from harness_cli.improvement.gap_reports import parse_confidence, read_case_reports, triage
from harness_cli.improvement.thresholds import DEFAULT_CATEGORIES, ImprovementThresholds
from tests.improvement.corpus import gap_report


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("value", "expected"),
    [(80, 0.8), (1, 0.01), (0.8, 0.8), (80.0, 0.8), ("80%", 0.8), ("0.8", 0.8), ("72", 0.72),
     ("high", 0.9), ("LOW", 0.3), (None, None), ("sure", None), (True, None), (250, None)],
)  # fmt: skip
def test_confidence_forms(value: object, expected: float | None) -> None:
    assert parse_confidence(value) == expected


def test_reads_gap_analyzer_format_and_keeps_unknown_fields(tmp_path: Path) -> None:
    folder = tmp_path / "AAA-1"
    write(folder, "gap_report_002.md", gap_report(confidence=72, reviewer_note="kept"))
    write(folder, "gap_report_010.md", gap_report(category="mr_format", confidence="high"))
    write(folder, "gap_report_001.md", "---\nCategory: Wrong-Tool\nConfidence: 0.7\n"
          "Proposed Change: use kibana\nTarget: sops/x.md\n---\nprose\n")  # fmt: skip
    found = read_case_reports(folder)
    assert [r.path.name for r in found] == [
        "gap_report_001.md", "gap_report_002.md", "gap_report_010.md",
    ]  # fmt: skip
    first, second, third = found
    assert (first.category, first.confidence, first.proposed_change, first.target_file) == (
        "wrong_tool", 0.7, "use kibana", "sops/x.md",
    )  # fmt: skip
    assert second.case_id == "AAA-1" and second.key == "AAA-1/gap_report_002.md"
    assert second.confidence == 0.72 and second.extra["reviewer_note"] == "kept"
    assert second.extra["source"] == "gap_analyzer"
    assert "followup_transcript_002.md" in second.evidence
    assert second.created_at is not None and second.created_at.tzinfo is not None
    assert third.confidence == 0.9 and third.body.startswith("# ")


def test_broken_reports_are_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "AAA-2"
    write(folder, "gap_report_001.md", "no front matter at all\n")
    write(folder, "gap_report_002.md", "---\ncategory: [unclosed\n---\nprose\n")
    write(folder, "gap_report_003.md", "---\n- a list, not a mapping\n---\n")
    write(folder, "gap_report_004.md", "---\ncategory: skipped_source\nnever closed\n")
    write(folder, "gap_report_005.md", gap_report())
    write(folder, "notes.md", gap_report())  # not a gap report by name
    with caplog.at_level(logging.WARNING, logger="harness.improvement.gaps"):
        found = read_case_reports(folder)
    assert [r.path.name for r in found] == ["gap_report_005.md"]
    skipped = [r for r in caplog.records if r.getMessage().startswith("gap_report_skipped")]
    assert len(skipped) == 4


def test_triage_drops_low_confidence_out_of_scope_and_settled(tmp_path: Path) -> None:
    folder = tmp_path / "AAA-3"
    th = ImprovementThresholds()
    write(folder, "gap_report_001.md", gap_report(confidence=85))
    write(folder, "gap_report_002.md", gap_report(confidence=59))  # under 0.6
    write(folder, "gap_report_003.md", gap_report(confidence=60))  # exactly the bar: kept
    write(folder, "gap_report_004.md", gap_report(category="other", confidence=99))
    # a gap in a prompt is what the improvement MR is for (#14 point 12): kept
    write(folder, "gap_report_005.md", gap_report(category="prompt_gap", confidence=99))
    write(folder, "gap_report_006.md", gap_report(confidence=None))
    write(folder, "gap_report_007.md", gap_report(confidence=90, status="false_positive"))
    kept, dropped = triage(
        read_case_reports(folder),
        min_confidence=th.gap_min_confidence,
        categories=th.gap_categories_in_scope,
    )
    assert [r.path.name for r in kept] == [
        "gap_report_001.md",
        "gap_report_003.md",
        "gap_report_005.md",
    ]
    reasons = {d.report.path.name: d.reason for d in dropped}
    assert reasons["gap_report_002.md"] == "confidence 0.59 is under 0.60"
    assert "out of scope" in reasons["gap_report_004.md"]
    assert reasons["gap_report_006.md"] == "no readable confidence"
    assert reasons["gap_report_007.md"] == "already false positive"
    assert set(th.gap_categories_in_scope) == set(DEFAULT_CATEGORIES)


def test_configurable_filters(tmp_path: Path) -> None:
    folder = tmp_path / "AAA-4"
    write(folder, "gap_report_001.md", gap_report(category="prompt_gap", confidence=65))
    reports = read_case_reports(folder)
    kept, _ = triage(reports, min_confidence=0.6, categories=["prompt_gap"])
    assert len(kept) == 1
    kept, dropped = triage(reports, min_confidence=0.7, categories=["prompt_gap"])
    assert not kept and "under 0.70" in dropped[0].reason


def test_set_status_touches_only_that_line(tmp_path: Path) -> None:
    path = write(tmp_path / "AAA-5", "gap_report_001.md", gap_report())
    before = path.read_text()
    [report] = read_case_reports(path.parent)
    assert gap_reports.set_status(report, "accepted")
    after = path.read_text()
    assert after == before.replace("status: open", "status: accepted")
    assert not gap_reports.set_status(read_case_reports(path.parent)[0], "accepted")
    bare = write(tmp_path / "AAA-6", "gap_report_001.md", "---\ncategory: x\n---\nbody\n")
    [report] = read_case_reports(bare.parent)
    assert gap_reports.set_status(report, "false_positive")
    assert bare.read_text() == "---\ncategory: x\nstatus: false_positive\n---\nbody\n"

"""auto_retrospective on case folders holding what a real run leaves: failure modes sorted into
the three types from the gate verdicts, the last report's unchecked sources, the exit line and
the gap reports; written once (idempotent) into retrospective.json and case.json."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness_cli.config import load_config
from harness_cli.improvement.retrospective import read_retrospective, write_retrospective
from tests.improvement.conftest import new_case, report_block, write_iteration, write_review
from tests.improvement.corpus import gap_report


def commits(workspace: Path) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=workspace, capture_output=True, text=True
    )
    return int(out.stdout.strip() or 0)


def test_failure_modes_are_sorted_into_the_three_types(ready: Path, tmp_path: Path) -> None:
    folder = new_case("AAA-11", status="merged", exit_line="exit=stalled confidence=62%")
    write_iteration(folder, 1, ["A1", "G4", "REPORT"])
    last = report_block(
        unchecked_sources=[
            {"name": "orders DB direct query", "access_status": "probably restricted"},
            {"name": "billing API", "access_status": "403 Forbidden"},
        ]
    )
    write_iteration(folder, 2, ["EQ1", "A5", "A1"], output=last)
    write_review(folder, 2, ["G5", "P7"])
    (folder / "gap_report_001.md").write_text(gap_report(category="skipped_source"))
    (folder / "gap_report_002.md").write_text(gap_report(category="mr_format"))
    (folder / "gap_report_003.md").write_text(
        gap_report(category="wrong_tool", status="false_positive")
    )
    path = write_retrospective(load_config(), "AAA-11")
    assert path == folder / "retrospective.json"
    data = json.loads(path.read_text())
    assert data["ended_by"] == "merged" and data["project"] == "team-a"
    assert data["by_type"] == {
        "data_gathering": [
            "data_gathering/G4",
            "data_gathering/gap:skipped_source",
            "data_gathering/skipped:orders-db-direct-query",
        ],
        "quality_gate": ["quality_gate/A1", "quality_gate/EQ1", "quality_gate/P7"],
        "analysis_completeness": [
            "analysis_completeness/A5",
            "analysis_completeness/G5",
            "analysis_completeness/exit:stalled",
        ],
    }
    modes = {m["id"]: m for m in data["failure_modes"]}
    assert modes["data_gathering/skipped:orders-db-direct-query"]["label"] == (
        "skipped orders DB direct query"
    )
    assert modes["quality_gate/A1"]["evidence"] == [
        "iterations/01.json: [A1] A1 fired", "iterations/02.json: [A1] A1 fired",
    ]  # fmt: skip
    assert data["harness_gaps"] == {"mr_format": 1, "skipped_source": 1, "wrong_tool": 1}
    assert data["inputs"] == {"iterations": 2, "reviews": 1, "gap_reports": 3}
    summary = json.loads((folder / "case.json").read_text())["retrospective"]
    assert summary["modes"] == [m["id"] for m in data["failure_modes"]]


def test_written_once_and_rewritten_only_on_new_evidence(ready: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    folder = new_case("AAA-12", status="closed")
    write_iteration(folder, 1, ["A1"])
    cfg = load_config()
    write_retrospective(cfg, "AAA-12")
    first = (folder / "retrospective.json").read_bytes()
    case_json = (folder / "case.json").read_bytes()
    before = commits(workspace)
    write_retrospective(cfg, "AAA-12")
    assert (folder / "retrospective.json").read_bytes() == first
    assert (folder / "case.json").read_bytes() == case_json
    assert commits(workspace) == before  # nothing changed, nothing synced
    write_iteration(folder, 2, ["A5"])  # a re-opened case brings new evidence
    write_retrospective(cfg, "AAA-12")
    retro = read_retrospective(folder)
    assert retro is not None and retro.mode_ids() == [
        "quality_gate/A1", "analysis_completeness/A5",
    ]  # fmt: skip
    assert commits(workspace) == before + 1


def test_a_clean_case_records_no_failure_mode(ready: Path) -> None:
    folder = new_case("AAA-13", status="closed", exit_line="exit=complete confidence=91%")
    write_iteration(folder, 1, [], output=report_block())
    retro = read_retrospective(write_retrospective(load_config(), "AAA-13").parent)
    assert retro is not None and retro.failure_modes == [] and retro.ended_by == "closed"
    assert retro.by_type == {"data_gathering": [], "quality_gate": [], "analysis_completeness": []}


def test_unreadable_inputs_are_skipped(ready: Path) -> None:
    folder = new_case("AAA-14", status="closed")
    (folder / "iterations").mkdir()
    (folder / "iterations" / "01.json").write_text("{not json")
    write_iteration(folder, 2, ["N1"], output="no report here")
    (folder / "gap_report_001.md").write_text("broken")
    retro = read_retrospective(write_retrospective(load_config(), "AAA-14").parent)
    assert retro is not None and retro.mode_ids() == ["analysis_completeness/N1"]

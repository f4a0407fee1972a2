"""L0/L1 pieces: the followup prompt's budget, the gap report format and its parser, the
consolidator's answer contract, approval words."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from string import Template

import pytest

from harness_cli.errors import InputError
from harness_cli.memory import prompt
from harness_cli.memory.consolidate import extract_task_md
from harness_cli.memory.gap_analyzer import (
    GapFinding,
    GapReport,
    load_gap_reports,
    parse_findings,
    parse_gap_report,
    render_gap_report,
    write_reports,
)
from harness_cli.memory.replies import Reply, is_approval
from harness_cli.memory.transcripts import TranscriptMeta, list_all, write
from tests.conftest import REPO

TEMPLATE = Template((REPO / "agent-config" / "prompts" / "followup.md").read_text())


def _render(**values: str) -> str:
    return TEMPLATE.substitute(values).strip() + "\n"


def _inputs(folder: Path, transcripts: int, size: int = 900, **over: str) -> prompt.FollowupInputs:
    for n in range(transcripts):
        write(folder, TranscriptMeta(case_id="AAA-1"), f"## turn {n}\n" + f"word{n} " * (size // 6))
    fields = {"ticket": "ticket text", "task_md": "# task\n", "analysis_md": "# analysis\n", **over}
    return prompt.FollowupInputs(
        case_id="AAA-1", project="team-a", status="awaiting_approval", case_dir=str(folder),
        transcripts=list_all(folder), replies=[Reply("1.000200", "U0OPERATOR", "and now?",
        "case thread")], **fields,
    )  # fmt: skip


def test_everything_fits_nothing_is_left_out(tmp_path: Path) -> None:
    built = prompt.build(_inputs(tmp_path, 3), _render, 20_000)
    assert built.omitted == [] and built.cut == [] and len(built.included) == 3
    assert built.text.index("word0") < built.text.index("word2")  # in turn order


def test_the_oldest_transcripts_give_way_first_and_are_named(tmp_path: Path) -> None:
    built = prompt.build(_inputs(tmp_path, 10), _render, 6_000)
    assert len(built.text) <= 6_000
    assert built.omitted[0] == "followup_transcript_001.md" and built.included
    assert built.included[-1] == "followup_transcript_010.md"
    assert "followup_transcript_001.md" in built.text and "word0 " not in built.text
    assert "and now?" in built.text


def test_a_huge_analysis_is_cut_before_task_md(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, 0, analysis_md="A" * 20_000, task_md="T" * 1_500)
    built = prompt.build(inputs, _render, 6_000)
    assert len(built.text) <= 6_000 and built.cut == ["analysis"]
    assert "T" * 1_500 in built.text and "the whole text is in ANALYSIS.md" in built.text


def test_the_budget_holds_whatever_the_inputs(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, 5, ticket="K" * 30_000, analysis_md="A" * 30_000,
                     task_md="T" * 30_000)  # fmt: skip
    built = prompt.build(inputs, _render, 4_000)
    assert len(built.text) <= 4_000


def _report(**over: object) -> GapReport:
    data: dict[str, object] = {
        "category": "wrong_tool", "title": "Grep used to read a JSON log", "confidence": 64,
        "evidence": ["followup_transcript_002.md: the operator says jq was needed"],
        "proposed_change": "Name jq in the SOP's tool list", "target_file": "sops/INVESTIGATION.md",
        "id": "gap_report_001", "case_id": "AAA-1",
        "created_at": datetime(2026, 11, 29, 10, tzinfo=UTC), **over,
    }  # fmt: skip
    return GapReport.model_validate(data)


def test_gap_report_round_trips_through_its_file(tmp_path: Path) -> None:
    report = _report(transcripts=["followup_transcript_002.md"])
    text = render_gap_report(report)
    assert text.startswith("---\nschema_version: 1\n") and "\n# Grep used to read" in text
    assert parse_gap_report(text) == report
    (tmp_path / "gap_report_001.md").write_text(text)
    (tmp_path / "gap_report_002.md").write_text("---\ncategory: nonsense\n---\n")
    (tmp_path / "gap_report_notes.md").write_text("not a report")
    assert [r for _, r in load_gap_reports(tmp_path)] == [report]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("# no front matter\n", "no YAML front matter"),
        ("---\n: [\n---\n", "broken YAML"),
        ("---\ncategory: wrong_tool\n---\n", "title"),
    ],
)
def test_a_bad_gap_report_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        parse_gap_report(text, origin="gap_report_009.md")


@pytest.mark.parametrize("target", ["/etc/passwd", "../other-repo/x.py", "~/x"])
def test_target_file_stays_inside_the_harness_repo(target: str) -> None:
    with pytest.raises(ValueError, match="inside the harness repo"):
        _report(target_file=target)


def test_findings_keep_the_valid_gaps_and_name_the_bad_ones(tmp_path: Path) -> None:
    answer = """Two findings.
```json
{"gaps": [{"category": "missing_test", "title": "No test at exactly the threshold",
  "confidence": 80, "evidence": ["ANALYSIS.md: 10 units untested"],
  "proposed_change": "add a threshold test to the dev-agent prompt checklist",
  "target_file": "agent-config/prompts/dev-agent.md"},
 {"category": "vibes", "title": "x", "confidence": 500, "evidence": [],
  "proposed_change": "", "target_file": ""}]}
```"""
    good, problems = parse_findings(answer)
    assert [g.category for g in good] == ["missing_test"] and len(problems) == 1
    assert parse_findings("no json here") == ([], ['no {"gaps": [...]} JSON block in the answer'])
    assert parse_findings('{"gaps": []}') == ([], [])
    [path] = write_reports(tmp_path, "AAA-1", good, ["followup_transcript_001.md"])
    assert path.name == "gap_report_001.md"
    assert isinstance(parse_gap_report(path.read_text()), GapFinding)
    [second] = write_reports(tmp_path, "AAA-1", good, [])
    assert second.name == "gap_report_002.md"


def test_the_consolidator_answer_contract() -> None:
    assert extract_task_md("<task_md>\n# T\nbody\n</task_md>") == "# T\nbody\n"
    assert extract_task_md("<task_md>\n# T\nbody cut off mid-sen") is None
    assert extract_task_md("<task_md>\n</task_md>") is None
    assert extract_task_md("draft <task_md>old</task_md> final <task_md>new</task_md>") == "new\n"


@pytest.mark.parametrize(
    ("text", "user", "where", "approves"),
    [
        ("approve", "U0OPERATOR", "case thread", True),
        ("  Go ahead!! ", "U0OPERATOR", "case thread", True),
        ("Approved.", "U0OPERATOR", "case thread", True),
        ("go ahead and check the logs", "U0OPERATOR", "case thread", False),
        ("approve", "U0CUSTOMER", "case thread", False),
        ("approve", "U0OPERATOR", "ticket thread", False),
        ("I don't approve", "U0OPERATOR", "case thread", False),
    ],
)
def test_approval_words(text: str, user: str, where: str, approves: bool) -> None:
    assert is_approval(Reply("1.0", user, text, where), "U0OPERATOR") is approves


def test_finalize_and_gap_patterns_read_what_the_analyzer_writes(tmp_path: Path) -> None:
    """The improvement loop's own reader (a later stage) understands the written format."""
    reader = pytest.importorskip("harness_cli.improvement.gap_reports")
    finding = GapFinding(
        category="skipped_source", title="Never read the order-service logs", confidence=72,
        evidence=["followup_transcript_004.md: the operator pointed at them"],
        proposed_change="List the logs in the SOP", target_file="sops/team-a/SOP.md",
    )  # fmt: skip
    write_reports(tmp_path, "AAA-1", [finding], ["followup_transcript_004.md"])
    [read] = reader.read_case_reports(tmp_path, "AAA-1")
    assert (read.category, read.confidence, read.target_file, read.status) == (
        "skipped_source", 0.72, "sops/team-a/SOP.md", "open",
    )  # fmt: skip
    assert "order-service logs" in read.title and "operator pointed" in read.evidence
    reader.set_status(read, "accepted")
    [(_, mine)] = load_gap_reports(tmp_path)
    assert mine.status == "accepted"

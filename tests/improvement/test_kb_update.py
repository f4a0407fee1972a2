"""knowledge-updater on real case folders: tallies over each project's last 10 ended cases, the
2/10 → nothing, 3/10 → suggestion, 6/10 → alert bars, one DM per crossing through the Slack
emulator, projects kept apart, and a dry run that touches nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_cli import wiring
from harness_cli.config import load_config
from harness_cli.improvement.kb_update import kb_update
from harness_cli.improvement.thresholds import ImprovementThresholds
from tests.improvement.conftest import new_case, report_block, write_iteration

SKIPPED_DB = report_block(
    unchecked_sources=[{"name": "direct DB query", "access_status": "not checked, assumed same"}]
)


@pytest.fixture
def clock_steps(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Cases are created one minute apart, so "newest" is well defined."""
    minute = [0]

    def tick() -> None:
        minute[0] += 1
        monkeypatch.setenv("HARNESS_NOW", f"2026-11-02T{minute[0] // 60:02d}:{minute[0] % 60:02d}Z")

    return tick


def ended(tick: Any, case_id: str, codes: list[str], *, project: str = "team-a",
          skipped_db: bool = False, status: str = "closed") -> None:  # fmt: skip
    tick()
    folder = new_case(case_id, project=project, status=status)
    write_iteration(folder, 1, codes, output=SKIPPED_DB if skipped_db else report_block())


def seed_team_a(tick: Any) -> None:
    """11 ended cases, oldest first: G1 in 2 of the last 10 (and in the 11th, outside the
    window), the skipped DB query in 3, A5 in 6; then one case still open (not tallied)."""
    ended(tick, "AAA-100", ["G1", "G1"])  # outside the window
    plan = [
        (["G1", "A5"], True), (["G1", "A5"], True), (["A5"], True), (["A5"], False),
        (["A5"], False), (["A5"], False), ([], False), ([], False), ([], False), ([], False),
    ]  # fmt: skip
    for n, (codes, skipped) in enumerate(plan, 101):
        ended(tick, f"AAA-{n}", codes, skipped_db=skipped)
    tick()
    folder = new_case("AAA-200", status="awaiting_approval")
    write_iteration(folder, 1, ["G1", "A5"], output=SKIPPED_DB)


def test_thresholds_2_3_6_of_10(ready: Path, tmp_path: Path, slack_emu: Any, clock_steps) -> None:  # type: ignore[no-untyped-def]
    seed_team_a(clock_steps)
    cfg = load_config()
    sop = tmp_path / "sops" / "team-a" / "SOP.md"
    sop_before = sop.read_text()
    [outcome] = kb_update(cfg, ImprovementThresholds(), wiring.outbound(cfg), projects=["team-a"])
    assert outcome.tally.window == [f"AAA-{n}" for n in range(110, 100, -1)]
    counts = {m.id: m.count for m in outcome.tally.modes}
    assert counts == {
        "analysis_completeness/A5": 6,
        "data_gathering/skipped:direct-db-query": 3,
        "quality_gate/G1": 2,
    }
    path = tmp_path / "sops" / "team-a" / "SOP-suggestions.md"
    assert outcome.written and outcome.path == path
    text = path.read_text()
    assert "## 1. stopped at the symptom: causal chain not traced — 6 of 10 cases (alert)" in text
    assert "## 2. skipped direct DB query — 3 of 10 cases (suggestion)" in text
    assert (
        '"skipped direct DB query" fired 3 times in the last 10 cases → require direct DB '
        "query to be checked directly (or its exact error recorded) before any inference "
        "about what it holds." in text
    )
    assert "Cases: AAA-103, AAA-102, AAA-101" in text
    assert "G1" not in text and "AAA-100" not in text and "AAA-200" not in text
    assert sop.read_text() == sop_before  # never auto-applied
    [dm] = [m["text"] for m in slack_emu.messages("D0SELF")]
    assert dm.startswith("kb-update team-a: 1 failure mode(s) reached 6 of the last 10 cases.")
    assert '"stopped at the symptom: causal chain not traced" fired 6 times' in dm
    assert "nothing was applied to the SOP" in dm and "direct DB query" not in dm
    assert outcome.alerted == ["analysis_completeness/A5"]
    # every ended case in the window got its retrospective on the way
    assert all(
        (tmp_path / "workspace" / "case-workspaces" / c / "retrospective.json").exists()
        for c in outcome.tally.window
    )
    again = kb_update(cfg, ImprovementThresholds(), wiring.outbound(cfg), projects=["team-a"])
    assert not again[0].written and again[0].alerted == []
    assert len(slack_emu.messages("D0SELF")) == 1  # one alert per crossing


def test_a_mode_that_falls_under_the_bar_alerts_again_when_it_crosses(
    ready: Path, slack_emu: Any, clock_steps: Any
) -> None:
    cfg = load_config()
    th = ImprovementThresholds(kb_window=3, kb_suggest_at=2, kb_alert_at=2)
    for n in (1, 2):
        ended(clock_steps, f"AAA-{n}", ["A1"])
    assert kb_update(cfg, th, wiring.outbound(cfg))[0].alerted == ["quality_gate/A1"]
    for n in (3, 4):
        ended(clock_steps, f"AAA-{n}", [])
    assert kb_update(cfg, th, wiring.outbound(cfg))[0].alerted == []
    for n in (5, 6):
        ended(clock_steps, f"AAA-{n}", ["A1"])
    assert kb_update(cfg, th, wiring.outbound(cfg))[0].alerted == ["quality_gate/A1"]
    assert len(slack_emu.messages("D0SELF")) == 2


def test_projects_never_see_each_others_cases(
    ready: Path, tmp_path: Path, slack_emu: Any, clock_steps: Any
) -> None:
    cfg = load_config()
    for n in range(1, 5):
        ended(clock_steps, f"AAA-{n}", ["A1"], project="team-a")
        ended(clock_steps, f"XX-{n}", ["G4"], project="team-b", skipped_db=True)
    outcomes = {o.project: o for o in kb_update(cfg, ImprovementThresholds(), wiring.outbound(cfg))}
    a, b = outcomes["team-a"], outcomes["team-b"]
    assert a.tally.window == ["AAA-4", "AAA-3", "AAA-2", "AAA-1"]
    assert b.tally.window == ["XX-4", "XX-3", "XX-2", "XX-1"]
    assert [m.id for m in a.tally.modes] == ["quality_gate/A1"]
    assert [m.id for m in b.tally.modes] == [
        "data_gathering/G4", "data_gathering/skipped:direct-db-query",
    ]  # fmt: skip
    text_a = (tmp_path / "sops" / "team-a" / "SOP-suggestions.md").read_text()
    text_b = (tmp_path / "sops" / "team-b" / "SOP-suggestions.md").read_text()
    assert "XX-" not in text_a and "G4" not in text_a and "direct DB" not in text_a
    assert "AAA-" not in text_b and "A1" not in text_b
    assert slack_emu.messages("D0SELF") == []  # 4 of 10: suggestions, no alert


def test_dry_run_prints_and_touches_nothing(ready: Path, tmp_path: Path, cli, clock_steps) -> None:  # type: ignore[no-untyped-def]
    for n in range(1, 4):
        ended(clock_steps, f"AAA-{n}", ["EQ1"])
    cases = tmp_path / "workspace" / "case-workspaces"
    code, out, err = cli("kb-update", "--dry-run", "--project", "team-a")
    assert code == 0, err
    assert "# SOP suggestions — team-a" in out
    assert '"claimed more than 60% with no HARD evidence under the root cause" fired 3 times' in out
    assert not (tmp_path / "sops" / "team-a" / "SOP-suggestions.md").exists()
    assert not list(cases.glob("*/retrospective.json"))
    code, out, err = cli("kb-update", "--json", "--project", "team-a", "--project", "team-b")
    assert code == 0, err
    data = json.loads(out)["data"]["projects"]
    assert [p["project"] for p in data] == ["team-a", "team-b"]
    assert data[0]["written"] and data[0]["suggestions"][0]["mode"] == "quality_gate/EQ1"
    assert data[1]["cases"] == [] and not data[1]["written"]
    code, _, err = cli("kb-update", "--project", "nope")
    assert code == 2 and "no project nope" in err

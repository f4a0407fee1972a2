"""gap-patterns on synthetic corpora with planted failure modes: the clusters come back (adjusted
Rand index reported), ids and labels are stable, the ranked report prints as markdown and JSON,
and the largest clusters are handed to the next finalize exactly once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import adjusted_rand_score

from harness_cli import paths
from harness_cli.improvement import gap_patterns
from harness_cli.improvement.gap_reports import read_all_reports
from harness_cli.improvement.thresholds import ImprovementThresholds
from tests.improvement.corpus import THEMES, planted_reports, write_reports


def recovered(report: gap_patterns.GapPatterns, planted: list) -> float:  # type: ignore[type-arg]
    """ARI between the planted themes and the clusters found (every report, ranked or not)."""
    label = {m: i for i, c in enumerate(report.clusters) for m in c.members}
    keys = [f"{p.case_id}/{p.name}" for p in planted]
    return float(adjusted_rand_score([p.theme for p in planted], [label[k] for k in keys]))


@pytest.fixture
def cases_root() -> Path:
    root = paths.cases_root()
    root.mkdir(parents=True)
    return root


def test_planted_clusters_are_recovered_exactly(cases_root: Path, record_property: Any) -> None:
    planted = planted_reports(240)
    write_reports(cases_root, planted)
    report = gap_patterns.run_gap_patterns(ImprovementThresholds())
    ari = recovered(report, planted)
    record_property("adjusted_rand_index", round(ari, 3))
    print(f"\nexact linkage, {len(planted)} reports, {len(THEMES)} planted: ARI={ari:.3f}")
    assert ari >= 0.95
    assert len(report.ranked()) == len(THEMES) and report.unranked_reports == 0
    assert "exact" in report.method
    sizes = [c.size for c in report.ranked()]
    assert sizes == sorted(sizes, reverse=True) and [c.rank for c in report.ranked()] == list(
        range(1, len(THEMES) + 1)
    )
    by_target = {next(iter(c.targets)): c for c in report.ranked()}
    for category, target, fix, stem, words in THEMES:
        cluster = by_target[target]
        assert cluster.proposed_fix == fix
        own = {*words, *category.split("_"), *stem.lower().split(), *fix.lower().split()}
        assert len(cluster.terms) == 3 and set(cluster.terms) <= own, cluster.terms
        assert len(cluster.examples) == 3 and all(e.excerpt for e in cluster.examples)
        assert len(cluster.cases) > 1


def test_two_stage_path_recovers_them_too(cases_root: Path, record_property: Any) -> None:
    planted = planted_reports(900, seed=11)
    write_reports(cases_root, planted)
    th = ImprovementThresholds(gap_patterns_exact_max=100, gap_patterns_micro_clusters=60)
    report = gap_patterns.run_gap_patterns(th, write=False)
    ari = recovered(report, planted)
    record_property("adjusted_rand_index", round(ari, 3))
    print(f"\ntwo-stage linkage, {len(planted)} reports: ARI={ari:.3f}")
    assert "k-means" in report.method and ari >= 0.9


def test_ids_and_labels_are_stable_and_handed_clusters_stay_handed(cases_root: Path) -> None:
    planted = planted_reports(120, themes=4)
    write_reports(cases_root, planted[:100])
    th = ImprovementThresholds(gap_patterns_handoff_top=2)
    first = gap_patterns.run_gap_patterns(th)
    again = gap_patterns.run_gap_patterns(th)
    assert [(c.id, c.label, c.members) for c in first.clusters] == [
        (c.id, c.label, c.members) for c in again.clusters
    ]
    handed = [c.id for c in first.ranked() if c.handoff]
    assert handed == [c.id for c in first.ranked()[:2]]
    assert [c.id for c in gap_patterns.pending_clusters()] == handed
    gap_patterns.mark_handed(handed[:1], "AAA-9")
    write_reports(cases_root, planted[100:])  # the corpus grows: the same modes, more reports
    grown = gap_patterns.run_gap_patterns(th)
    assert {c.id for c in grown.ranked()} == {c.id for c in first.ranked()}
    taken = {c.id: c.handed_to for c in grown.clusters}
    assert taken[handed[0]] == "AAA-9"
    assert [c.id for c in gap_patterns.pending_clusters()] == [
        c.id for c in grown.ranked() if c.handoff and c.id != handed[0]
    ]


def test_cli_markdown_json_and_small_corpora(cases_root: Path, cli, config_dir: Path) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("gap-patterns")
    assert code == 0, err
    assert "No recurring failure mode yet." in out
    write_reports(cases_root, planted_reports(30, themes=3))
    (cases_root / "BROKEN-1").mkdir()
    (cases_root / "BROKEN-1" / "gap_report_001.md").write_text("not a report\n")
    code, out, err = cli("gap-patterns", "--top", "2")
    assert code == 0, err
    assert out.startswith("# Recurring failure modes (gap-patterns)")
    assert "30 gap reports, 3 recurring clusters" in out
    assert "## 1. " in out and "## 2. " in out and "## 3. " not in out
    assert "Proposed fix: " in out and "> CASE-" in out
    saved = json.loads((paths.home() / "gap-patterns.json").read_text())
    assert len(saved["clusters"]) == 3 and (paths.home() / "gap-patterns.md").exists()
    code, out, err = cli("gap-patterns", "--json", "--dry-run")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert data["reports"] == 30 and [c["rank"] for c in data["clusters"]] == [1, 2, 3]
    assert sum(c["handoff"] for c in data["clusters"]) == 3


def test_degenerate_corpora(cases_root: Path) -> None:
    th = ImprovementThresholds()
    assert gap_patterns.build([], th).clusters == []
    write_reports(cases_root, planted_reports(1))
    one = gap_patterns.build(read_all_reports(cases_root), th)
    assert len(one.clusters) == 1 and one.ranked() == [] and one.unranked_reports == 1


def test_admin_gap_patterns_runs_it(
    cases_root: Path, cli: Any, config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_reports(cases_root, planted_reports(12, themes=2))
    monkeypatch.setenv("HARNESS_DISPATCH", "inline")
    code, out, err = cli("admin", "gap-patterns")
    assert code == 0, err
    assert "gap-patterns started" in out
    saved = json.loads((paths.home() / "gap-patterns.json").read_text())
    assert saved["reports"] == 12 and len(saved["clusters"]) == 2

"""``harness gap-patterns`` (every two weeks; also ``admin: gap-patterns``): gap reports across
cases, grouped into recurring failure modes.

Reference: "After 30 cases there are 30 gap_report*.md files … A admin: gap-patterns run every
two weeks groups them into recurring failure modes, and the following finalize pass turns the
biggest clusters into MRs aimed at the harness repo."

- Clustering is the deterministic baseline of :mod:`clustering` (TF-IDF + agglomerative).
- Cluster ids are stable: a cluster keeps the id of the previous run's cluster it shares most
  reports with (Jaccard >= 0.5); a new one is named after its earliest report
  (``GP-<sha1 of case/report>[:8]``). Labels are the cluster's top three TF-IDF terms.
- Ranked by size, then cases spanned. Clusters under ``gap_patterns_min_cluster_size`` reports
  are counted, not ranked.
- The report goes to ``$HARNESS_HOME/gap-patterns.json`` (and ``gap-patterns.md``); the
  ``gap_patterns_handoff_top`` largest clusters spanning two or more cases are marked
  ``handoff``: the next finalize takes them as input and records itself in ``handed_to``, so
  each cluster is handed over once (a re-run keeps ``handed_to`` for a cluster keeping its id).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock, paths
from harness_cli.improvement.clustering import by_centrality, cluster_texts, top_terms
from harness_cli.improvement.gap_reports import GapReport, read_all_reports
from harness_cli.improvement.thresholds import ImprovementThresholds
from harness_cli.logs import event
from harness_cli.state.store import JsonFile, atomic_write_text

log = logging.getLogger("harness.improvement.gap_patterns")

CARRY_JACCARD = 0.5
"""A new cluster inherits a previous id when at least half of the union of their reports is
shared: the same failure mode, grown or trimmed."""


class Example(BaseModel):
    model_config = ConfigDict(extra="allow")
    report: str
    """``<case>/<gap_report file>``."""
    excerpt: str


class ClusterRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    label: str
    terms: list[str] = Field(default_factory=list)
    rank: int = 0
    """1 = largest; 0 = not ranked (under the minimum size)."""
    size: int
    cases: list[str]
    members: list[str]
    categories: dict[str, int] = Field(default_factory=dict)
    targets: dict[str, int] = Field(default_factory=dict)
    """Most named target files in the harness repo (top three)."""
    examples: list[Example] = Field(default_factory=list)
    proposed_fix: str = ""
    """The proposal most members make (else the most central member's)."""
    handoff: bool = False
    """Among the largest clusters handed to the next finalize."""
    handed_to: str | None = None
    """The case whose finalize took it (it is never handed over again)."""
    handed_at: datetime | None = None


class GapPatterns(BaseModel):
    """``$HARNESS_HOME/gap-patterns.json``."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    generated_at: datetime | None = None
    reports: int = 0
    method: str = ""
    seconds: float = 0.0
    clusters: list[ClusterRecord] = Field(default_factory=list)
    """Ranked clusters first (rank 1 …), then the small ones."""
    unranked_reports: int = 0

    def ranked(self) -> list[ClusterRecord]:
        return [c for c in self.clusters if c.rank > 0]


def patterns_file() -> JsonFile[GapPatterns]:
    return JsonFile(paths.state_file("gap-patterns.json"), GapPatterns)


# -- building the report --------------------------------------------------------------------
def build(
    reports: list[GapReport], th: ImprovementThresholds, previous: GapPatterns | None = None
) -> GapPatterns:
    started = time.perf_counter()
    reports = sorted(reports, key=lambda r: (r.case_id, _number(r), r.path.name))
    result = cluster_texts(
        [r.text() for r in reports],
        distance_threshold=th.gap_patterns_distance_threshold,
        exact_max=th.gap_patterns_exact_max,
        micro_clusters=th.gap_patterns_micro_clusters,
        svd_components=th.gap_patterns_svd_components,
        max_features=th.gap_patterns_max_features,
    )
    groups: dict[int, list[int]] = {}
    for index, label in enumerate(result.labels):
        groups.setdefault(label, []).append(index)
    clusters = [_record(reports, rows, result.matrix, result.terms, th) for rows in groups.values()]
    _assign_ids(clusters, previous)
    clusters.sort(key=lambda c: (-c.size, -len(c.cases), c.id))
    rank = 0
    for cluster in clusters:
        if cluster.size >= th.gap_patterns_min_cluster_size:
            rank += 1
            cluster.rank = rank
    recurring = [c for c in clusters if c.rank and len(c.cases) >= 2]
    for cluster in recurring[: th.gap_patterns_handoff_top]:
        cluster.handoff = True
    _keep_handed(clusters, previous)
    return GapPatterns(
        generated_at=clock.now(),
        reports=len(reports),
        method=result.method,
        seconds=round(time.perf_counter() - started, 3),
        clusters=clusters,
        unranked_reports=sum(c.size for c in clusters if not c.rank),
    )


def _number(report: GapReport) -> int:
    digits = "".join(ch if ch.isdigit() else " " for ch in report.path.stem).split()
    return int(digits[-1]) if digits else -1


def _record(
    reports: list[GapReport], rows: list[int], matrix: object, terms: list[str],
    th: ImprovementThresholds,
) -> ClusterRecord:  # fmt: skip
    members = [reports[i] for i in rows]
    central = [reports[i] for i in by_centrality(matrix, rows)]
    words = top_terms(matrix, rows, terms)
    proposals = Counter(" ".join(r.proposed_change.split()) for r in members if r.proposed_change)
    order = {" ".join(r.proposed_change.split()): n for n, r in enumerate(central)}
    fix = min(proposals, key=lambda p: (-proposals[p], order.get(p, 0)), default="")
    return ClusterRecord(
        id="GP-" + hashlib.sha1(members[0].key.encode()).hexdigest()[:8],
        label=" / ".join(words) or members[0].category.replace("_", " "),
        terms=words,
        size=len(members),
        cases=sorted({r.case_id for r in members}),
        members=[r.key for r in members],
        categories=dict(Counter(r.category for r in members).most_common()),
        targets=dict(Counter(r.target_file for r in members if r.target_file).most_common(3)),
        examples=[
            Example(report=r.key, excerpt=r.excerpt()) for r in central[: th.gap_patterns_examples]
        ],
        proposed_fix=fix,
    )


def _assign_ids(clusters: list[ClusterRecord], previous: GapPatterns | None) -> None:
    """Carry the previous run's ids over by member overlap, best matches first; the others
    keep the id of their earliest report (suffixed on the rare collision)."""
    used: set[str] = set()
    carried: set[int] = set()
    if previous is not None:
        old = {c.id: set(c.members) for c in previous.clusters}
        pairs = []
        for index, cluster in enumerate(clusters):
            mine = set(cluster.members)
            for old_id, theirs in old.items():
                shared = len(mine & theirs)
                if shared:
                    pairs.append((shared / len(mine | theirs), old_id, index))
        for score, old_id, index in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
            if score < CARRY_JACCARD or old_id in used or index in carried:
                continue
            clusters[index].id = old_id
            used.add(old_id)
            carried.add(index)
    for index, cluster in enumerate(clusters):
        if index in carried:
            continue
        base, n = cluster.id, 1
        while cluster.id in used:
            cluster.id = f"{base}-{n}"
            n += 1
        used.add(cluster.id)


def _keep_handed(clusters: list[ClusterRecord], previous: GapPatterns | None) -> None:
    if previous is None:
        return
    handed = {c.id: c for c in previous.clusters if c.handed_to}
    for cluster in clusters:
        old = handed.get(cluster.id)
        if old is not None:
            cluster.handed_to, cluster.handed_at = old.handed_to, old.handed_at


def run_gap_patterns(th: ImprovementThresholds, *, write: bool = True) -> GapPatterns:
    """Read every case's gap reports, cluster them and (unless ``write`` is false) save the
    report and its markdown to ``$HARNESS_HOME``."""
    reports = read_all_reports(paths.cases_root())
    handle = patterns_file()
    if not write:
        return build(reports, th, handle.read())
    with handle.update() as state:
        report = build(reports, th, state)
        for name in GapPatterns.model_fields:
            setattr(state, name, getattr(report, name))
    atomic_write_text(paths.state_file("gap-patterns.md"), render_markdown(report))
    event(
        log, "gap_patterns", reports=report.reports, clusters=len(report.ranked()),
        handoff=[c.id for c in report.clusters if c.handoff], seconds=report.seconds,
    )  # fmt: skip
    return report


# -- the hand-off to finalize ---------------------------------------------------------------
def pending_clusters() -> list[ClusterRecord]:
    """The largest clusters no finalize has taken yet, largest first."""
    state = patterns_file().read()
    return [c for c in state.ranked() if c.handoff and not c.handed_to]


def mark_handed(ids: list[str], case_id: str) -> None:
    if not ids:
        return
    with patterns_file().update() as state:
        for cluster in state.clusters:
            if cluster.id in ids and not cluster.handed_to:
                cluster.handed_to, cluster.handed_at = case_id, clock.now()


# -- rendering ------------------------------------------------------------------------------
def render_markdown(report: GapPatterns, *, top: int | None = None) -> str:
    ranked = report.ranked()[:top] if top else report.ranked()
    lines = [
        "# Recurring failure modes (gap-patterns)",
        "",
        f"{report.reports} gap reports, {len(report.ranked())} recurring clusters, "
        f"{report.unranked_reports} reports in clusters under the minimum size.",
        f"Method: {report.method or 'none'}.",
        "",
    ]
    if not ranked:
        lines.append("No recurring failure mode yet.")
    for cluster in ranked:
        handed = (
            f" — handed to finalize of {cluster.handed_to}"
            if cluster.handed_to
            else (" — handed to the next finalize" if cluster.handoff else "")
        )
        lines += [
            f"## {cluster.rank}. {cluster.label} ({cluster.id}){handed}",
            "",
            f"{cluster.size} reports in {len(cluster.cases)} cases: {', '.join(cluster.cases[:12])}"
            + (" …" if len(cluster.cases) > 12 else ""),
            "Categories: " + ", ".join(f"{k} {v}" for k, v in cluster.categories.items()),
        ]
        if cluster.targets:
            lines.append("Targets: " + ", ".join(f"`{k}`" for k in cluster.targets))
        if cluster.proposed_fix:
            lines.append(f"Proposed fix: {cluster.proposed_fix}")
        lines.append("")
        lines += [f"> {e.report}: {e.excerpt}" for e in cluster.examples]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def report_path() -> Path:
    return paths.state_file("gap-patterns.md")


def fingerprint(report: GapPatterns) -> list[tuple[str, int, bool]]:
    """What the operator would be told about: each recurring cluster, its size, its hand-off."""
    return [(c.id, c.size, c.handoff) for c in report.ranked()]


def slack_summary(report: GapPatterns, *, top: int = 5) -> str:
    """The operator's DM after a run that found something new (#16: results reach Slack, and a
    run that changed nothing pings nobody). The whole report stays in gap-patterns.md."""
    ranked = report.ranked()
    lines = [
        f":mag: gap-patterns: {len(ranked)} recurring failure mode(s) across "
        f"{report.reports} gap reports"
    ]
    for cluster in ranked[:top]:
        handed = " — for the next finalize" if cluster.handoff and not cluster.handed_to else ""
        lines.append(
            f"{cluster.rank}. {cluster.label} ({cluster.size} reports, "
            f"{len(cluster.cases)} cases: {', '.join(cluster.cases[:4])}"
            + (" …" if len(cluster.cases) > 4 else "")
            + f"){handed}"
        )
    if len(ranked) > top:
        lines.append(f"… and {len(ranked) - top} more")
    lines.append(f"The whole report: {report_path()}")
    return "\n".join(lines)

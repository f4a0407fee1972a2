"""[gap-patterns] 10,000 synthetic gap reports (gap_analyzer's format, 8 planted failure modes,
3 reports per case) clustered end to end: read from a temp workspace, TF-IDF, the two-stage
agglomerative clustering, ranking, the JSON and markdown written to $HARNESS_HOME.

Goal: < 10 s wall on this machine. Printed: wall time (whole run, and the clustering step the
report records), peak memory (the process's peak RSS from ``resource.getrusage``, before and
after the run; tracemalloc is left off because its bookkeeping would triple the wall time of
10,000 YAML parses), the adjusted Rand index against the planted modes.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

REPORTS = int(os.environ.get("BENCH_GAP_REPORTS", "10000"))
GOAL_S = 10.0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ.update(
            HARNESS_HOME=str(root / "home"),
            HARNESS_WORKSPACE=str(root / "ws"),
            HARNESS_CONFIG=str(REPO / "agent-config"),
        )
        from sklearn.metrics import adjusted_rand_score

        from harness_cli import paths
        from harness_cli.improvement.gap_patterns import run_gap_patterns
        from harness_cli.improvement.thresholds import ImprovementThresholds
        from tests.improvement.corpus import THEMES, planted_reports, write_reports

        planted = planted_reports(REPORTS)
        write_reports(paths.cases_root(), planted)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        started = time.perf_counter()
        report = run_gap_patterns(ImprovementThresholds())
        wall = time.perf_counter() - started
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        label = {m: i for i, c in enumerate(report.clusters) for m in c.members}
        ari = adjusted_rand_score(
            [p.theme for p in planted], [label[f"{p.case_id}/{p.name}"] for p in planted]
        )
        print(f"reports:            {report.reports} ({len(THEMES)} planted modes)")
        print(f"method:             {report.method}")
        print(f"clusters ranked:    {len(report.ranked())}  unranked reports: "
              f"{report.unranked_reports}")  # fmt: skip
        print(f"wall, whole run:    {wall:.2f} s  (goal < {GOAL_S:.0f} s)")
        print(f"wall, clustering:   {report.seconds:.2f} s")
        print(f"peak RSS:           {rss_after:.0f} MiB (before the run: {rss_before:.0f} MiB)")
        print(f"adjusted Rand index {ari:.3f}")
        if wall >= GOAL_S:
            print(f"FAILED: {wall:.2f} s is over the {GOAL_S:.0f} s goal")
            sys.exit(1)


if __name__ == "__main__":
    main()

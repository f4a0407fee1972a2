"""[obligations / #17 p8] crash campaign over the workflows: SIGKILL the real
`harness investigate`, `harness dev-agent` (task, address_review, fix_ci), `harness mr-monitor`,
`harness consolidate` and `harness finalize` at every write
step (HARNESS_CRASH_AT: the run journal's checkpoints, the outbox's in-flight and landed
points, the worktree, the commits, the workspace sync) and at random instants, then one clean
run. Per workflow it prints the kills that landed and what the invariant forbids after the
clean run: duplicates (a post or an MR made twice), lost (one never made), stuck (a case left
in a run's in-between status, a status message left spinning), uncommitted (case files left
out of the workspace's HEAD). Goal 0.

It runs the campaign tests (tests/obligations/test_crash_*.py) with their full walk
(HARNESS_BENCH_FULL=1): the same emulators, the real CLI, real git.
``python bench/bench_crash_workflows.py [TEST_FILE ...]`` (default: every campaign file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = [
    "tests/obligations/test_crash_investigate.py",
    "tests/obligations/test_crash_dev_agent.py",
    "tests/obligations/test_crash_mr_monitor.py",
    "tests/obligations/test_crash_mr_rounds.py",
    "tests/obligations/test_crash_consolidate.py",
    "tests/obligations/test_crash_finalize.py",
]
FIGURES = ("killed", "duplicates", "lost", "stuck", "uncommitted")


def main(argv: list[str]) -> int:
    tests = argv or TESTS
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "figures.jsonl"
        env = {**os.environ, "HARNESS_BENCH_FULL": "1", "HARNESS_BENCH_RECORD": str(record)}
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        rows = (
            [json.loads(line) for line in record.read_text().splitlines()]
            if record.exists()
            else []
        )
    totals: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIGURES, 0))
    runs: dict[str, int] = defaultdict(int)
    for row in rows:
        label = row["workflow"] + (f" ({row['forge']})" if row.get("forge") else "")
        runs[label] += 1
        for key in FIGURES:
            totals[label][key] += int(row.get(key, 0))
    print(f"crash campaign over the workflows ({wall:.0f} s; pytest exit {proc.returncode})")
    print(f"{'workflow':<36}{'runs':>6}" + "".join(f"{k:>13}" for k in FIGURES))
    for workflow, figures in sorted(totals.items()):
        print(f"{workflow:<36}{runs[workflow]:>6}" + "".join(f"{figures[k]:>13}" for k in FIGURES))
    if proc.returncode:
        print(proc.stdout[-3000:])
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

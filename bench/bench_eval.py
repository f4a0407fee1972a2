"""`harness eval --matrix` over the investigation corpus: every single-component ablation
paired with the full harness on the same cases and seeds, BENCH_RUNS trials per case and
variant (default 20, the issue's figure), every trial counted.

Prints the wall time on this machine, the trial throughput, and the matrix: each component's
pass rate without it, with it, and the paired delta with its 95 % interval. The markdown report,
the JSON and the plot go to BENCH_OUT (default: a temporary folder, printed).

BENCH_RUNS=3 for a shorter run (the deltas of a deterministic script do not move with more
trials; their intervals narrow); BENCH_SUITES=investigation,delivery to add the delivery suite.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.eval import report, runner  # noqa: E402


def main() -> None:
    runs = int(os.environ.get("BENCH_RUNS", "20"))
    suites = [s for s in os.environ.get("BENCH_SUITES", "investigation").split(",") if s]
    out = Path(os.environ.get("BENCH_OUT") or tempfile.mkdtemp(prefix="bench-eval-"))
    out.mkdir(parents=True, exist_ok=True)
    done = [0]

    def progress(trial: object, n: int, total: int) -> None:
        if n % 100 == 0 or n == total:
            print(f"  {n}/{total} trials, {time.monotonic() - began:.0f} s", flush=True)
        done[0] = n

    began = time.monotonic()
    run = runner.evaluate(suites, runs=runs, matrix=True, progress=progress)
    wall = time.monotonic() - began
    wrote = report.write(run, out)
    base = run.overall()
    cases = len({t.case for t in run.trials})
    print(f"harness eval --matrix {' '.join(suites)}: {cases} cases × {runs} trial(s) × "
          f"{len(run.variants)} variants = {run.started} trials started and counted")  # fmt: skip
    print(f"  wall {wall:.0f} s on this machine ({os.cpu_count()} cores): "
          f"{run.started / wall:.2f} trials/s; 20 trials per case would take "
          f"~{wall * 20 / runs / 60:.0f} min")  # fmt: skip
    print(
        f"  baseline {base.passed}/{base.started} = {base.rate:.1%} "
        f"[{base.low:.1%}, {base.high:.1%}], {base.defective_accepted} defective accepted"
    )
    print("  component              without  with   delta [95 % CI]       defective w/o")
    for a in sorted(run.ablations, key=lambda a: -a.delta.delta):
        d = a.delta
        without = run.overall(a.component)
        cells = f"  {a.component:<22} {d.control:>6.0%} {d.treatment:>6.0%}  {d.delta:+5.0%} "
        cells += f"[{d.low:+.0%}, {d.high:+.0%}]"
        print(cells.ljust(64) + str(without.defective_accepted))
    unfinished = sum(1 for t in run.trials if not t.finished)
    print(f"  trials that did not finish (timeout, crash, grader error): {unfinished}")
    print(f"  {wrote}")


if __name__ == "__main__":
    main()

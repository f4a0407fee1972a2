"""`harness eval --matrix` over the investigation corpus: every single-component ablation
paired with the full harness on the same cases and seeds, BENCH_RUNS trials per case and
variant (default 20, the issue's figure), every trial counted.

Prints the wall time on this machine, the trial throughput, and the matrix: each component's
pass rate without it, with it, and the paired delta with its 95 % interval. The markdown report,
the JSON and the plot go to BENCH_OUT (default: a temporary folder, printed).

Trials run seed-major (all cases and variants of seed 1, then seed 2…) and each result is
appended to BENCH_OUT/trials.jsonl as it arrives: `bench_eval.py --summarise trials.jsonl`
prints the table of the whole seeds of a run that had to be stopped.

BENCH_RUNS=3 for a shorter run (the deltas of a deterministic script do not move with more
trials; their intervals narrow); BENCH_SUITES=investigation,delivery to add the delivery suite.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.eval import report, runner  # noqa: E402
from harness_cli.eval.pool import run_trials  # noqa: E402
from harness_cli.eval.trial import TrialResult  # noqa: E402


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--summarise":
        summarise_log(Path(sys.argv[2]))
        return
    runs = int(os.environ.get("BENCH_RUNS", "20"))
    suites = [s for s in os.environ.get("BENCH_SUITES", "investigation").split(",") if s]
    out = Path(os.environ.get("BENCH_OUT") or tempfile.mkdtemp(prefix="bench-eval-"))
    out.mkdir(parents=True, exist_ok=True)
    log = out / "trials.jsonl"
    log.write_text(json.dumps({"runs": runs, "suites": suites}) + "\n")
    # Seed-major order: every case and variant of seed 1, then of seed 2… so a run cut short
    # by a deadline (stopped, then --summarise) still holds whole seeds to report.
    cases = runner.load(suites)
    variants = runner.variants_for(cases, (), True)
    planned = runner.plan(cases, variants, runs=runs, runtime="anthropic")
    specs = [dataclasses.replace(s, index=i)
             for i, s in enumerate(sorted(planned, key=lambda s: (s.seed, s.index)))]  # fmt: skip

    def progress(trial: TrialResult, n: int, total: int) -> None:
        with log.open("a") as handle:
            handle.write(json.dumps(trial.to_json()) + "\n")
        if n % 100 == 0 or n == total:
            print(f"  {n}/{total} trials, {time.monotonic() - began:.0f} s", flush=True)

    began = time.monotonic()
    trials = run_trials(specs, progress=progress)
    wall = time.monotonic() - began
    run = runner.summarise(trials, runtime="anthropic", runs=runs, suite_names=suites, wall=wall)
    tell(run, runs, wall, report.write(run, out))


def summarise_log(log: Path) -> None:
    """The table of a run's log: only the seeds whose every trial finished are counted (a
    seed cut by the deadline is left out whole, and said so)."""
    head, *lines = log.read_text().splitlines()
    planned = json.loads(head)
    trials = [TrialResult.from_json(json.loads(x)) for x in lines if x.strip()]
    per_seed: dict[int, int] = {}
    for t in trials:
        per_seed[t.seed] = per_seed.get(t.seed, 0) + 1
    cases = runner.load(planned["suites"])
    full = len(runner.plan(cases, runner.variants_for(cases, (), True), runs=1,
                           runtime="anthropic"))  # fmt: skip  # trials of one seed
    whole = sorted(s for s, n in per_seed.items() if n == full)
    kept = [t for t in trials if t.seed in whole]
    cut = len(trials) - len(kept)
    print(f"{log}: {len(trials)} trials logged of {planned['runs']} seed(s) planned; "
          f"whole seeds {whole}; {cut} trial(s) of unfinished seeds left out")  # fmt: skip
    if not kept:
        return
    run = runner.summarise(kept, runtime="anthropic", runs=len(whole),
                           suite_names=planned["suites"], wall=0.0)  # fmt: skip
    tell(run, len(whole), float(os.environ.get("BENCH_WALL", "0") or 0),
         report.write(run, log.parent / "report"))  # fmt: skip


def tell(run: runner.EvalRun, runs: int, wall: float, wrote: str) -> None:
    base = run.overall()
    cases = len({t.case for t in run.trials})
    print(f"harness eval --matrix: {cases} cases × {runs} trial(s) × "
          f"{len(run.variants)} variants = {run.started} trials started and counted")  # fmt: skip
    if wall:
        print(f"  wall {wall:.0f} s on this machine ({os.cpu_count()} cores): "
              f"{run.started / wall:.2f} trials/s; 20 trials per case would take "
              f"~{wall * 20 / runs / 60:.0f} min")  # fmt: skip
    print(
        f"  baseline {base.case_score:g}/{base.cases} cases = {base.rate:.1%} "
        f"[{base.low:.1%}, {base.high:.1%}], {base.defective_accepted} defective accepted"
    )
    print("  component              without  with   delta [95 % CI]       defective w/o")
    for a in sorted(run.ablations, key=lambda a: -a.delta.delta):
        d = a.delta
        without = run.overall(a.component)
        cells = f"  {a.component:<22} {d.control:>6.0%} {d.treatment:>6.0%}  {d.delta:+5.0%} "
        cells += f"[{d.low:+.0%}, {d.high:+.0%}]"
        print(cells.ljust(64) + str(without.defective_accepted)
              + f"  outcome changes: {', '.join(a.flips) or 'none'}")  # fmt: skip
    unfinished = sum(1 for t in run.trials if not t.finished)
    print(f"  trials that did not finish (timeout, crash, grader error): {unfinished}")
    print(f"  {wrote}")


if __name__ == "__main__":
    main()

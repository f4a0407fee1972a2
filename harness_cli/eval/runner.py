"""Plan an eval (cases × seeds × variants), run it, and sum it up: per case and overall, the
pass rate with its Wilson interval, defective work accepted as done, tokens, $ and wall time
per finished case; for an ablation, the paired delta with its interval.

003's protocol: the model (the scripts), the cases, the environment, the grader and the
budgets are the same in every variant; the number of trials is fixed before the run
(``--runs``); each pair (control, treatment) runs the same case with the same seed; a pair
that differs in more than one component is refused (``components.validate_pair``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness_cli import components
from harness_cli.eval import suites
from harness_cli.eval.pool import Progress, run_trials
from harness_cli.eval.stats import PairedDelta, paired_delta, wilson
from harness_cli.eval.trial import TrialResult, TrialSpec
from harness_cli.investigation.library import LibraryCase

BASELINE = "baseline"


@dataclass
class Row:
    """One case (or all of them) in one variant."""

    suite: str
    case: str
    variant: str
    started: int = 0
    passed: int = 0
    low: float = 0.0
    high: float = 1.0
    defective_accepted: int = 0
    usd: float = 0.0
    tokens: int = 0
    wall_seconds: float = 0.0
    finished: int = 0
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.passed / self.started if self.started else 0.0

    @property
    def per_finished(self) -> dict[str, float]:
        """Tokens, $ and wall time per finished case (003: "le coût et le temps de bout en bout
        par tâche terminée")."""
        n = self.finished or 1
        return {"usd": self.usd / n, "tokens": self.tokens / n, "seconds": self.wall_seconds / n}

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "rate": round(self.rate, 4), "per_finished": self.per_finished}


def row(suite: str, case: str, variant: str, results: Sequence[TrialResult]) -> Row:
    r = Row(suite, case, variant)
    r.started = len(results)
    r.passed = sum(1 for t in results if t.passed)
    r.low, r.high = wilson(r.passed, r.started)
    r.defective_accepted = sum(1 for t in results if t.defective_accepted)
    finished = [t for t in results if t.finished]
    r.finished = len(finished)
    r.usd = round(sum(t.usd for t in results), 6)
    r.tokens = sum(t.tokens for t in results)
    r.wall_seconds = round(sum(t.wall_seconds for t in finished), 3)
    r.statuses = dict(Counter(t.status for t in results))
    return r


@dataclass
class Ablation:
    component: str
    delta: PairedDelta
    """treatment (the component on: the baseline) − control (the component off)."""
    cases: dict[str, tuple[float, float]]
    """Per case: (pass rate without the component, with it)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            **asdict(self.delta),
            "cases": {k: {"without": w, "with": o} for k, (w, o) in self.cases.items()},
        }


@dataclass
class EvalRun:
    runtime: str
    runs: int
    suites: list[str]
    variants: dict[str, list[Row]]
    """Per variant: each case's row, then the overall row (case ``*``)."""
    ablations: list[Ablation]
    trials: list[TrialResult]
    wall_seconds: float

    @property
    def started(self) -> int:
        return len(self.trials)

    def overall(self, variant: str = BASELINE) -> Row:
        return self.variants[variant][-1]

    def to_json(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "runs": self.runs,
            "suites": self.suites,
            "trials_started": self.started,
            "wall_seconds": round(self.wall_seconds, 2),
            "variants": {v: [r.to_json() for r in rows] for v, rows in self.variants.items()},
            "ablations": [a.to_json() for a in self.ablations],
            "not_passed": [t.to_json() for t in self.trials if not t.passed][:500],
        }


def load(names: Sequence[str]) -> list[tuple[str, Path, LibraryCase]]:
    found: list[tuple[str, Path, LibraryCase]] = []
    for name in names:
        suite, files = suites.resolve(name)
        found += [(suite, path, suites.load_case_file(path)) for path in files]
    return found


def variants_for(
    cases: Sequence[tuple[str, Path, LibraryCase]], ablate: Sequence[str], matrix: bool
) -> list[tuple[str, ...]]:
    """The baseline, then each single-component variant; every pair is validated."""
    names = list(ablate)
    if matrix:
        kinds = {case.kind for _, _, case in cases}
        names = [c.name for c in components.COMPONENTS.values() if set(c.suites) & kinds]
    out: list[tuple[str, ...]] = [()]
    for name in names:
        parts = tuple(sorted(p for p in name.replace("+", ",").split(",") if p))
        components.validate_pair(frozenset(), frozenset(parts))
        out.append(parts)
    return out


def plan(
    cases: Sequence[tuple[str, Path, LibraryCase]],
    variants: Sequence[tuple[str, ...]],
    *,
    runs: int,
    runtime: str,
    config_root: Path | None = None,
) -> list[TrialSpec]:
    specs: list[TrialSpec] = []
    for suite, path, case in cases:
        if runtime not in case.setup.runtimes:
            continue
        for seed in range(1, runs + 1):
            for ablated in variants:
                root = str(config_root.absolute()) if config_root else None
                specs.append(
                    TrialSpec(len(specs), suite, case.id, str(path), runtime, seed, ablated, root)
                )
    return specs


def evaluate(
    names: Sequence[str],
    *,
    runs: int,
    runtime: str = "anthropic",
    ablate: Sequence[str] = (),
    matrix: bool = False,
    jobs: int | None = None,
    timeout_s: float = 300.0,
    config_root: Path | None = None,
    progress: Progress | None = None,
) -> EvalRun:
    cases = load(names)
    for _, _, case in cases:
        if case.needs_api_key:  # refused before any trial starts when the key is missing
            suites.live_model_env(case)
    variants = variants_for(cases, ablate, matrix)
    specs = plan(cases, variants, runs=runs, runtime=runtime, config_root=config_root)
    began = time.monotonic()
    trials = run_trials(specs, jobs=jobs, timeout_s=timeout_s, progress=progress)
    return summarise(trials, runtime=runtime, runs=runs, suite_names=list(names),
                     wall=time.monotonic() - began)  # fmt: skip


def summarise(
    trials: Sequence[TrialResult], *, runtime: str, runs: int, suite_names: list[str], wall: float
) -> EvalRun:
    by_variant: dict[str, list[TrialResult]] = {}
    for t in trials:
        by_variant.setdefault(t.variant, []).append(t)
    tables: dict[str, list[Row]] = {}
    for variant, results in by_variant.items():
        keys = sorted({(t.suite, t.case) for t in results})
        rows = [row(s, c, variant, [t for t in results if (t.suite, t.case) == (s, c)])
                for s, c in keys]  # fmt: skip
        rows.append(row("*", "*", variant, results))
        tables[variant] = rows
    ablations = [
        ablation(v, by_variant[BASELINE], by_variant[v])
        for v in by_variant
        if v != BASELINE and BASELINE in by_variant
    ]
    return EvalRun(runtime, runs, suite_names, tables, ablations, list(trials), wall)


def ablation(component: str, on: Sequence[TrialResult], off: Sequence[TrialResult]) -> Ablation:
    with_it = {(t.suite, t.case, t.seed): t.passed for t in on}
    pairs = [(t.passed, with_it[(t.suite, t.case, t.seed)]) for t in off
             if (t.suite, t.case, t.seed) in with_it]  # fmt: skip
    cases: dict[str, tuple[float, float]] = {}
    for key in sorted({t.case for t in off}):
        mine = [(t.passed, with_it.get((t.suite, t.case, t.seed), False)) for t in off
                if t.case == key]  # fmt: skip
        cases[key] = (sum(a for a, _ in mine) / len(mine), sum(b for _, b in mine) / len(mine))
    return Ablation(component, paired_delta(pairs), cases)

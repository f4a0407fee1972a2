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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness_cli import components
from harness_cli.eval import suites
from harness_cli.eval.cases import LibraryCase
from harness_cli.eval.pool import Progress, run_trials
from harness_cli.eval.stats import PairedDelta, paired_delta, wilson
from harness_cli.eval.trial import TrialResult, TrialSpec

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
    cases: int = 0
    """The cases in the row: the unit of its interval."""
    case_score: float = 0.0
    """The cases' pass rates summed (a deterministic case is 0 or 1)."""
    deterministic: bool = True
    """Every trial in the row is of a deterministic case: each case ran once, pass or fail."""
    inferred: int = 0
    """Of ``started``, the trials not run but known (``TrialResult.inferred``)."""

    @property
    def rate(self) -> float:
        """The mean of the cases' pass rates: the case, not the trial, is the unit (a
        deterministic case's copies are no new information, a stochastic case weighs one)."""
        return self.case_score / self.cases if self.cases else 0.0

    @property
    def per_finished(self) -> dict[str, float]:
        """Tokens, $ and wall time per finished case (003: "le coût et le temps de bout en bout
        par tâche terminée")."""
        n = self.finished or 1
        return {"usd": self.usd / n, "tokens": self.tokens / n, "seconds": self.wall_seconds / n}

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "rate": round(self.rate, 4),
            "per_finished": self.per_finished,
            "unit": "case",
        }


def row(suite: str, case: str, variant: str, results: Sequence[TrialResult]) -> Row:
    r = Row(suite, case, variant)
    r.started = len(results)
    r.passed = sum(1 for t in results if t.passed)
    per_case: dict[tuple[str, str], list[bool]] = {}
    for t in results:
        per_case.setdefault((t.suite, t.case), []).append(t.passed)
    r.cases = len(per_case)
    r.case_score = sum(sum(v) / len(v) for v in per_case.values())
    r.deterministic = all(t.deterministic for t in results)
    if len(per_case) == 1 and not r.deterministic:
        r.low, r.high = wilson(r.passed, r.started)  # one stochastic case: its trials are draws
    else:
        r.low, r.high = wilson(r.case_score, r.cases)
    r.defective_accepted = sum(1 for t in results if t.defective_accepted)
    r.inferred = sum(1 for t in results if t.inferred)
    finished = [t for t in results if t.finished and not t.inferred]
    r.finished = len(finished)
    r.usd = round(sum(t.usd for t in results if not t.inferred), 6)
    r.tokens = sum(t.tokens for t in results if not t.inferred)
    r.wall_seconds = round(sum(t.wall_seconds for t in finished), 3)
    r.statuses = dict(Counter(t.status for t in results))
    return r


@dataclass
class Ablation:
    component: str
    delta: PairedDelta
    """treatment (the component on: the baseline) − control (the component off), judged by
    outcome: a pair whose outcome is the same both ways counts as the baseline's grade."""
    cases: dict[str, tuple[float, float]]
    """Per case: (pass rate without the component, with it), judged by outcome."""
    flips: list[str] = field(default_factory=list)
    """Cases whose outcome (``trial.outcome``: accepted, exit, what reached the operator or
    the MR) changes without the component, in at least one paired trial."""
    signature_only: list[str] = field(default_factory=list)
    """Cases whose grade changes without the component while the outcome stays the same (a
    missing gate code, an intermediate number, an iteration count): not counted."""
    defective_accepted: int = 0
    """Trials without the component that accepted a case marked defective."""
    inferred: int = 0
    """Pairs not run: the component's gates never fired in the baseline trial (``infer``)."""
    holds: tuple[str, ...] = ()
    """The gate codes the component switches off."""

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            **asdict(self.delta),
            "cases": {k: {"without": w, "with": o} for k, (w, o) in self.cases.items()},
            "outcome_flips": self.flips,
            "signature_only": self.signature_only,
            "defective_accepted_without": self.defective_accepted,
            "pairs_inferred": self.inferred,
            "gates": list(self.holds),
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
        """Trials run (an inferred one is known, not started)."""
        return sum(1 for t in self.trials if not t.inferred)

    @property
    def inferred(self) -> int:
        return sum(1 for t in self.trials if t.inferred)

    @property
    def kind(self) -> str:
        """``machinery``: scripted models, the harness's own mechanics measured, the case as
        the unit; ``model``: a real model played a role, trials and their cost matter."""
        return "model" if any(t.live for t in self.trials) else "machinery"

    def overall(self, variant: str = BASELINE) -> Row:
        return self.variants[variant][-1]

    def to_json(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "kind": self.kind,
            "runs": self.runs,
            "suites": self.suites,
            "trials_started": self.started,
            "trials_inferred": self.inferred,
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


def applies(ablated: Sequence[str], case: LibraryCase) -> bool:
    """A variant runs on a case only where every component it turns off can be seen: a
    delivery component's code is never reached by an investigation, nor the reverse
    (``Component.suites``), so that pair would be the baseline again at a trial's cost."""
    return all(case.kind in components.COMPONENTS[name].suites for name in ablated)


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
        # A deterministic case's copies are the same run again: one trial per variant, the
        # case is the unit. A stochastic or live case gets its --runs trials (seeds 1..N).
        for seed in range(1, (runs if case.trials_matter else 1) + 1):
            for ablated in variants:
                if not applies(ablated, case):
                    continue
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
    exhaustive: bool = False,
) -> EvalRun:
    cases = load(names)
    for _, _, case in cases:
        if case.needs_api_key:  # refused before any trial starts when the key is missing
            suites.live_model_env(case)
    variants = variants_for(cases, ablate, matrix)
    specs = plan(cases, variants, runs=runs, runtime=runtime, config_root=config_root)
    began = time.monotonic()
    first = specs if exhaustive else [s for s in specs if not _gates_only(s)]
    trials = run_trials(first, jobs=jobs, timeout_s=timeout_s, progress=progress)
    if len(first) < len(specs):
        rest, same = infer([s for s in specs if _gates_only(s)], trials)
        trials += run_trials(rest, jobs=jobs, timeout_s=timeout_s, progress=progress) + same
    return summarise(trials, runtime=runtime, runs=runs, suite_names=list(names),
                     wall=time.monotonic() - began)  # fmt: skip


def _gates_only(spec: TrialSpec) -> bool:
    """An ablation of one component that acts only through its gates' verdicts."""
    return len(spec.ablate) == 1 and components.COMPONENTS[spec.ablate[0]].only_through_gates


def infer(
    specs: Sequence[TrialSpec], done: Sequence[TrialResult]
) -> tuple[list[TrialSpec], list[TrialResult]]:
    """Split gate-only ablation trials into those to run and those already known: when the
    baseline trial of the same (case, seed) is deterministic, finished, and never raised any
    of the component's gate codes (in a verdict or a prompt), every gate evaluation of that
    run returned nothing from them and no cap of theirs bound, so the run without them gets
    the same verdicts, the same prompts, the same scripted answers — the same run. Its result
    is the baseline's, marked ``inferred`` (not a trial started)."""
    base = {(t.suite, t.case, t.seed): t for t in done if t.variant == BASELINE}
    run: list[TrialSpec] = []
    same: list[TrialResult] = []
    for spec in specs:
        b = base.get((spec.suite, spec.case, spec.seed))
        codes = set(components.COMPONENTS[spec.ablate[0]].gates)
        if (b is None or not b.deterministic or b.live or not b.finished
                or codes & set(b.signature.get("codes", ()))):  # fmt: skip
            run.append(spec)
            continue
        same.append(replace(b, index=spec.index, variant=spec.variant, inferred=True))
    return run, same


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
    """The component's worth, judged by outcome: without it, a trial counts as failed only
    where the harness's decision changed (``outcome``) and the grader fails it; a grade that
    changes with the same outcome is listed apart (``signature_only``). Pairs are (case,
    seed): one per deterministic case (it runs once), one per trial of a stochastic one."""
    with_it = {(t.suite, t.case, t.seed): t for t in on}
    judged: dict[str, list[tuple[bool, bool]]] = {}
    flips: set[str] = set()
    signature_only: set[str] = set()
    for t in off:
        base = with_it.get((t.suite, t.case, t.seed))
        if base is None:
            continue
        same = t.outcome == base.outcome
        if not same:
            flips.add(t.case)
        elif t.passed != base.passed:
            signature_only.add(t.case)
        judged.setdefault(t.case, []).append((base.passed if same else t.passed, base.passed))
    pairs = [p for key in sorted(judged) for p in judged[key]]
    cases = {key: (sum(a for a, _ in mine) / len(mine), sum(b for _, b in mine) / len(mine))
             for key, mine in sorted(judged.items())}  # fmt: skip
    known = components.COMPONENTS.get(component)
    return Ablation(component, paired_delta(pairs), cases, sorted(flips),
                    sorted(signature_only - flips),
                    sum(1 for t in off if t.defective_accepted),
                    sum(1 for t in off if t.inferred),
                    known.gates if known else ())  # fmt: skip

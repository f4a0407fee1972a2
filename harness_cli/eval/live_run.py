"""Planning and running a live eval (``eval.live`` holds its rules): the plan of live trials
with its estimate, then the trials under the cap. Apart from ``eval.live`` so that a trial,
which asks ``eval.live`` how to play its case, never imports the runner that starts trials."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness_cli.errors import InputError
from harness_cli.eval import runner
from harness_cli.eval.live import (
    Cap,
    Estimate,
    estimate,
    live_case,
    selected,
    summary,
    trial_config,
)
from harness_cli.eval.pool import run_trials
from harness_cli.eval.trial import TrialResult, TrialSpec

Progress = Callable[[TrialResult, int, int], None]


@dataclass
class Plan:
    specs: list[TrialSpec]
    kinds: dict[str, str]
    """Case id → kind (investigation, delivery): what its trials are estimated at."""
    left_out: list[str]
    estimate: Estimate

    def to_json(self) -> dict[str, Any]:
        per_case: dict[str, int] = {}
        for s in self.specs:
            per_case[s.case] = per_case.get(s.case, 0) + 1
        return {"trials": len(self.specs), "cases": per_case, "left_out": self.left_out,
                "estimate": self.estimate.to_json()}  # fmt: skip


def plan(names: Sequence[str], *, runs: int, runtime: str, config_root: Path | None = None) -> Plan:
    """The live trials of ``names``: each gradable case ``runs`` times, its estimate."""

    found, left_out = selected(runner.load(names))
    if not found:
        raise InputError(
            f"no case of {', '.join(names)} can run live: every one scripts a misbehaviour "
            "(honest: false) a real model need not repeat",
            hint="name a suite or case file with honest: true cases (e.g. investigation)",
        )
    cases = [(suite, path, live_case(case)) for suite, path, case in found]
    specs = [replace(s, live=True)
             for s in runner.plan(cases, [()], runs=runs, runtime=runtime,
                                  config_root=config_root)]  # fmt: skip
    kinds: dict[str, str] = {case.id: case.kind for _, _, case in cases}
    model, settings = trial_config(config_root)
    return Plan(specs, kinds, left_out,
                estimate([kinds[s.case] for s in specs], model, settings))  # fmt: skip


def run(
    p: Plan,
    *,
    runs: int,
    runtime: str,
    names: list[str],
    max_usd: float | None,
    jobs: int | None,
    timeout_s: float,
    progress: Progress | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Run the plan under the cap: the EvalRun (a model eval) and its live summary."""

    cap = Cap(max_usd)

    def ended(result: TrialResult, done: int, total: int) -> None:
        cap.add(result)
        if progress is not None:
            progress(result, done, total)

    began = time.monotonic()
    trials = run_trials(p.specs, jobs=jobs, timeout_s=timeout_s, progress=ended,
                        admit=cap.admit)  # fmt: skip
    cap.not_started = len(p.specs) - len(trials)
    result = runner.summarise(trials, runtime=runtime, runs=runs, suite_names=names,
                              wall=time.monotonic() - began)  # fmt: skip
    return result, summary(trials, p.estimate, cap)

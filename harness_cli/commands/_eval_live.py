"""``harness eval --live`` and ``harness eval --dry-run``: the plan and its estimate first (a
dry run stops there), the cap checked, then the live trials (``eval.live``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness_cli.eval import live as live_mode
from harness_cli.eval import live_run, runner
from harness_cli.output import emit
from harness_cli.result import Result


def run(
    suites: list[str] | None,
    runs: int,
    runtime: str,
    jobs: int,
    timeout: float,
    config_root: Path | None,
    *,
    live: bool,
    max_usd: float | None,
    dry_run: bool,
    ablate: list[str],
    matrix: bool,
    progress: Any,
) -> tuple[Any, dict[str, Any]] | None:
    """The live run and its summary; None when only the plan was asked for (printed here)."""
    from harness_cli.errors import InputError

    names = suites or ["investigation"]
    if not live:
        cases = runner.load(names)
        variants = runner.variants_for(cases, ablate, matrix)
        specs = runner.plan(cases, variants, runs=runs, runtime=runtime,
                            config_root=config_root)  # fmt: skip
        _planned(names, runtime, [s.case for s in specs], [], None, live=False)
        return None
    p = live_run.plan(names, runs=runs, runtime=runtime, config_root=config_root)
    if not p.specs:
        raise InputError(f"no case of {', '.join(names)} runs on the {runtime} runtime",
                         hint="pick the other --runtime or other cases")  # fmt: skip
    if dry_run:
        _planned(names, runtime, [s.case for s in p.specs], p.left_out, p, live=True,
                 max_usd=max_usd)  # fmt: skip
        return None
    live_mode.refuse_over(p.estimate, max_usd)
    # Said before the first trial starts: the operator sees what is about to be spent.
    sys.stderr.write(p.estimate.line() + "\n")
    if p.left_out:
        sys.stderr.write(_left_out(p.left_out) + "\n")
    return live_run.run(p, runs=runs, runtime=runtime, names=names, max_usd=max_usd,
                         jobs=jobs or None, timeout_s=timeout, progress=progress)  # fmt: skip


def _left_out(ids: list[str]) -> str:
    return (f"left out {len(ids)} case(s) whose script misbehaves on purpose (honest: false; a "
            f"real model need not repeat it): {', '.join(ids)}")  # fmt: skip


def _planned(
    names: list[str],
    runtime: str,
    trials: list[str],
    left_out: list[str],
    p: live_run.Plan | None,
    *,
    live: bool,
    max_usd: float | None = None,
) -> None:
    per_case: dict[str, int] = {}
    for case in trials:
        per_case[case] = per_case.get(case, 0) + 1
    data: dict[str, Any] = {"dry_run": True, "live": live, "runtime": runtime,
                            "suites": names, "trials": len(trials), "cases": per_case,
                            "left_out": left_out}  # fmt: skip
    result = Result("eval", data=data, columns=["case", "trials"],
                    rows=[[c, str(n)] for c, n in per_case.items()])  # fmt: skip
    if p is not None:
        data["estimate"] = p.estimate.to_json()
        result.messages.append(p.estimate.line())
        if max_usd is not None and p.estimate.usd > max_usd:
            data["over_max_usd"] = True
            result.messages.append(f"over --max-usd {max_usd:g}: the real run would be refused")
        if not live_mode.has_key():
            result.messages.append(f"{live_mode.KEY_ENV} is not set: the real run would be "
                                   "refused (export it first)")  # fmt: skip
    if left_out:
        result.messages.append(_left_out(left_out))
    result.messages.append(f"dry run: {len(trials)} trial(s) planned over {len(per_case)} "
                           f"case(s) on {runtime}; nothing was run")  # fmt: skip
    emit(result)

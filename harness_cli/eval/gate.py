"""The eval step of an improvement MR's pipeline: ``harness eval SUITE --runs N --overlay .
--baseline evals/baseline.json`` fails (exit 1) when the MR's pass rate falls below the lower
end of the baseline's 95 % interval — the baseline being the run finalize measured on the
prompts and SOPs before the change, committed into the MR as ``evals/baseline.json``."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness_cli.errors import InputError
from harness_cli.state import nofollow

BASELINE_FILE = "evals/baseline.json"
"""Where the improvement MR carries its baseline (the before run), relative to the repo."""


@dataclass(frozen=True)
class Baseline:
    suites: list[str]
    runs: int
    passed: float
    """Cases passed (the case is the unit; a stochastic case adds its pass rate)."""
    started: int
    """Cases run."""
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.passed / self.started if self.started else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": 1, **asdict(self)}


def read(path: Path) -> Baseline:
    """A baseline file (``to_json``), or the JSON ``harness eval --json``/``--out`` wrote
    (its baseline variant's overall row)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"--baseline {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise InputError(f"--baseline {path}: not JSON ({exc})") from None
    data = data.get("data", data) if isinstance(data, dict) else data
    if isinstance(data, dict) and "variants" in data:
        row = dict(data["variants"]["baseline"][-1])
        if "cases" in row:  # the case is the unit
            row.update(passed=row["case_score"], started=row["cases"])
        data = {"suites": data.get("suites", []), "runs": data.get("runs", 0), **row}
    try:
        return Baseline(
            [str(s) for s in data.get("suites", [])], int(data.get("runs", 0)),
            float(data["passed"]), int(data["started"]), float(data["low"]), float(data["high"]),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InputError(
            f"--baseline {path}: no passed/started/low/high figures",
            hint="give the baseline finalize committed (evals/baseline.json) or an eval.json",
        ) from None


def write(path: Path, baseline: Baseline, *, inside: Path) -> None:
    """Write the baseline file at ``path`` in the worktree ``inside``, following no link an
    agent or its checks left there (#28 R2)."""
    text = json.dumps(baseline.to_json(), indent=2) + "\n"
    nofollow.write(inside, path, text.encode("utf-8"), mode=0o644)


def verdict(passed: float, started: int, baseline: Baseline) -> tuple[bool, str]:
    """Held (True) unless the pass rate is below the baseline interval's lower end."""
    rate = passed / started if started else 0.0
    held = rate >= baseline.low
    line = (
        f"eval gate {'held' if held else 'FAILED'}: {passed:g}/{started} cases passed "
        f"({rate:.0%}) against the baseline's {baseline.passed:g}/{baseline.started} "
        f"({baseline.rate:.0%}, "
        f"95 % interval {baseline.low:.0%} to {baseline.high:.0%})"
    )
    if not held:
        line += "; the pass rate fell below the interval: the pipeline fails"
    return held, line

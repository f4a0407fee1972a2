"""The eval step of an improvement MR's pipeline: ``harness eval SUITE --runs N --overlay .
--baseline evals/baseline.json`` fails (exit 1) when the MR's pass rate falls below the lower
end of the baseline's 95 % interval — the baseline being the run finalize measured on the
prompts and SOPs before the change, committed into the MR as ``evals/baseline.json``.

What the scripted gate cannot see (#31 item 7): scripted models ignore prompts, so an SOP
saying "declare COMPLETE at 99 %" passes it. The baseline therefore names the model-facing
files as they were before the change (``model_facing``: path → git blob); when the MR changes
any of them, the gate says scripted evals cannot judge it and holds only with a live run's
report on exactly this change (``LIVE_REPORT``) or the operator's sign-off of exactly this
change (``SIGNOFF``), both at the repo's root where no improvement agent may write
(``improvement.self_repo_paths``). A code-only MR keeps the scripted gate."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness_cli.errors import InputError
from harness_cli.state import nofollow

BASELINE_FILE = "evals/baseline.json"
"""Where the improvement MR carries its baseline (the before run), relative to the repo."""
MODEL_FACING = {
    "agent-config/prompts": "agent-config/prompts",
    "harness_cli/defaults/agent-config/prompts": "agent-config/prompts",
    "sops": "sops",
    "harness_cli/defaults/sops": "sops",
}
"""Where model-facing text sits in the harness repo (prompt templates, SOPs) → where an eval
trial's config takes it (``before_after`` lays them over the packaged config)."""
LIVE_REPORT = "eval-live-report.json"
"""A live run's ``harness eval --overlay . --json`` output, on the MR's change."""
SIGNOFF = "eval-signoff.json"
"""``{"digest": <the change's digest>, "by": <operator>}``: the operator signs off the change."""


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
    model_facing: dict[str, str] = field(default_factory=dict)
    """The model-facing files before the change: repo path → git blob id (empty: unknown)."""

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
            {str(k): str(v) for k, v in (data.get("model_facing") or {}).items()},
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


def manifest(repo: Path, ref: str = "HEAD") -> dict[str, str]:
    """The model-facing files of ``repo`` at ``ref``: path → git blob id."""
    proc = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", ref, "--", *MODEL_FACING],
                          capture_output=True, text=True, check=False)  # fmt: skip
    found = {}
    for line in proc.stdout.splitlines():
        meta, _, path = line.partition("\t")
        found[path] = meta.split()[2]
    return found


def model_facing_changes(repo: Path, baseline: Baseline) -> list[str]:
    """The model-facing files the MR changed against the baseline's (added, edited,
    removed); [] when the baseline names none (an older baseline: nothing to compare)."""
    if not baseline.model_facing:
        return []
    now = manifest(repo)
    return sorted(p for p in set(now) | set(baseline.model_facing)
                  if now.get(p) != baseline.model_facing.get(p))  # fmt: skip


def change_digest(repo: Path, changed: list[str]) -> str:
    now = manifest(repo)
    text = "\n".join(f"{p} {now.get(p, '-')}" for p in changed)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def unjudged(repo: Path, baseline: Baseline) -> tuple[bool, str]:
    """(held, line) for an MR's model-facing change: held only with a live report or the
    operator's sign-off of exactly this change; (True, "") when it changes none."""
    changed = model_facing_changes(repo, baseline)
    if not changed:
        return True, ""
    digest = change_digest(repo, changed)
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    signed = _json(repo / SIGNOFF)
    if signed.get("digest") == digest and str(signed.get("by", "")).strip():
        return True, (f"eval gate: this MR changes model-facing text ({shown}); the operator "
                      f"{signed['by']} signed it off ({SIGNOFF}, change {digest})")  # fmt: skip
    live = _json(repo / LIVE_REPORT)
    data = live.get("data", live)
    if data.get("kind") == "model" and data.get("overlay_digest") == digest:
        held = bool((data.get("gate") or {}).get("held"))
        return held, (f"eval gate: this MR changes model-facing text ({shown}); the live run "
                      f"attached ({LIVE_REPORT}) {'held' if held else 'FAILED'} on change "
                      f"{digest}")  # fmt: skip
    return False, (
        f"eval gate FAILED: this MR changes model-facing text ({shown}) and scripted evals "
        "cannot judge it (scripted models ignore prompts and SOPs). Attach a live run on this "
        f"change (`harness eval --live --overlay . --baseline {BASELINE_FILE} --json` with "
        f"the API key set, saved as {LIVE_REPORT}) or have the operator sign it off: {SIGNOFF} "
        "with "
        f'{{"digest": "{digest}", "by": "<name>"}}'
    )


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}

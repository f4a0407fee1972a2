"""Push with three-layer recovery: L1 rebase → L2 self-heal → L3 the operator.

Reference ("Recovering from single operations"): "L1 runs on every push because it's cheap,
while L2 burns tokens and fires only after L1 has failed" — and "ground truth comes from the
wire": whatever any layer believes, success is the exit code of a real ``git push``.

The layers live in ``push_rebase`` (L1 and the real push), ``push_heal`` (L2, with its prompt in
``push_heal_prompt``) and ``push_escalation`` (L3);
this module chains them and writes the trail to ``<case_dir>/delivery/push-<stamp>.json``.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from harness_cli import clock
from harness_cli.agents.runtime import Runtime
from harness_cli.config import Config
from harness_cli.delivery import secret_scan
from harness_cli.delivery.push_escalation import escalate
from harness_cli.delivery.push_heal import HealResult, self_heal_push_loop
from harness_cli.delivery.push_rebase import (
    PushResult,
    RebaseResult,
    pre_push_rebase,
    push_refusal,
    real_push,
)
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.delivery.worktrees import Worktree
from harness_cli.errors import PolicyRefused
from harness_cli.logs import event
from harness_cli.ops import notify
from harness_cli.ops.outbound import Outbound
from harness_cli.state.store import atomic_write_text

__all__ = [
    "PushOutcome",
    "PushResult",
    "RebaseResult",
    "escalate",
    "pre_push_rebase",
    "push_with_recovery",
    "real_push",
    "self_heal_push_loop",
]

log = logging.getLogger("harness.delivery.push")


class PushOutcome(BaseModel):
    """The whole trail of one push; also the JSON file under the case dir."""

    schema_version: int = 1
    case_id: str
    branch: str
    ok: bool
    """A real push exited 0 (in L1 or L2)."""
    layer: Literal["L1", "L2", "L3"]
    """Where it ended: pushed by L1, pushed by L2, or handed to the operator."""
    pushed_sha: str | None = None
    rebase: RebaseResult
    first_push: PushResult | None = None
    """The push right after a clean L1 (None when L1 failed)."""
    heal: HealResult | None = None
    escalation_ts: str | None = None
    last_error: str = ""
    trail_path: str = ""
    started_at: datetime
    ended_at: datetime | None = None

    @property
    def pushed(self) -> bool:
        """The same as ``ok``: a real push exited 0."""
        return self.ok


def push_with_recovery(
    wt: Worktree,
    *,
    runtime: Runtime,
    outbound: Outbound,
    cfg: Config,
    case_id: str,
    task_text: str,
    case_dir: Path,
    thresholds: DeliveryThresholds | None = None,
) -> PushOutcome:
    """Push the case branch: L1 always, L2 when L1 or its push failed, L3 when L2 did not end
    in a real push. Raises PolicyRefused (before anything runs) for a protected branch."""
    refusal = push_refusal(wt)
    if refusal is not None:
        raise PolicyRefused(refusal, hint="the harness pushes only its own case branches")
    th = thresholds or _thresholds(cfg)
    started = clock.now()
    trail = case_dir / "delivery" / f"push-{clock.stamp(started)}.json"
    findings = secret_scan.scan_branch(wt.path, wt.branch, wt.base_branch)
    if findings:  # #21 p2: nothing of it leaves, no layer tries again; the operator is told
        return _refuse_secrets(outbound, cfg, wt, case_id, findings, started, trail)
    rebase = pre_push_rebase(wt)
    outcome = PushOutcome(
        case_id=case_id, branch=wt.branch, ok=False, layer="L1", rebase=rebase,
        started_at=started, trail_path=str(trail),
    )  # fmt: skip
    if rebase.ok:
        outcome.first_push = real_push(wt)
        if outcome.first_push.ok:
            return _finish(outcome, ok=True, sha=outcome.first_push.sha)
        outcome.last_error = outcome.first_push.error
    else:
        outcome.last_error = rebase.error
    from harness_cli import components

    if components.enabled("push_recovery_l2"):  # an eval ablation goes from L1 to L3
        event(log, "push_l2_start", logging.WARNING, case_id=case_id, why=outcome.last_error)
        outcome.heal = self_heal_push_loop(
            wt,
            runtime,
            task_text,
            rebase.conflicts,
            hunks=rebase.hunks,
            last_error=outcome.last_error,
            thresholds=th,
        )
        outcome.layer = "L2"
    if outcome.heal is not None and outcome.heal.ok:
        return _finish(outcome, ok=True, sha=outcome.heal.pushed_sha)
    if outcome.heal is not None:
        outcome.last_error = outcome.heal.last_error or outcome.last_error
    outcome.layer = "L3"
    _write(outcome, trail)  # the DM points at the trail: it must exist when the operator looks
    outcome.escalation_ts = escalate(
        outbound,
        cfg,
        case_id=case_id,
        wt=wt,
        heal=outcome.heal,
        rebase=rebase,
        last_error=outcome.last_error,
        trail_path=trail,
    )
    return _finish(outcome, ok=False, sha=None)


def _refuse_secrets(
    outbound: Outbound,
    cfg: Config,
    wt: Worktree,
    case_id: str,
    findings: list[secret_scan.Finding],
    started: datetime,
    trail: Path,
) -> PushOutcome:
    why = "secret scan: " + ", ".join(f.render() for f in findings[:5])
    outcome = PushOutcome(
        case_id=case_id, branch=wt.branch, ok=False, layer="L3", started_at=started,
        rebase=RebaseResult(ok=False, error=f"not attempted: {why}"), last_error=why,
        trail_path=str(trail),
    )  # fmt: skip
    text = secret_scan.refusal_text(case_id, wt.branch, findings)
    outcome.escalation_ts = notify.dm(outbound, cfg, "push_refused_secret", text, case_id=case_id)
    return _finish(outcome, ok=False, sha=None)


def _finish(outcome: PushOutcome, *, ok: bool, sha: str | None) -> PushOutcome:
    outcome.ok, outcome.pushed_sha, outcome.ended_at = ok, sha, clock.now()
    _write(outcome, Path(outcome.trail_path))
    event(log, "push_done", case_id=outcome.case_id, layer=outcome.layer, ok=ok, sha=sha)
    return outcome


def _write(outcome: PushOutcome, path: Path) -> None:
    atomic_write_text(path, outcome.model_dump_json(indent=2) + "\n")


def _thresholds(cfg: Config) -> DeliveryThresholds:
    """harness.yaml's ``delivery:`` section."""
    return cfg.harness.delivery

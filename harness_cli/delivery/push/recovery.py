"""Push with three-layer recovery: L1 rebase → L2 self-heal → L3 the operator.

Reference ("Recovering from single operations"): "L1 runs on every push because it's cheap,
while L2 burns tokens and fires only after L1 has failed" — and "ground truth comes from the
wire": whatever any layer believes, success is the exit code of a real ``git push``.

The layers live in ``rebase`` (L1 and the real push), ``heal`` (L2, with its prompt in
``heal_prompt``) and ``escalation`` (L3);
this module chains them and writes the trail to ``<case_dir>/delivery/push-<stamp>.json``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from harness_cli import clock, components
from harness_cli.config import Config
from harness_cli.delivery import secret_scan
from harness_cli.delivery.mr import back_to_draft
from harness_cli.delivery.push.escalation import escalate
from harness_cli.delivery.push.heal import HealResult, self_heal_push_loop
from harness_cli.delivery.push.rebase import (
    PushResult,
    RebaseResult,
    pre_push_rebase,
    push_refusal,
    real_push,
    remote_tip,
)
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.delivery.worktrees import Worktree
from harness_cli.errors import HarnessError, PolicyRefused
from harness_cli.logs import event
from harness_cli.outbox import notify
from harness_cli.outbox.outbound import Outbound
from harness_cli.services.gitlab import GitLab
from harness_cli.services.runtime import Runtime
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
    target: str = ""
    """A conflict with this branch was the incident (empty: an ordinary push)."""
    remote_before: str | None = None
    """``origin/<case branch>`` after L1's fetch, before anything was pushed."""
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
    forge: GitLab,
    cfg: Config,
    case_id: str,
    task_text: str,
    case_dir: Path,
    thresholds: DeliveryThresholds | None = None,
    target: str | None = None,
) -> PushOutcome:
    """Push the case branch: L1 always, L2 when L1 or its push failed, L3 when L2 did not end
    in a real push. ``target``: the incident is a conflict with that branch — L1 rebases onto
    ``origin/<target>`` too, and only a pushed branch that contains it is a success (a push of
    the unchanged, still conflicting branch exits 0 too). Raises PolicyRefused (before
    anything runs) for a protected branch."""
    refusal = push_refusal(wt)
    if refusal is not None:
        raise PolicyRefused(refusal, hint="the harness pushes only its own case branches")
    th = thresholds or _thresholds(cfg)
    started = clock.now()
    trail = case_dir / "delivery" / f"push-{clock.stamp(started)}.json"
    findings = secret_scan.scan_branch(wt.path, wt.branch, wt.base_branch, base_sha=wt.base_sha)
    if findings:  # #21 p2: nothing of it leaves, no layer tries again; the operator is told
        return _refuse_secrets(outbound, forge, cfg, wt, case_id, findings, started, trail)
    rebase = pre_push_rebase(wt, target=target)
    remote_before = remote_tip(wt)
    outcome = PushOutcome(
        case_id=case_id, branch=wt.branch, ok=False, layer="L1", rebase=rebase,
        started_at=started, trail_path=str(trail), target=target or "",
        remote_before=remote_before,
    )  # fmt: skip
    goal = _contains_target(wt, target) if target else None
    if rebase.ok:
        rewritten = remote_before is not None and not wt.git().is_ancestor(remote_before, "HEAD")
        # L1 rebased onto origin/<branch> first, so a lease loses nothing of the remote's
        outcome.first_push = real_push(wt, lease=remote_before if rewritten else None)
        missed = goal(outcome.first_push.sha or "") if goal and outcome.first_push.ok else None
        if outcome.first_push.ok and missed is None:
            return _finish(outcome, ok=True, sha=outcome.first_push.sha)
        outcome.last_error = missed or outcome.first_push.error
        if outcome.first_push.refused:  # policy, not git: no agent session can argue with it
            return _escalate(outcome, outbound, cfg, wt, trail)
    else:
        outcome.last_error = rebase.error

    if not components.enabled("push_recovery_l2"):  # an eval ablation goes from L1 to L3
        return _escalate(outcome, outbound, cfg, wt, trail)
    event(log, "push_l2_start", logging.WARNING, case_id=case_id, why=outcome.last_error)
    outcome.heal = self_heal_push_loop(
        wt,
        runtime,
        task_text,
        rebase.conflicts,
        hunks=rebase.hunks,
        last_error=outcome.last_error,
        thresholds=th,
        goal=goal,
        onto=f"origin/{target}" if target else None,
    )
    outcome.layer = "L2"
    if outcome.heal.ok:
        return _finish(outcome, ok=True, sha=outcome.heal.pushed_sha)
    outcome.last_error = outcome.heal.last_error or outcome.last_error
    return _escalate(outcome, outbound, cfg, wt, trail)


def _escalate(
    outcome: PushOutcome, outbound: Outbound, cfg: Config, wt: Worktree, trail: Path
) -> PushOutcome:
    """L3: the whole trail to the operator, in one DM."""
    outcome.layer = "L3"
    _write(outcome, trail)  # the DM points at the trail: it must exist when the operator looks
    outcome.escalation_ts = escalate(
        outbound,
        cfg,
        case_id=outcome.case_id,
        wt=wt,
        heal=outcome.heal,
        rebase=outcome.rebase,
        last_error=outcome.last_error,
        trail_path=trail,
    )
    return _finish(outcome, ok=False, sha=None)


def _refuse_secrets(
    outbound: Outbound,
    forge: GitLab,
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
    drafted = _back_to_draft(forge, wt)
    if drafted:
        text += f"\n{', '.join(drafted)} is a Draft again until a clean push."
    outcome.escalation_ts = notify.dm(outbound, cfg, "push_refused_secret", text, case_id=case_id)
    return _finish(outcome, ok=False, sha=None)


def _back_to_draft(forge: GitLab, wt: Worktree) -> list[str]:
    try:
        return back_to_draft(forge, wt.project, wt.branch)
    except HarnessError as exc:  # the refusal and its DM stand; the MR is checked next cycle
        event(log, "mr_back_to_draft_failed", logging.WARNING, branch=wt.branch, error=str(exc))
        return []


def _contains_target(wt: Worktree, target: str) -> Callable[[str], str | None]:
    def goal(sha: str) -> str | None:
        if sha and wt.git().is_ancestor(f"refs/remotes/origin/{target}", sha):
            return None
        return f"the pushed branch still does not contain origin/{target} (still conflicting)"

    return goal


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

"""dev-agent: the hands-on work, in the case's own worktree of the MR's repository.

- ``task``: analyze (the gated skeleton, up to 8 rounds, producing the plan) → [the operator's
  OK unless --auto] → implement (one run; its build/test step looped up to 3 times against the
  harness's own acceptance run) → acceptance → push (L1/L2/L3) → MR.
- ``fix_ci`` (:mod:`ci_fix`): the failed job's log → a fix → acceptance → push; a run that
  changed nothing pushes nothing and says so to mr-monitor, which counts it as a failed
  attempt. A conflict with the target branch runs the push recovery onto that branch.
- ``address_review`` (:mod:`review`): the unresolved discussions → changes → push → a reply
  in each discussion only when the wire shows this run's commit on the remote branch.

The agent edits and commits; the harness runs the checks, pushes and talks to GitLab and
Slack. Nothing the model says about its own success is taken as success. Each run ends in one
message to the operator (:mod:`outcome`).
"""

from __future__ import annotations

from typing import Any

from harness_cli.delivery import outcome, worktrees
from harness_cli.delivery.change import Change, change_push_and_mr
from harness_cli.delivery.work import (
    Work,
    move_case,
    read_text,
    set_plan_pending,
    worktree_for,
)
from harness_cli.errors import PolicyRefused
from harness_cli.investigation.gates import evaluate_text
from harness_cli.investigation.gates.a_gates import pinned_block
from harness_cli.loop.guard_notes import pending_guard_notes
from harness_cli.loop.report import CompletionReport
from harness_cli.loop.verdict import Verdict

__all__ = ["Change", "Work", "change_push_and_mr", "run_task", "worktree_for"]

ANALYZE_ROUNDS = 8
""""The task-analyze phase gets up to 8" iterations of the gated skeleton."""


def run_task(work: Work) -> dict[str, Any]:
    wt = worktree_for(work)
    move_case(work, "in_progress", "planning")
    plan = _analyze(work, wt)
    auto = bool(work.args.get("auto"))
    if not auto and not work.args.get("plan_approved"):
        set_plan_pending(work)
        return {
            "mode": "task",
            "state": "plan_waiting_for_operator",
            "worktree": str(wt.path),
            "message": outcome.plan_waiting(work.case.id, plan.draft_response),
        }
    job = "Implement this plan:\n" + "\n".join(f"- {a.description}" for a in plan.actions)
    change = change_push_and_mr(work, wt, "task", job)
    if not change.pushed or change.mr is None:
        # "a failed or no-op run returns the case to a state the operator can act on"
        move_case(work, "failed", "dev-agent task: nothing delivered")
    return outcome.task_result(work, change)


def _analyze(work: Work, wt: worktrees.Worktree) -> CompletionReport:
    t = work.cfg.harness.investigation.model_copy(update={"max_iterations": ANALYZE_ROUNDS})
    history: list[Verdict] = []
    report: CompletionReport | None = None
    analysis = read_text(work.case_dir / "ANALYSIS.md")
    task = read_text(work.case_dir / "TASK.md")
    for n in range(1, ANALYZE_ROUNDS + 1):
        text = work.agent(
            "dev-agent-plan", "dev-agent-plan", wt, iteration=str(n),
            max_iterations=str(ANALYZE_ROUNDS), analysis=analysis, task=task,
            pinned=pinned_block(report),
        )  # fmt: skip
        found, verdict = evaluate_text(text, report, None, t, history=history)
        report = found or report
        history.append(verdict)
        decision = verdict.decision
        assert decision is not None
        if decision.action in ("review", "exit_complete") and report is not None:
            return report
        if decision.is_exit:
            raise PolicyRefused(
                f"planning stopped: {decision.reason}",
                hint="the case needs the operator; see the case thread",
            )
        work.notes = pending_guard_notes(verdict)
    raise PolicyRefused(f"no plan after {ANALYZE_ROUNDS} rounds")

"""``dev-agent --mode fix_ci``: a red pipeline → a fix, or a conflict → the push recovery.

- A red pipeline: the failed job's log goes to the agent; its change is checked, committed,
  accepted and pushed like any other. A run that changes nothing pushes nothing — the
  reference's "80 no-op 'fix CI' commits" — and is reported to mr-monitor as a failed attempt
  (:class:`~harness_cli.state.models.FixResult`), so the loop's budget of three still ends in
  one escalation instead of a red MR nobody hears about.
- A conflict with the target branch (``detailed_merge_status: conflict``): L1 rebases onto
  ``origin/<target>``, L2 resolves within its bounds, L3 tells the operator. Only a pushed
  branch that contains the target counts; then the harness re-runs the acceptance checks on
  the new head and updates the MR from that record.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

from harness_cli import clock
from harness_cli.bounds import bound
from harness_cli.delivery import acceptance, check_guard, mr, outcome, test_weakening
from harness_cli.delivery.change import change_push_and_mr
from harness_cli.delivery.push import recovery as push
from harness_cli.delivery.work import Work, worktree_for
from harness_cli.delivery.worktrees import Worktree
from harness_cli.state import files
from harness_cli.state.models import FixResult

_FAILURE = re.compile(r"^(FAILED|ERROR|E\s|.*Error:|.*failed)", re.IGNORECASE)


def run_fix_ci(work: Work) -> dict[str, Any]:
    wt = worktree_for(work)
    if work.args.get("merge_status"):
        return _recover(work, wt)
    trace_file = Path(str(work.args.get("trace_file", "")))
    trace = bound(
        _read(trace_file),
        work.cfg.harness.inputs.job_trace_chars,
        what="the job log",
        where=str(trace_file),
        keep="tail",
    )
    job = (
        "The MR's pipeline failed. The failed job's log ends with:\n```\n"
        + trace
        + "\n```\nFind the cause and fix it."
    )
    # What CI saw failing stays with the case: every acceptance run from now on refuses a
    # change that takes one of those tests away (``test_weakening``).
    test_weakening.remember(work.case_dir, test_weakening.failing_tests(trace))
    change = change_push_and_mr(work, wt, "fix_ci", job)
    pushed = "pushed" if change.pushed else "push_failed"
    result = pushed if change.changed else "no_change"
    _report(work, result, change.summary(), change.pushed_sha)
    return outcome.fix_result(work, change, first_failure(trace))


def _recover(work: Work, wt: Worktree) -> dict[str, Any]:
    target = str(work.args.get("target_branch") or wt.base_branch)
    status = str(work.args["merge_status"])
    pushed = push.push_with_recovery(
        wt, runtime=work.runtime, outbound=work.out, forge=work.gitlab, cfg=work.cfg,
        case_id=work.case.id, case_dir=work.case_dir, target=target,
        task_text=f"The MR's branch {wt.branch} is `{status}` against {target}: bring it onto "
        f"origin/{target}, keeping the case's change and what {target} gained.",
    )  # fmt: skip
    submitted = _resubmit(work, wt) if pushed.pushed else None
    _report(
        work,
        "recovered" if pushed.pushed else "not_recovered",
        pushed.last_error,
        pushed.pushed_sha or "",
    )
    return outcome.recover_result(work, pushed, target, status, submitted)


def _resubmit(work: Work, wt: Worktree) -> dict[str, Any] | None:
    """The rebased head was never tested: run the checks on it and let the MR say so."""
    project, iid = str(work.args["mr"]).rsplit("!", 1)
    current = work.gitlab.get_mr(project, int(iid))
    record = acceptance.run_acceptance(
        wt.path, work.checks(), work.case_dir, base_sha=wt.base_sha,
        approved=check_guard.approved_digests(work.case_dir), box=work.cfg.harness.sandbox,
        worktrees=work.cfg.harness.delivery.root(),
    )  # fmt: skip
    done = mr.submit_mr(
        work.gitlab, project=project, source_branch=wt.branch, target_branch=wt.base_branch,
        title=current.title, description=current.description, commit_messages=[],
        case_id=work.case.id, case_dir=work.case_dir, acceptance=record,
        head_sha=wt.git().head_sha() or "", thresholds=work.cfg.harness.thresholds,
        agent_text=False,
    )  # fmt: skip
    return {"web_url": done.web_url, "iid": done.iid, "ready": done.ready}


def report_failure(work: Work, reason: str) -> None:
    """A fix_ci run that failed outright still reports back: the MR must not stay red in
    silence (mr-monitor escalates it; the reason already went to the operator)."""
    if work.args.get("mr"):
        _report(work, "failed", reason, "")


def _report(work: Work, result: str, summary: str, sha: str) -> None:
    """What this run did, for mr-monitor's next cycle (it owns every other field)."""
    key = str(work.args.get("mr") or "")
    with files.monitored_mrs().update() as state:
        entry = state.mrs.get(key)
        if entry is None:
            return
        entry.fix_result = FixResult.model_validate(
            {
                "id": secrets.token_hex(8),
                "pipeline_id": int(work.args.get("pipeline_id") or 0),
                "outcome": result,
                "summary": " ".join(summary.split())[:500],
                "sha": sha,
                "at": clock.now(),
            }
        )


def first_failure(trace: str) -> str:
    """The line of the job log a reader looks for first."""
    lines = [ln.strip() for ln in trace.splitlines() if ln.strip()]
    found = next((ln for ln in lines if ln.startswith("FAILED ")), "") or next(
        (ln for ln in lines if _FAILURE.match(ln)), lines[-1] if lines else ""
    )
    return found[:200]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""

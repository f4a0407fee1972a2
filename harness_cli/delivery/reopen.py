"""Ways out for a case the delivery left stuck, and the operator's OK on changed checks.

- ``case reopen`` / ``admin: reopen <case>``: a failed, escalated, stuck ``in_progress`` (no
  dev-agent running) or closed case goes back to ``awaiting_approval`` when its investigation
  is done (``ANALYSIS.md``), so ``admin: task <case>`` runs the dev-agent again. A case with an
  MR still open goes back to ``mr_open``. Before, a failed or no-op run left the case
  ``in_progress`` for ever and ``admin: task`` answered "already in_progress; nothing started".
- ``case accept-checks`` / ``admin: accept-checks <case>``: the operator's explicit OK for a
  change to what the required checks run (:mod:`check_guard`), given for exactly the change in
  the case's newest acceptance record; the checks are run again and the MR leaves draft only
  if they pass on its head.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness_cli.config import Config
from harness_cli.delivery import acceptance, check_guard, mr, worktrees
from harness_cli.errors import InputError, LockHeld, PolicyRefused, StateConflict
from harness_cli.services.gitlab import GitLab
from harness_cli.state import files
from harness_cli.state.locks import hold
from harness_cli.workspace import registry

REOPENABLE = frozenset({"failed", "escalated", "in_progress", "closed"})


@dataclass
class Reopened:
    case_id: str
    changed: bool
    status: str
    message: str
    threads: int = 0
    extra: dict[str, str] = field(default_factory=dict)


def reopen_case(cfg: Config, case_id: str, *, by: str = "operator") -> Reopened:
    case = registry.load_case(case_id)
    if case.status not in REOPENABLE:
        return Reopened(
            case_id,
            False,
            case.status,
            f"{case_id} is {case.status}: nothing to reopen"
            + (f" (`admin: task {case_id}` acts on it)" if case.status != "mr_open" else ""),
        )
    for workflow in ("dev-agent", "investigate"):
        try:
            with hold(f"{workflow}-{case_id}", timeout=0):
                pass
        except LockHeld:
            raise LockHeld(
                f"a {workflow} run is working on {case_id} right now",
                hint="wait for it to end (it reports in the case thread), then reopen",
            ) from None
    open_mrs = [
        key
        for key, e in files.monitored_mrs().read().mrs.items()
        if e.case_id == case_id and e.state == "opened"
    ]
    if open_mrs:
        target = "mr_open"
        next_step = f"its MR {open_mrs[0]} is open; `admin: mr resume {open_mrs[0]}` if paused"
    elif (registry.case_dir(case_id) / "ANALYSIS.md").exists():
        target = "awaiting_approval"
        next_step = f"`admin: task {case_id}` runs the dev-agent again"
    else:
        raise PolicyRefused(
            f"{case_id} has no finished investigation to go back to",
            hint=f"`admin: task {case_id}` starts the investigation",
        )
    try:
        with registry.update_case(case_id, cfg.harness.thresholds, f"reopened by {by}") as fresh:
            fresh.move(target, by=by, note=f"case reopen (was {fresh.status})")
            fresh.plan_pending = False
    except StateConflict as exc:
        raise PolicyRefused(exc.message, hint=exc.hint) from None
    threads = registry.reopen_threads(registry.load_case(case_id))
    return Reopened(
        case_id, True, target, f"reopened {case_id} ({case.status} → {target}); {next_step}",
        threads,
    )  # fmt: skip


def accept_checks(
    cfg: Config, case_id: str, forge: GitLab, *, by: str = "operator", dry_run: bool = False
) -> tuple[bool, str]:
    """Record the operator's OK for the check change in the newest acceptance record, run the
    checks again and submit the MR from that record. Returns (changed, message).
    ``dry_run``: say what would be accepted; record, run and send nothing."""

    folder = registry.case_dir(case_id)
    record = acceptance.latest_record(folder)
    if record is None or not record.checks_changed:
        return False, f"{case_id}: its newest acceptance run changed no required check"
    opened = [
        (key, e)
        for key, e in files.monitored_mrs().read().mrs.items()
        if e.case_id == case_id and e.state == "opened"
    ]
    wt = next(
        (w for _, e in opened if (w := worktrees.for_case_repo(case_id, e.project)) is not None),
        None,
    )
    if wt is None or str(wt.path.resolve()) != record.worktree:
        raise InputError(
            f"{case_id}: no open MR worktree matches its newest acceptance record",
            hint="the change must still be on its MR's branch",
        )
    verdict = check_guard.guard_verdict(wt.path, wt.base_sha, [c.command for c in record.checks])
    if verdict.digest != record.checks_digest:
        return False, (
            f"{case_id}: the checks changed again since the acceptance run; nothing accepted "
            "(the next run asks again)"
        )
    if dry_run:
        return False, (
            f"{case_id}: would accept the change to {', '.join(record.checks_changed)} "
            f"(digest {verdict.digest[:12]}) and re-run the checks:\n"
            + check_guard.describe(wt.path, wt.base_sha, record.checks_changed)
        )
    new = check_guard.approve(folder, verdict, by=by)
    rerun = acceptance.run_acceptance(
        wt.path, [c.command for c in record.checks], folder, base_sha=wt.base_sha,
        approved=check_guard.approved_digests(folder), box=cfg.harness.sandbox,
        worktrees=cfg.harness.delivery.root(),
    )  # fmt: skip
    key, entry = next((k, e) for k, e in opened if e.project == wt.project)
    current = forge.get_mr(entry.project, entry.iid)
    done = mr.submit_mr(
        forge, project=entry.project, source_branch=wt.branch, target_branch=wt.base_branch,
        title=current.title, description=current.description, commit_messages=[],
        case_id=case_id, case_dir=folder, acceptance=rerun,
        head_sha=wt.git().head_sha() or "", thresholds=cfg.harness.thresholds,
        agent_text=False,
    )  # fmt: skip
    registry.sync(f"case {case_id}: checks change accepted by {by}", cfg.harness.thresholds,
                  only=[folder])  # fmt: skip
    state = "ready" if done.ready else f"still a draft ({rerun.reason or 'head not accepted'})"
    paths = ", ".join(record.checks_changed)
    return new or done.ready, f"{case_id}: accepted the change to {paths}; {key} is {state}"

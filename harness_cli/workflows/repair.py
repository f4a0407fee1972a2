"""What every workflow run does around its work, so that a run killed at any point leaves
nothing the next one does not finish: before — undo what a dead agent changed where it must
not (:mod:`harness_cli.agents.guard`), commit what a dead run left in the case folder, read
what other machines pushed (a stale clone acts on the latest state), deliver what the case is
still owed; after — commit what this run wrote (its case files are durable
state, committed and pushed at every change: CONTRACT §3)."""

from __future__ import annotations

import logging

from harness_cli import paths
from harness_cli.agents import guard
from harness_cli.config import Config
from harness_cli.errors import HarnessError, StateConflict
from harness_cli.logs import event
from harness_cli.outbox import flush, ledger
from harness_cli.outbox.doors import Doors
from harness_cli.workspace import registry

log = logging.getLogger("harness.runs")


def before_run(
    cfg: Config, case_id: str, doors: Doors, *, workflow: str, commit: bool = True
) -> list[str]:
    """Repairs at the start of a run on ``case_id``; returns what was done (for the logs).
    The guard's repairs come first and always — a dry run (``commit=False``: nothing committed,
    nothing posted) must not read a ticket or a template a dead run's agent changed either."""
    done: list[str] = []

    done += [f"restored {p}" for p in guard.repair_left_behind(case_id)]
    if commit and commit_case(cfg, case_id, f"{workflow}: what an interrupted run left"):
        done.append("committed what an earlier run left")  # that sync brought the remote in
    elif commit and refresh(cfg):
        done.append("read what other machines pushed")
    if commit:
        done += flush_case(cfg, case_id, doors)
    if done:
        event(log, "run_repairs", case_id=case_id, workflow=workflow, repairs=done)
    return done


def after_run(cfg: Config, case_id: str, *, workflow: str) -> None:
    commit_case(cfg, case_id, f"{workflow} run")


def commit_case(cfg: Config, case_id: str, why: str) -> bool:
    """Commit (and push) the case folder if anything in it is uncommitted; a failure is logged
    (the commit is safe on disk and the next sync takes it)."""

    folder = registry.case_dir(case_id)
    if not (paths.workspace() / ".git").exists() or not folder.exists():
        return False
    try:
        return (
            registry.sync(f"case {case_id}: {why}", cfg.harness.thresholds, only=[folder])
            is not None
        )
    except HarnessError as exc:
        event(log, "case_commit_failed", logging.WARNING, case_id=case_id, error=exc.line())
        return False


def refresh(cfg: Config) -> bool:
    """The latest case state from the workspace remote before the run reads it; a remote that
    cannot be reached is logged and the run goes on (the next sync merges by the transition
    rules all the same)."""

    try:
        return registry.refresh(cfg.harness.thresholds)
    except StateConflict:
        raise
    except HarnessError as exc:
        event(log, "workspace_pull_failed", logging.WARNING, error=exc.line())
        return False


def flush_case(cfg: Config, case_id: str, doors: Doors) -> list[str]:
    """Deliver the case's owed Slack writes (GitLab ones wait for mr-monitor)."""

    if not any(o.service == "slack" and o.owed for o in ledger.owed(case_id)):
        return []

    try:
        report = flush.flush(
            doors.out, self_dm=cfg.harness.operator.self_dm_channel, case_id=case_id
        )
    except HarnessError as exc:  # e.g. no Slack token here: the next poll-slack delivers it
        event(log, "owed_flush_failed", logging.WARNING, case_id=case_id, error=exc.line())
        return []
    return report.lines()

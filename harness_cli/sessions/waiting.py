"""Runs the preflight gate warned about: they wait as ``waiting_for_approval`` holding nothing.

Reference 004: "Pendant qu'une exécution attend, sa session est abandonnée… l'approbation en
ouvre une nouvelle", "Approuver ne valide pas l'ancien verdict les yeux fermés. Le gate est
évalué à nouveau", "Une exécution que personne n'approuve sous 24 heures est annulée."

The waiting state is a session state, not a case status: the case's status machine stays what
the workflows made it (nothing started), and ``harness session list`` shows the run. One file
per run under ``sessions/waiting/`` of the workspace, committed and pushed like the outcome
reports, so every machine sees it and any machine's ``admin: approve <run>`` can start it; one
DM. Two machines approving the same run at once: the first to create the ref
``refs/harness/approvals/<run>`` on the workspace remote (a push on "must not exist", the
remote decides) approves it, the other says so and starts nothing.
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness_cli import clock, paths
from harness_cli.config import load_config
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch.payload import Payload
from harness_cli.errors import EXIT_OK, HarnessError, InputError, PolicyRefused
from harness_cli.logs import event
from harness_cli.outbox import notify
from harness_cli.outbox.outbound import Outbound
from harness_cli.sessions.gate import Verdict
from harness_cli.sessions.model import ScopeDoc, WaitingRun
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import gitsync

log = logging.getLogger("harness.sessions")
APPROVED_ARG = "approved_run"


class AwaitingApproval(HarnessError):
    """Not a failure: the run did not start and waits for ``admin: approve <run>``."""

    exit_code = EXIT_OK


APPROVALS = "refs/harness/approvals/"


def folder() -> Path:
    return paths.workspace() / "sessions" / "waiting"


def _sync(path: Path, message: str) -> None:
    """Commit and push one waiting run's file (best effort: the next sync pushes it)."""
    if not (paths.workspace() / ".git").exists():
        return

    try:
        gitsync.sync(
            paths.workspace(),
            message,
            paths=[path],
            lock_dir=paths.locks_dir(),
            max_push_attempts=load_config().harness.thresholds.git_push_attempts,
        )
    except Exception as exc:  # noqa: BLE001 - the file is on disk; the next sync pushes it
        event(log, "waiting_not_synced", logging.WARNING, error=str(exc)[:300])


def _pull() -> None:
    """What the other machines parked or decided (best effort: a local-only workspace, or a
    remote down, leaves this machine's view)."""
    if not (paths.workspace() / ".git").exists():
        return

    try:
        gitsync.pull(paths.workspace(), paths.locks_dir())
    except Exception as exc:  # noqa: BLE001 - decide on what is on disk
        event(log, "waiting_not_pulled", logging.WARNING, error=str(exc)[:300])


def _claim(run: str) -> str:
    """Create ``refs/harness/approvals/<run>`` on the workspace remote on "must not exist":
    "" when this machine won, else who did (one push; the remote decides)."""
    # lifecycle parks runs here: a two-module pair
    from harness_cli.sessions import lifecycle  # noqa: PLC0415

    me = lifecycle.machine_id()
    board = lifecycle.open_board()
    doc = ScopeDoc.model_validate({"scope": f"approval:{run}", "by": me})
    if board.write({APPROVALS + run: ("", doc)}) is not None:
        return ""
    return "another machine"


def _path(run: str) -> Path:
    return folder() / f"{run}.json"


def _save(run: WaitingRun) -> None:
    atomic_write_text(_path(run.run), run.model_dump_json(indent=2) + "\n")
    _sync(_path(run.run), f"Run {run.run} ({run.workflow} {run.case_id}) {run.state}")


def load(run: str) -> WaitingRun:
    try:
        return WaitingRun.model_validate_json(_path(run).read_bytes())
    except FileNotFoundError:
        raise InputError(
            f"no waiting run {run!r}", hint="`harness session list` shows them"
        ) from None
    except (ValidationError, ValueError) as exc:
        raise InputError(f"{_path(run)} is unreadable: {str(exc).splitlines()[0]}") from None


def all_runs() -> list[WaitingRun]:
    found = []
    for path in sorted(folder().glob("*.json")) if folder().is_dir() else ():
        try:
            found.append(WaitingRun.model_validate_json(path.read_bytes()))
        except (OSError, ValidationError, ValueError):
            continue
    return found


def approved(payload: Any) -> bool:
    """True when this payload is the re-dispatch of a run the operator approved."""
    run = str((getattr(payload, "args", None) or {}).get(APPROVED_ARG) or "")
    if not run:
        return False
    try:
        return load(run).state == "approved"
    except InputError:
        return False


def park(
    workflow: str, case_id: str, payload: Any, verdict: Verdict, out: Outbound
) -> AwaitingApproval:
    """Record the run as waiting (once per payload key) and DM the operator once."""
    key = str(getattr(payload, "key", "") or "")
    for old in all_runs():
        if key and old.payload.get("key") == key and old.state == "waiting_for_approval":
            return _waiting(old)
    data = (
        payload.model_dump(mode="json")
        if payload is not None
        else {"workflow": workflow, "case_id": case_id, "case_dir": "", "trigger": {"kind": "cli"}}
    )
    run = WaitingRun(
        run=f"w-{secrets.token_hex(4)}",
        workflow=workflow,
        case_id=case_id,
        state="waiting_for_approval",
        reasons=verdict.reasons,
        payload=data,
        created_at=clock.now(),
    )
    _save(run)
    event(
        log,
        "waiting_for_approval",
        run=run.run,
        workflow=workflow,
        case_id=case_id,
        reasons=verdict.reasons,
    )
    _dm(run, out)
    return _waiting(run)


def _waiting(run: WaitingRun) -> AwaitingApproval:
    return AwaitingApproval(
        f"{run.workflow} on {run.case_id} is waiting_for_approval as run {run.run}: "
        f"{'; '.join(run.reasons)}",
        hint=f"nothing started and nothing is held; `admin: approve {run.run}` re-checks and "
        "starts it",
    )


def _dm(run: WaitingRun, out: Outbound) -> None:
    text = (
        f"{run.workflow} waits for your approval: {'; '.join(run.reasons)}. Reply "
        f"`admin: approve {run.run}` to check again and start it; unapproved it is cancelled "
        f"in {load_config().harness.sessions.approval_ttl_hours:g} h."
    )
    try:
        cfg = load_config()
        notify.dm(
            out,
            cfg,
            "waiting_for_approval",
            text,
            case_id=run.case_id,
        )
    except HarnessError as exc:  # the run is recorded; `harness session list` still shows it
        event(log, "waiting_dm_failed", logging.WARNING, run=run.run, error=exc.line())


def expire_due() -> list[str]:
    """Cancel every run unapproved past ``approval_ttl_hours`` (by HARNESS_NOW)."""

    ttl = timedelta(hours=load_config().harness.sessions.approval_ttl_hours)
    now = clock.now()
    cancelled = []
    for run in all_runs():
        if run.state == "waiting_for_approval" and now - run.created_at >= ttl:
            run.state, run.decided_at = "cancelled", now
            run.note = f"unapproved for {ttl.total_seconds() / 3600:g} h"
            _save(run)
            event(log, "waiting_cancelled", run=run.run, case_id=run.case_id)
            cancelled.append(run.run)
    return cancelled


def approve(run_id: str, *, backend: Any = None) -> str:
    """``admin: approve <run>``: re-evaluate the gate now; start it when no longer denied."""
    # lifecycle parks runs here: a two-module pair
    from harness_cli.sessions import lifecycle  # noqa: PLC0415

    _pull()  # the run may have waited on another machine
    expire_due()
    run = load(run_id)
    if run.state != "waiting_for_approval":
        return f"run {run.run} is {run.state}{f' ({run.note})' if run.note else ''}; nothing to do"
    winner = _claim(run.run)
    if winner:
        return f"run {run.run} is being approved by {winner} already; nothing to do"
    payload = Payload.model_validate(run.payload)
    verdict = lifecycle.preview(run.workflow, run.case_id, payload)
    if verdict.decision == "deny":
        run.state, run.decided_at, run.note = "denied", clock.now(), verdict.line
        _save(run)
        return f"run {run.run} re-checked and still refused: {verdict.line}"
    run.state, run.decided_at = "approved", clock.now()
    _save(run)
    again = payload.model_copy(
        update={
            "args": {**payload.args, APPROVED_ARG: run.run},
            "key": f"{payload.key or run.run}|approved",
            "created_at": None,
        }
    )
    dispatch.dispatch(again, backend=backend)
    return (
        f"run {run.run} approved: {run.workflow} on {run.case_id} started (the gate runs again "
        "as it starts)"
    )


__all__ = ["AwaitingApproval", "PolicyRefused", "approve", "expire_due", "park"]

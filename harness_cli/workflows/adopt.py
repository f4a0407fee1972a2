"""Stranded runs are adopted, not forgotten: a workflow run whose process died (SIGKILL, OOM, a
reboot, a dispatcher that died with it) is started again by the next poll-slack or mr-monitor
cycle, as a resume of the same run (same obligation scope, same checkpoints) — at most
``run_max_resumes`` times. A run that keeps dying is abandoned: the operator is told once, and
a case it left ``investigating`` or ``in_progress`` is handed back as ``failed``, which
``admin: reopen`` takes from there. No status is left stuck."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness_cli.config import Config
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch import journal
from harness_cli.dispatch.backends import BackendName
from harness_cli.dispatch.journal import RunRecord
from harness_cli.dispatch.payload import Payload, Trigger, load_payload
from harness_cli.errors import HarnessError, LockHeld
from harness_cli.logs import event
from harness_cli.outbox import notify
from harness_cli.state.locks import hold
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import registry

if TYPE_CHECKING:
    from harness_cli.outbox.outbound import Outbound

log = logging.getLogger("harness.runs")

REDISPATCH_AFTER_S = 3600.0
"""A re-dispatched run that has not started within this long is dispatched again (its
dispatch was lost); it counts against ``run_max_resumes`` like any other death."""
HANDED_BACK = ("investigating", "in_progress")
"""Statuses a run in progress holds; an abandoned run's case leaves them for ``failed``."""


def stranded_runs(cfg: Config, out: Outbound | None, *, backend: BackendName) -> list[str]:
    limits = cfg.harness.obligations
    lines: list[str] = []
    now = time.time()
    for path, record in journal.stranded():
        try:
            dead_for = now - path.stat().st_mtime
        except OSError:
            continue
        if dead_for < limits.run_resume_grace_seconds:
            continue
        if record.redispatched_at and now - record.redispatched_at < REDISPATCH_AFTER_S:
            continue
        if _busy(record):
            continue  # its workflow runs right now on the case (it is resuming it)
        try:
            with hold(f"run-{path.stem}", timeout=0):
                fresh = journal.read(path)
                if fresh is None or fresh.state != "running":
                    continue
                if fresh.resumes >= limits.run_max_resumes:
                    lines.append(_abandon(cfg, out, path, fresh))
                else:
                    lines.append(_redispatch(backend, path, fresh))
                    say_redispatched(cfg, out, fresh.case_id, fresh.workflow, "was killed mid-run")
        except LockHeld:
            continue
        except HarnessError as exc:
            event(log, "stranded_run_failed", logging.WARNING, run=record.run, error=exc.line())
    return lines


def say_redispatched(
    cfg: Config, out: Outbound | None, case_id: str, workflow: str, why: str
) -> None:
    """#34 item 2: a run started again by a cycle is said in the case thread — before, a case
    moved twenty minutes after its failure message with no word. A lost notice is logged."""

    if out is None or not case_id:
        return
    try:
        notify.dm(out, cfg, "run_redispatched",
                  f"`{workflow}` {why}; I started it again now (it reports here).",
                  case_id=case_id)  # fmt: skip
    except HarnessError as exc:
        event(log, "redispatch_notice_failed", logging.WARNING, case_id=case_id, error=exc.line())


def _busy(record: RunRecord) -> bool:
    try:
        with hold(f"{record.workflow}-{record.case_id}", timeout=0):
            return False
    except LockHeld:
        return True


def _redispatch(backend: BackendName, path: Path, record: RunRecord) -> str:
    old = None
    if record.payload:
        try:
            old = load_payload(Path(record.payload))
        except HarnessError:
            old = None
    payload = Payload(
        workflow=record.workflow,
        case_id=record.case_id,
        case_dir=old.case_dir if old else str(registry.case_dir(record.case_id).resolve()),
        channel=old.channel if old else "",
        thread_ts=old.thread_ts if old else "",
        trigger=Trigger(kind="resume", user="harness"),
        args={**(old.args if old else record.args), "resume_run": record.identity},
        repo=old.repo if old else str(record.args.get("repo", "")),
    )
    started = dispatch.dispatch(payload, backend=backend)
    record.redispatched_at = time.time()
    atomic_write_text(path, record.model_dump_json(indent=2) + "\n")
    event(
        log,
        "stranded_run_redispatched",
        workflow=record.workflow,
        case_id=record.case_id,
        run=record.run,
        resumes=record.resumes,
        payload=str(started.payload_file),
    )
    return f"resumed {record.workflow} {record.case_id} (killed mid-run)"


def _again(record: RunRecord) -> str:
    """The Slack command that starts an abandoned run's work again (#34 item 2)."""
    if record.workflow == "dev-agent" and record.args.get("mode", "task") == "task":
        return f"admin: retry {record.case_id}"
    if record.workflow == "dev-agent":
        return f"admin: mr rescan {record.args.get('mr', record.case_id)}"
    return f"admin: task {record.case_id}"


def _abandon(cfg: Config, out: Outbound | None, path: Path, record: RunRecord) -> str:
    record.state = "abandoned"
    atomic_write_text(path, record.model_dump_json(indent=2) + "\n")
    note = f"{record.workflow} died {record.resumes + 1} times mid-run"
    status = ""
    try:
        with registry.update_case(record.case_id, cfg.harness.thresholds, note) as case:
            if case.status in HANDED_BACK:
                case.move("failed", by="harness", note=note)
            status = case.status
    except HarnessError as exc:
        event(
            log,
            "abandoned_case_not_moved",
            logging.WARNING,
            case_id=record.case_id,
            error=exc.line(),
        )
    text = (
        f"{record.case_id}: `{record.workflow}` was killed mid-run {record.resumes + 1} times "
        f"and resumed {record.resumes}; I stopped resuming it. The case is `{status or '?'}`: "
        f"once the cause (memory, a timeout, the machine) is fixed, `{_again(record)}` starts "
        "it again."
    )
    if out is not None and not record.told:
        notify.dm(out, cfg, "run_abandoned", text, case_id=record.case_id)
        record.told = True
        atomic_write_text(path, record.model_dump_json(indent=2) + "\n")
    event(
        log,
        "stranded_run_abandoned",
        logging.ERROR,
        workflow=record.workflow,
        case_id=record.case_id,
        run=record.run,
        resumes=record.resumes,
    )
    return f"gave up resuming {record.workflow} {record.case_id}; the operator was told"

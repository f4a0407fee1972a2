"""Opening, heartbeating and closing work sessions — owned by the harness, never the agent.

:func:`workflow_session` is what ``commands/_workflow.running`` wraps every workflow in: the
preflight gate before anything is cloned (deny → exit 4 naming the holder; warn → the run
waits for approval holding nothing), a heartbeat thread while it runs, and at the end the
outcome report and the release.
"""

from __future__ import annotations

import contextvars
import logging
import os
import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from harness_cli import clock, paths
from harness_cli.config import load_config
from harness_cli.errors import HarnessError, PolicyRefused, ServiceError
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.outbox.doors import Doors
from harness_cli.services.git import Git
from harness_cli.sessions import outcome as outcomes
from harness_cli.sessions.board import Board
from harness_cli.sessions.gate import Verdict, preflight_gate
from harness_cli.sessions.model import Element, Hold, SessionRecord
from harness_cli.sessions.policy import SessionsPolicy, WorkflowPolicy
from harness_cli.sessions.reservations import Held, acquire, look, renew
from harness_cli.state.locks import hold as local_lock
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import registry

log = logging.getLogger("harness.sessions")
_current: contextvars.ContextVar[Session | None] = contextvars.ContextVar("session", default=None)


def machine_id() -> str:
    """One id per HARNESS_HOME (two homes on one host are two machines): ``<host>-<hex>``."""
    path = paths.home() / "machine-id"
    try:
        return path.read_text().strip()
    except OSError:
        value = f"{socket.gethostname().split('.')[0]}-{secrets.token_hex(3)}"
        atomic_write_text(path, value + "\n")
        return value


def remote_url() -> str:
    """Where the workspace pushes (``origin`` of the workspace), else a local stand-in: the
    board pushes its reservations there, so a dry run's copy, whose pushes go to a sink, never
    moves a real reservation (#29)."""

    workspace = paths.workspace()
    if (workspace / ".git").exists():
        try:
            url = Git(workspace).remote_url("origin", push=True)
        except ServiceError:
            url = None
        if url:
            return url
    return str(paths.home() / "sessions" / "local-remote.git")


def open_board() -> Board:
    return Board(paths.home() / "sessions" / "board.git", remote_url())


def record_path(session_id: str) -> Path:
    return paths.home() / "sessions" / f"{session_id}.json"


def save(record: SessionRecord) -> None:
    atomic_write_text(record_path(record.id), record.model_dump_json(indent=2) + "\n")


@dataclass
class Session:
    """A held session. Workflows attach what they saw through :func:`current`."""

    record: SessionRecord
    held: Held
    board: Board
    policy: SessionsPolicy
    verdict: Verdict
    checks: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""
    failed: bool = False
    """Set by the workflow when it ended without raising but did not succeed (exit 1)."""
    report: dict[str, Any] | None = None
    briefing: list[str] = field(default_factory=list)
    held_by_others: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def expiry(self) -> timedelta:
        if self.record.workflow == "claude-code":
            return timedelta(hours=self.policy.human_expiry_hours)
        return timedelta(seconds=self.policy.session_expiry_seconds)

    # -- what the workflow attaches -----------------------------------------------------
    def attach_files(self, files: list[str]) -> None:
        self.record.files_changed = sorted({*self.record.files_changed, *files})
        save(self.record)

    def agent_said(self, text: str) -> None:
        found = outcomes.parse_report(text)
        if found is not None:
            self.report = found

    # -- heartbeat and close ------------------------------------------------------------
    def heartbeat(self) -> bool:
        now = clock.now()
        with self._lock, local_lock("sessions-board", timeout=60, what="the reservation board"):
            return renew(
                self.board,
                self.held,
                now=now,
                machine=self.held.hold.machine,
                attempts=self.policy.cas_attempts,
                update={"heartbeat_at": now, "expires_at": now + self.expiry},
            )

    def start_heartbeat(self) -> None:
        def beat() -> None:
            while not self._stop.wait(self.policy.heartbeat_seconds):
                try:
                    if not self.heartbeat():
                        event(log, "session_lost", logging.WARNING, session=self.record.name)
                except Exception as exc:  # noqa: BLE001 - a missed beat is retried next time
                    event(log, "heartbeat_failed", logging.WARNING, error=str(exc)[:200])

        self._thread = threading.Thread(target=beat, name="session-heartbeat", daemon=True)
        self._thread.start()

    def close(self, *, succeeded: bool, write_outcome: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if write_outcome:
            base = {
                "session": self.record.id,
                "name": self.record.name,
                "workflow": self.record.workflow,
                "case_id": self.record.case_id,
                "files_changed": self.record.files_changed,
                "checks": self.checks,
                "elements": self.record.elements,
                "held_by_others": self.held_by_others,
                "summary": self.summary,
                "pipeline": self.record.pipeline,
            }
            report = outcomes.build(base, self.report, succeeded=succeeded)
            try:
                written = outcomes.store(report)
                self.record.outcome = str(written[0]) if written else ""
            except (HarnessError, OSError) as exc:
                event(log, "outcome_not_written", logging.WARNING, error=str(exc)[:300])
        try:
            with self._lock, local_lock("sessions-board", timeout=60, what="the reservation board"):
                renew(
                    self.board,
                    self.held,
                    now=clock.now(),
                    machine=self.held.hold.machine,
                    attempts=self.policy.cas_attempts,
                    release=True,
                )
        except HarnessError as exc:  # the hold expires by itself; the run's own result stands
            event(
                log,
                "session_release_failed",
                logging.WARNING,
                session=self.record.name,
                error=exc.line(),
            )
        self.record.state = "closed"
        self.record.closed_at = clock.now()
        save(self.record)
        event(
            log,
            "session_closed",
            session=self.record.name,
            succeeded=succeeded,
            remote_ops=self.board.ops,
        )


def finish(summary: str, *, failed: bool = False) -> None:
    """What the workflow says at its end, for the outcome report (no-op without a session)."""
    session = current()
    if session is not None:
        session.summary, session.failed = summary, failed


def current() -> Session | None:
    """The session the running workflow is in (None: none opened, e.g. a workflow the
    policy does not coordinate)."""
    return _current.get()


def new_hold(
    *,
    name: str,
    workflow: str,
    elements: list[Element],
    exclusive: bool,
    task: str,
    case_id: str,
    pid: int,
    expiry: timedelta,
    pipeline: str = "",
) -> Hold:
    now = clock.now()
    machine = machine_id()
    return Hold(
        session=f"{machine}-{secrets.token_hex(4)}",
        name=name,
        workflow=workflow,
        machine=machine,
        pid=pid,
        task=task[:120],
        case_id=case_id,
        elements=elements,
        exclusive=exclusive,
        opened_at=now,
        heartbeat_at=now,
        expires_at=now + expiry,
        pipeline=pipeline,
    )


def open_session(
    hold: Hold,
    policy: SessionsPolicy,
    wf: WorkflowPolicy,
    *,
    approved: bool = False,
    external_id: str = "",
) -> tuple[Verdict, Session | None]:
    board = open_board()
    with local_lock("sessions-board", timeout=60, what="the reservation board"):
        verdict, held = acquire(
            board,
            hold,
            wf,
            now=clock.now(),
            machine=hold.machine,
            attempts=policy.cas_attempts,
            approved=approved,
        )
    record = SessionRecord(
        id=hold.session,
        name=hold.name,
        workflow=hold.workflow,
        case_id=hold.case_id,
        elements=hold.elements,
        exclusive=hold.exclusive,
        opened_at=hold.opened_at,
        pipeline=hold.pipeline,
        external_id=external_id,
        hold=hold,
        state="open" if held else "denied",
    )
    if held is None:
        return verdict, None
    save(record)
    session = Session(record, held, board, policy, verdict)
    session.briefing = outcomes.briefing(hold.elements)
    if session.briefing:  # shown in its preflight too
        event(log, "preflight_briefing", session=hold.name, lines=session.briefing)
    return verdict, session


def elements_for(workflow: str, case_id: str, payload: Any) -> tuple[list[Element], str]:
    """What a workflow reserves, and its task line: the case always; dev-agent also the repo
    it changes (the paths the payload names, else the whole repository); finalize the
    harness's own repository (the improvement MR)."""

    elements = [Element.case(case_id)]
    args = dict(getattr(payload, "args", None) or {})
    task = f"{workflow} {case_id}"
    try:
        case = registry.load_case(case_id)
        task = case.title or task
    except Exception:  # noqa: BLE001 - a missing case fails in the workflow, with its own line
        case = None
    if workflow == "dev-agent":
        repo = str(getattr(payload, "repo", "") or args.get("repo") or "")
        if not repo and args.get("mr"):
            repo = str(args["mr"]).rsplit("!", 1)[0]
        if not repo and case is not None:
            repos = load_config().projects.projects.get(case.project)
            repo = repos.repos[0] if repos and repos.repos else ""
        if repo:
            named = [str(p) for p in args.get("paths") or []]
            elements += [Element.repo(repo, p) for p in named] or [Element.repo(repo, shared=True)]
    elif workflow == "finalize":
        elements.append(Element.repo(load_config().harness.improvement.self_repo, shared=True))
    return elements, task


@contextmanager
def workflow_session(
    workflow: str, case_id: str, payload: Any, *, doors: Doors, write_outcome: bool = True
) -> Iterator[Session | None]:
    """Gate, hold, heartbeat, then outcome report and release. Deny: PolicyRefused (exit 4),
    before anything is cloned or changed. Warn: the run is parked (see :mod:`waiting`) and the
    operator is DMed through ``doors``."""
    # waiting parks and starts runs here: a two-module pair
    from harness_cli.sessions import waiting  # noqa: PLC0415

    policy = load_config().harness.sessions
    wf = policy.for_workflow(workflow)
    if wf is None:
        yield None
        return
    elements, task = elements_for(workflow, case_id, payload)
    hold = new_hold(
        name=f"harness/{workflow}/{machine_id()}",
        workflow=workflow,
        elements=elements,
        exclusive=wf.exclusive,
        task=task,
        case_id=case_id,
        pid=os.getpid(),
        expiry=timedelta(seconds=policy.session_expiry_seconds),
        pipeline=os.environ.get("CI_PIPELINE_ID", ""),
    )
    approved = waiting.approved(payload)
    verdict, session = open_session(hold, policy, wf, approved=approved)
    if verdict.decision == "deny":
        raise PolicyRefused(verdict.line, hint=_deny_hint(verdict))
    if session is None:  # warn
        raise waiting.park(workflow, case_id, payload, verdict, doors.out)
    crash_point("session.opened")
    token = _current.set(session)
    session.start_heartbeat()
    ok = False
    try:
        yield session
        ok = True
    finally:
        _current.reset(token)
        session.close(succeeded=ok and not session.failed, write_outcome=write_outcome)


def _deny_hint(verdict: Verdict) -> str:
    names = ", ".join(sorted({h.name for h in verdict.holders}))
    return f"nothing was cloned or changed; it runs once {names} is done (`harness session list`)"


def preview(workflow: str, case_id: str, payload: Any, *, approved: bool = True) -> Verdict:
    """The gate's verdict right now, holding nothing (one fetch): for ``admin: approve`` and
    ``harness session status``."""

    policy = load_config().harness.sessions
    wf = policy.for_workflow(workflow) or WorkflowPolicy(exclusive=False, on_overlap="allow")
    elements, task = elements_for(workflow, case_id, payload)
    hold = new_hold(
        name=f"harness/{workflow}/{machine_id()}",
        workflow=workflow,
        elements=elements,
        exclusive=wf.exclusive,
        task=task,
        case_id=case_id,
        pid=os.getpid(),
        expiry=timedelta(seconds=1),
    )
    with local_lock("sessions-board", timeout=60, what="the reservation board"):
        snap = look(open_board(), clock.now(), hold.machine)
    return preflight_gate(hold, snap.live, wf, approved=approved)

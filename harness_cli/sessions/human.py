"""A human's Claude Code session taking part (004 "Deux types d'agents, un seul modèle"):
``harness session open|close|gate`` behind the claude CLI hooks. SessionStart opens
``claude-code/<user>`` on the checkout's repository; PreToolUse on Write/Edit asks the gate
(and renews the session); SessionEnd closes it with its outcome."""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import subprocess
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from pydantic import ValidationError

from harness_cli import clock, paths
from harness_cli.config import load_config
from harness_cli.errors import HarnessError
from harness_cli.sessions import lifecycle
from harness_cli.sessions import outcome as outcomes
from harness_cli.sessions.gate import Verdict, conflicts, deny_line, exclusive_in
from harness_cli.sessions.guard import changed_files
from harness_cli.sessions.model import Element, SessionRecord
from harness_cli.sessions.outcome import briefing
from harness_cli.sessions.policy import WorkflowPolicy
from harness_cli.sessions.reservations import Held, look, renew
from harness_cli.state.locks import hold as local_lock


def user() -> str:
    return os.environ.get("HARNESS_USER") or getpass.getuser()


def _git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


def repo_of(cwd: Path) -> tuple[str, Path | None]:
    """``group/project`` of the checkout at ``cwd`` (the last two segments of its origin URL's
    path, ``.git`` dropped), and its top level. ``HARNESS_SESSION_REPO`` overrides the name."""
    top = _git(cwd, "rev-parse", "--show-toplevel")
    if not top:
        return "", None
    named = os.environ.get("HARNESS_SESSION_REPO", "")
    url = named or _git(cwd, "remote", "get-url", "origin")
    path = re.sub(r"^[a-z+]+://[^/]*", "", url).split(":", 1)[-1]
    parts = [p for p in path.removesuffix("/").removesuffix(".git").split("/") if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else "", Path(top)


def find(external_id: str) -> SessionRecord | None:
    folder = paths.home() / "sessions"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            record = SessionRecord.model_validate_json(path.read_bytes())
        except (OSError, ValidationError, ValueError):
            continue
        if record.external_id == external_id and record.state in ("open", "denied"):
            return record
    return None


@dataclass
class Opened:
    verdict: Verdict
    record: SessionRecord | None
    conflicts: list[str]
    briefing: list[str] = field(default_factory=list)
    """The last outcome reports on these elements (who worked here, what they left)."""


def open_human(
    *,
    elements: list[Element],
    task: str,
    external_id: str = "",
    cwd: Path | None = None,
    workflow: str = "claude-code",
    name: str = "",
) -> Opened:

    policy = load_config().harness.sessions
    wf = policy.for_workflow(workflow) or WorkflowPolicy()
    if external_id and (old := find(external_id)) is not None and old.state == "open":
        return Opened(Verdict("allow"), old, [])
    expiry = (
        timedelta(hours=policy.human_expiry_hours)
        if workflow == "claude-code"
        else timedelta(seconds=policy.session_expiry_seconds)
    )
    hold = lifecycle.new_hold(
        name=name
        or (
            f"claude-code/{user()}"
            if workflow == "claude-code"
            else f"harness/{workflow}/{lifecycle.machine_id()}"
        ),
        workflow=workflow,
        elements=elements,
        exclusive=wf.exclusive,
        task=task,
        case_id=next((e.scope[5:] for e in elements if e.scope.startswith("case:")), ""),
        pid=0,
        expiry=expiry,
    )
    verdict, session = lifecycle.open_session(hold, policy, wf, external_id=external_id)
    record = session.record if session else None
    if record is not None and cwd is not None:
        record.cwd, record.base = str(cwd), _git(cwd, "rev-parse", "HEAD")
        lifecycle.save(record)
    lines = [
        f"{h.name} holds {', '.join(e.label for e in h.elements)}: {h.task}"
        for h in verdict.holders
    ]

    return Opened(verdict, record, lines, session.briefing if session else briefing(elements))


def close_human(record: SessionRecord, *, summary: str = "", succeeded: bool = True) -> str:
    """Release and write the outcome (files changed from the checkout's git since open)."""

    if record.state != "open" or record.hold is None:
        record.state = "closed"
        lifecycle.save(record)
        return f"{record.name}: nothing held"
    files = list(record.files_changed)
    if record.cwd and record.base:
        with contextlib.suppress(HarnessError):  # the checkout gone: keep what was attached
            files = sorted({*files, *changed_files(Path(record.cwd), record.base)})
    report = outcomes.build(
        {
            "session": record.id,
            "name": record.name,
            "workflow": record.workflow,
            "case_id": record.case_id,
            "files_changed": files,
            "elements": record.elements,
            "summary": summary,
        },
        None,
        succeeded=succeeded,
    )
    outcomes.store(report)
    policy = load_config().harness.sessions
    with local_lock("sessions-board", timeout=60, what="the reservation board"):
        renew(
            lifecycle.open_board(),
            Held(record.hold),
            now=clock.now(),
            machine=record.hold.machine,
            attempts=policy.cas_attempts,
            release=True,
        )
    record.state, record.closed_at, record.files_changed = "closed", clock.now(), files
    lifecycle.save(record)
    return f"{record.name} closed ({len(files)} file(s) changed)"


def gate_write(record: SessionRecord | None, file_path: Path, cwd: Path) -> str | None:
    """PreToolUse on Write/Edit: the deny line when ``file_path`` lies in another live
    session's exclusive reservation (None: allowed). Renews this human session."""
    repo, top = repo_of(cwd)
    if not repo or top is None:
        return None
    try:
        rel = str(file_path.resolve().relative_to(top.resolve()))
    except ValueError:
        return None
    wanted = Element.repo(repo, rel)
    now = clock.now()
    machine = lifecycle.machine_id()
    mine = record.hold.session if record and record.hold else ""
    with local_lock("sessions-board", timeout=60, what="the reservation board"):
        board = lifecycle.open_board()
        snap = look(board, now, machine)
        if record and record.hold and record.state == "open":
            policy = load_config().harness.sessions
            expiry = timedelta(hours=policy.human_expiry_hours)
            renew(
                board,
                Held(record.hold),
                now=now,
                machine=machine,
                attempts=policy.cas_attempts,
                update={"heartbeat_at": now, "expires_at": now + expiry},
            )
    for holder in snap.live:
        if holder.session == mine:
            continue
        for element in conflicts([wanted], holder):
            if exclusive_in(holder, element):
                return deny_line(element, holder) + f" — {rel} is inside it; do not change it now"
    return None

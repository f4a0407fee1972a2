"""Jira as a source (#30): the issue a case is keyed by, read into the case.

``admin: task KEY`` and a Slack ticket naming a key of a configured prefix (projects.yaml
``jira_prefixes``) read the issue — summary, description, status, comments, links — into the
case's control folder (``jira-issue.md``, where no agent writes; a mirror in the case folder for
humans). The investigation and the dev-agent read it after the ticket (:func:`ticket_context`).

What goes wrong, said once:
- an unknown key: ``admin: task`` answers naming it and opens nothing; a Slack ticket is
  investigated on its own text, its case thread saying the key is not in Jira;
- Jira unreachable (no answer, 5xx, 429, a refused token): the case is opened and *waits*
  (``case.jira_wait`` holds what to start once the issue is read), the operator is told once
  (the command's answer or the case thread's opening post), and every poll-slack cycle tries
  again (:func:`retry_waiting`) — silently until Jira answers, then the work starts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_cli.dispatch.payload import Trigger
from harness_cli.errors import HarnessError, ServiceError
from harness_cli.logs import event
from harness_cli.services.jira import Jira, JiraIssue, render
from harness_cli.workspace import jira_issue, registry

log = logging.getLogger("harness.jira")


@dataclass
class Read:
    issue: JiraIssue | None = None
    unknown: bool = False
    """Jira answered 404: no such issue (or the account cannot see it)."""
    error: str = ""
    """No issue for now: Jira did not answer, or refused (the case waits)."""


def read(jira: Jira, key: str) -> Read:
    try:
        return Read(issue=jira.issue(key))
    except ServiceError as exc:
        if exc.status == 404:
            return Read(unknown=True, error=exc.message)
        event(log, "jira_unreachable", logging.WARNING, key=key, error=exc.line())
        return Read(error=exc.line())


def attach(case_id: str, issue: JiraIssue) -> None:
    """The issue's text into the case (control file + mirror); rewritten on each read."""
    jira_issue.write(registry.case_dir(case_id), render(issue))
    event(log, "jira_issue_attached", case_id=case_id, key=issue.key)


def attached(case_dir: Path) -> str:
    return jira_issue.attached(case_dir)


def wait(
    case_id: str, thresholds: Any, error: str, then: dict[str, Any], *, sync_now: bool
) -> None:
    """Jira did not answer: the case keeps what to start once it does."""
    with registry.update_case(case_id, thresholds, "waits for Jira", sync_now=sync_now) as case:
        case.jira_wait = {"error": error[:300], "then": then}


def retry_waiting(ctx: Any) -> list[str]:
    """Each poll-slack cycle: every case waiting for Jira is read again; once Jira answers, the
    issue is attached, the operator told in the case thread and the waiting work started."""
    if ctx.jira is None:
        return []
    lines: list[str] = []
    t = ctx.cfg.harness.thresholds
    for raw in registry.open_cases_raw():
        if not raw.get("jira_wait") or not raw.get("jira"):
            continue
        case_id, key = str(raw["id"]), str(raw["jira"])
        got = read(ctx.jira, key)
        if got.issue is None and not got.unknown:
            continue  # still down: the operator was told once already
        if got.issue is not None:
            attach(case_id, got.issue)
        with registry.update_case(case_id, t, "Jira answered", sync_now=not ctx.deferred) as case:
            then = dict((case.jira_wait or {}).get("then") or {})
            case.jira_wait = None
        note = (
            f"Jira answered: {key} ({got.issue.summary}) is attached to the case"
            if got.issue is not None
            else f"Jira answered: {key} is not an issue there; the case goes on without it"
        )
        _tell(ctx, case_id, note + (f"; {then['workflow']} starts now." if then else "."))
        if then:
            ctx.start(
                str(then["workflow"]),
                case_id=case_id,
                case_dir=str(registry.case_dir(case_id)),
                trigger=Trigger.model_validate(then.get("trigger") or {"kind": "jira"}),
                channel=str(then.get("channel", "")),
                thread_ts=str(then.get("thread_ts", "")),
                args=dict(then.get("args") or {}),
            )
        lines.append(f"{case_id}: Jira issue {key} read after waiting")
    return lines


def _tell(ctx: Any, case_id: str, text: str) -> None:
    thread = registry.case_thread(case_id)
    try:
        ctx.out.post(ctx.self_dm, text, thread_ts=thread.thread_ts if thread else None,
                     purpose="jira_answered")  # fmt: skip
    except HarnessError as exc:
        event(log, "jira_answered_dm_failed", logging.WARNING, case_id=case_id, error=exc.line())

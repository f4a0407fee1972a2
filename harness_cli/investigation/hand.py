"""Jira as a hand (#30): the actions a finished investigation proposes, run by the harness —
never by the model.

"At 95 or above, the agent may auto-run non-destructive actions such as a Jira comment, a
status transition or a ticket assignment. Under 95 those stay as drafts for the operator to
decide on." Which action is which is decided once, by :func:`rules.split_actions` (the bar and
the kinds come from harness.yaml ``investigation:``); this module keeps the decision and acts
on it:

- :func:`plan` — at publish, every action of the report is numbered and written to the case's
  control folder (``actions.json``: no agent writes there, so no agent can promote a draft);
- :func:`run_auto` — after the publish of a ``complete`` exit at the bar, the harness runs the
  auto actions through the outbox (:mod:`outbox.jira_door`: one key per action, found
  again after a crash or a lost answer) and reports each in the case thread; then it lists the
  drafts with the one command that runs each;
- :func:`run_one` — ``admin: run CASE N``: the operator runs draft N. A destructive action or
  a production write (``production_write_kinds``) runs only with ``--confirm``: the first
  command says what it would do and how to confirm exactly that one.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from harness_cli.config import Config
from harness_cli.errors import HarnessError, InputError, ServiceError
from harness_cli.investigation.rules import split_actions
from harness_cli.logs import event
from harness_cli.loop.report import CompletionReport
from harness_cli.outbox import jira_door, scope
from harness_cli.workspace import control, registry

if TYPE_CHECKING:
    from harness_cli.outbox.outbound import Outbound
    from harness_cli.services.jira import Jira

log = logging.getLogger("harness.hand")

FILE = "actions.json"
JIRA_KINDS = {"jira_comment": "comment", "jira_transition": "transition", "jira_assign": "assign"}


class Planned(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int
    description: str
    kind: str = ""
    issue: str = ""
    body: str = ""
    to: str = ""
    assignee: str = ""
    destructive: bool = False
    production: bool = False
    """A write to a production system: only ever with the operator's ``--confirm``."""
    auto: bool = False
    """The harness runs it by itself (complete exit, at the bar, allowed kind, harmless)."""

    @property
    def needs_confirm(self) -> bool:
        return self.destructive or self.production

    def what(self) -> str:
        if self.kind == "jira_comment":
            return f"comment on {self.issue}: “{self.body[:200]}”"
        if self.kind == "jira_transition":
            return f"move {self.issue} to {self.to}"
        if self.kind == "jira_assign":
            return f"assign {self.issue} to {self.assignee}"
        return self.description


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    case_id: str
    exit_line: str
    actions: list[Planned] = Field(default_factory=list)


def plan(
    cfg: Config,
    case_id: str,
    line: str,
    report: CompletionReport | None,
    confidence: int,
    completed: bool,
) -> Plan:
    """Number the report's actions and decide which run by themselves; kept in control."""
    t = cfg.harness.investigation
    actions = list(report.actions) if report is not None else []
    auto, _ = split_actions(actions, confidence, t, completed=completed)
    jira = registry.load_case(case_id).jira or ""
    out = Plan(case_id=case_id, exit_line=line)
    for n, a in enumerate(actions, 1):
        issue = (a.issue or jira).strip().upper()
        runnable = a.kind in JIRA_KINDS and bool(issue)
        out.actions.append(
            Planned(
                n=n, description=a.description, kind=a.kind, issue=issue, body=a.body,
                to=a.to, assignee=a.assignee, destructive=a.destructive,
                production=a.kind in t.production_write_kinds,
                auto=runnable and any(a is b for b in auto),
            )
        )  # fmt: skip
    control.write_text(registry.case_dir(case_id), FILE, out.model_dump_json(indent=2) + "\n")
    return out


def read_plan(case_id: str) -> Plan | None:
    try:
        raw = control.read_bytes(registry.case_dir(case_id), FILE)
    except FileNotFoundError:
        return None
    return Plan.model_validate(json.loads(raw))


def run_auto(cfg: Config, case_id: str, jira: Jira | None, out: Outbound) -> list[str]:
    """After the publish: run each auto action once, report it; list the drafts. Called by
    the run that published, and again by a run that resumes it (same scope: same keys)."""
    p = read_plan(case_id)
    if p is None or not p.actions:
        return []
    lines: list[str] = []
    for action in p.actions:
        if not action.auto:
            continue
        if jira is None:
            action.auto = False  # no Jira configured: the operator's to run
            continue
        lines.append(_run(cfg, case_id, action, jira, out, how="by itself"))
    # Only what one command can run (a Jira action, or a production write to confirm) is
    # announced; prose actions stay in TASK.md, so a report without them posts nothing more.
    drafts = [a for a in p.actions if not a.auto and (a.kind in JIRA_KINDS or a.production)]
    if drafts:
        text = "\n".join(
            [f"For you to decide ({case_id}): each runs with one command."]
            + [f"{a.n}. {a.what()}{_flags(a)} → `admin: run {case_id} {a.n}`" for a in drafts]
        )
        _tell(cfg, out, case_id, text, key=f"hand-drafts:{case_id}:{p.exit_line}")
    return lines


def run_one(
    cfg: Config, case_id: str, n: int, jira: Jira | None, out: Outbound, *, confirm: bool
) -> str:
    """``admin: run CASE N [--confirm]``: the operator runs action N."""
    p = read_plan(case_id)
    found = [a for a in p.actions if a.n == n] if p is not None else []
    if not found:
        count = len(p.actions) if p is not None else 0
        raise InputError(
            f"{case_id} has no action {n}",
            hint=f"its TASK.md numbers {count} action(s)" if count else "it proposed no action",
        )
    action = found[0]
    if action.needs_confirm and not confirm:
        why = "writes to a production system" if action.production else "is destructive"
        return (
            f"Action {n} of {case_id} {why}: {action.what()}\n"
            f"Nothing ran. To run exactly this, send `admin: run {case_id} {n} --confirm`."
        )
    if action.kind not in JIRA_KINDS:
        return (
            f"Action {n} of {case_id} ({action.kind or 'no kind'}) is not one the harness "
            f"can run: {action.description}\nIt is yours to carry out."
        )
    if jira is None:
        raise InputError("no Jira configured", hint="set JIRA_URL, JIRA_USER, JIRA_TOKEN")
    # One key per action of this investigation: the same command again finds it done; the
    # action N of a later investigation (another exit line) is another action.
    digest = hashlib.sha256(p.exit_line.encode()).hexdigest()[:12] if p is not None else ""
    with scope.opened(f"admin-run:{case_id}:{digest}:{n}", case_id):
        return _run(cfg, case_id, action, jira, out, how="on your command")


def _run(cfg: Config, case_id: str, a: Planned, jira: Jira, out: Outbound, *, how: str) -> str:
    try:
        ob = jira_door.write(
            jira, action=JIRA_KINDS[a.kind], issue=a.issue, n=a.n, body=a.body, to=a.to,
            assignee=a.assignee,
        )  # fmt: skip
    except ServiceError as exc:
        event(log, "jira_action_owed", logging.WARNING, case_id=case_id, n=a.n, error=exc.line())
        return f"action {a.n} not done yet ({exc.line()}); the outbox retries it"
    if ob.state != "done":
        return f"action {a.n}: {ob.state}"
    text = f"Ran action {a.n} {how}: {a.what()} — done in Jira."
    _tell(cfg, out, case_id, text, key=f"hand-report:{ob.digest}")
    event(log, "jira_action_done", case_id=case_id, n=a.n, kind=a.kind, issue=a.issue)
    return text


def _flags(a: Planned) -> str:
    if a.production:
        return " [production write: needs --confirm]"
    return " [destructive: needs --confirm]" if a.destructive else ""


def _tell(cfg: Config, out: Outbound, case_id: str, text: str, *, key: str) -> None:
    thread = registry.case_thread(case_id)
    try:
        out.post(
            cfg.harness.operator.self_dm_channel,
            text,
            thread_ts=thread.thread_ts if thread else None,
            purpose="jira_action",
            key=key,
        )
    except HarnessError as exc:  # owed: the outbox delivers it later
        event(log, "jira_action_report_owed", logging.WARNING, case_id=case_id, error=exc.line())

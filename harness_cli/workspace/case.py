"""``case.json``: the durable record of one case, and the legal moves of its status.

The case directory ``case-workspaces/<case_id>/`` lives in the git-synced workspace, so a case
survives the machine; ``case.json`` is its index card (CONTRACT §3).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock
from harness_cli.errors import InputError, StateConflict

CaseStatus = Literal[
    "new",
    "investigating",
    "awaiting_approval",
    "approved",
    "in_progress",
    "mr_open",
    "merged",
    "failed",
    "escalated",
    "closed",
]

TRANSITIONS: dict[str, frozenset[str]] = {
    "new": frozenset({"investigating", "approved", "failed", "closed"}),
    "investigating": frozenset({"awaiting_approval", "failed", "escalated", "closed"}),
    "awaiting_approval": frozenset({"approved", "investigating", "closed"}),
    "approved": frozenset({"in_progress", "closed"}),
    "in_progress": frozenset({"mr_open", "failed", "escalated", "closed", "awaiting_approval"}),
    "mr_open": frozenset({"in_progress", "merged", "escalated", "closed"}),
    "merged": frozenset({"closed"}),
    "failed": frozenset(
        {"investigating", "approved", "in_progress", "closed", "awaiting_approval"}
    ),
    "escalated": frozenset(
        {"investigating", "in_progress", "mr_open", "closed", "awaiting_approval"}
    ),
    "closed": frozenset({"investigating", "awaiting_approval"}),
}
"""Which status may follow which. A workflow that finds its case in another state refuses
instead of trampling it (e.g. a late ``investigate`` on a merged case). ``→ awaiting_approval``
from a stuck, failed, escalated or closed case is ``case reopen``: back to the operator's OK."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class Source(_Record):
    channel: str = ""
    thread_ts: str = ""
    user: str = ""
    permalink: str = ""


class ConfidencePoint(_Record):
    iteration: int
    confidence: float
    at: datetime


class CaseMr(_Record):
    project: str
    iid: int
    web_url: str = ""
    state: str = "opened"


class Transition(_Record):
    at: datetime
    frm: str = Field(alias="from")
    to: str
    by: str = ""
    note: str = ""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Case(_Record):
    schema_version: int = 1
    id: str
    project: str
    kind: Literal["oncall", "task"] = "oncall"
    """``oncall``: an investigation from a support ticket; ``task``: hands-on work."""
    title: str = ""
    jira: str | None = None
    source: Source = Field(default_factory=Source)
    status: CaseStatus = "new"
    exit: str | None = None
    """The investigation's exit line, e.g. ``exit=complete confidence=89% …``."""
    confidence: list[ConfidencePoint] = Field(default_factory=list)
    mrs: list[CaseMr] = Field(default_factory=list)
    plan_pending: bool = False
    """dev-agent posted its plan and waits for the operator's OK (``admin: task <case>``)."""
    case_thread_ts: str = ""
    """ts of the harness's post opening the case's thread in the operator's self-DM: a second
    machine rebuilds its thread map from it instead of opening a second thread."""
    task_auto: bool = False
    """``admin: task <id> --auto`` asked for the task to run unattended: the approval that
    starts the dev-agent carries ``auto`` whoever gives it."""
    linked_to: str = ""
    """The closed case this one's ticket named (its Jira key): a ticket naming a closed case
    opens a new case linked to it instead of reopening it from outside."""
    linked_cases: list[str] = Field(default_factory=list)
    """Cases opened later by tickets that named this one after it was closed."""
    jira_wait: dict[str, Any] | None = None
    """Jira did not answer when the case was opened (#30): ``error`` and ``then`` (the workflow,
    trigger and args to start once the issue is read). poll-slack retries every cycle."""
    created_at: datetime
    updated_at: datetime
    history: list[Transition] = Field(default_factory=list)
    cost: dict[str, Any] = Field(default_factory=dict)
    """What the case's model calls cost so far (``cost.meter``): ``usd``, ``calls``, the
    tokens (``input``, ``output``, ``cache_write``, ``cache_read``, ``tokens``) and the same
    per workflow under ``by_workflow``; added to at the end of every workflow run."""
    budget_usd: float | None = None
    """The operator's own limit for this case (``admin: budget <case> <amount>``); None:
    harness.yaml's ``cost.budgets.case_usd``."""

    def move(self, to: str, *, by: str = "", note: str = "") -> bool:
        """Apply a status transition; False when already there (idempotent re-runs)."""
        if to == self.status:
            return False
        if to not in TRANSITIONS[self.status]:
            allowed = ", ".join(sorted(TRANSITIONS[self.status]))
            raise StateConflict(
                f"case {self.id} is {self.status}; it cannot become {to}",
                hint=f"from {self.status} it may become: {allowed}",
            )
        at = clock.now()
        self.history.append(
            Transition.model_validate(
                {"at": at, "from": self.status, "to": to, "by": by, "note": note}
            )
        )
        self.status = to  # type: ignore[assignment]
        self.updated_at = at
        return True


_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def validate_case_id(case_id: str) -> str:
    if not _SAFE_ID.match(case_id) or ".." in case_id:
        raise InputError(
            f"case id {case_id!r} is not usable as a folder name",
            hint="use letters, digits, '.', '_' and '-' (e.g. AAA-123)",
        )
    return case_id


def derive_case_id(*, jira: str | None, channel: str | None, ts: str | None) -> str:
    """CONTRACT §3: the Jira key when the ticket names one, else a stable id from channel + ts
    (the same message always yields the same case, on every machine)."""
    if jira:
        return validate_case_id(jira)
    if channel and ts:
        return validate_case_id(f"slack-{channel}-{ts.replace('.', '-')}")
    return validate_case_id(f"case-{clock.stamp()}")

"""The files and ref payloads of work sessions, as pydantic models.

A reservation ref (``refs/harness/reservations/v2/<sha1 of scope>/h/<sha1 of session>``) points
at a commit whose message is one :class:`ScopeDoc`: one session's hold on that scope (a case, or
one repository); the scope's ``…/gate`` ref carries a ScopeDoc without holds (reservations.py).
"""

from __future__ import annotations

import fnmatch
import hashlib
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

REF_PREFIX = "refs/harness/reservations/"


class _Doc(BaseModel):
    model_config = ConfigDict(extra="allow")
    schema_version: int = 1


class Element(BaseModel):
    """What a session reserves: ``case:<id>`` (path empty) or ``repo:<group/project>`` with a
    path or glob inside it (empty: the whole repository)."""

    model_config = ConfigDict(frozen=True)
    scope: str
    path: str = ""
    shared: bool = False
    """Held without exclusivity even in an exclusive session: a harness run's whole-repo
    element when it does not know its paths (two cases' worktrees of one repo run side by
    side, reference 002); an exclusive holder on it still denies."""

    @classmethod
    def case(cls, case_id: str) -> Element:
        return cls(scope=f"case:{case_id}")

    @classmethod
    def repo(cls, repo: str, path: str = "", *, shared: bool = False) -> Element:
        clean = path.strip().lstrip("./") if path not in ("", "*", "**") else ""
        return cls(scope=f"repo:{repo}", path=clean, shared=shared)

    @property
    def label(self) -> str:
        kind, _, name = self.scope.partition(":")
        if kind == "case":
            return f"case {name}"
        return f"{name}: {self.path}" if self.path else name

    def overlaps(self, other: Element) -> bool:
        if self.scope != other.scope:
            return False
        if not self.path or not other.path:
            return True
        return _covers(self.path, other.path) or _covers(other.path, self.path)


def _covers(pattern: str, path: str) -> bool:
    """A directory covers what is under it; a glob covers what it matches, and a glob's literal
    head (``src/invoice/*.py`` → ``src/invoice/``) overlaps everything below that head."""
    if any(c in pattern for c in "*?["):
        head = pattern.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]
        return fnmatch.fnmatch(path, pattern) or path.startswith(head) or head.startswith(path)
    base = pattern.rstrip("/")
    return path == base or path.startswith(base + "/") or path.rstrip("/") == base


def scope_ref(scope: str) -> str:
    return REF_PREFIX + hashlib.sha1(scope.encode()).hexdigest()


class Hold(_Doc):
    """One session's reservation on one scope (what every runner sees)."""

    session: str
    """The session id (unique): ``<machine id>-<random>``."""
    name: str
    """``harness/<workflow>/<machine>`` or ``claude-code/<user>``."""
    workflow: str
    machine: str
    """The machine id (one per HARNESS_HOME) of the runner that opened it."""
    pid: int = 0
    """The holding process on ``machine`` (0: a human session, no process to watch)."""
    task: str = ""
    """What it is doing, in a few words (the deny line quotes it)."""
    case_id: str = ""
    elements: list[Element] = Field(default_factory=list)
    exclusive: bool = True
    opened_at: datetime
    heartbeat_at: datetime
    expires_at: datetime
    pipeline: str = ""
    """The CI pipeline that runs it (gitlab-ci dispatch), for `harness session list`."""


class ScopeDoc(_Doc):
    scope: str
    holds: list[Hold] = Field(default_factory=list)


class SessionRecord(_Doc):
    """``$HARNESS_HOME/sessions/<id>.json``: this machine's view of a session it opened."""

    id: str
    name: str
    workflow: str
    case_id: str = ""
    elements: list[Element] = Field(default_factory=list)
    exclusive: bool = True
    state: Literal["open", "closed", "denied", "abandoned"] = "open"
    opened_at: datetime
    closed_at: datetime | None = None
    files_changed: list[str] = Field(default_factory=list)
    """What the agent actually changed (git), attached as it happens (write guard)."""
    pipeline: str = ""
    external_id: str = ""
    """A human session's claude session id (the hooks find it again by this)."""
    hold: Hold | None = None
    """What was written on the remote (a human session renews and releases from it)."""
    cwd: str = ""
    base: str = ""
    """A human session's checkout and its HEAD at open: files changed are diffed from it."""
    outcome: str = ""
    """Path of the outcome report, once written."""


class WaitingRun(_Doc):
    """``sessions/waiting/<run>.json`` of the workspace: a run the gate warned about. It holds
    nothing (004: "une exécution qui attend un humain ne revendique rien")."""

    run: str
    workflow: str
    case_id: str
    state: Literal["waiting_for_approval", "approved", "cancelled", "denied"]
    reasons: list[str] = Field(default_factory=list)
    payload: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    decided_at: datetime | None = None
    note: str = ""


class Outcome(_Doc):
    """The outcome report of one session (004 "Le bilan"): the agent's ``report_outcome``
    answer plus the facts the harness saw."""

    session: str
    name: str
    workflow: str
    case_id: str = ""
    succeeded: bool
    summary: str = ""
    decisions: list[str] = Field(default_factory=list)
    """Recorded only when the run succeeded (004: "Un travail qui n'a pas abouti n'a rien à
    défendre")."""
    follow_ups: list[str] = Field(default_factory=list)
    relied_on: list[str] = Field(default_factory=list)
    files_changed: list[str] = Field(default_factory=list)
    checks: list[dict[str, Any]] = Field(default_factory=list)
    """``{"command": …, "exit_code": …}`` of each check the harness ran."""
    elements: list[Element] = Field(default_factory=list)
    held_by_others: list[str] = Field(default_factory=list)
    """Touched elements another session held (004 "Détenu par une autre session de travail")."""
    reported: bool = False
    """False: the agent gave no readable report_outcome block; the summary is the harness's."""
    pipeline: str = ""
    """The CI pipeline the session ran in (gitlab-ci dispatch)."""
    closed_at: datetime

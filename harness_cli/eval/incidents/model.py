"""An incident of the benchmark, as data: the ticket, the world state that holds the truth and
its distractors, the ground truth, the evidence that proves it and the right exit.

The world state is written compactly (log lines, repeated lines, metric series as a baseline
with windows, docs, Jira issues, world faults) and expanded here into what the world's servers
serve: ``incident.json`` (``sandbox.world.seeded``) and the Jira emulator's ``seed`` body.
Times are the world's (2026-03-01 → 2026-03-04 12:00 UTC; ``-2h`` counts back from its now).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness_cli.errors import ConfigError
from harness_cli.eval.cases import EVALS_DIR
from harness_cli.eval.suites import load_named
from harness_cli.sandbox.jira_state import STATUSES
from harness_cli.sandbox.world.incident import NOW, START, stamp, when

__all__ = ["INCIDENTS_DIR", "Evidence", "Incident", "load_incident", "load_incidents"]

INCIDENTS_DIR = EVALS_DIR / "incidents"
SOURCES = ("logs", "metrics", "tracker", "docs")
"""The world's servers an incident may hold its truth in (the database keeps the default
scenario's tables: no incident relies on it)."""
TOOLS = {
    "logs": ("search_logs", "list_services"),
    "metrics": ("query_metrics", "list_metrics"),
    "tracker": ("search_issues", "get_issue", "get_comments"),
    "docs": ("search_docs", "get_doc"),
}
_STEP = timedelta(minutes=15)
_EVERY = re.compile(r"^(\d+)([smh])$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LogEntry(_Strict):
    """One line, or with ``every`` a line repeated from ``at`` until ``to`` (``{n}`` counts)."""

    at: str
    service: str
    level: Literal["DEBUG", "INFO", "WARN", "ERROR"] = "INFO"
    message: str
    every: str | None = None
    to: str | None = None

    @model_validator(mode="after")
    def _repeat(self) -> LogEntry:
        if (self.every is None) != (self.to is None):
            raise ValueError("a repeated line needs both every: and to:")
        if self.every is not None and not _EVERY.match(self.every):
            raise ValueError(f"every: {self.every!r} is not like 90s, 5m or 1h")
        return self


class Window(_Strict):
    start: str
    end: str
    value: float


class Series(_Strict):
    """A metric: ``base`` per 15-minute bucket, ``windows`` where it is otherwise."""

    service: str
    aggregation: Literal["sum", "max"] = "sum"
    description: str = ""
    base: float = 0.0
    windows: list[Window] = Field(default_factory=list)


class Doc(_Strict):
    title: str
    kind: str = "runbook"
    updated: str = "2026-01-01"
    body: str


class World(_Strict):
    services: list[str]
    logs: list[LogEntry] = Field(default_factory=list)
    metrics: dict[str, Series] = Field(default_factory=dict)
    docs: dict[str, Doc] = Field(default_factory=dict)
    tickets: list[dict[str, Any]] = Field(default_factory=list)
    """Jira issues in the emulator's ``seed`` format (key, summary, description, status…)."""
    faults: list[dict[str, Any]] = Field(default_factory=list)
    """World faults during the incident (``World.fault`` fields): a source that is down."""
    healthchecks: bool = True
    """An hourly ``healthcheck ok`` line per service: noise every search wades through."""


class Evidence(_Strict):
    """A call that proves the root cause: the server, the tool, the arguments that must be
    among the recorded call's (a subset, compared case-insensitively), and what its answer
    shows (checked against the seeded world by the tests). ``outcome``: what the world
    records for the call (``denied`` when the incident's source is down)."""

    server: Literal["logs", "metrics", "tracker", "docs"]
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    shows: str
    claim: str = ""
    """The claim the reference investigator cites it for (default: ``shows``)."""
    outcome: str = "ok"

    @model_validator(mode="after")
    def _tool(self) -> Evidence:
        if self.tool not in TOOLS[self.server]:
            raise ValueError(f"{self.server} has no tool {self.tool!r}: {TOOLS[self.server]}")
        return self

    @property
    def mcp_name(self) -> str:
        return f"mcp__{self.server}__{self.tool}"


class Truth(_Strict):
    root_cause: str
    rubric: list[list[str]]
    """Every group must be matched by one of its phrases (case-insensitive) in the answer."""
    fix: str
    verify: str = "the symptom's metric returns to its baseline"


class Distractor(_Strict):
    """The loud wrong explanation the world also holds (and a careless investigator takes)."""

    root_cause: str
    query: Evidence | None = None


class Incident(_Strict):
    schema_version: Literal[1] = 1
    id: str
    title: str
    ticket: str
    world: World
    truth: Truth
    evidence: list[Evidence]
    exit: Literal["complete", "blocked"]
    """The right exit (the harness's vocabulary): ``blocked`` when the proving source is down."""
    distractor: Distractor

    @model_validator(mode="after")
    def _consistent(self) -> Incident:
        if not self.evidence:
            raise ValueError("an incident needs the evidence that proves it")
        if not self.world.tickets:
            raise ValueError("an incident needs at least one ticket in world.tickets")
        for ticket in self.world.tickets:
            # the Jira emulator seeds any status but answers 500 for one it does not know
            if ticket.get("status", "To Do") not in STATUSES:
                raise ValueError(
                    f"ticket {ticket.get('key')}: status {ticket.get('status')!r} is not one "
                    f"of Jira's: {', '.join(STATUSES)}"
                )
        failing = [e for e in self.evidence if e.outcome != "ok"]
        if self.exit == "blocked" and not failing:
            raise ValueError("a blocked incident needs an evidence call that fails (outcome:)")
        if self.exit == "complete" and failing:
            raise ValueError("a complete incident's evidence calls must succeed")
        if not all(self.truth.rubric):
            raise ValueError("truth.rubric: every group needs at least one phrase")
        return self

    # -- the world state ----------------------------------------------------------------
    def seed_file(self) -> dict[str, Any]:
        """``incident.json`` for the world folder (``sandbox.world.seeded``)."""
        lines: list[list[str]] = []
        for entry in self.world.logs:
            at = when(entry.at, NOW)
            if entry.every is None:
                lines.append([stamp(at), entry.service, entry.level, entry.message])
                continue
            end, step, n = when(entry.to, NOW), _interval(entry.every), 0
            while at <= end:
                n += 1
                message = entry.message.replace("{n}", str(n))
                lines.append([stamp(at), entry.service, entry.level, message])
                at += step
        if self.world.healthchecks:
            at = START
            while at < NOW:
                lines += [
                    [stamp(at), s, "INFO", "healthcheck ok status=200 latency_ms=4"]
                    for s in self.world.services
                ]
                at += timedelta(hours=1)
        metrics = {
            name: {
                "service": s.service,
                "aggregation": s.aggregation,
                "description": s.description,
                "points": _points(s),
            }
            for name, s in self.world.metrics.items()
        }
        docs = {doc_id: d.model_dump() for doc_id, d in self.world.docs.items()}
        return {
            "id": self.id,
            "services": self.world.services,
            "logs": lines,
            "metrics": metrics,
            "docs": docs,
        }

    def jira_seed(self) -> dict[str, Any]:
        """The Jira emulator's ``seed`` body: the incident's issues and their projects."""
        keys = sorted({str(t["key"]).split("-")[0] for t in self.world.tickets})
        users = sorted(
            {
                str(t.get(k))
                for t in self.world.tickets
                for k in ("reporter", "assignee")
                if t.get(k)
            }
            | {
                str(c.get("author"))
                for t in self.world.tickets
                for c in t.get("comments", [])
                if c.get("author")
            }
        )
        return {
            "users": [
                {"name": u, "display_name": u.title(), "email": f"{u}@acme.example"} for u in users
            ],
            "projects": [
                {"key": k, "name": f"Acme {k}", "lead": users[0] if users else None} for k in keys
            ],
            "issues": self.world.tickets,
        }


def _interval(text: str) -> timedelta:
    found = _EVERY.match(text)
    assert found is not None  # checked by the model
    unit = {"s": "seconds", "m": "minutes", "h": "hours"}[found.group(2)]
    return timedelta(**{unit: int(found.group(1))})


def _points(series: Series) -> list[list[Any]]:
    windows = [(when(w.start, NOW), when(w.end, NOW), w.value) for w in series.windows]
    out: list[list[Any]] = []
    at: datetime = START
    while at < NOW:
        value = next((v for start, end, v in windows if start <= at < end), series.base)
        out.append([stamp(at), value])
        at += _STEP
    return out


def load_incident(path: Path) -> Incident:
    """One incident file, checked; a bad file is one ConfigError naming it."""
    return load_named(path, Incident, "incident")


def load_incidents(folder: Path = INCIDENTS_DIR, only: list[str] | None = None) -> list[Incident]:
    """Every incident under ``folder`` (sorted by id), or the ones named in ``only``."""
    found = [load_incident(p) for p in sorted(folder.glob("*.yaml"))]
    if only:
        missing = sorted(set(only) - {i.id for i in found})
        if missing:
            raise ConfigError(f"no incident {missing[0]!r} in {folder}")
        found = [i for i in found if i.id in only]
    return found

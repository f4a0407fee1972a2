"""PagerDuty intake. From the reference, Layer 1: "PagerDuty alerts, used when an on-call page
mentions a ticket the harness has already seen, so the earlier context can be surfaced."

Two ways in, one path: ``poll`` (REST, from cron) and ``load_webhook`` (a webhook v3 payload
handed to ``harness ingest-pagerduty``) both produce ``Incident``s for ``ingest``. An incident
whose title, description or body details names a known case (its id, or a Jira key of a
configured prefix that a case carries) gets ONE message in that case's thread in the operator's
self-DM; one that names nothing known is only logged (``pagerduty_unmatched``).

Posting at most once: ``$HARNESS_HOME/pagerduty-state.json`` remembers every incident already
surfaced and every event already looked at, under the file's lock, so a re-run, an overlapping
poll window or a redelivered webhook never posts twice. It also holds the poll's ``since``
cursor, which moves only forward and never past an incident that failed to post.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli import clock, paths
from harness_cli.config import Config, all_jira_prefixes, extract_jira_key
from harness_cli.errors import HarnessError, PolicyRefused, ServiceError
from harness_cli.intake.pagerduty.incident import Incident, load_webhook, parse_webhook
from harness_cli.intake.pagerduty.rest import PagerDutyClient, PagerDutySettings
from harness_cli.intake.pagerduty.surface import find_case_thread, surface
from harness_cli.logs import event
from harness_cli.outbox.outbound import Outbound
from harness_cli.result import Result
from harness_cli.state.store import JsonFile
from harness_cli.workspace import registry

__all__ = [
    "Incident",
    "IngestResult",
    "PagerDutyClient",
    "PagerDutySettings",
    "PagerDutyState",
    "fetch_incidents",
    "ingest",
    "load_webhook",
    "match_case",
    "parse_webhook",
    "poll",
    "rest_enricher",
    "state_file",
    "surface",
]

log = logging.getLogger("harness.intake.pagerduty")

INITIAL_LOOKBACK = timedelta(hours=24)
"""The first poll (no cursor yet) looks this far back."""
MAX_LOOKBACK = timedelta(days=30)
"""A cursor older than this is clamped: PagerDuty caps a query's range, and an older page is
no longer an on-call page."""
RETENTION = timedelta(days=90)
"""Seen incidents are forgotten after this long without a new event (the file stays small)."""
MAX_EVENTS_PER_INCIDENT = 50


# -- REST -----------------------------------------------------------------------------------


def fetch_incidents(
    settings: PagerDutySettings,
    since: datetime,
    *,
    statuses: list[str] | None = None,
    client: PagerDutyClient | None = None,
) -> list[Incident]:
    """Every incident created since ``since`` (all pages), oldest first."""
    client = client or PagerDutyClient(settings)
    out: list[Incident] = []
    for raw in client.incidents(since=since, statuses=statuses):
        try:
            out.append(Incident.from_rest(raw))
        except ValidationError as exc:
            raise ServiceError(
                f"PagerDuty sent an incident the harness cannot read: {exc.errors()[0]['msg']}"
            ) from None
    return out


# -- matching -----------------------------------------------------------------------------------


def match_case(
    incident: Incident, cases: list[dict[str, Any]], jira_prefixes: list[str]
) -> str | None:
    """The case the incident names first: an exact case id from the registry, or a Jira key of
    a configured prefix that a case has as its id or its ``jira``. Unknown keys match nothing."""
    text = incident.text()
    hits: list[tuple[int, str]] = []
    for case in cases:
        cid = str(case.get("id") or "")
        if len(cid) >= 3 and cid in text:
            found = re.search(rf"(?<![A-Za-z0-9]){re.escape(cid)}(?![A-Za-z0-9])", text)
            if found:
                hits.append((found.start(), cid))
    start = 0
    while (key := extract_jira_key(text[start:], jira_prefixes)) is not None:
        pos = text.index(key, start)
        owner = next((c["id"] for c in cases if c.get("id") == key), None) or next(
            (c["id"] for c in cases if c.get("jira") == key), None
        )
        if owner:
            hits.append((pos, str(owner)))
            break
        start = pos + len(key)
    return min(hits)[1] if hits else None


# -- state ----------------------------------------------------------------------------------


class SeenIncident(BaseModel):
    model_config = ConfigDict(extra="allow")

    case_id: str | None = None
    """The case this incident was surfaced in; None while it names no known case."""
    channel: str | None = None
    posted_ts: str | None = None
    events: list[str] = Field(default_factory=list)
    """``event_key``s already looked at (webhook event ids, or poll sightings)."""
    last_seen: datetime


class PagerDutyState(BaseModel):
    """``pagerduty-state.json``: what was already surfaced, and the poll cursor."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    since: datetime | None = None
    """The next poll asks for incidents created at or after this instant."""
    incidents: dict[str, SeenIncident] = Field(default_factory=dict)


def state_file(cfg: Config | None = None) -> JsonFile[PagerDutyState]:
    timeout = cfg.harness.thresholds.lock_timeout_seconds if cfg else 30.0
    return JsonFile(paths.state_file("pagerduty-state.json"), PagerDutyState, lock_timeout=timeout)


# -- ingest ---------------------------------------------------------------------------------


@dataclass
class Surfaced:
    incident_id: str
    case_id: str
    channel: str
    ts: str


@dataclass
class IngestResult:
    surfaced: list[Surfaced] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed: list[Incident] = field(default_factory=list)
    """Incidents not handled because of an error; a poll's cursor stays before them."""
    since: datetime | None = None
    cursor: datetime | None = None

    def to_result(self, action: str) -> Result:
        result = Result(
            action,
            data={
                "surfaced": [s.__dict__ for s in self.surfaced],
                "unmatched": self.unmatched,
                "skipped": len(self.skipped),
                "errors": self.errors,
                "since": self.since.isoformat() if self.since else None,
                "cursor": self.cursor.isoformat() if self.cursor else None,
            },
            skipped=list(self.skipped),
            errors=list(self.errors),
            exit_code=1 if self.errors else 0,
        )
        result.changed.extend(
            f"incident {s.incident_id} → case {s.case_id} (posted {s.ts})" for s in self.surfaced
        )
        result.messages.extend(f"no known case named by incident {u}" for u in self.unmatched)
        if not (self.surfaced or self.unmatched or self.skipped or self.errors):
            result.messages.append("no PagerDuty incidents to look at")
        return result


Enrich = Callable[[Incident], Incident]


def rest_enricher(client: PagerDutyClient) -> Enrich:
    """Fill in what a list view or a webhook leaves out — the description and ``body.details``
    — from ``GET /incidents/{id}``; the event fields stay those of the sighting."""

    def enrich(inc: Incident) -> Incident:
        try:
            full = Incident.from_rest(client.incident(inc.id))
        except ValidationError as exc:
            raise ServiceError(
                f"PagerDuty sent an incident the harness cannot read: {exc.errors()[0]['msg']}"
            ) from None
        return inc.model_copy(update={"details": full.details, "description": full.description})

    return enrich


def ingest(
    incidents: list[Incident],
    *,
    cfg: Config,
    outbound: Outbound,
    cases: list[dict[str, Any]] | None = None,
    store: JsonFile[PagerDutyState] | None = None,
    enrich: Enrich | None = None,
) -> IngestResult:
    """Surface each incident that names a known case, once; log the others. ``enrich`` fetches
    more of an incident (body details) when its title and description name nothing."""
    out = IngestResult()
    if not incidents:
        return out
    run = _Run(
        cases=registry.list_cases() if cases is None else cases,
        prefixes=all_jira_prefixes(cfg.projects),
        self_dm=cfg.harness.operator.self_dm_channel,
        outbound=outbound,
        enrich=enrich,
        now=clock.now(),
        out=out,
    )
    refused: PolicyRefused | None = None
    with (store or state_file(cfg)).update() as state:
        for inc in incidents:
            seen = state.incidents.get(inc.id)
            if seen is not None and seen.case_id:
                out.skipped.append(f"incident {inc.label}: already surfaced in {seen.case_id}")
            elif seen is not None and inc.event_key in seen.events:
                out.skipped.append(f"incident {inc.label}: already seen, names no known case")
            else:
                try:
                    state.incidents[inc.id] = run.handle(inc, seen)
                except PolicyRefused as exc:
                    refused = exc
                    break
                except HarnessError as exc:
                    event(
                        log,
                        "pagerduty_ingest_failed",
                        logging.ERROR,
                        incident_id=inc.id,
                        error=exc.line(),
                    )
                    out.errors.append(f"incident {inc.label}: {exc.line()}")
                    out.failed.append(inc)
        _prune(state, run.now)
    if refused is not None:
        raise refused
    return out


@dataclass
class _Run:
    """What one ``ingest`` call shares across its incidents."""

    cases: list[dict[str, Any]]
    prefixes: list[str]
    self_dm: str
    outbound: Outbound
    enrich: Enrich | None
    now: datetime
    out: IngestResult

    def handle(self, inc: Incident, seen: SeenIncident | None) -> SeenIncident:
        """Match, then post or log; returns the new state entry. The stored entry is replaced
        only when this returns, so a failure leaves the incident to be tried again."""
        case_id = match_case(inc, self.cases, self.prefixes)
        if case_id is None and self.enrich is not None and not inc.details:
            inc = self.enrich(inc)
            case_id = match_case(inc, self.cases, self.prefixes)
        entry = seen.model_copy(deep=True) if seen else SeenIncident(last_seen=self.now)
        entry.last_seen = self.now
        entry.events = [*entry.events, inc.event_key][-MAX_EVENTS_PER_INCIDENT:]
        if case_id is None:
            event(
                log,
                "pagerduty_unmatched",
                incident_id=inc.id,
                number=inc.number,
                title=inc.title,
                event_type=inc.event_type,
            )
            self.out.unmatched.append(inc.label)
            return entry
        case = registry.load_case(case_id)
        thread = find_case_thread(case, self.self_dm)
        ts = surface(inc, case, self.outbound, thread, self_dm=self.self_dm)
        entry.case_id, entry.posted_ts = case_id, ts
        entry.channel = thread.channel if thread else self.self_dm
        event(
            log,
            "pagerduty_surfaced",
            case_id=case_id,
            incident_id=inc.id,
            channel=entry.channel,
            ts=ts,
            event_type=inc.event_type,
        )
        self.out.surfaced.append(Surfaced(inc.id, case_id, entry.channel, ts))
        return entry


def _prune(state: PagerDutyState, now: datetime) -> None:
    cutoff = now - RETENTION
    for key in [k for k, v in state.incidents.items() if v.last_seen < cutoff]:
        del state.incidents[key]


def poll(
    cfg: Config,
    settings: PagerDutySettings,
    outbound: Outbound,
    *,
    since: datetime | None = None,
    statuses: list[str] | None = None,
    client: PagerDutyClient | None = None,
    store: JsonFile[PagerDutyState] | None = None,
) -> IngestResult:
    """One poll: incidents created since the cursor (or ``since``), ingested, cursor moved."""
    store = store or state_file(cfg)
    client = client or PagerDutyClient(settings)
    now = clock.now()
    start = since or store.read().since or now - INITIAL_LOOKBACK
    start = max(start, now - MAX_LOOKBACK)
    incidents = fetch_incidents(settings, start, statuses=statuses, client=client)
    result = ingest(
        incidents, cfg=cfg, outbound=outbound, store=store, enrich=rest_enricher(client)
    )
    stamps = [i.created_at for i in incidents if i.created_at]
    blocked = [i.created_at for i in result.failed if i.created_at]
    cursor = min(blocked) if blocked else max(stamps, default=None)
    if cursor is not None:
        with store.update() as state:
            if state.since is None or cursor > state.since:
                state.since = cursor
    result.since, result.cursor = start, cursor
    return result

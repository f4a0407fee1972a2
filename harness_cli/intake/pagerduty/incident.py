"""A PagerDuty incident as the harness reads it — from the REST API v2 (``incident_number``,
``description``, ``body.details`` in the single view) or from a webhook v3 event (``event.id``,
``event.event_type``, ``event.data`` with ``number`` and no description; note, status-update and
responder events carry an ``incident`` reference and their own text).

Bad input raises ``InputError`` naming the envelope and the field, one line.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli.errors import InputError
from harness_cli.logs import event

log = logging.getLogger("harness.intake.pagerduty")

_SUB_EVENT_TYPES = ("incident_note", "incident_status_update", "incident_responder")


class Incident(BaseModel):
    """One PagerDuty incident as the harness needs it, from REST or from a webhook event."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    number: int | None = None
    title: str = ""
    description: str = ""
    status: str = ""
    urgency: str = ""
    html_url: str = ""
    service: str = ""
    """The service's ``summary`` (its name)."""
    details: str = ""
    """``body.details`` flattened to text (REST single view), or a note's content."""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    event_id: str | None = None
    """The webhook event's id; None for a polled incident."""
    event_type: str = "poll"

    @property
    def event_key(self) -> str:
        """What makes this sighting new: the webhook event, or the incident's last update."""
        if self.event_id:
            return f"event:{self.event_id}"
        stamp = self.updated_at or self.created_at
        return f"poll:{stamp.isoformat() if stamp else '-'}"

    @property
    def label(self) -> str:
        return f"#{self.number} ({self.id})" if self.number is not None else self.id

    def text(self) -> str:
        return "\n".join(p for p in (self.title, self.description, self.details) if p)

    @classmethod
    def from_rest(cls, data: dict[str, Any]) -> Incident:
        """From a REST v2 incident object (list or single view); raises ValidationError."""
        return cls.model_validate(_rest_fields(data))


def _rest_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The model's fields from an incident object; absent values (None) take the defaults,
    except ``id``, whose absence must fail validation."""
    body = data.get("body")
    fields = {
        **{k: data.get(k) for k in ("id", "title", "status", "urgency", "html_url")},
        "number": data.get("incident_number", data.get("number")),
        "description": data.get("description") or "",
        "service": _summary(data.get("service")),
        "details": _flatten(body.get("details")) if isinstance(body, dict) else "",
        "created_at": data.get("created_at"),
        "updated_at": data.get("updated_at") or data.get("last_status_change_at"),
    }
    return {k: v for k, v in fields.items() if v is not None or k == "id"}


def _summary(ref: Any) -> str:
    return str(ref.get("summary") or "") if isinstance(ref, dict) else ""


def _flatten(details: Any) -> str:
    if details is None:
        return ""
    if isinstance(details, str):
        return details
    return json.dumps(details, sort_keys=True, ensure_ascii=False)


# -- webhook v3 ----------------------------------------------------------------------------


def load_webhook(text: str, *, source: str) -> list[Incident]:
    """Decode a webhook v3 payload (one envelope, or a list of them) from ``source``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f" (line {exc.lineno}, column {exc.colno})"
        raise InputError(
            f"{source}: not valid JSON{where}",
            hint='pass a PagerDuty webhook v3 payload: {"event": {"event_type": …, "data": …}}',
        ) from None
    return parse_webhook(data, source=source)


def parse_webhook(data: Any, *, source: str = "webhook payload") -> list[Incident]:
    """The incidents in a webhook v3 payload; events about other resources are skipped.

    ``incident.*`` events carry the incident in ``data``; notes, status updates and responder
    events carry an ``incident`` reference plus their text (``content``/``message``)."""
    envelopes = data if isinstance(data, list) else [data]
    found: list[Incident] = []
    for index, envelope in enumerate(envelopes):
        where = f"{source}[{index}]" if isinstance(data, list) else source
        ev = envelope.get("event") if isinstance(envelope, dict) else None
        if not isinstance(ev, dict):
            raise InputError(
                f"{where}: no 'event' object",
                hint='a webhook v3 payload looks like {"event": {"id", "event_type", "data"}}',
            )
        for key in ("id", "event_type"):
            if not isinstance(ev.get(key), str) or not ev[key]:
                raise InputError(f"{where}: event.{key} is missing or not a string")
        if ev.get("resource_type", "incident") != "incident":
            event(log, "pagerduty_event_ignored", logging.DEBUG, event_type=ev["event_type"])
            continue
        payload = ev.get("data")
        if not isinstance(payload, dict):
            raise InputError(f"{where}: event.data is missing or not an object")
        found.append(_incident_from_event(ev, payload, where))
    return found


def _incident_from_event(ev: dict[str, Any], data: dict[str, Any], where: str) -> Incident:
    ref = data.get("incident")
    if data.get("type") in _SUB_EVENT_TYPES or (data.get("type") != "incident" and ref):
        if not isinstance(ref, dict):
            raise InputError(f"{where}: event.data.incident is missing for {data.get('type')}")
        fields: dict[str, Any] = {
            "id": ref.get("id"),
            "title": ref.get("summary") or "",
            "html_url": ref.get("html_url") or "",
            "details": str(data.get("content") or data.get("message") or ""),
        }
    else:
        fields = _rest_fields(data)
    fields.update(
        event_id=ev["id"],
        event_type=ev["event_type"],
        updated_at=ev.get("occurred_at") or fields.get("updated_at"),
    )
    try:
        return Incident.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "data"
        raise InputError(f"{where}: event.data {loc}: {err['msg']}") from None

"""The PagerDuty emulator: the REST API v2 incident reads the harness makes, on one local HTTP
server, plus the webhook v3 envelope PagerDuty would push for the same incidents::

    emu = PagerDutyEmulator(); emu.start()
    # PAGERDUTY_API_URL=emu.url  PAGERDUTY_TOKEN=SANDBOX_TOKEN

Wire facts honoured (developer.pagerduty.com, PagerDuty/developer-docs):

- Auth: ``Authorization: Token token=<key>`` (``Bearer`` for OAuth tokens); anything else is
  ``401 {"error": {"message": "Authentication failed", "code": 2006}}``.
- ``GET /incidents``: ``since``/``until`` (ISO-8601; default the last 30 days, at most ~6 months
  apart), ``statuses[]``, ``urgencies[]``, ``incident_key``, ``sort_by``, classic pagination
  (``limit`` default 25, at most 100; ``offset``; ``offset + limit`` over 10000 is a 400) and
  a reply of ``{incidents, limit, offset, more, total}``; ``total`` is null unless
  ``total=true``.
- ``GET /incidents/{id}`` → ``{"incident": …}``, the only view here that carries ``body.details``.
- Errors are ``{"error": {"message", "code", "errors"?}}``. Rate limiting is a 429 with
  ``ratelimit-limit``/``ratelimit-remaining``/``ratelimit-reset`` (seconds to wait) and
  ``{"error": {"message": "Rate Limit Exceeded", "code": 2020}}``; no ``Retry-After``.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from harness_cli.sandbox.httpbase import Emulator, Fault, Request, Response

__all__ = ["SANDBOX_TOKEN", "PagerDutyEmulator"]

SANDBOX_TOKEN = "pd-sandbox-token-0000"
WEB_HOST = "https://sandbox.pagerduty.local"
RATE_LIMIT = 960
"""Requests per minute per key, the documented REST limit; reported in headers, not enforced
(tests inject 429s with faults instead)."""
DEFAULT_WINDOW = timedelta(days=30)
MAX_WINDOW = timedelta(days=183)
MAX_LIMIT = 100
MAX_RECORDS = 10000
STATUSES = ("triggered", "acknowledged", "resolved")

_ERRORS: dict[int, tuple[str, int]] = {
    400: ("Invalid Input Provided", 2001),
    401: ("Authentication failed", 2006),
    403: ("Access Denied", 2010),
    404: ("Not Found", 2100),
    408: ("The request took too long to process", 2016),
    429: ("Rate Limit Exceeded", 2020),
    500: ("An internal error has occurred. PagerDuty team has been notified.", 2000),
}
_AUTH = re.compile(r"^(?:Token token=|Bearer )(\S+)$")
_INCIDENT_PATH = re.compile(r"^/incidents/([A-Za-z0-9]+)$")


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error(
    status: int, message: str | None = None, code: int | None = None, **extra: Any
) -> Response:
    default_message, default_code = _ERRORS.get(status, ("Error", 2000))
    body: dict[str, Any] = {"message": message or default_message, "code": code or default_code}
    if extra.get("errors"):
        body["errors"] = extra["errors"]
    return Response.json({"error": body}, status=status, headers=extra.get("headers"))


class _BadRequest(Exception):
    def __init__(self, message: str, code: int, detail: str) -> None:
        super().__init__(message)
        self.message, self.code, self.detail = message, code, detail


class PagerDutyEmulator(Emulator):
    """One PagerDuty account with one default service. ``token`` is the only REST key accepted
    (None: any well-formed header); ``clock`` supplies epoch seconds for ``created_at`` and the
    default date range (tests pass a fake one)."""

    name = "pagerduty"

    def __init__(
        self,
        *,
        token: str | None = SANDBOX_TOKEN,
        clock: Callable[[], float] = time.time,
        service: str = "Checkout API",
    ) -> None:
        super().__init__()
        self.token = token
        self.clock = clock
        self.default_service = service
        self.incidents: dict[str, dict[str, Any]] = {}
        self._number = 0
        self._events = 0
        self._window: tuple[int, int] = (0, 0)
        self._state_lock = threading.RLock()

    # -- control ---------------------------------------------------------------------------
    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def add_incident(
        self,
        title: str,
        description: str = "",
        status: str = "triggered",
        urgency: str = "high",
        service: str | None = None,
        details: Any = None,
        incident_key: str | None = None,
        created_at: str | None = None,
    ) -> dict[str, Any]:
        """Trigger an incident; returns its REST representation (single view)."""
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
        with self._state_lock:
            self._number += 1
            number = self._number
            incident_id = f"P{number:06d}"
            at = (
                datetime.fromisoformat(created_at.replace("Z", "+00:00"))
                if created_at
                else self.now()
            )
            service_name = service or self.default_service
            service_id = "PS" + "".join(c for c in service_name.upper() if c.isalnum())[:5]
            self.incidents[incident_id] = {
                "id": incident_id,
                "number": number,
                "title": title,
                "description": description or title,
                "status": status,
                "urgency": urgency,
                "incident_key": incident_key or f"sandbox-{number}",
                "created_at": at,
                "updated_at": at,
                "last_status_change_at": at,
                "service": (service_id, service_name),
                "details": details,
            }
            return self._render(self.incidents[incident_id], full=True)

    def set_status(self, incident_id: str, status: str) -> dict[str, Any]:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
        with self._state_lock:
            inc = self.incidents[incident_id]
            at = self.now()
            inc["status"], inc["updated_at"], inc["last_status_change_at"] = status, at, at
            return self._render(inc, full=True)

    def resolve(self, incident_id: str) -> dict[str, Any]:
        return self.set_status(incident_id, "resolved")

    def webhook(self, incident_id: str, event_type: str = "incident.triggered") -> dict[str, Any]:
        """The webhook v3 envelope PagerDuty would push for this incident now."""
        with self._state_lock:
            inc = self.incidents[incident_id]
            data = self._render(inc, full=False)
        # v3 incident data names the number ``number`` (REST says ``incident_number``) and has
        # no description; it keeps the service reference and the web link.
        data["number"] = data.pop("incident_number")
        for key in ("description", "summary", "updated_at", "last_status_change_at"):
            data.pop(key, None)
        with self._state_lock:
            self._events += 1
            event_id = f"01SANDBOX{self._events:017d}"
        return {
            "event": {
                "id": event_id,
                "event_type": event_type,
                "resource_type": "incident",
                "occurred_at": _iso(self.now()),
                "agent": None,
                "client": {"name": "PagerDuty"},
                "data": data,
            }
        }

    def reset(self) -> None:
        with self._state_lock, self.lock:
            self.incidents.clear()
            self._number = 0
            self._events = 0
            self.requests.clear()
            self.faults.clear()

    def control(self, action: str, body: dict[str, Any]) -> Any:
        if action == "add_incident":
            return self.add_incident(**body)
        if action == "resolve":
            return self.resolve(body["id"])
        if action == "set_status":
            return self.set_status(body["id"], body["status"])
        if action == "webhook":
            return self.webhook(body["id"], body.get("event_type", "incident.triggered"))
        if action == "reset":
            self.reset()
            return {"ok": True}
        return super().control(action, body)

    def snapshot(self) -> dict[str, Any]:
        with self._state_lock:
            incidents = [self._render(i, full=True) for i in self._ordered()]
        return {"incidents": incidents, "requests": len(self.requests)}

    # -- HTTP ------------------------------------------------------------------------------
    def route(self, req: Request) -> Response:
        if not self._authorized(req):
            return _error(401)
        headers = self._rate_headers()
        if req.method != "GET":
            return _error(404, headers=headers)
        try:
            if req.path == "/incidents":
                return Response.json(self._list(req), headers=headers)
            match = _INCIDENT_PATH.match(req.path)
            if match:
                with self._state_lock:
                    inc = self.incidents.get(match.group(1))
                    if inc is None:
                        return _error(404, headers=headers)
                    return Response.json(
                        {"incident": self._render(inc, full=True)}, headers=headers
                    )
        except _BadRequest as exc:
            return _error(400, exc.message, exc.code, errors=[exc.detail], headers=headers)
        return _error(404, headers=headers)

    def fault_response(self, fault: Fault, req: Request) -> Response:
        """Injected errors in PagerDuty's shape; a 429 carries the ``ratelimit-*`` headers."""
        headers = dict(fault.headers)
        if fault.status == 429:
            headers.setdefault("ratelimit-limit", str(RATE_LIMIT))
            headers.setdefault("ratelimit-remaining", "0")
            headers.setdefault("ratelimit-reset", "1")
        if isinstance(fault.body, dict):
            return Response.json(fault.body, status=fault.status, headers=headers)
        message = fault.body if isinstance(fault.body, str) else None
        return _error(fault.status, message, headers=headers)

    def _authorized(self, req: Request) -> bool:
        match = _AUTH.match(req.headers.get("authorization", "").strip())
        if match is None:
            return False
        return self.token is None or match.group(1) == self.token

    def _rate_headers(self) -> dict[str, str]:
        """The documented headers, counted over a fixed one-minute window."""
        now = int(self.clock())
        with self._state_lock:
            start, count = self._window
            if now - start >= 60:
                start, count = now, 0
            count += 1
            self._window = (start, count)
        return {
            "ratelimit-limit": str(RATE_LIMIT),
            "ratelimit-remaining": str(max(0, RATE_LIMIT - count)),
            "ratelimit-reset": str(max(0, 60 - (now - start))),
        }

    def _list(self, req: Request) -> dict[str, Any]:
        limit = _int_arg(req, "limit", 25)
        offset = _int_arg(req, "offset", 0)
        if limit < 1 or offset < 0:
            raise _BadRequest("Invalid Input Provided", 2001, "limit and offset must be positive")
        limit = min(limit, MAX_LIMIT)
        if offset + limit > MAX_RECORDS:
            raise _BadRequest(
                "Invalid Input Provided", 2001, "Offset + limit must be less than 10000"
            )
        since, until = self._range(req)
        statuses = set(req.query.get("statuses[]", []))
        urgencies = set(req.query.get("urgencies[]", []))
        key = req.arg("incident_key")
        with self._state_lock:
            rows = [
                inc
                for inc in self._ordered(req.arg("sort_by") or "created_at:asc")
                if (since is None or since <= inc["created_at"])
                and (until is None or inc["created_at"] < until)
                and (not statuses or inc["status"] in statuses)
                and (not urgencies or inc["urgency"] in urgencies)
                and (key is None or inc["incident_key"] == key)
            ]
            page = [self._render(inc, full=False) for inc in rows[offset : offset + limit]]
        return {
            "incidents": page,
            "limit": limit,
            "offset": offset,
            "more": offset + len(page) < len(rows),
            "total": len(rows) if req.arg("total") == "true" else None,
        }

    def _range(self, req: Request) -> tuple[datetime | None, datetime | None]:
        if req.arg("date_range") == "all":
            return None, None
        since, until = _time_arg(req, "since"), _time_arg(req, "until")
        now = self.now()
        until = until or now
        since = since or until - DEFAULT_WINDOW
        if since > until or until - since > MAX_WINDOW:
            raise _BadRequest(
                "Invalid Query Date Range", 2005, "since must precede until, at most 6 months apart"
            )
        return since, until

    def _ordered(self, sort_by: str = "created_at:asc") -> list[dict[str, Any]]:
        field, _, direction = sort_by.partition(":")
        if field not in ("created_at", "incident_number", "urgency", "resolved_at"):
            raise _BadRequest("Invalid Input Provided", 2001, f"cannot sort by {field!r}")
        key = "number" if field in ("incident_number", "resolved_at") else field
        rows = sorted(self.incidents.values(), key=lambda i: (i[key], i["number"]))
        return rows[::-1] if direction == "desc" else rows

    def _render(self, inc: dict[str, Any], *, full: bool) -> dict[str, Any]:
        base = self.url if self._server is not None else "https://api.pagerduty.com"
        service_id, service_name = inc["service"]
        out: dict[str, Any] = {
            "id": inc["id"],
            "type": "incident",
            "summary": f"[#{inc['number']}] {inc['title']}",
            "self": f"{base}/incidents/{inc['id']}",
            "html_url": f"{WEB_HOST}/incidents/{inc['id']}",
            "incident_number": inc["number"],
            "title": inc["title"],
            "description": inc["description"],
            "status": inc["status"],
            "urgency": inc["urgency"],
            "incident_key": inc["incident_key"],
            "created_at": _iso(inc["created_at"]),
            "updated_at": _iso(inc["updated_at"]),
            "last_status_change_at": _iso(inc["last_status_change_at"]),
            "service": {
                "id": service_id,
                "type": "service_reference",
                "summary": service_name,
                "self": f"{base}/services/{service_id}",
                "html_url": f"{WEB_HOST}/service-directory/{service_id}",
            },
            "assignments": [],
            "resolve_reason": None,
        }
        if full and inc["details"] is not None:
            out["body"] = {"type": "incident_body", "details": inc["details"]}
        return out


def _int_arg(req: Request, name: str, default: int) -> int:
    raw = req.arg(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise _BadRequest("Invalid Input Provided", 2001, f"{name} must be an integer") from None


def _time_arg(req: Request, name: str) -> datetime | None:
    raw = req.arg(name)
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise _BadRequest(
            "Invalid time values in 'since' and/or 'until' parameters", 2004, f"bad {name}"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)

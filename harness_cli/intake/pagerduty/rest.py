"""PagerDuty REST API v2, the two reads the harness makes: list incidents and get one.

Stdlib ``urllib`` only (no SDK to import at cron start-up). Rate limits follow PagerDuty's
REST docs: a 429 says how long to wait in ``ratelimit-reset`` (seconds), not ``Retry-After``,
and "there may be exceptional scenarios" with neither header, so the wait falls back to a
short backoff. Classic pagination: ``limit``/``offset`` until ``more`` is false, and never past
the 10000-record ceiling (``offset + limit`` beyond it is a 400).
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness_cli.errors import ConfigError, HarnessError, ServiceError
from harness_cli.logs import event

log = logging.getLogger("harness.intake.pagerduty")

DEFAULT_API_URL = "https://api.pagerduty.com"
ACCEPT = "application/vnd.pagerduty+json;version=2"
PAGE_LIMIT = 100
"""The documented maximum page size of classic pagination."""
MAX_RECORDS = 10000
"""``offset + limit`` may not exceed this (PagerDuty answers 400)."""
ATTEMPTS = 3
"""Tries per request on 429, 408 and 5xx before the poll gives up (the next cron run retries)."""
MAX_WAIT_SECONDS = 30.0
"""A poll runs every minute: a longer ``ratelimit-reset`` ends this run instead of stalling it."""
_RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})


@dataclass
class PagerDutySettings:
    base_url: str
    token: str = field(repr=False)
    timeout: float = 30.0

    @classmethod
    def from_env(cls) -> PagerDutySettings:
        token = os.environ.get("PAGERDUTY_TOKEN", "").strip()
        if not token:
            raise ConfigError(
                "PAGERDUTY_TOKEN is not set",
                hint="export a read-only PagerDuty REST API key (Integrations → API Access "
                "Keys); PAGERDUTY_API_URL points at another instance or the sandbox",
            )
        base = os.environ.get("PAGERDUTY_API_URL", "").strip() or DEFAULT_API_URL
        return cls(base_url=base.rstrip("/"), token=token)

    @classmethod
    def optional_from_env(cls) -> PagerDutySettings | None:
        """The settings when ``PAGERDUTY_TOKEN`` is set (webhook intake works without it)."""
        return cls.from_env() if os.environ.get("PAGERDUTY_TOKEN", "").strip() else None


class PagerDutyClient:
    """``GET /incidents`` (all pages) and ``GET /incidents/{id}``; ``sleep`` is injectable so
    tests of the 429 path do not wait."""

    def __init__(
        self, settings: PagerDutySettings, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.settings = settings
        self.sleep = sleep

    def incidents(
        self,
        *,
        since: datetime,
        until: datetime | None = None,
        statuses: list[str] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Incidents created in [since, until), oldest first, every page."""
        params: list[tuple[str, str]] = [
            ("since", _iso(since)),
            ("sort_by", "created_at:asc"),
            ("time_zone", "UTC"),
            ("limit", str(PAGE_LIMIT)),
        ]
        if until is not None:
            params.append(("until", _iso(until)))
        params.extend(("statuses[]", s) for s in statuses or [])
        offset = 0
        while True:
            reply = self.get("/incidents", [*params, ("offset", str(offset))])
            page = reply.get("incidents")
            if not isinstance(page, list):
                raise ServiceError("PagerDuty GET /incidents: the reply has no incidents list")
            yield from (inc for inc in page if isinstance(inc, dict))
            if not reply.get("more") or not page:
                return
            offset += len(page)
            if offset + PAGE_LIMIT > MAX_RECORDS:
                # The rest is reachable only with a narrower window; the cursor moves on and
                # the next poll starts after what was seen.
                event(log, "pagerduty_page_ceiling", logging.WARNING, offset=offset)
                return

    def incident(self, incident_id: str) -> dict[str, Any]:
        reply = self.get(f"/incidents/{urllib.parse.quote(incident_id, safe='')}", [])
        inc = reply.get("incident")
        if not isinstance(inc, dict):
            raise ServiceError(f"PagerDuty GET /incidents/{incident_id}: no incident in the reply")
        return inc

    def get(self, path: str, params: list[tuple[str, str]]) -> dict[str, Any]:
        url = self.settings.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        request = urllib.request.Request(
            url,
            headers={
                "Authorization": f"Token token={self.settings.token}",
                "Accept": ACCEPT,
                "Content-Type": "application/json",
            },
        )
        for attempt in range(1, ATTEMPTS + 1):
            try:
                with urllib.request.urlopen(request, timeout=self.settings.timeout) as resp:
                    return _json_object(resp.read(), path)
            except urllib.error.HTTPError as exc:
                body = exc.read()
                if exc.code not in _RETRYABLE or attempt == ATTEMPTS:
                    raise _http_error(path, exc.code, body) from None
                wait = _wait_seconds(exc.headers, attempt)
                if wait > MAX_WAIT_SECONDS:
                    raise ServiceError(
                        f"PagerDuty rate-limited GET {path}; retry after {wait:g} s",
                        hint="the next poll retries; poll less often if this repeats",
                    ) from None
                event(
                    log,
                    "pagerduty_retry",
                    logging.WARNING,
                    path=path,
                    status=exc.code,
                    attempt=attempt,
                    wait=wait,
                )
                self.sleep(wait)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                if attempt == ATTEMPTS:
                    reason = getattr(exc, "reason", exc)
                    raise ServiceError(
                        f"PagerDuty GET {path}: cannot reach {self.settings.base_url} ({reason})",
                        hint="check PAGERDUTY_API_URL and the network",
                    ) from None
                self.sleep(_backoff(attempt))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _backoff(attempt: int) -> float:
    return 0.5 * float(2 ** (attempt - 1))


def _wait_seconds(headers: Any, attempt: int) -> float:
    """``ratelimit-reset`` (PagerDuty's documented header), else ``Retry-After``, else backoff."""
    for name in ("ratelimit-reset", "Retry-After"):
        raw = headers.get(name) if headers is not None else None
        if raw is not None:
            try:
                return max(0.0, float(raw))
            except ValueError:
                continue
    return _backoff(attempt)


def _json_object(raw: bytes, path: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        raise ServiceError(f"PagerDuty GET {path}: the reply is not JSON") from None
    if not isinstance(data, dict):
        raise ServiceError(f"PagerDuty GET {path}: the reply is not a JSON object")
    return data


def _http_error(path: str, status: int, body: bytes) -> HarnessError:
    detail = f"HTTP {status}"
    try:
        err = json.loads(body).get("error") or {}
        detail += f" {err.get('message', '')} (code {err.get('code', '?')})"
        if err.get("errors"):
            detail += ": " + "; ".join(str(e) for e in err["errors"])
    except (ValueError, AttributeError):
        pass
    if status == 401:
        return ConfigError(
            f"PagerDuty rejected PAGERDUTY_TOKEN: {detail}",
            hint="check the key (Integrations → API Access Keys) or issue a new one",
        )
    hints = {
        403: "the key lacks access to incidents; use an account key or a user with access",
        429: "rate-limited after retries; the next poll retries",
    }
    return ServiceError(f"PagerDuty GET {path} failed: {detail}", hint=hints.get(status))

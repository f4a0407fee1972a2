"""How the Jira emulator says no: Jira's error body, the 401 of a bad or expired token, and the
shape of each injected fault (429 with its rate-limit headers)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from harness_cli.sandbox.httpbase import Fault, Request, Response

__all__ = ["RATE_LIMIT", "JiraError", "JiraFault", "fault_answer", "unauthorized"]

RATE_LIMIT = 100
"""What ``X-RateLimit-Limit`` reports on an injected 429."""


@dataclass
class JiraFault(Fault):
    method: str = ""
    """Only requests of this method (``POST``…); "" for any."""

    def matches(self, req: Request) -> bool:
        return (not self.method or req.method == self.method.upper()) and super().matches(req)


class JiraError(Exception):
    """Answered as ``{"errorMessages": messages, "errors": errors}`` with ``status``."""

    def __init__(
        self,
        status: int,
        *messages: str,
        errors: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status, messages)
        self.status, self.messages, self.errors = status, list(messages), errors or {}
        self.headers = dict(headers or {})

    def response(self) -> Response:
        body = {"errorMessages": self.messages, "errors": self.errors}
        return Response.json(body, status=self.status, headers=self.headers)


def unauthorized(cloud: bool) -> JiraError:
    """A missing, wrong, revoked or expired credential."""
    if cloud:
        message = "Client must be authenticated to access this resource."
        realm = 'OAuth realm="https://sandbox.atlassian.net"'
    else:
        message = "You are not authenticated. Authentication required to perform this operation."
        realm = "Bearer"
    headers = {"WWW-Authenticate": realm, "X-Seraph-LoginReason": "AUTHENTICATED_FAILED"}
    return JiraError(401, message, headers=headers)


def fault_answer(fault: Fault, cloud: bool, now: datetime) -> Response:
    """An injected ``status`` fault in Jira's shape (``body`` given: sent as is)."""
    headers = dict(fault.headers)
    if fault.body is not None:
        return Response.json(fault.body, status=fault.status, headers=headers)
    if fault.status == 401:
        exc = unauthorized(cloud)
        exc.headers.update(headers)
        return exc.response()
    if fault.status == 429:
        wait = int(headers.setdefault("Retry-After", "1"))
        reset = now + timedelta(seconds=wait)
        headers.setdefault("X-RateLimit-Limit", str(RATE_LIMIT))
        headers.setdefault("X-RateLimit-Remaining", "0")
        headers.setdefault("X-RateLimit-Reset", reset.strftime("%Y-%m-%dT%H:%MZ"))
        headers.setdefault("RateLimit-Reason", "jira-burst-based")
        return JiraError(429, "Rate limit exceeded.", headers=headers).response()
    message = {
        403: "You do not have permission to perform this operation.",
        404: "Issue does not exist or you do not have permission to see it.",
    }.get(fault.status, "Internal server error")
    return JiraError(fault.status, message, headers=headers).response()

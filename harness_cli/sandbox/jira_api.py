"""The Jira emulator: the REST API v2 (and v3 where clients use it) on one local HTTP server::

    emu = JiraEmulator(deployment="Cloud"); emu.start()
    # JIRA_URL=emu.url  JIRA_USER=SANDBOX_USER  JIRA_TOKEN=SANDBOX_TOKEN

Wire facts honoured (Jira Cloud platform REST v2/v3 reference, Jira Data Center 9/10):

- Auth. Cloud: ``Basic base64(email:api_token)``; Data Center: ``Bearer <personal access
  token>`` (and Basic ``name:password``). Anything else, or a revoked/expired token, is a 401
  with ``X-Seraph-LoginReason: AUTHENTICATED_FAILED`` and ``WWW-Authenticate``.
- Errors are ``{"errorMessages": [...], "errors": {field: message}}``: an unknown or invisible
  issue is 404 "Issue does not exist or you do not have permission to see it."; an invalid
  transition id is 400; a bad JQL query is 400 with Jira's words.
- Search. Data Center: ``/search`` (``startAt``/``maxResults``/``total``). Cloud: ``/search`` is
  410 Gone (removed 2025); ``/search/jql`` pages with ``nextPageToken``/``isLast``, no total, and
  returns only ``id`` unless ``fields`` is given. JQL sees a write only after the index lag.
- Rate limit: 429 with ``Retry-After`` (seconds), ``X-RateLimit-Limit/-Remaining/-Reset``
  (``yyyy-MM-ddTHH:mmZ``) and ``RateLimit-Reason``.
- v3 bodies (description, comment) are Atlassian Document Format; v2 bodies are text.

Faults (``POST /_control/fault``): ``kind`` status|drop|lost|delay|hang, ``status`` (401 looks
like an expired token, 429 carries Retry-After), ``match`` (path substring), ``method``,
``where``, ``seconds``, ``times``.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from harness_cli.sandbox import jira_control
from harness_cli.sandbox.httpbase import Emulator, Fault, Request, Response
from harness_cli.sandbox.jira_errors import JiraError, JiraFault, fault_answer, unauthorized
from harness_cli.sandbox.jira_render import issue_json, wanted_fields
from harness_cli.sandbox.jira_routes import handle
from harness_cli.sandbox.jira_state import (
    DEPLOYMENTS,
    STATUSES,
    Comment,
    Issue,
    JiraUser,
    parse_time,
)

__all__ = ["SANDBOX_PAT", "SANDBOX_TOKEN", "SANDBOX_USER", "JiraEmulator", "JiraFault"]

SANDBOX_USER = "harness-bot@sandbox.example"
SANDBOX_TOKEN = "ATATT3xFfGF0sandboxsandbox0000"
"""The bot's Cloud API token (Basic auth with SANDBOX_USER)."""
SANDBOX_PAT = "NjM0sandboxPersonalAccessToken0000"
"""The bot's Data Center personal access token (Bearer)."""


class JiraEmulator(Emulator):
    """One Jira site. ``deployment`` is ``Cloud`` or ``Server`` (Data Center); ``clock`` gives
    epoch seconds for timestamps, the index lag and rate-limit resets."""

    name = "jira"

    def __init__(self, *, deployment: str = "Cloud", clock: Callable[[], float] = time.time):
        super().__init__()
        if deployment not in DEPLOYMENTS:
            raise ValueError(f"deployment must be one of {DEPLOYMENTS}")
        self.deployment = deployment
        self.clock = clock
        self.state_lock = threading.RLock()
        self.reset()

    # -- state -----------------------------------------------------------------------------
    @property
    def cloud(self) -> bool:
        return self.deployment == "Cloud"

    @property
    def base_url(self) -> str:
        return self.url if self._server is not None else "https://sandbox.atlassian.net"

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def reset(self) -> None:
        with self.state_lock, self.lock:
            self.users: dict[str, JiraUser] = {}
            self.tokens: dict[str, str] = {}
            """Token → user name; a revoked token is removed (its holder gets 401)."""
            self.projects: dict[str, dict[str, Any]] = {}
            self.issues: dict[str, Issue] = {}
            self.lag = 0.0
            self._ids = 10000
            self.requests.clear()
            self.faults.clear()
            self.add_user("harness-bot", "Harness Bot", SANDBOX_USER)
            self.tokens[SANDBOX_TOKEN] = self.tokens[SANDBOX_PAT] = "harness-bot"

    def next_id(self) -> str:
        with self.state_lock:
            self._ids += 1
            return str(self._ids)

    def add_user(
        self, name: str, display_name: str = "", email: str = "", account_id: str = ""
    ) -> dict[str, Any]:
        with self.state_lock:
            user = JiraUser(
                account_id=account_id or f"5b10a2844c20165700ede{len(self.users):03d}",
                name=name,
                display_name=display_name or name,
                email=email or f"{name}@sandbox.example",
            )
            self.users[name] = user
            return user.render(self.base_url, self.cloud)

    def find_user(self, ref: str | None) -> JiraUser | None:
        """By name, accountId, email or display name (what JQL and the REST calls accept)."""
        if not ref:
            return None
        lowered = ref.lower()
        for user in self.users.values():
            if lowered in (user.name.lower(), user.account_id.lower(), user.email.lower()):
                return user
            if lowered == user.display_name.lower():
                return user
        return None

    def user_json(self, name: str | None) -> dict[str, Any] | None:
        user = self.users.get(name or "")
        return user.render(self.base_url, self.cloud) if user else None

    def add_project(self, key: str, name: str = "", lead: str = "harness-bot", **extra: Any) -> Any:
        with self.state_lock:
            self.projects[key] = {"id": self.next_id(), "name": name or key, "lead": lead, **extra}
            return {"key": key, "id": self.projects[key]["id"]}

    def add_issue(self, key: str, summary: str, **fields: Any) -> dict[str, Any]:
        """Seed one issue (scenario data). ``comments``: ``[{author, body, created?,
        properties?}]``; ``links``: ``[{type, direction, key}]``; times are ISO-8601."""
        comments = fields.pop("comments", [])
        links = fields.pop("links", [])
        for stamp in ("created", "updated", "resolutiondate"):
            if isinstance(fields.get(stamp), str):
                fields[stamp] = parse_time(fields[stamp])
        with self.state_lock:
            project = key.rsplit("-", 1)[0]
            if project not in self.projects:
                self.add_project(project)
            for who in (fields.get("assignee"), fields.get("reporter")):
                if who and who not in self.users:
                    self.add_user(who)
            at = fields.setdefault("created", self.now())
            fields.setdefault("updated", at)
            if fields.get("status") == "Done":
                fields.setdefault("resolutiondate", fields["updated"])
            issue = Issue(id=self.next_id(), key=key, project=project, summary=summary, **fields)
            self.issues[key] = issue
            for comment in comments:
                self.add_comment(key, **comment)
            for link in links:
                self.add_link(key, link["type"], link.get("direction", "outward"), link["key"])
            return {"id": issue.id, "key": key}

    def add_comment(
        self,
        key: str,
        body: str,
        author: str = "harness-bot",
        created: str | datetime | None = None,
        properties: dict[str, Any] | None = None,
    ) -> Comment:
        with self.state_lock:
            issue = self.issue(key)
            if author not in self.users:
                self.add_user(author)
            at = parse_time(created) if isinstance(created, str) else created or self.now()
            comment = Comment(
                id=self.next_id(),
                author=author,
                body=body,
                created=at,
                updated=at,
                properties=dict(properties or {}),
                visible_at=self.clock() + self.lag,
            )
            issue.comments.append(comment)
            issue.updated = max(issue.updated, at)
            return comment

    def add_link(self, key: str, type_name: str, direction: str, other: str) -> None:
        with self.state_lock:
            link_id = self.next_id()
            back = "inward" if direction == "outward" else "outward"
            self.issue(key).links.append((link_id, type_name, direction, other))
            if other in self.issues:
                self.issues[other].links.append((link_id, type_name, back, key))

    def issue(self, key: str) -> Issue:
        with self.state_lock:
            found = self.issues.get(key) or next(
                (i for i in self.issues.values() if i.id == key), None
            )
        if found is None:
            raise JiraError(404, "Issue does not exist or you do not have permission to see it.")
        return found

    def set_status(self, key: str, status: str, author: str | None = None) -> None:
        if status not in STATUSES:
            raise JiraError(400, f"The value '{status}' does not exist for the field 'status'.")
        with self.state_lock:
            issue = self.issue(key)
            at = self.now()
            issue.log_change(at, author, "status", issue.status, status)
            issue.status, issue.updated = status, at
            issue.resolutiondate = at if status == "Done" else None

    def snapshot(self) -> dict[str, Any]:
        with self.state_lock:
            fields = wanted_fields("*all", "*all")
            issues = [
                issue_json(self, i, "2", fields, {"properties"}) for i in self.issues.values()
            ]
            for issue, raw in zip(issues, self.issues.values(), strict=True):
                for rendered, comment in zip(
                    issue["fields"]["comment"]["comments"], raw.comments, strict=True
                ):
                    rendered["properties"] = comment.properties
            return {"deployment": self.deployment, "issues": issues, "requests": len(self.requests)}

    # -- control ---------------------------------------------------------------------------
    def control(self, action: str, body: dict[str, Any]) -> Any:
        return jira_control.control(self, action, body)

    # -- HTTP ------------------------------------------------------------------------------
    def route(self, req: Request) -> Response:
        try:
            user = self.authenticate(req)
            return handle(self, req, user)
        except JiraError as exc:
            return exc.response()

    def authenticate(self, req: Request) -> str:
        header = req.headers.get("authorization", "").strip()
        scheme, _, value = header.partition(" ")
        holder: str | None = None
        if scheme.lower() == "basic":
            try:
                login, _, secret = base64.b64decode(value).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                login, secret = "", ""
            owner = self.tokens.get(secret)
            user = self.find_user(login)
            if owner is not None and user is not None and user.name == owner:
                holder = owner
        elif scheme.lower() == "bearer" and not self.cloud:
            holder = self.tokens.get(value)
        if holder is None:
            raise self.unauthorized()
        return holder

    def unauthorized(self) -> JiraError:
        return unauthorized(self.cloud)

    def add_fault(self, fault: Fault) -> None:
        super().add_fault(fault if isinstance(fault, JiraFault) else JiraFault(**vars(fault)))

    def fault_response(self, fault: Fault, req: Request) -> Response:
        if fault.kind == "hang":  # no answer until the fault's time is up or the server stops
            self.halted.wait(fault.seconds or None)
            return Response(drop=True)
        return fault_answer(fault, self.cloud, self.now())

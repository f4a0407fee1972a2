"""Jira behind a small Protocol: the calls the harness makes, as plain data (#30).

The live implementation wraps ``atlassian-python-api`` (docs/JIRA.md says why: it never
re-sends a POST whose answer was lost, and a comment's entity properties — the outbox's
idempotency key — go in the comment's own POST). The SDK is imported inside the constructor:
``import atlassian`` costs 0.1–0.4 s and ``--help`` and poll-slack without Jira never pay it.

Cloud: ``JIRA_USER`` (email) + ``JIRA_TOKEN`` (API token, Basic). Data Center: ``JIRA_TOKEN``
alone, a personal access token (Bearer). Every failure becomes a :class:`ServiceError` whose
``status`` is the HTTP status (None: no answer — unreachable, or the answer was lost).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from harness_cli.errors import ConfigError, ServiceError
from harness_cli.redaction import redact

T = TypeVar("T")

PROPERTY = "harness.outbox"
"""The comment entity property that carries the outbox's idempotency key: a retry after a
crash or a lost answer lists the issue's comments and finds its own by it."""

MAX_BACKOFF_S = 10
"""The one Retry-After wait the library makes on a 429 is bounded by this (its default is
1800 s); past it the 429 surfaces and the caller defers the work to a later cycle."""


@dataclass
class JiraComment:
    id: str
    author: str
    body: str
    created: str = ""
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class JiraIssue:
    key: str
    summary: str
    description: str
    status: str
    assignee: str = ""
    reporter: str = ""
    labels: list[str] = field(default_factory=list)
    comments: list[JiraComment] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    """``causes AAA-87: Refactor …`` — the relation as Jira words it, then the other issue."""
    url: str = ""


class Jira(Protocol):
    def myself(self) -> dict[str, Any]: ...

    def project(self, key: str) -> dict[str, Any]: ...

    def issue(self, key: str) -> JiraIssue: ...

    def comments(self, key: str) -> list[JiraComment]: ...

    def add_comment(self, key: str, body: str, properties: dict[str, Any]) -> str: ...

    def transition(self, key: str, name: str) -> None: ...

    def assign(self, key: str, user: str) -> None: ...


@dataclass
class JiraSettings:
    url: str
    user: str
    token: str

    @classmethod
    def configured(cls) -> bool:
        return bool(os.environ.get("JIRA_URL"))

    @classmethod
    def from_env(cls) -> JiraSettings:
        url, token = os.environ.get("JIRA_URL", ""), os.environ.get("JIRA_TOKEN", "")
        if not url or not token:
            missing = " and ".join(
                n for n, v in (("JIRA_URL", url), ("JIRA_TOKEN", token)) if not v
            )
            raise ConfigError(
                f"{missing} not set",
                hint="add JIRA_URL, JIRA_USER (Cloud: your email) and JIRA_TOKEN to the env file",
            )
        return cls(url=url.rstrip("/"), user=os.environ.get("JIRA_USER", ""), token=token)


class LiveJira:
    def __init__(self, settings: JiraSettings, *, timeout: int = 10) -> None:
        self.url = settings.url
        self.cloud = bool(settings.user)
        self._settings, self._timeout = settings, timeout
        self._client: Any = None

    @property
    def _sdk(self) -> Any:
        """Built on first use: a poll cycle with no Jira key in sight never imports the SDK."""
        if self._client is None:
            from atlassian import Jira as Sdk  # here, not at the top: see the module docstring

            s, timeout = self._settings, self._timeout
            if s.user:  # Cloud: email + API token
                self._client = Sdk(s.url, username=s.user, password=s.token, cloud=True,
                                   timeout=timeout, max_backoff_seconds=MAX_BACKOFF_S)  # fmt: skip
            else:  # Data Center: a personal access token
                self._client = Sdk(s.url, token=s.token, timeout=timeout,
                                   max_backoff_seconds=MAX_BACKOFF_S)  # fmt: skip
        return self._client

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        import requests

        try:
            return fn()
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else None
            error = ServiceError(
                redact(f"Jira {what}: HTTP {status}: {str(exc)[:200]}"),
                hint=_HINTS.get(status or 0, "check `harness doctor`"),
            )
            error.status = status
            raise error from None
        except (requests.ConnectionError, requests.Timeout) as exc:
            error = ServiceError(
                redact(f"Jira {what}: no answer from {self.url} ({type(exc).__name__})"),
                hint="Jira is unreachable; the next cycle tries again",
            )
            raise error from None

    def myself(self) -> dict[str, Any]:
        return dict(self._call("myself", self._sdk.myself))

    def project(self, key: str) -> dict[str, Any]:
        return dict(self._call(f"project {key}", lambda: self._sdk.get_project(key)))

    def issue(self, key: str) -> JiraIssue:
        raw = self._call(f"issue {key}", lambda: self._sdk.issue(key))
        return parse_issue(raw, self.url)

    def comments(self, key: str) -> list[JiraComment]:
        raw = self._call(
            f"comments of {key}",
            lambda: self._sdk.get(
                f"rest/api/2/issue/{key}/comment",
                params={"expand": "properties", "maxResults": 100},
            ),
        )
        return [_comment(c) for c in (raw or {}).get("comments", [])]

    def add_comment(self, key: str, body: str, properties: dict[str, Any]) -> str:
        data = {"body": body, "properties": [{"key": k, "value": v} for k, v in properties.items()]}
        raw = self._call(
            f"comment on {key}",
            lambda: self._sdk.post(f"rest/api/2/issue/{key}/comment", data=data),
        )
        return str((raw or {}).get("id", ""))

    def transition(self, key: str, name: str) -> None:
        offered = self._call(
            f"transitions of {key}",
            lambda: self._sdk.get(f"rest/api/2/issue/{key}/transitions"),
        )
        wanted = name.strip().lower()
        for t in (offered or {}).get("transitions", []):
            to = str((t.get("to") or {}).get("name", ""))
            if wanted in (str(t.get("id")), str(t.get("name", "")).lower(), to.lower()):
                data = {"transition": {"id": str(t["id"])}}
                self._call(
                    f"transition {key}",
                    lambda data=data: self._sdk.post(  # type: ignore[misc]
                        f"rest/api/2/issue/{key}/transitions", data=data
                    ),
                )
                return
        error = ServiceError(
            f"Jira issue {key} offers no transition to {name!r}",
            hint="the issue may already be there, or the workflow does not allow it",
        )
        error.status = 400
        raise error

    def assign(self, key: str, user: str) -> None:
        data = {"accountId": user} if self.cloud else {"name": user}
        if self.cloud and not user.startswith(("5", "6", "7")) and ":" not in user:
            found = self._call(
                f"user {user}",
                lambda: self._sdk.get("rest/api/2/user/search", params={"query": user}),
            )
            if not found:
                error = ServiceError(f"Jira has no user {user!r} to assign {key} to")
                error.status = 400
                raise error
            data = {"accountId": found[0]["accountId"]}
        self._call(
            f"assign {key}", lambda: self._sdk.put(f"rest/api/2/issue/{key}/assignee", data=data)
        )


_HINTS = {
    401: "JIRA_USER/JIRA_TOKEN refused: check them in the env file (`harness doctor`)",
    403: "the Jira account may not do this: check its project permissions",
    404: "no such issue or project in Jira (or the account cannot see it)",
    429: "Jira is rate limiting: the next cycle tries again",
}


def _name(user: Any) -> str:
    if not isinstance(user, dict):
        return ""
    return str(user.get("displayName") or user.get("name") or user.get("accountId") or "")


def _comment(raw: dict[str, Any]) -> JiraComment:
    props = {p.get("key"): p.get("value") for p in raw.get("properties") or []}
    return JiraComment(
        id=str(raw.get("id", "")),
        author=_name(raw.get("author")),
        body=str(raw.get("body") or ""),
        created=str(raw.get("created", "")),
        properties={str(k): v for k, v in props.items() if k},
    )


def parse_issue(raw: dict[str, Any], base: str = "") -> JiraIssue:
    fields = raw.get("fields") or {}
    links = []
    for link in fields.get("issuelinks") or []:
        kind = link.get("type") or {}
        if "outwardIssue" in link:
            other, verb = link["outwardIssue"], kind.get("outward", "relates to")
        else:
            other, verb = link.get("inwardIssue") or {}, kind.get("inward", "relates to")
        summary = ((other.get("fields") or {}).get("summary")) or ""
        links.append(f"{verb} {other.get('key', '?')}" + (f": {summary}" if summary else ""))
    comment = fields.get("comment") or {}
    return JiraIssue(
        key=str(raw.get("key", "")),
        summary=str(fields.get("summary") or ""),
        description=str(fields.get("description") or ""),
        status=str((fields.get("status") or {}).get("name", "")),
        assignee=_name(fields.get("assignee")),
        reporter=_name(fields.get("reporter")),
        labels=[str(label) for label in fields.get("labels") or []],
        comments=[_comment(c) for c in comment.get("comments") or []],
        links=links,
        url=f"{base}/browse/{raw.get('key', '')}" if base else "",
    )


def render(issue: JiraIssue) -> str:
    """The issue as the investigation and the dev-agent read it (third-party text: the prompt
    bounds it like the ticket)."""
    lines = [
        f"# Jira {issue.key}: {issue.summary}",
        "",
        f"Status: {issue.status}"
        + (f" · assignee: {issue.assignee}" if issue.assignee else "")
        + (f" · reporter: {issue.reporter}" if issue.reporter else "")
        + (f" · labels: {', '.join(issue.labels)}" if issue.labels else ""),
    ]
    if issue.url:
        lines.append(issue.url)
    lines += ["", "## Description", "", issue.description.strip() or "(empty)"]
    if issue.links:
        lines += ["", "## Links", "", *[f"- {link}" for link in issue.links]]
    if issue.comments:
        lines += ["", "## Comments", ""]
        lines += [
            f"- {c.author or '?'} ({c.created[:16]}): {c.body.strip()}" for c in issue.comments
        ]
    return "\n".join(lines) + "\n"

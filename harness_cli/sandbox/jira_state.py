"""The Jira emulator's data: users, projects, the workflow, issues with their comments, links and
changelog, and how each renders on the wire (REST v2 plain text, v3 Atlassian Document Format).

Shapes follow the Jira Cloud platform REST reference (v2/v3) and Jira Data Center 9/10:
Cloud names a user by ``accountId``, Data Center by ``name``/``key``; timestamps look like
``2026-03-04T10:00:00.000+0000``; a comment carries ``properties`` only when asked for
(``expand=properties``). Nothing here speaks HTTP (``jira_api`` does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "DEPLOYMENTS",
    "STATUSES",
    "TRANSITIONS",
    "Comment",
    "Issue",
    "JiraUser",
    "adf",
    "adf_text",
    "jira_time",
]

DEPLOYMENTS = ("Cloud", "Server")
"""``serverInfo.deploymentType``: Cloud, or Server for Data Center."""
STATUSES: dict[str, tuple[str, str]] = {
    "To Do": ("10000", "new"),
    "In Progress": ("3", "indeterminate"),
    "In Review": ("10001", "indeterminate"),
    "Done": ("10002", "done"),
}
"""Status name → (id, status category key): Jira's simplified software workflow."""
_CATEGORIES = {
    "new": (2, "To Do", "blue-gray"),
    "indeterminate": (4, "In Progress", "yellow"),
    "done": (3, "Done", "green"),
}
TRANSITIONS: dict[str, str] = {"11": "To Do", "21": "In Progress", "31": "In Review", "41": "Done"}
"""Transition id → target status. Every status can reach every other (global transitions), so
an issue offers all of them but the one leading to its current status."""
LINK_TYPES = {
    "Relates": ("relates to", "relates to"),
    "Blocks": ("is blocked by", "blocks"),
    "Problem/Incident": ("is caused by", "causes"),
    "Duplicate": ("is duplicated by", "duplicates"),
}
"""Link type name → (inward, outward) phrases."""


def jira_time(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}+0000"


def parse_time(text: str) -> datetime:
    """ISO-8601 with ``Z``/``+00:00``/``+0000``, or a bare date (midnight UTC)."""
    raw = text.strip().replace("Z", "+00:00")
    if len(raw) >= 5 and raw[-5] in "+-" and raw[-3] != ":":
        raw = raw[:-2] + ":" + raw[-2:]
    value = datetime.fromisoformat(raw)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def adf(text: str) -> dict[str, Any]:
    """Plain text as an Atlassian Document Format document, one paragraph per blank-line block."""
    paragraphs = [p for p in text.split("\n\n") if p.strip()] or [""]
    content = []
    for paragraph in paragraphs:
        lines = paragraph.split("\n")
        inline: list[dict[str, Any]] = []
        for i, line in enumerate(lines):
            if i:
                inline.append({"type": "hardBreak"})
            if line:
                inline.append({"type": "text", "text": line})
        content.append({"type": "paragraph", "content": inline})
    return {"type": "doc", "version": 1, "content": content}


def adf_text(doc: Any) -> str:
    """The text of an ADF document (what v3 clients send), paragraphs joined by blank lines."""
    if isinstance(doc, str):
        return doc
    if not isinstance(doc, dict):
        raise ValueError("expected an Atlassian Document Format object")
    if doc.get("type") == "text":
        return str(doc.get("text", ""))
    if doc.get("type") == "hardBreak":
        return "\n"
    parts = [adf_text(child) for child in doc.get("content", []) or []]
    return "\n\n".join(parts) if doc.get("type") == "doc" else "".join(parts)


@dataclass
class JiraUser:
    account_id: str
    name: str
    display_name: str
    email: str
    active: bool = True

    def render(self, base: str, cloud: bool) -> dict[str, Any]:
        avatars = {size: f"{base}/avatar/{self.name}?s={size[:2]}" for size in ("48x48", "24x24")}
        out: dict[str, Any] = {
            "self": f"{base}/rest/api/2/user?"
            + (f"accountId={self.account_id}" if cloud else f"username={self.name}"),
            "emailAddress": self.email,
            "displayName": self.display_name,
            "active": self.active,
            "timeZone": "UTC",
            "avatarUrls": avatars,
        }
        if cloud:
            out.update(accountId=self.account_id, accountType="atlassian")
        else:
            out.update(name=self.name, key=self.name)
        return out


@dataclass
class Comment:
    id: str
    author: str
    body: str
    created: datetime
    updated: datetime
    update_author: str = ""
    properties: dict[str, Any] = field(default_factory=dict)
    visible_at: float = 0.0
    """Epoch seconds from which lists and JQL see it (the emulator's index lag)."""


@dataclass
class Issue:
    id: str
    key: str
    project: str
    summary: str
    description: str = ""
    status: str = "To Do"
    issuetype: str = "Bug"
    priority: str = "Medium"
    assignee: str | None = None
    reporter: str | None = None
    labels: list[str] = field(default_factory=list)
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    updated: datetime = field(default_factory=lambda: datetime.now(UTC))
    resolutiondate: datetime | None = None
    comments: list[Comment] = field(default_factory=list)
    links: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(link id, type name, "inward"|"outward", other issue key)."""
    changelog: list[dict[str, Any]] = field(default_factory=list)
    visible_at: float = 0.0

    def text(self, now: float) -> str:
        """What ``text ~`` searches: summary, description and the visible comments."""
        bodies = [c.body for c in self.comments if c.visible_at <= now]
        return "\n".join([self.summary, self.description, *bodies])

    def log_change(self, at: datetime, author: str | None, item: str, old: str, new: str) -> None:
        self.changelog.append(
            {
                "id": str(10000 + len(self.changelog)),
                "author": author,
                "created": at,
                "items": [{"field": item, "fieldtype": "jira", "fromString": old, "toString": new}],
            }
        )


def render_status(base: str, name: str) -> dict[str, Any]:
    status_id, category = STATUSES[name]
    cat_id, cat_name, color = _CATEGORIES[category]
    return {
        "self": f"{base}/rest/api/2/status/{status_id}",
        "description": "",
        "iconUrl": f"{base}/images/icons/statuses/generic.png",
        "name": name,
        "id": status_id,
        "statusCategory": {
            "self": f"{base}/rest/api/2/statuscategory/{cat_id}",
            "id": cat_id,
            "key": category,
            "colorName": color,
            "name": cat_name,
        },
    }


def render_transition(base: str, transition_id: str) -> dict[str, Any]:
    target = TRANSITIONS[transition_id]
    return {
        "id": transition_id,
        "name": target,
        "to": render_status(base, target),
        "hasScreen": False,
        "isGlobal": True,
        "isInitial": False,
        "isAvailable": True,
        "isConditional": False,
        "isLooped": False,
    }


def available_transitions(issue: Issue) -> list[str]:
    return [tid for tid, target in TRANSITIONS.items() if target != issue.status]

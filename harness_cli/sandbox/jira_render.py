"""How the Jira emulator's issues, comments and projects look on the wire: REST v2 text bodies,
v3 Atlassian Document Format bodies, ``fields=`` selection and ``expand=`` sections."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from harness_cli.sandbox.jira_state import (
    LINK_TYPES,
    Comment,
    Issue,
    adf,
    available_transitions,
    jira_time,
    render_status,
    render_transition,
)

if TYPE_CHECKING:
    from harness_cli.sandbox.jira_api import JiraEmulator

__all__ = ["FIELD_NAMES", "comment_json", "issue_json", "project_json", "wanted_fields"]

FIELD_NAMES = {
    "summary": "Summary",
    "description": "Description",
    "status": "Status",
    "issuetype": "Issue Type",
    "priority": "Priority",
    "assignee": "Assignee",
    "reporter": "Reporter",
    "labels": "Labels",
    "created": "Created",
    "updated": "Updated",
    "resolution": "Resolution",
    "resolutiondate": "Resolved",
    "project": "Project",
    "comment": "Comment",
    "issuelinks": "Linked Issues",
}
"""Field id → display name (``GET /field``, ``expand=names``)."""
NAVIGABLE = [f for f in FIELD_NAMES if f != "comment"]
"""What ``*navigable`` (the search default) includes: comments are not navigable."""


def wanted_fields(raw: str | list[str] | None, default: str) -> list[str]:
    """``fields=summary,status`` / ``*all`` / ``*navigable`` / ``-comment`` → field ids."""
    if raw is None or raw == "" or raw == []:
        raw = default
    items = raw if isinstance(raw, list) else raw.split(",")
    chosen: list[str] = []
    for item in (i.strip() for i in items):
        if item in ("*all", "*navigable"):
            chosen += FIELD_NAMES if item == "*all" else NAVIGABLE
        elif item and not item.startswith("-"):
            chosen.append(item)
    excluded = {i.strip()[1:] for i in items if i.strip().startswith("-")}
    return [f for f in dict.fromkeys(chosen) if f not in excluded]


def _body(text: str, version: str) -> Any:
    return adf(text) if version == "3" else text


def _rendered(text: str) -> str:
    return "".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n\n") if p.strip())


def comment_json(
    emu: JiraEmulator, issue: Issue, c: Comment, version: str, expand: set[str]
) -> dict[str, Any]:
    base = emu.base_url
    out: dict[str, Any] = {
        "self": f"{base}/rest/api/{version}/issue/{issue.id}/comment/{c.id}",
        "id": c.id,
        "author": emu.user_json(c.author),
        "body": _body(c.body, version),
        "updateAuthor": emu.user_json(c.update_author or c.author),
        "created": jira_time(c.created),
        "updated": jira_time(c.updated),
    }
    if emu.cloud:
        out["jsdPublic"] = True
    if "renderedBody" in expand:
        out["renderedBody"] = _rendered(c.body)
    if "properties" in expand:
        out["properties"] = [{"key": k, "value": v} for k, v in c.properties.items()]
    return out


def project_json(emu: JiraEmulator, key: str, full: bool = False) -> dict[str, Any]:
    project = emu.projects[key]
    out: dict[str, Any] = {
        "expand": "description,lead,issueTypes,url,projectKeys,permissions,insight",
        "self": f"{emu.base_url}/rest/api/2/project/{project['id']}",
        "id": project["id"],
        "key": key,
        "name": project["name"],
        "avatarUrls": {"48x48": f"{emu.base_url}/secure/projectavatar?pid={project['id']}"},
        "projectTypeKey": "software",
        "simplified": False,
        "style": "classic",
        "isPrivate": False,
    }
    if full:
        out["description"] = project.get("description", "")
        out["lead"] = emu.user_json(project.get("lead"))
        out["issueTypes"] = [
            {"id": str(10000 + n), "name": name, "subtask": False}
            for n, name in enumerate(("Bug", "Task", "Story"))
        ]
    return out


def _named(emu: JiraEmulator, kind: str, name: str, ident: str) -> dict[str, Any]:
    base = emu.base_url
    return {
        "self": f"{base}/rest/api/2/{kind}/{ident}",
        "id": ident,
        "name": name,
        "iconUrl": f"{base}/images/icons/{kind}/{name.lower()}.svg",
    }


def _links(emu: JiraEmulator, issue: Issue) -> list[dict[str, Any]]:
    out = []
    for link_id, type_name, direction, other_key in issue.links:
        other = emu.issues.get(other_key)
        if other is None:
            continue
        inward, outward = LINK_TYPES[type_name]
        out.append(
            {
                "id": link_id,
                "self": f"{emu.base_url}/rest/api/2/issueLink/{link_id}",
                "type": {"id": link_id, "name": type_name, "inward": inward, "outward": outward},
                f"{direction}Issue": {
                    "id": other.id,
                    "key": other.key,
                    "self": f"{emu.base_url}/rest/api/2/issue/{other.id}",
                    "fields": {
                        "summary": other.summary,
                        "status": render_status(emu.base_url, other.status),
                        "priority": _named(emu, "priority", other.priority, "3"),
                        "issuetype": _named(emu, "issuetype", other.issuetype, "10004"),
                    },
                },
            }
        )
    return out


def _field(emu: JiraEmulator, issue: Issue, name: str, version: str) -> Any:
    if name == "summary":
        return issue.summary
    if name == "description":
        return _body(issue.description, version) if issue.description else None
    if name == "status":
        return render_status(emu.base_url, issue.status)
    if name == "issuetype":
        return {**_named(emu, "issuetype", issue.issuetype, "10004"), "subtask": False}
    if name == "priority":
        return _named(emu, "priority", issue.priority, "3")
    if name in ("assignee", "reporter"):
        return emu.user_json(getattr(issue, name))
    if name == "labels":
        return list(issue.labels)
    if name in ("created", "updated"):
        return jira_time(getattr(issue, name))
    if name == "resolution":
        return {"id": "10000", "name": "Done"} if issue.status == "Done" else None
    if name == "resolutiondate":
        return jira_time(issue.resolutiondate) if issue.resolutiondate else None
    if name == "project":
        return project_json(emu, issue.project)
    if name == "comment":
        comments = [comment_json(emu, issue, c, version, set()) for c in issue.comments]
        total = len(comments)
        return {"comments": comments, "self": "", "maxResults": total, "total": total, "startAt": 0}
    if name == "issuelinks":
        return _links(emu, issue)
    return None


def issue_json(
    emu: JiraEmulator, issue: Issue, version: str, fields: list[str], expand: set[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "expand": "renderedFields,names,schema,operations,editmeta,changelog,transitions",
        "id": issue.id,
        "self": f"{emu.base_url}/rest/api/{version}/issue/{issue.id}",
        "key": issue.key,
        "fields": {f: _field(emu, issue, f, version) for f in fields if f in FIELD_NAMES},
    }
    if "renderedFields" in expand:
        out["renderedFields"] = {
            "description": _rendered(issue.description) if "description" in fields else None,
            "comment": {
                "comments": [
                    {**comment_json(emu, issue, c, "2", set()), "body": _rendered(c.body)}
                    for c in issue.comments
                ]
            }
            if "comment" in fields
            else None,
        }
    if "names" in expand:
        out["names"] = {f: FIELD_NAMES[f] for f in fields if f in FIELD_NAMES}
    if "transitions" in expand:
        out["transitions"] = [
            render_transition(emu.base_url, t) for t in available_transitions(issue)
        ]
    if "changelog" in expand:
        histories = [
            {**h, "author": emu.user_json(h["author"]), "created": jira_time(h["created"])}
            for h in issue.changelog
        ]
        out["changelog"] = {
            "startAt": 0,
            "maxResults": len(histories),
            "total": len(histories),
            "histories": histories,
        }
    return out

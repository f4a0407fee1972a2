"""The tracker server's side of Jira: plain REST calls (urllib) to ``JIRA_URL`` with
``JIRA_USER``/``JIRA_TOKEN`` (Cloud: Basic; no user: Bearer), shaped for a model to read.
Jira's refusals come back as ValueError with the status and Jira's own message, so the tool
answers an error the model can act on ("Jira answered 404: Issue does not exist…")."""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["add_comment", "comments", "issue", "search"]

TIMEOUT_S = 20.0
_FIELDS = "summary,status,assignee,labels,updated,priority"


def _call(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    base = os.environ.get("JIRA_URL", "").rstrip("/")
    if not base:
        raise ValueError("the tracker has no JIRA_URL: the sandbox sets it in the server's env")
    user, token = os.environ.get("JIRA_USER", ""), os.environ.get("JIRA_TOKEN", "")
    auth = (
        "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()
        if user
        else f"Bearer {token}"
    )
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        base + path,
        data=data,
        method=method,
        headers={
            "Authorization": auth,
            "Accept": "application/json",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace")
        try:
            parsed = json.loads(text)
            said = "; ".join([*parsed.get("errorMessages", []), *parsed.get("errors", {}).values()])
        except (ValueError, AttributeError):
            said = text[:200]
        wait = exc.headers.get("Retry-After")
        later = f" (retry after {wait} s)" if wait else ""
        raise ValueError(f"Jira answered {exc.code}: {said}{later}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise ValueError(f"Jira unreachable: {exc}") from None
    return json.loads(raw) if raw else None


def _who(user: dict[str, Any] | None) -> str | None:
    return None if not user else str(user.get("displayName"))


def _brief(raw: dict[str, Any]) -> dict[str, Any]:
    f = raw.get("fields", {})
    return {
        "key": raw["key"],
        "summary": f.get("summary"),
        "status": (f.get("status") or {}).get("name"),
        "priority": (f.get("priority") or {}).get("name"),
        "assignee": _who(f.get("assignee")),
        "labels": f.get("labels", []),
        "updated": f.get("updated"),
    }


def search(jql: str, max_results: int = 20) -> dict[str, Any]:
    query = urllib.parse.urlencode(
        {"jql": jql, "fields": _FIELDS, "maxResults": max(1, min(max_results, 100))}
    )
    try:
        found = _call("GET", f"/rest/api/2/search/jql?{query}")
    except ValueError as exc:  # Data Center has only the classic search
        if "answered 404" not in str(exc):
            raise
        found = _call("GET", f"/rest/api/2/search?{query}")
    return {"jql": jql, "issues": [_brief(i) for i in found.get("issues", [])]}


def comments(key: str) -> dict[str, Any]:
    found = _call("GET", f"/rest/api/2/issue/{urllib.parse.quote(key)}/comment")
    return {
        "key": key,
        "comments": [
            {
                "id": c["id"],
                "author": _who(c.get("author")),
                "created": c["created"],
                "body": c["body"],
            }
            for c in found.get("comments", [])
        ],
    }


def issue(key: str) -> dict[str, Any]:
    raw = _call("GET", f"/rest/api/2/issue/{urllib.parse.quote(key)}")
    f = raw["fields"]
    links = []
    for link in f.get("issuelinks", []):
        for direction in ("outward", "inward"):
            other = link.get(f"{direction}Issue")
            if other:
                links.append(
                    {
                        "relation": link["type"][direction],
                        "key": other["key"],
                        "summary": other["fields"].get("summary"),
                    }
                )
    return {
        **_brief(raw),
        "description": f.get("description"),
        "reporter": _who(f.get("reporter")),
        "created": f.get("created"),
        "links": links,
        "comments": comments(key)["comments"],
    }


def add_comment(key: str, body: str) -> dict[str, Any]:
    made = _call("POST", f"/rest/api/2/issue/{urllib.parse.quote(key)}/comment", {"body": body})
    return {"key": key, "id": made["id"], "created": made["created"]}

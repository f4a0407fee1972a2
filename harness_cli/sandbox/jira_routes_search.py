"""JQL search on the Jira emulator: ``/search`` (Data Center; 410 Gone on Cloud) with
``startAt``/``maxResults``/``total``, and ``/search/jql`` (Cloud) with ``nextPageToken``/``isLast``.
Both take their parameters from the query string (GET) or a JSON body (POST)."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from harness_cli.sandbox.httpbase import Request, Response
from harness_cli.sandbox.jira_errors import JiraError
from harness_cli.sandbox.jira_jql import Ctx, JqlError, parse
from harness_cli.sandbox.jira_jql_match import PRIORITIES
from harness_cli.sandbox.jira_render import FIELD_NAMES, issue_json, wanted_fields
from harness_cli.sandbox.jira_state import STATUSES, Issue

if TYPE_CHECKING:
    from harness_cli.sandbox.jira_api import JiraEmulator

__all__ = ["run_jql", "search", "search_jql"]

MAX_RESULTS = 100
REMOVED = (
    "The requested API has been removed. Please migrate to the /rest/api/3/search/jql API. "
    "A full migration guideline is available at https://developer.atlassian.com/changelog/#CHANGE-2046"
)


def _params(req: Request) -> dict[str, Any]:
    """GET query (``fields`` may repeat) or POST body, in one shape."""
    if req.method == "POST":
        data = req.json_body()
        if not isinstance(data, dict):
            raise JiraError(400, "Unexpected end-of-input: expected a JSON object")
        return data
    out: dict[str, Any] = {k: v[0] for k, v in req.query.items()}
    if "fields" in req.query:
        out["fields"] = ",".join(req.query["fields"])
    return out


def _sort_key(issue: Issue, name: str) -> Any:
    if name == "key":
        return (issue.project, int(issue.key.rsplit("-", 1)[1]))
    if name == "priority":
        return PRIORITIES.index(issue.priority) if issue.priority in PRIORITIES else 99
    if name == "labels":
        return ",".join(sorted(issue.labels))
    value = getattr(issue, name, "") or ""
    return value.lower() if isinstance(value, str) else value


def run_jql(emu: JiraEmulator, user: str, jql: str, *, check_keys: bool) -> list[Issue]:
    """The issues ``jql`` selects, in its order (none given: newest key first)."""
    try:
        query = parse(jql or "")
    except JqlError as exc:
        raise JiraError(400, str(exc)) from None
    for name, value in query.named:
        if name == "project" and value not in emu.projects:
            raise JiraError(400, f"The value '{value}' does not exist for the field 'project'.")
        if name == "status" and value.lower() not in {s.lower() for s in STATUSES}:
            raise JiraError(400, f"The value '{value}' does not exist for the field 'status'.")
        if name == "key" and check_keys and value not in emu.issues:
            raise JiraError(400, f"An issue with key '{value}' does not exist for field 'key'.")

    def same_user(have: str | None, want: str) -> bool:
        found = emu.find_user(want)
        return found is not None and found.name == have

    now = emu.clock()
    ctx = Ctx(now=now, me=user, user_matches=same_user)
    rows = [i for i in emu.issues.values() if i.visible_at <= now and query.matches(i, ctx)]
    for name, desc in reversed(query.order or [("key", True)]):
        rows.sort(key=lambda i, n=name: _sort_key(i, n), reverse=desc)  # type: ignore[misc]
    return rows


def _expand(raw: Any) -> set[str]:
    items = raw if isinstance(raw, list) else str(raw or "").split(",")
    return {e.strip() for e in items if e.strip()}


def _size(raw: Any, default: int = 50) -> int:
    try:
        size = default if raw in (None, "") else int(raw)
    except (TypeError, ValueError):
        raise JiraError(400, "maxResults must be a number") from None
    return max(0, min(size, MAX_RESULTS))


def search(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    if emu.cloud:
        raise JiraError(410, REMOVED)
    params = _params(req)
    strict = str(params.get("validateQuery", "strict")).lower() not in ("false", "none", "warn")
    rows = run_jql(emu, user, str(params.get("jql") or ""), check_keys=strict)
    start, size = int(params.get("startAt") or 0), _size(params.get("maxResults"))
    fields = wanted_fields(params.get("fields"), "*navigable")
    expand = _expand(params.get("expand"))
    out: dict[str, Any] = {
        "expand": "schema,names",
        "startAt": start,
        "maxResults": size,
        "total": len(rows),
        "issues": [issue_json(emu, i, v, fields, expand) for i in rows[start : start + size]],
    }
    if "names" in expand:
        out["names"] = {f: FIELD_NAMES[f] for f in fields if f in FIELD_NAMES}
    return Response.json(out)


def _token(offset: int, jql: str) -> str:
    raw = json.dumps({"o": offset, "q": jql}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _offset(token: str, jql: str) -> int:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if data["q"] == jql:
            return int(data["o"])
    except (ValueError, KeyError, TypeError):
        pass
    raise JiraError(400, "The provided next page token is invalid or expired.")


def search_jql(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    if not emu.cloud:
        raise JiraError(404, f"No resource found at {req.path}")
    params = _params(req)
    jql = str(params.get("jql") or "")
    if not jql.strip() or jql.strip().lower().startswith("order by"):
        # Cloud refuses unbounded enhanced searches
        raise JiraError(
            400,
            "Unbounded JQL queries are not allowed here. Please add a search "
            "restriction to your query.",
        )
    rows = run_jql(emu, user, jql, check_keys=False)
    token = params.get("nextPageToken")
    start = _offset(str(token), jql) if token else 0
    size = _size(params.get("maxResults"))
    page = rows[start : start + size]
    raw_fields = params.get("fields")
    expand = _expand(params.get("expand"))
    if raw_fields in (None, "", []):
        issues = [
            {"id": i.id, "key": i.key, "self": f"{emu.base_url}/rest/api/{v}/issue/{i.id}"}
            for i in page
        ]
    else:
        fields = wanted_fields(raw_fields, "*navigable")
        issues = [issue_json(emu, i, v, fields, expand) for i in page]
    out: dict[str, Any] = {"issues": issues, "isLast": start + len(page) >= len(rows)}
    if not out["isLast"]:
        out["nextPageToken"] = _token(start + len(page), jql)
    return Response.json(out)

"""The Jira emulator's REST endpoints (``/rest/api/{2,3,latest}/…``), one function each.

Each takes ``(emu, req, version, user, *path groups)`` and answers a :class:`Response` or raises
:class:`JiraError`; the authenticated ``user`` is the caller's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from harness_cli.sandbox.httpbase import Request, Response
from harness_cli.sandbox.jira_errors import JiraError
from harness_cli.sandbox.jira_render import FIELD_NAMES, issue_json, project_json, wanted_fields
from harness_cli.sandbox.jira_routes_comments import (
    MISSING,
    add_comment,
    delete_comment,
    delete_property,
    edit_comment,
    expand_of,
    get_comment,
    get_property,
    json_object,
    list_comments,
    property_keys,
    put_property,
    text_of,
)
from harness_cli.sandbox.jira_routes_search import search, search_jql
from harness_cli.sandbox.jira_state import (
    TRANSITIONS,
    available_transitions,
    jira_time,
    render_transition,
)

if TYPE_CHECKING:
    from harness_cli.sandbox.jira_api import JiraEmulator

__all__ = ["handle"]

Handler = Callable[..., Response]
_PREFIX = re.compile(r"^/rest/api/(2|3|latest)/(.+?)/?$")


def handle(emu: JiraEmulator, req: Request, user: str) -> Response:
    match = _PREFIX.match(req.path)
    if match is None:
        raise JiraError(404, f"No resource found at {req.path}")
    version = "2" if match.group(1) == "latest" else match.group(1)
    rest = match.group(2)
    allowed = []
    for method, pattern, func in ROUTES:
        found = re.fullmatch(pattern, rest)
        if found is None:
            continue
        if req.method == method:
            with emu.state_lock:
                return func(emu, req, version, user, *found.groups())
        allowed.append(method)
    if allowed:
        raise JiraError(405, f"Method {req.method} not allowed; use {', '.join(allowed)}")
    raise JiraError(404, f"No resource found at {req.path}")


def server_info(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    cloud = emu.cloud
    return Response.json(
        {
            "baseUrl": emu.base_url,
            "displayUrl": emu.base_url,
            "version": "1001.0.0-SNAPSHOT" if cloud else "10.3.6",
            "versionNumbers": [1001, 0, 0] if cloud else [10, 3, 6],
            "deploymentType": emu.deployment,
            "buildNumber": 100297 if cloud else 10030006,
            "buildDate": "2026-09-01T00:00:00.000+0000",
            "serverTime": jira_time(emu.now()),
            "scmInfo": "sandbox",
            "serverTitle": "Jira (sandbox)",
        }
    )


def myself(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    return Response.json(emu.user_json(user))


def projects(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    return Response.json([project_json(emu, key) for key in sorted(emu.projects)])


def project_search(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    start, size = int(req.arg("startAt") or 0), min(int(req.arg("maxResults") or 50), 100)
    wanted = (req.arg("query") or "").lower()
    keys = [k for k in sorted(emu.projects) if wanted in (k + emu.projects[k]["name"]).lower()]
    page = keys[start : start + size]
    return Response.json(
        {
            "startAt": start,
            "maxResults": size,
            "total": len(keys),
            "isLast": start + len(page) >= len(keys),
            "values": [project_json(emu, k) for k in page],
        }
    )


def project(emu: JiraEmulator, req: Request, v: str, user: str, key: str) -> Response:
    found = (
        key
        if key in emu.projects
        else next((k for k, p in emu.projects.items() if p["id"] == key), None)
    )
    if found is None:
        raise JiraError(404, f"No project could be found with key '{key}'.")
    return Response.json(project_json(emu, found, full=True))


def fields(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    return Response.json(
        [
            {
                "id": fid,
                "key": fid,
                "name": name,
                "custom": False,
                "orderable": True,
                "navigable": fid != "comment",
                "searchable": True,
                "clauseNames": [fid],
            }
            for fid, name in FIELD_NAMES.items()
        ]
    )


def get_issue(emu: JiraEmulator, req: Request, v: str, user: str, key: str) -> Response:

    chosen = wanted_fields(req.query.get("fields", [None])[0], "*all")
    return Response.json(issue_json(emu, emu.issue(key), v, chosen, expand_of(req)))


def transitions(emu: JiraEmulator, req: Request, v: str, user: str, key: str) -> Response:
    issue = emu.issue(key)
    only = req.arg("transitionId")
    listed = [render_transition(emu.base_url, t) for t in available_transitions(issue)]
    if "transitions.fields" in expand_of(req):
        listed = [{**t, "fields": {}} for t in listed]
    return Response.json(
        {"expand": "transitions", "transitions": [t for t in listed if only in (None, t["id"])]}
    )


def do_transition(emu: JiraEmulator, req: Request, v: str, user: str, key: str) -> Response:
    issue = emu.issue(key)
    data = json_object(req)
    wanted = data.get("transition")
    if not isinstance(wanted, dict) or not (wanted.get("id") or wanted.get("name")):
        raise JiraError(400, "Missing 'transition' identifier")
    tid = str(wanted.get("id") or "")
    if not tid:
        tid = next((t for t, name in TRANSITIONS.items() if name == wanted.get("name")), "?")
    if tid not in available_transitions(issue):
        raise JiraError(400, f"Transition id '{tid}' is not valid for this issue.")
    for op in (data.get("update") or {}).get("comment", []):
        if "add" in op:
            emu.add_comment(issue.key, text_of(op["add"].get("body"), v, "comment"), author=user)
    emu.set_status(issue.key, TRANSITIONS[tid], author=user)
    return Response(status=204)


def assign(emu: JiraEmulator, req: Request, v: str, user: str, key: str) -> Response:
    issue = emu.issue(key)
    data = json_object(req)
    ref = data.get("accountId", data.get("name", MISSING))
    if ref is MISSING:
        raise JiraError(400, errors={"assignee": "Specify accountId or name."})
    target = None
    if ref == "-1":
        target = emu.projects[issue.project].get("lead")
    elif ref is not None:
        found = emu.find_user(str(ref))
        if found is None or not found.active:
            raise JiraError(400, errors={"assignee": f"User '{ref}' cannot be assigned issues."})
        target = found.name
    issue.log_change(emu.now(), user, "assignee", issue.assignee or "", target or "")
    issue.assignee, issue.updated = target, emu.now()
    return Response(status=204)


def _user_query(emu: JiraEmulator, req: Request) -> str:
    if emu.cloud and req.arg("username") is not None:
        raise JiraError(400, "The query parameter 'username' is not supported in GDPR strict mode.")
    return (req.arg("query") or req.arg("username") or "").lower()


def user_search(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    wanted = _user_query(emu, req)
    start, size = int(req.arg("startAt") or 0), min(int(req.arg("maxResults") or 50), 1000)
    found = [
        u.render(emu.base_url, emu.cloud)
        for u in emu.users.values()
        if wanted in f"{u.name}\n{u.display_name}\n{u.email}".lower()
    ]
    return Response.json(found[start : start + size])


def assignable(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    if req.arg("issueKey"):
        emu.issue(req.arg("issueKey") or "")
    return user_search(emu, req, v, user)


def get_user(emu: JiraEmulator, req: Request, v: str, user: str) -> Response:
    ref = req.arg("accountId") or req.arg("username") or req.arg("key") or ""
    found = emu.find_user(ref)
    if found is None:
        raise JiraError(404, f"The user with account ID '{ref}' does not exist.")
    return Response.json(found.render(emu.base_url, emu.cloud))


_KEY = r"([A-Za-z0-9][A-Za-z0-9_]*-\d+|\d+)"
ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", r"serverInfo", server_info),
    ("GET", r"myself", myself),
    ("GET", r"project", projects),
    ("GET", r"project/search", project_search),
    ("GET", r"project/([^/]+)", project),
    ("GET", r"field", fields),
    ("GET", r"search", search),
    ("POST", r"search", search),
    ("GET", r"search/jql", search_jql),
    ("POST", r"search/jql", search_jql),
    ("GET", rf"issue/{_KEY}", get_issue),
    ("GET", rf"issue/{_KEY}/comment", list_comments),
    ("POST", rf"issue/{_KEY}/comment", add_comment),
    ("GET", rf"issue/{_KEY}/comment/(\d+)", get_comment),
    ("PUT", rf"issue/{_KEY}/comment/(\d+)", edit_comment),
    ("DELETE", rf"issue/{_KEY}/comment/(\d+)", delete_comment),
    ("GET", r"comment/(\d+)/properties", property_keys),
    ("GET", r"comment/(\d+)/properties/([^/]+)", get_property),
    ("PUT", r"comment/(\d+)/properties/([^/]+)", put_property),
    ("DELETE", r"comment/(\d+)/properties/([^/]+)", delete_property),
    ("GET", rf"issue/{_KEY}/transitions", transitions),
    ("POST", rf"issue/{_KEY}/transitions", do_transition),
    ("PUT", rf"issue/{_KEY}/assignee", assign),
    ("GET", r"user/search", user_search),
    ("GET", r"user/assignable/search", assignable),
    ("GET", r"user", get_user),
]

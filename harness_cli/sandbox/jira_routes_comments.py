"""The Jira emulator's comment endpoints: list/add/get/edit/delete on an issue, and the comment
entity-property API (``/comment/{id}/properties``). A comment may carry ``properties`` from
its creation on, which is how a client finds its own comment again after a lost answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_cli.sandbox.httpbase import Request, Response
from harness_cli.sandbox.jira_errors import JiraError
from harness_cli.sandbox.jira_render import comment_json
from harness_cli.sandbox.jira_state import Comment, Issue, adf_text

if TYPE_CHECKING:
    from harness_cli.sandbox.jira_api import JiraEmulator

MISSING = object()


def expand_of(req: Request) -> set[str]:
    return {e.strip() for e in (req.arg("expand") or "").split(",") if e.strip()}


def json_object(req: Request) -> dict[str, Any]:
    data = req.json_body()
    if not isinstance(data, dict):
        raise JiraError(400, "Unexpected end-of-input: expected a JSON object")
    return data


def text_of(value: Any, version: str, field: str) -> str:
    """A body as v2 text or v3 ADF, refused the way Jira refuses the other kind."""
    if version == "3" and not isinstance(value, dict):
        raise JiraError(400, errors={field: "Operation value must be an Atlassian Document."})
    if version == "2" and not isinstance(value, str):
        raise JiraError(400, errors={field: "Operation value must be a string"})
    try:
        text = adf_text(value)
    except ValueError:
        raise JiraError(400, errors={field: "Comment body is not valid!"}) from None
    if not text.strip():
        raise JiraError(400, errors={field: "Comment body can not be empty!"})
    return text


def _comment(issue: Issue, comment_id: str) -> Comment:
    found = next((c for c in issue.comments if c.id == comment_id), None)
    if found is None:
        raise JiraError(404, f"Can not find a comment for the id: {comment_id}.")
    return found


def list_comments(emu: JiraEmulator, req: Request, v: str, user: str, key: str) -> Response:
    issue = emu.issue(key)
    start, size = int(req.arg("startAt") or 0), min(int(req.arg("maxResults") or 5000), 5000)
    ordered = list(issue.comments)
    if (req.arg("orderBy") or "").startswith("-"):
        ordered.reverse()
    page = ordered[start : start + size]
    expand = expand_of(req)
    return Response.json(
        {
            "startAt": start,
            "maxResults": size,
            "total": len(ordered),
            "comments": [comment_json(emu, issue, c, v, expand) for c in page],
        }
    )


def _properties(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, list) or not all(isinstance(p, dict) and "key" in p for p in raw):
        raise JiraError(400, errors={"properties": "Properties must be a list of {key, value}."})
    for prop in raw:
        if not 0 < len(str(prop["key"])) <= 255:
            raise JiraError(400, "The property key can not be longer than 255 characters.")
    return {str(p["key"]): p.get("value") for p in raw}


def add_comment(emu: JiraEmulator, req: Request, v: str, user: str, key: str) -> Response:
    issue = emu.issue(key)
    data = json_object(req)
    text = text_of(data.get("body"), v, "comment")
    comment = emu.add_comment(
        issue.key, text, author=user, properties=_properties(data.get("properties"))
    )
    return Response.json(comment_json(emu, issue, comment, v, expand_of(req)), status=201)


def get_comment(emu: JiraEmulator, req: Request, v: str, user: str, key: str, cid: str) -> Response:
    issue = emu.issue(key)
    return Response.json(comment_json(emu, issue, _comment(issue, cid), v, expand_of(req)))


def edit_comment(
    emu: JiraEmulator, req: Request, v: str, user: str, key: str, cid: str
) -> Response:
    issue = emu.issue(key)
    comment = _comment(issue, cid)
    data = json_object(req)
    if "body" in data:
        comment.body = text_of(data["body"], v, "comment")
    comment.properties.update(_properties(data.get("properties")))
    comment.updated, comment.update_author = emu.now(), user
    return Response.json(comment_json(emu, issue, comment, v, expand_of(req)))


def delete_comment(
    emu: JiraEmulator, req: Request, v: str, user: str, key: str, cid: str
) -> Response:
    issue = emu.issue(key)
    issue.comments.remove(_comment(issue, cid))
    return Response(status=204)


def _comment_by_id(emu: JiraEmulator, cid: str) -> Comment:
    for issue in emu.issues.values():
        for comment in issue.comments:
            if comment.id == cid:
                return comment
    raise JiraError(404, f"Can not find a comment for the id: {cid}.")


def property_keys(emu: JiraEmulator, req: Request, v: str, user: str, cid: str) -> Response:
    comment = _comment_by_id(emu, cid)
    url = f"{emu.base_url}/rest/api/{v}/comment/{cid}/properties"
    return Response.json({"keys": [{"self": f"{url}/{k}", "key": k} for k in comment.properties]})


def get_property(emu: JiraEmulator, req: Request, v: str, user: str, cid: str, pk: str) -> Response:
    comment = _comment_by_id(emu, cid)
    if pk not in comment.properties:
        raise JiraError(404, f"The property with key '{pk}' does not exist.")
    return Response.json({"key": pk, "value": comment.properties[pk]})


def put_property(emu: JiraEmulator, req: Request, v: str, user: str, cid: str, pk: str) -> Response:
    comment = _comment_by_id(emu, cid)
    created = pk not in comment.properties
    comment.properties[pk] = req.json_body()
    return Response(status=201 if created else 200)


def delete_property(
    emu: JiraEmulator, req: Request, v: str, user: str, cid: str, pk: str
) -> Response:
    comment = _comment_by_id(emu, cid)
    if comment.properties.pop(pk, MISSING) is MISSING:
        raise JiraError(404, f"The property with key '{pk}' does not exist.")
    return Response(status=204)

"""GitLab REST v4 handlers for merge requests, their notes and their discussions."""

from __future__ import annotations

from typing import Any

from harness_cli.sandbox import gitlab_quick_actions as quick_actions
from harness_cli.sandbox import gitlab_reviews as reviews
from harness_cli.sandbox.gitlab_http import Ctx, Route, paginate, sort_items
from harness_cli.sandbox.gitlab_model import (
    DEVELOPER,
    Discussion,
    MergeRequest,
    Note,
    Project,
    now_ms,
)
from harness_cli.sandbox.gitlab_state import ApiError, not_found
from harness_cli.sandbox.httpbase import Response

__all__ = ["ROUTES"]

_STATES = ("opened", "closed", "locked", "merged", "all")
_FORBIDDEN = ApiError(403, {"message": "403 Forbidden"})


def _mr(ctx: Ctx) -> tuple[Project, MergeRequest]:
    project = ctx.project()
    return project, reviews.find_mr(ctx.state, project, ctx.int_param("iid"))


def _render(ctx: Ctx, project: Project, mr: MergeRequest, *, single: bool) -> dict[str, Any]:
    current = reviews.view(ctx.state, project, mr, single=single)
    return mr.json(project, current, ctx.base, single=single)


def _truthy(value: Any) -> bool:
    return str(value).lower() in ("true", "1", "yes")


# -- merge requests ------------------------------------------------------------------------
def list_mrs(ctx: Ctx) -> Response:
    project = ctx.project()
    items = reviews.project_mrs(ctx.state, project)
    state = ctx.arg("state") or "all"
    if state not in _STATES:
        raise ApiError(400, {"error": "state does not have a valid value"})
    if state != "all":
        items = [mr for mr in items if mr.state == state]
    for name in ("source_branch", "target_branch"):
        wanted = ctx.arg(name)
        if wanted:
            items = [mr for mr in items if getattr(mr, name) == wanted]
    labels = [x for x in (ctx.arg("labels") or "").split(",") if x]
    items = [mr for mr in items if all(label in mr.labels for label in labels)]
    iids = ctx.args().get("iids")
    if iids:
        wanted_iids = {int(x) for x in (iids if isinstance(iids, list) else [iids])}
        items = [mr for mr in items if mr.iid in wanted_iids]
    author = ctx.arg("author_username")
    if author:
        items = [mr for mr in items if mr.author.username == author]
    search = (ctx.arg("search") or "").lower()
    if search:
        items = [mr for mr in items if search in f"{mr.title}\n{mr.description}".lower()]
    for field in ("created", "updated"):
        after, before = ctx.time_arg(f"{field}_after"), ctx.time_arg(f"{field}_before")
        if after is not None:
            items = [mr for mr in items if getattr(mr, f"{field}_at") >= after]
        if before is not None:
            items = [mr for mr in items if getattr(mr, f"{field}_at") <= before]
    keys = {
        "created_at": lambda mr: mr.created_at,
        "updated_at": lambda mr: mr.updated_at,
        "title": lambda mr: mr.title,
    }
    items = sort_items(items, ctx, keys, "created_at")
    return paginate(ctx, items, lambda mr: _render(ctx, project, mr, single=False))


def get_mr(ctx: Ctx) -> Response:
    project, mr = _mr(ctx)
    return Response.json(_render(ctx, project, mr, single=True))


def create_mr(ctx: Ctx) -> Response:
    project = ctx.project()
    if project.access_level(ctx.user.id) < DEVELOPER:
        raise ApiError(403, {"message": "403 Forbidden"})
    args, commands = _without_commands(ctx.args(), "description")
    mr = reviews.create_mr(ctx.state, project, ctx.user, args)
    quick_actions.run(ctx.state, project, mr, ctx.user, commands)
    return Response.json(_render(ctx, project, mr, single=True), status=201)


def update_mr(ctx: Ctx) -> Response:
    project, mr = _mr(ctx)
    args, commands = _without_commands(ctx.args(), "description")
    reviews.update_mr(ctx.state, project, mr, ctx.user, args)
    quick_actions.run(ctx.state, project, mr, ctx.user, commands)
    return Response.json(_render(ctx, project, mr, single=True))


def _without_commands(
    args: dict[str, Any], name: str
) -> tuple[dict[str, Any], list[quick_actions.Command]]:
    """GitLab runs the quick actions of a description or a note and keeps the rest of it."""
    if not isinstance(args.get(name), str):
        return args, []
    text, commands = quick_actions.extract(args[name])
    return {**args, name: text}, commands


def merge_mr(ctx: Ctx) -> Response:
    project, mr = _mr(ctx)
    args = ctx.args()
    remove = args.get("should_remove_source_branch")
    reviews.merge_mr(
        ctx.state,
        project,
        mr,
        ctx.user,
        sha=args.get("sha") or None,
        message=args.get("merge_commit_message") or None,
        remove_source=None if remove is None else _truthy(remove),
        when_pipeline_succeeds=_truthy(
            args.get("merge_when_pipeline_succeeds") or args.get("auto_merge")
        ),
    )
    return Response.json(_render(ctx, project, mr, single=True))


def mr_pipelines(ctx: Ctx) -> Response:
    project, mr = _mr(ctx)
    items = [p for p in ctx.state.project_pipelines(project) if p.ref == mr.source_branch]
    items.sort(key=lambda p: p.id, reverse=True)
    return paginate(ctx, items, lambda p: p.summary(project, ctx.base))


# -- notes ---------------------------------------------------------------------------------
def _body(ctx: Ctx) -> str:
    body = ctx.arg("body")
    if not body:
        raise ApiError(400, {"error": "body is missing"})
    return body


def list_notes(ctx: Ctx) -> Response:
    _, mr = _mr(ctx)
    keys = {"created_at": lambda n: n.created_at, "updated_at": lambda n: n.updated_at}
    notes = sort_items(mr.notes, ctx, keys, "created_at")
    return paginate(ctx, notes, lambda n: n.json(mr, ctx.base))


def get_note(ctx: Ctx) -> Response:
    _, mr = _mr(ctx)
    _, note = reviews.find_note(mr, ctx.int_param("nid"))
    return Response.json(note.json(mr, ctx.base))


def create_note(ctx: Ctx) -> Response:
    project, mr = _mr(ctx)
    body, commands = quick_actions.extract(_body(ctx))
    if commands and not body.strip():  # only commands: run, nothing kept (GitLab's 202)
        done = quick_actions.run(ctx.state, project, mr, ctx.user, commands)
        return Response.json({"commands_changes": {}, "summary": done}, status=202)
    _, note = ctx.state.add_note(mr, ctx.user, body, discussion=False)
    quick_actions.run(ctx.state, project, mr, ctx.user, commands)
    return Response.json(note.json(mr, ctx.base), status=201)


def _edit(ctx: Ctx, mr: MergeRequest, note: Note) -> Response:
    body, resolved = ctx.arg("body"), ctx.arg("resolved")
    if body is not None:
        if note.author.id != ctx.user.id or note.system:
            raise _FORBIDDEN
        note.body = body
        note.updated_at = mr.updated_at = now_ms()
    if resolved is not None:
        reviews.resolve([note], ctx.user, _truthy(resolved))
    return Response.json(note.json(mr, ctx.base))


def update_note(ctx: Ctx) -> Response:
    _, mr = _mr(ctx)
    _, note = reviews.find_note(mr, ctx.int_param("nid"))
    return _edit(ctx, mr, note)


def delete_note(ctx: Ctx) -> Response:
    _, mr = _mr(ctx)
    discussion, note = reviews.find_note(mr, ctx.int_param("nid"))
    if note.author.id != ctx.user.id or note.system:
        raise _FORBIDDEN
    discussion.notes.remove(note)
    if not discussion.notes:
        mr.discussions.remove(discussion)
    return Response(status=204)


# -- discussions ---------------------------------------------------------------------------
def _discussion(ctx: Ctx) -> tuple[MergeRequest, Discussion]:
    _, mr = _mr(ctx)
    return mr, reviews.find_discussion(mr, ctx.params["did"])


def list_discussions(ctx: Ctx) -> Response:
    _, mr = _mr(ctx)
    return paginate(ctx, list(mr.discussions), lambda d: d.json(mr, ctx.base))


def get_discussion(ctx: Ctx) -> Response:
    mr, discussion = _discussion(ctx)
    return Response.json(discussion.json(mr, ctx.base))


def create_discussion(ctx: Ctx) -> Response:
    project, mr = _mr(ctx)
    position = ctx.args().get("position")
    body, commands = quick_actions.extract(_body(ctx))
    discussion, _ = ctx.state.add_note(
        mr,
        ctx.user,
        body or _body(ctx),
        discussion=True,
        position=position if isinstance(position, dict) else None,
    )
    quick_actions.run(ctx.state, project, mr, ctx.user, commands)
    return Response.json(discussion.json(mr, ctx.base), status=201)


def reply(ctx: Ctx) -> Response:
    mr, discussion = _discussion(ctx)
    if discussion.notes and discussion.notes[0].system:
        raise ApiError(400, {"message": "400 Bad request - Can't reply to a system note"})
    body, commands = quick_actions.extract(_body(ctx))
    _, note = ctx.state.add_note(mr, ctx.user, body or _body(ctx), discussion=True, into=discussion)
    quick_actions.run(ctx.state, ctx.project(), mr, ctx.user, commands)
    return Response.json(note.json(mr, ctx.base), status=201)


def update_discussion(ctx: Ctx) -> Response:
    mr, discussion = _discussion(ctx)
    resolved = ctx.arg("resolved")
    if resolved is None:
        raise ApiError(400, {"error": "resolved is missing"})
    reviews.resolve(discussion.notes, ctx.user, _truthy(resolved))
    return Response.json(discussion.json(mr, ctx.base))


def update_discussion_note(ctx: Ctx) -> Response:
    mr, discussion = _discussion(ctx)
    for note in discussion.notes:
        if note.id == ctx.int_param("nid"):
            return _edit(ctx, mr, note)
    raise not_found("Note")


MR = "/projects/:pid/merge_requests/:iid"
ROUTES = [
    Route.of("GET", "/projects/:pid/merge_requests", list_mrs),
    Route.of("POST", "/projects/:pid/merge_requests", create_mr),
    Route.of("GET", MR, get_mr),
    Route.of("PUT", MR, update_mr),
    Route.of("PUT", f"{MR}/merge", merge_mr),
    Route.of("GET", f"{MR}/pipelines", mr_pipelines),
    Route.of("GET", f"{MR}/notes", list_notes),
    Route.of("POST", f"{MR}/notes", create_note),
    Route.of("GET", f"{MR}/notes/:nid", get_note),
    Route.of("PUT", f"{MR}/notes/:nid", update_note),
    Route.of("DELETE", f"{MR}/notes/:nid", delete_note),
    Route.of("GET", f"{MR}/discussions", list_discussions),
    Route.of("POST", f"{MR}/discussions", create_discussion),
    Route.of("GET", f"{MR}/discussions/:did", get_discussion),
    Route.of("PUT", f"{MR}/discussions/:did", update_discussion),
    Route.of("POST", f"{MR}/discussions/:did/notes", reply),
    Route.of("PUT", f"{MR}/discussions/:did/notes/:nid", update_discussion_note),
]

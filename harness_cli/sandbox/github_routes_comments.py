"""GitHub REST handlers for review comments (threads by ``in_reply_to``), issue comments on
pull requests (``since`` = updated at or after), and a pull request seen as an issue (labels).

The repository-wide lists (``/pulls/comments``, ``/issues/comments``) let a poller see every
new comment of a repository in one call; they must come before ``/pulls/:number`` in the
route table.
"""

from __future__ import annotations

from typing import Any

from harness_cli.sandbox import github_pulls, github_reviews
from harness_cli.sandbox import github_render as render
from harness_cli.sandbox import github_render_items as shapes
from harness_cli.sandbox.github_http import Ctx, Route, error, paginate, route
from harness_cli.sandbox.github_model import (
    IssueComment,
    PullRequest,
    Repo,
    ReviewComment,
    iso,
    node_id,
    not_found,
    now,
)
from harness_cli.sandbox.github_routes_pulls import labels_json
from harness_cli.sandbox.httpbase import Response

__all__ = ["ROUTES"]


def _sorted(ctx: Ctx, items: list[Any], *, default_direction: str) -> list[Any]:
    since = ctx.since()
    if since is not None:
        items = [c for c in items if c.updated_at >= since]
    sort = ctx.arg("sort") or "created"
    direction = ctx.arg("direction") or default_direction
    key = "updated_at" if sort == "updated" else "created_at"
    return sorted(items, key=lambda c: (getattr(c, key), c.id), reverse=direction == "desc")


def _pr_of(ctx: Ctx, comment: ReviewComment) -> PullRequest:
    return next(p for p in ctx.state.pulls if p.id == comment.pr_id)


# -- review comments -----------------------------------------------------------------------
def list_review_comments(ctx: Ctx) -> Response:
    repo = ctx.repo()
    pr = github_pulls.find_pull(ctx.state, repo, ctx.number())
    items = [
        c
        for c in ctx.state.review_comments
        if c.pr_id == pr.id and github_reviews.visible(ctx.state, c, ctx.user)
    ]
    items = _sorted(ctx, items, default_direction="asc")
    return paginate(ctx, items, lambda c: shapes.review_comment(c, pr, repo, ctx.urls))


def repo_review_comments(ctx: Ctx) -> Response:
    repo = ctx.repo()
    ids = {p.id for p in ctx.state.pulls if p.repo_id == repo.id}
    items = [
        c
        for c in ctx.state.review_comments
        if c.pr_id in ids and github_reviews.visible(ctx.state, c, ctx.user)
    ]
    items = _sorted(ctx, items, default_direction="asc")
    return paginate(ctx, items, lambda c: shapes.review_comment(c, _pr_of(ctx, c), repo, ctx.urls))


def create_review_comment(ctx: Ctx) -> Response:
    repo = ctx.repo()
    pr = github_pulls.find_pull(ctx.state, repo, ctx.number())
    body = ctx.body()
    reply_to = body.get("in_reply_to")
    line = body.get("line") if body.get("line") is not None else body.get("position")
    comment = github_reviews.add_review_comment(
        ctx.state,
        repo,
        pr,
        ctx.user,
        body=str(body.get("body") or ""),
        path=str(body.get("path") or ""),
        line=int(line) if line is not None else None,
        side=str(body.get("side") or "RIGHT"),
        commit_id=body.get("commit_id"),
        in_reply_to=int(reply_to) if reply_to is not None else None,
    )
    return Response.json(shapes.review_comment(comment, pr, repo, ctx.urls), status=201)


def reply(ctx: Ctx) -> Response:
    repo = ctx.repo()
    pr = github_pulls.find_pull(ctx.state, repo, ctx.number())
    comment = github_reviews.add_review_comment(
        ctx.state,
        repo,
        pr,
        ctx.user,
        body=str(ctx.body().get("body") or ""),
        in_reply_to=ctx.number("comment_id"),
    )
    return Response.json(shapes.review_comment(comment, pr, repo, ctx.urls), status=201)


def _review_comment(ctx: Ctx) -> tuple[Repo, ReviewComment]:
    repo = ctx.repo()
    comment = github_reviews.find_review_comment(ctx.state, ctx.number("comment_id"))
    if _pr_of(ctx, comment).repo_id != repo.id:
        raise not_found()
    return repo, comment


def get_review_comment(ctx: Ctx) -> Response:
    repo, comment = _review_comment(ctx)
    return Response.json(shapes.review_comment(comment, _pr_of(ctx, comment), repo, ctx.urls))


def edit_review_comment(ctx: Ctx) -> Response:
    repo, comment = _review_comment(ctx)
    if comment.user.id != ctx.user.id and not repo.can(ctx.user.id, "write"):
        raise error(403, "Must have admin rights to Repository.")
    comment.body, comment.updated_at = str(ctx.body().get("body") or comment.body), now()
    return Response.json(shapes.review_comment(comment, _pr_of(ctx, comment), repo, ctx.urls))


def delete_review_comment(ctx: Ctx) -> Response:
    repo, comment = _review_comment(ctx)
    if comment.user.id != ctx.user.id and not repo.can(ctx.user.id, "write"):
        raise error(403, "Must have admin rights to Repository.")
    ctx.state.review_comments.remove(comment)
    ctx.state.threads[comment.thread_id].comment_ids.remove(comment.id)
    return Response(status=204)


# -- issue comments ------------------------------------------------------------------------
def list_issue_comments(ctx: Ctx) -> Response:
    repo = ctx.repo()
    number = ctx.number()
    github_pulls.find_pull(ctx.state, repo, number)  # this emulator's issues are its pulls
    items = [c for c in ctx.state.issue_comments if c.repo_id == repo.id and c.number == number]
    items = _sorted(ctx, items, default_direction="asc")
    return paginate(ctx, items, lambda c: shapes.issue_comment(c, repo, ctx.urls))


def repo_issue_comments(ctx: Ctx) -> Response:
    repo = ctx.repo()
    items = [c for c in ctx.state.issue_comments if c.repo_id == repo.id]
    items = _sorted(ctx, items, default_direction="asc")
    return paginate(ctx, items, lambda c: shapes.issue_comment(c, repo, ctx.urls))


def create_issue_comment(ctx: Ctx) -> Response:
    repo = ctx.repo()
    number = ctx.number()
    github_pulls.find_pull(ctx.state, repo, number)
    comment = github_reviews.add_issue_comment(
        ctx.state, repo, number, ctx.user, str(ctx.body().get("body") or "")
    )
    return Response.json(shapes.issue_comment(comment, repo, ctx.urls), status=201)


def _issue_comment(ctx: Ctx) -> tuple[Repo, IssueComment]:
    repo = ctx.repo()
    for comment in ctx.state.issue_comments:
        if comment.repo_id == repo.id and comment.id == ctx.number("comment_id"):
            return repo, comment
    raise not_found()


def get_issue_comment(ctx: Ctx) -> Response:
    repo, comment = _issue_comment(ctx)
    return Response.json(shapes.issue_comment(comment, repo, ctx.urls))


def edit_issue_comment(ctx: Ctx) -> Response:
    repo, comment = _issue_comment(ctx)
    if comment.user.id != ctx.user.id and not repo.can(ctx.user.id, "write"):
        raise error(403, "Must have admin rights to Repository.")
    body = str(ctx.body().get("body") or "")
    if not body:
        raise error(422, "Validation Failed")
    comment.body, comment.updated_at = body, now()
    return Response.json(shapes.issue_comment(comment, repo, ctx.urls))


def delete_issue_comment(ctx: Ctx) -> Response:
    repo, comment = _issue_comment(ctx)
    if comment.user.id != ctx.user.id and not repo.can(ctx.user.id, "write"):
        raise error(403, "Must have admin rights to Repository.")
    ctx.state.issue_comments.remove(comment)
    return Response(status=204)


# -- the pull request as an issue ----------------------------------------------------------
def get_issue(ctx: Ctx) -> Response:
    repo = ctx.repo()
    pr = github_pulls.find_pull(ctx.state, repo, ctx.number())
    data = render.pull(pr, repo, ctx.urls, base_sha=None, labels=labels_json(ctx, repo, pr.labels))
    api = f"{ctx.urls.repo(repo)}/issues/{pr.number}"
    issue = {
        k: data[k]
        for k in (
            "id",
            "number",
            "title",
            "user",
            "labels",
            "state",
            "locked",
            "assignee",
            "assignees",
            "milestone",
            "created_at",
            "updated_at",
            "closed_at",
            "body",
            "author_association",
            "html_url",
        )
    }
    issue.update(
        url=api,
        node_id=node_id("I", "issue", pr.id),
        repository_url=ctx.urls.repo(repo),
        comments_url=f"{api}/comments",
        labels_url=f"{api}/labels{{/name}}",
        events_url=f"{api}/events",
        comments=sum(
            1 for c in ctx.state.issue_comments if c.repo_id == repo.id and c.number == pr.number
        ),
        pull_request={
            "url": data["url"],
            "html_url": data["html_url"],
            "diff_url": data["diff_url"],
            "patch_url": data["patch_url"],
            "merged_at": iso(pr.merged_at),
        },
    )
    return Response.json(issue)


def add_labels(ctx: Ctx) -> Response:
    repo = ctx.repo("triage")
    pr = github_pulls.find_pull(ctx.state, repo, ctx.number())
    body = ctx.req.json_body()
    names = body.get("labels", []) if isinstance(body, dict) else body
    pr.labels += [str(n) for n in names or [] if str(n) not in pr.labels]
    pr.updated_at = now()
    return Response.json(labels_json(ctx, repo, pr.labels))


def list_labels(ctx: Ctx) -> Response:
    repo = ctx.repo()
    pr = github_pulls.find_pull(ctx.state, repo, ctx.number())
    return Response.json(labels_json(ctx, repo, pr.labels))


def remove_label(ctx: Ctx) -> Response:
    repo = ctx.repo("triage")
    pr = github_pulls.find_pull(ctx.state, repo, ctx.number())
    if ctx.params["name"] not in pr.labels:
        raise error(404, "Label does not exist")
    pr.labels.remove(ctx.params["name"])
    return Response.json(labels_json(ctx, repo, pr.labels))


R = "/repos/:owner/:repo"
ROUTES: list[Route] = [
    route("GET", f"{R}/pulls/comments", repo_review_comments, "pull_requests:read"),
    route("GET", f"{R}/pulls/comments/:comment_id", get_review_comment, "pull_requests:read"),
    route("PATCH", f"{R}/pulls/comments/:comment_id", edit_review_comment, "pull_requests:write"),
    route(
        "DELETE", f"{R}/pulls/comments/:comment_id", delete_review_comment, "pull_requests:write"
    ),
    route("GET", f"{R}/pulls/:number/comments", list_review_comments, "pull_requests:read"),
    route("POST", f"{R}/pulls/:number/comments", create_review_comment, "pull_requests:write"),
    route("POST", f"{R}/pulls/:number/comments/:comment_id/replies", reply, "pull_requests:write"),
    route("GET", f"{R}/issues/comments", repo_issue_comments, "issues:read"),
    route("GET", f"{R}/issues/comments/:comment_id", get_issue_comment, "issues:read"),
    route("PATCH", f"{R}/issues/comments/:comment_id", edit_issue_comment, "issues:write"),
    route("DELETE", f"{R}/issues/comments/:comment_id", delete_issue_comment, "issues:write"),
    route("GET", f"{R}/issues/:number", get_issue, "issues:read"),
    route("GET", f"{R}/issues/:number/comments", list_issue_comments, "issues:read"),
    route("POST", f"{R}/issues/:number/comments", create_issue_comment, "issues:write"),
    route("GET", f"{R}/issues/:number/labels", list_labels, "issues:read"),
    route("POST", f"{R}/issues/:number/labels", add_labels, "issues:write"),
    route("DELETE", f"{R}/issues/:number/labels/:name", remove_label, "issues:write"),
]

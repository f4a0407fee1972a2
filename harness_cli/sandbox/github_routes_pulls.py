"""GitHub REST handlers for pull requests and their reviews. Review comments, issue comments
and labels are in :mod:`github_routes_comments`.

As on GitHub, a listed pull request lacks ``mergeable``, ``mergeable_state``, ``merged`` and
the counts: only ``GET /pulls/{n}`` has them (a client that needs them pays one call per
pull request, or asks GraphQL).
"""

from __future__ import annotations

from typing import Any

from harness_cli.sandbox import github_git, github_pulls, github_reviews
from harness_cli.sandbox import github_render as render
from harness_cli.sandbox import github_render_items as shapes
from harness_cli.sandbox.github_http import Ctx, Route, error, paginate, route
from harness_cli.sandbox.github_model import PullRequest, Repo, Review, node_id, not_found
from harness_cli.sandbox.gitlab_git import commit_info
from harness_cli.sandbox.httpbase import Response

__all__ = ["ROUTES", "labels_json", "render_pull"]


def labels_json(ctx: Ctx, repo: Repo, names: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "id": abs(hash((repo.id, name))) % 10**9,
            "node_id": node_id("LA", "label", f"{repo.id}:{name}"),
            "url": f"{ctx.urls.repo(repo)}/labels/{name}",
            "name": name,
            "color": "ededed",
            "default": False,
            "description": None,
            "archived_at": None,
            "archived_by": None,
        }
        for name in names
    ]


def render_pull(ctx: Ctx, repo: Repo, pr: PullRequest, *, single: bool) -> dict[str, Any]:
    base_sha = repo.seen_heads.get(pr.base_ref)
    detail = None
    if single:
        mergeable, mergeable_state = github_pulls.mergeability(ctx.state, repo, pr, read=True)
        changed = github_git.compare(repo.bare, base_sha or pr.head_sha, pr.head_sha)
        comments = ctx.state.review_comments
        detail = {
            "merged": pr.merged,
            "mergeable": mergeable,
            "rebaseable": mergeable,
            "mergeable_state": mergeable_state,
            "merged_by": render.user(pr.merged_by, ctx.urls) if pr.merged_by else None,
            "comments": sum(
                1
                for c in ctx.state.issue_comments
                if c.repo_id == repo.id and c.number == pr.number
            ),
            "review_comments": sum(1 for c in comments if c.pr_id == pr.id),
            "maintainer_can_modify": False,
            "commits": len(changed["ahead"]),
            "additions": sum(f.additions for f in changed["files"]),
            "deletions": sum(f.deletions for f in changed["files"]),
            "changed_files": len(changed["files"]),
        }
    return render.pull(
        pr,
        repo,
        ctx.urls,
        base_sha=base_sha,
        labels=labels_json(ctx, repo, pr.labels),
        detail=detail,
    )


def _pull(ctx: Ctx, role: str = "read") -> tuple[Repo, PullRequest]:
    repo = ctx.repo(role)
    return repo, github_pulls.find_pull(ctx.state, repo, ctx.number())


def list_pulls(ctx: Ctx) -> Response:
    repo = ctx.repo()
    items = [p for p in ctx.state.pulls if p.repo_id == repo.id]
    state = ctx.arg("state") or "open"
    if state not in ("open", "closed", "all"):
        raise error(422, "Validation Failed")
    if state != "all":
        items = [p for p in items if p.state == state]
    head = ctx.arg("head")
    if head:
        owner, _, branch = head.rpartition(":")
        items = [p for p in items if p.head_ref == branch and owner in ("", repo.owner.login)]
    base = ctx.arg("base")
    if base:
        items = [p for p in items if p.base_ref == base]
    by_update = ctx.arg("sort") == "updated"
    descending = (ctx.arg("direction") or "desc") == "desc"
    items.sort(
        key=lambda p: (p.updated_at if by_update else p.created_at, p.id), reverse=descending
    )
    return paginate(ctx, items, lambda p: render_pull(ctx, repo, p, single=False))


def get_pull(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx)
    return Response.json(render_pull(ctx, repo, pr, single=True))


def create_pull(ctx: Ctx) -> Response:
    repo = ctx.repo("write")
    pr = github_pulls.create_pull(ctx.state, repo, ctx.user, ctx.body())
    location = f"{ctx.urls.repo(repo)}/pulls/{pr.number}"
    data = render_pull(ctx, repo, pr, single=True)
    return Response.json(data, status=201, headers={"Location": location})


def update_pull(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx, "write")
    github_pulls.update_pull(ctx.state, repo, pr, ctx.user, ctx.body())
    return Response.json(render_pull(ctx, repo, pr, single=True))


def merge_pull(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx, "write")
    body = ctx.body()
    sha = github_pulls.merge_pull(
        ctx.state,
        repo,
        pr,
        ctx.user,
        sha=body.get("sha") or None,
        method=str(body.get("merge_method") or "merge"),
        title=body.get("commit_title"),
        message=body.get("commit_message"),
    )
    return Response.json(
        {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}
    )


def is_merged(ctx: Ctx) -> Response:
    _, pr = _pull(ctx)
    return Response(status=204) if pr.merged else Response.json(error(404, "Not Found").body, 404)


def pull_files(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx)
    base = repo.seen_heads.get(pr.base_ref, pr.head_sha)
    files = github_git.compare(repo.bare, base, pr.head_sha)["files"]
    return paginate(
        ctx, files, lambda f: f.json(ctx.urls.repo(repo), ctx.urls.html(repo), pr.head_sha)
    )


def pull_commits(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx)
    base = repo.seen_heads.get(pr.base_ref, pr.head_sha)
    shas = github_git.compare(repo.bare, base, pr.head_sha)["ahead"]

    def one(sha: str) -> dict[str, Any]:
        info = commit_info(repo.bare, sha)
        assert info is not None
        return render.commit(repo, info, ctx.urls)

    return paginate(ctx, shas, one)


# -- reviews -------------------------------------------------------------------------------
def _review(ctx: Ctx, pr: PullRequest) -> Review:
    for review in ctx.state.reviews:
        if review.pr_id == pr.id and review.id == ctx.number("review_id"):
            return review
    raise not_found()


def list_reviews(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx)
    items = [
        r
        for r in ctx.state.reviews
        if r.pr_id == pr.id and (r.state != "PENDING" or r.user.id == ctx.user.id)
    ]
    return paginate(ctx, items, lambda r: shapes.review(r, pr, repo, ctx.urls))


def get_review(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx)
    return Response.json(shapes.review(_review(ctx, pr), pr, repo, ctx.urls))


def create_review(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx)
    body = ctx.body()
    comments = body.get("comments")
    review = github_reviews.create_review(
        ctx.state,
        repo,
        pr,
        ctx.user,
        body=str(body.get("body") or ""),
        event=body.get("event"),
        commit_id=body.get("commit_id"),
        comments=comments if isinstance(comments, list) else None,
    )
    return Response.json(shapes.review(review, pr, repo, ctx.urls))


def submit_review(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx)
    review = _review(ctx, pr)
    if review.user.id != ctx.user.id:
        raise not_found()
    body = ctx.body()
    github_reviews.submit_review(
        ctx.state, review, str(body.get("event") or ""), str(body.get("body") or "")
    )
    return Response.json(shapes.review(review, pr, repo, ctx.urls))


def dismiss_review(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx, "write")
    review = _review(ctx, pr)
    if review.state not in ("APPROVED", "CHANGES_REQUESTED"):
        raise error(422, "Can not dismiss a commented pull request review")
    review.state = "DISMISSED"
    return Response.json(shapes.review(review, pr, repo, ctx.urls))


def review_comments_of(ctx: Ctx) -> Response:
    repo, pr = _pull(ctx)
    review = _review(ctx, pr)
    items = [c for c in ctx.state.review_comments if c.review_id == review.id]
    return paginate(ctx, items, lambda c: shapes.review_comment(c, pr, repo, ctx.urls))


P = "/repos/:owner/:repo/pulls"
N = f"{P}/:number"
ROUTES: list[Route] = [
    route("GET", P, list_pulls, "pull_requests:read"),
    route("POST", P, create_pull, "pull_requests:write"),
    route("GET", N, get_pull, "pull_requests:read"),
    route("PATCH", N, update_pull, "pull_requests:write"),
    route("PUT", f"{N}/merge", merge_pull, "contents:write"),
    route("GET", f"{N}/merge", is_merged, "pull_requests:read"),
    route("GET", f"{N}/files", pull_files, "pull_requests:read"),
    route("GET", f"{N}/commits", pull_commits, "pull_requests:read"),
    route("GET", f"{N}/reviews", list_reviews, "pull_requests:read"),
    route("POST", f"{N}/reviews", create_review, "pull_requests:write"),
    route("GET", f"{N}/reviews/:review_id", get_review, "pull_requests:read"),
    route("POST", f"{N}/reviews/:review_id/events", submit_review, "pull_requests:write"),
    route("PUT", f"{N}/reviews/:review_id/dismissals", dismiss_review, "pull_requests:write"),
    route("GET", f"{N}/reviews/:review_id/comments", review_comments_of, "pull_requests:read"),
]

"""GitHub REST handlers for check runs and commit statuses (``/commits/{ref}/check-runs``,
``/status``, ``/statuses``). Only GitHub Apps create check runs: a token gets 403, the
control API adds another app's.
"""

from __future__ import annotations

from typing import Any

from harness_cli.sandbox import github_pulls, gitlab_git
from harness_cli.sandbox import github_render as render
from harness_cli.sandbox import github_render_items as shapes
from harness_cli.sandbox.github_checks import checks_for, statuses_for
from harness_cli.sandbox.github_http import Ctx, Route, error, paginate, route
from harness_cli.sandbox.github_model import Repo, not_found, now
from harness_cli.sandbox.github_model_ci import CommitStatus
from harness_cli.sandbox.httpbase import Response

__all__ = ["ROUTES", "pulls_of"]

STATUS_STATES = ("error", "failure", "pending", "success")


def _sha(ctx: Ctx, repo: Repo) -> str:
    sha = gitlab_git.rev_parse(repo.bare, ctx.params["ref"])
    if sha is None:
        raise error(422, f"No commit found for SHA: {ctx.params['ref']}")
    return sha


def pulls_of(ctx: Ctx, repo: Repo, numbers: list[int]) -> list[dict[str, Any]]:
    found = []
    for number in numbers:
        pr = github_pulls.find_pull(ctx.state, repo, number)
        mini = {"id": repo.id, "url": ctx.urls.repo(repo), "name": repo.name}
        found.append(
            {
                "url": f"{ctx.urls.repo(repo)}/pulls/{number}",
                "id": pr.id,
                "number": number,
                "head": {"ref": pr.head_ref, "sha": pr.head_sha, "repo": mini},
                "base": {"ref": pr.base_ref, "sha": repo.seen_heads.get(pr.base_ref), "repo": mini},
            }
        )
    return found


def check_runs_for_ref(ctx: Ctx) -> Response:
    repo = ctx.repo()
    sha = _sha(ctx, repo)
    items = checks_for(ctx.state, repo, sha, latest=(ctx.arg("filter") or "latest") == "latest")
    for name in ("check_name", "status"):
        wanted = ctx.arg(name)
        if wanted:
            attr = "name" if name == "check_name" else "status"
            items = [c for c in items if getattr(c, attr) == wanted]
    pulls = pulls_of(
        ctx,
        repo,
        [
            p.number
            for p in ctx.state.pulls
            if p.repo_id == repo.id and p.head_sha == sha and p.state == "open"
        ],
    )
    return paginate(
        ctx, items, lambda c: shapes.check_run(c, repo, ctx.urls, pulls), key="check_runs"
    )


def get_check_run(ctx: Ctx) -> Response:
    repo = ctx.repo()
    check = ctx.state.check_runs.get(ctx.number("check_id"))
    if check is None or check.repo_id != repo.id:
        raise not_found()
    return Response.json(shapes.check_run(check, repo, ctx.urls, []))


def create_check_run(ctx: Ctx) -> Response:
    ctx.repo("write")
    raise error(403, "You must authenticate via a GitHub App.")


def create_status(ctx: Ctx) -> Response:
    repo = ctx.repo("write")
    sha = gitlab_git.rev_parse(repo.bare, ctx.params["sha"])
    body = ctx.body()
    state = body.get("state")
    if sha is None:
        raise error(422, f"No commit found for SHA: {ctx.params['sha']}")
    if state not in STATUS_STATES:
        raise error(422, "Validation Failed")
    at = now()
    status = CommitStatus(
        id=ctx.state.next_id("status") + 7_000_000,
        repo_id=repo.id,
        sha=sha,
        state=str(state),
        context=str(body.get("context") or "default"),
        description=body.get("description"),
        target_url=body.get("target_url"),
        creator=ctx.user,
        created_at=at,
        updated_at=at,
    )
    ctx.state.statuses.append(status)
    return Response.json(shapes.status(status, repo, ctx.urls), status=201)


def list_statuses(ctx: Ctx) -> Response:
    repo = ctx.repo()
    items = statuses_for(ctx.state, repo, _sha(ctx, repo))
    return paginate(ctx, items, lambda s: shapes.status(s, repo, ctx.urls))


def combined_status(ctx: Ctx) -> Response:
    repo = ctx.repo()
    sha = _sha(ctx, repo)
    latest: dict[str, CommitStatus] = {}
    for status in sorted(statuses_for(ctx.state, repo, sha), key=lambda s: s.id):
        latest[status.context] = status
    states = {s.state for s in latest.values()}
    if states & {"error", "failure"}:
        combined = "failure"
    elif not states or "pending" in states:
        combined = "pending"
    else:
        combined = "success"
    return Response.json(
        {
            "state": combined,
            "statuses": [shapes.status(s, repo, ctx.urls) for s in latest.values()],
            "sha": sha,
            "total_count": len(latest),
            "repository": render.repo(repo, ctx.urls),
            "commit_url": f"{ctx.urls.repo(repo)}/commits/{sha}",
            "url": f"{ctx.urls.repo(repo)}/commits/{sha}/status",
        }
    )


R = "/repos/:owner/:repo"
ROUTES: list[Route] = [
    route("GET", f"{R}/commits/:ref/check-runs", check_runs_for_ref, "checks:read"),
    route("GET", f"{R}/check-runs/:check_id", get_check_run, "checks:read"),
    route("POST", f"{R}/check-runs", create_check_run, "checks:write"),
    route("GET", f"{R}/commits/:ref/status", combined_status, "statuses:read"),
    route("GET", f"{R}/commits/:ref/statuses", list_statuses, "statuses:read"),
    route("POST", f"{R}/statuses/:sha", create_status, "statuses:write"),
]

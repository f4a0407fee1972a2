"""GitLab REST v4 handlers for the instance, projects, branches, commits, pipelines and jobs.
Merge requests, notes and discussions are in :mod:`gitlab_routes_mr`."""

from __future__ import annotations

from typing import Any

from harness_cli.sandbox import gitlab_git
from harness_cli.sandbox.gitlab_http import Ctx, Route, paginate, sort_items
from harness_cli.sandbox.gitlab_model import FINISHED_STATUSES, Pipeline, Project
from harness_cli.sandbox.gitlab_state import ApiError, not_found
from harness_cli.sandbox.httpbase import Response

__all__ = ["ROUTES"]

GITLAB_VERSION = "17.5.0"


def version(ctx: Ctx) -> Response:
    return Response.json({"version": GITLAB_VERSION, "revision": "sandbox", "enterprise": False})


def current_user(ctx: Ctx) -> Response:
    data = ctx.user.json(ctx.base)
    data.update(
        email=f"{ctx.user.username}@sandbox.invalid",
        is_admin=False,
        bot=ctx.user.id == 1,
        can_create_project=True,
    )
    return Response.json(data)


# -- projects ------------------------------------------------------------------------------
def list_projects(ctx: Ctx) -> Response:
    ctx.state.sync_all()
    search = (ctx.arg("search") or "").lower()
    items = [p for p in ctx.state.projects.values() if search in p.path.lower()]
    items.sort(key=lambda p: p.id, reverse=True)
    return paginate(ctx, items, lambda p: p.json(ctx.base))


def get_project(ctx: Ctx) -> Response:
    project = ctx.project()
    level = project.access_level(ctx.user.id)
    data = project.json(ctx.base)
    data["permissions"] = {
        "project_access": {"access_level": level, "notification_level": 3},
        "group_access": None,
    }
    return Response.json(data)


# -- branches and commits ------------------------------------------------------------------
def _commit(project: Project, head: gitlab_git.BranchHead, base: str) -> dict[str, Any]:
    return {
        "id": head.sha,
        "short_id": head.sha[:8],
        "title": head.title,
        "message": head.message,
        "author_name": head.author_name,
        "author_email": head.author_email,
        "authored_date": head.authored_date,
        "committer_name": head.committer_name,
        "committer_email": head.committer_email,
        "committed_date": head.committed_date,
        "created_at": head.committed_date,
        "parent_ids": list(head.parent_ids),
        "web_url": f"{base}/{project.path}/-/commit/{head.sha}",
    }


def _branch(
    project: Project, head: gitlab_git.BranchHead, merged: set[str], base: str
) -> dict[str, Any]:
    return {
        "name": head.name,
        "merged": head.name in merged and head.name != project.default_branch,
        "protected": head.name == project.default_branch,
        "default": head.name == project.default_branch,
        "developers_can_push": False,
        "developers_can_merge": False,
        "can_push": True,
        "web_url": f"{base}/{project.path}/-/tree/{head.name}",
        "commit": _commit(project, head, base),
    }


def _branches(project: Project) -> tuple[list[gitlab_git.BranchHead], set[str]]:
    merged = gitlab_git.merged_branches(project.bare, project.default_branch)
    return gitlab_git.branches(project.bare), merged


def list_branches(ctx: Ctx) -> Response:
    project = ctx.project()
    heads, merged = _branches(project)
    search = (ctx.arg("search") or "").lower()
    items = sorted((h for h in heads if search in h.name.lower()), key=lambda h: h.name)
    return paginate(ctx, items, lambda h: _branch(project, h, merged, ctx.base))


def get_branch(ctx: Ctx) -> Response:
    project = ctx.project()
    heads, merged = _branches(project)
    for head in heads:
        if head.name == ctx.params["branch"]:
            return Response.json(_branch(project, head, merged, ctx.base))
    raise not_found("Branch")


def create_branch(ctx: Ctx) -> Response:
    project = ctx.project()
    name, ref = ctx.arg("branch"), ctx.arg("ref")
    missing = [n for n, v in (("branch", name), ("ref", ref)) if not v]
    if missing or name is None or ref is None:
        raise ApiError(400, {"error": ", ".join(f"{n} is missing" for n in missing)})
    if name in project.seen_heads:
        raise ApiError(400, {"message": "Branch already exists"})
    check = gitlab_git.git(project.bare, "check-ref-format", "--branch", name, ok_codes=(0, 1, 128))
    sha = gitlab_git.rev_parse(project.bare, ref)
    if check.returncode != 0 or sha is None:
        raise ApiError(400, {"message": f"Invalid reference name: {ref}"})
    gitlab_git.git(project.bare, "update-ref", f"refs/heads/{name}", sha, gitlab_git.ZERO_SHA)
    ctx.state.sync(project)
    heads, merged = _branches(project)
    head = next(h for h in heads if h.name == name)
    return Response.json(_branch(project, head, merged, ctx.base), status=201)


def delete_branch(ctx: Ctx) -> Response:
    project = ctx.project()
    name = ctx.params["branch"]
    if name not in project.seen_heads:
        raise not_found("Branch")
    if name == project.default_branch:
        raise ApiError(400, {"message": "Cannot remove HEAD branch"})
    gitlab_git.delete_branch(project.bare, name)
    ctx.state.sync(project)
    return Response(status=204)


def get_commit(ctx: Ctx) -> Response:
    project = ctx.project()
    info = gitlab_git.commit_info(project.bare, ctx.params["sha"])
    if info is None:
        raise not_found("Commit")
    return Response.json(_commit(project, info, ctx.base))


# -- pipelines and jobs --------------------------------------------------------------------
_SCOPES = {
    "running": {"running"},
    "pending": {"pending", "created", "waiting_for_resource", "preparing"},
    "finished": set(FINISHED_STATUSES),
}


def list_pipelines(ctx: Ctx) -> Response:
    project = ctx.project()
    items = ctx.state.project_pipelines(project)
    for name in ("ref", "sha", "status", "source"):
        wanted = ctx.arg(name)
        if wanted:
            items = [p for p in items if getattr(p, name) == wanted]
    scope = ctx.arg("scope")
    if scope in _SCOPES:
        items = [p for p in items if p.status in _SCOPES[scope]]
    after, before = ctx.time_arg("updated_after"), ctx.time_arg("updated_before")
    if after is not None:
        items = [p for p in items if p.updated_at >= after]
    if before is not None:
        items = [p for p in items if p.updated_at <= before]
    keys = {
        "id": lambda p: p.id,
        "status": lambda p: p.status,
        "ref": lambda p: p.ref,
        "updated_at": lambda p: p.updated_at,
        "user_id": lambda p: 1,
    }
    items = sort_items(items, ctx, keys, "id")
    return paginate(ctx, items, lambda p: p.json(project, ctx.base))


def _pipeline(ctx: Ctx) -> tuple[Project, Pipeline]:
    project = ctx.project()
    pipeline = ctx.state.pipelines.get(ctx.int_param("plid"))
    if pipeline is None or pipeline.project_id != project.id:
        raise not_found("Pipeline")
    return project, pipeline


def get_pipeline(ctx: Ctx) -> Response:
    project, pipeline = _pipeline(ctx)
    return Response.json(pipeline.json(project, ctx.base))


def create_pipeline(ctx: Ctx) -> Response:
    project = ctx.project()
    ref = ctx.arg("ref")
    if not ref:
        raise ApiError(400, {"error": "ref is missing"})
    sha = project.seen_heads.get(ref) or gitlab_git.rev_parse(project.bare, ref)
    if sha is None:
        raise ApiError(400, {"message": {"base": ["Reference not found"]}})
    variables = _variables(ctx.args().get("variables"))
    pipeline = ctx.state.create_pipeline(project, sha, ref, "api", variables)
    return Response.json(pipeline.json(project, ctx.base), status=201)


def _variables(raw: object) -> dict[str, str]:
    """``variables: [{"key": …, "value": …, "variable_type": "env_var"}]`` as GitLab takes
    them; a malformed entry is a 400 like GitLab's."""
    if raw in (None, ""):
        return {}
    if not isinstance(raw, list):
        raise ApiError(400, {"error": "variables is invalid"})
    found: dict[str, str] = {}
    for item in raw:
        if not isinstance(item, dict) or not str(item.get("key") or ""):
            raise ApiError(400, {"error": "variables is invalid"})
        found[str(item["key"])] = str(item.get("value") or "")
    return found


def retry_pipeline(ctx: Ctx) -> Response:
    project, pipeline = _pipeline(ctx)
    ctx.state.retry(pipeline)
    return Response.json(pipeline.json(project, ctx.base), status=201)


def cancel_pipeline(ctx: Ctx) -> Response:
    project, pipeline = _pipeline(ctx)
    ctx.state.cancel(pipeline)
    return Response.json(pipeline.json(project, ctx.base), status=201)


def _scoped(ctx: Ctx) -> set[str] | None:
    """Job ``scope``: one status or ``scope[]`` several."""
    scope = ctx.args().get("scope")
    if not scope:
        return None
    return set(scope if isinstance(scope, list) else [scope])


def pipeline_jobs(ctx: Ctx) -> Response:
    project, pipeline = _pipeline(ctx)
    include_retried = (ctx.arg("include_retried") or "").lower() == "true"
    jobs = [j for j in pipeline.jobs if include_retried or not j.retried]
    scope = _scoped(ctx)
    if scope is not None:
        jobs = [j for j in jobs if j.status in scope]
    jobs.sort(key=lambda j: j.id, reverse=True)
    return paginate(ctx, jobs, lambda j: j.json(pipeline, project, ctx.base))


def project_jobs(ctx: Ctx) -> Response:
    project = ctx.project()
    pairs = [(j, p) for p in ctx.state.project_pipelines(project) for j in p.jobs]
    scope = _scoped(ctx)
    if scope is not None:
        pairs = [(j, p) for j, p in pairs if j.status in scope]
    pairs.sort(key=lambda pair: pair[0].id, reverse=True)
    return paginate(ctx, pairs, lambda pair: pair[0].json(pair[1], project, ctx.base))


def get_job(ctx: Ctx) -> Response:
    project = ctx.project()
    job, pipeline = ctx.state.job(project, ctx.int_param("jid"))
    return Response.json(job.json(pipeline, project, ctx.base))


def job_trace(ctx: Ctx) -> Response:
    project = ctx.project()
    job, _ = ctx.state.job(project, ctx.int_param("jid"))
    return Response.text("".join(job.trace))


P = "/projects/:pid"
ROUTES = [
    Route.of("GET", "/version", version),
    Route.of("GET", "/user", current_user),
    Route.of("GET", "/projects", list_projects),
    Route.of("GET", P, get_project),
    Route.of("GET", f"{P}/repository/branches", list_branches),
    Route.of("POST", f"{P}/repository/branches", create_branch),
    Route.of("GET", f"{P}/repository/branches/:branch+", get_branch),
    Route.of("DELETE", f"{P}/repository/branches/:branch+", delete_branch),
    Route.of("GET", f"{P}/repository/commits/:sha", get_commit),
    Route.of("GET", f"{P}/pipelines", list_pipelines),
    Route.of("POST", f"{P}/pipeline", create_pipeline),
    Route.of("GET", f"{P}/pipelines/:plid", get_pipeline),
    Route.of("POST", f"{P}/pipelines/:plid/retry", retry_pipeline),
    Route.of("POST", f"{P}/pipelines/:plid/cancel", cancel_pipeline),
    Route.of("GET", f"{P}/pipelines/:plid/jobs", pipeline_jobs),
    Route.of("GET", f"{P}/jobs", project_jobs),
    Route.of("GET", f"{P}/jobs/:jid", get_job),
    Route.of("GET", f"{P}/jobs/:jid/trace", job_trace),
]

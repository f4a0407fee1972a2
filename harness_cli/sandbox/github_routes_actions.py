"""GitHub REST handlers for Actions: workflows, runs, jobs, logs, dispatch, re-run, cancel
(check runs and statuses are in :mod:`github_routes_checks`).

Logs are downloaded as on GitHub: ``GET …/jobs/{id}/logs`` and ``GET …/runs/{id}/logs``
answer ``302`` to a short-lived URL that needs no token (a plain-text job log; a zip of the
run's job logs); the emulator serves those URLs under ``/_blobs/``.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from harness_cli.sandbox import github_render as render
from harness_cli.sandbox import gitlab_git
from harness_cli.sandbox.github_http import Ctx, Route, error, paginate, route
from harness_cli.sandbox.github_model import Repo, iso, node_id, not_found
from harness_cli.sandbox.github_model_ci import Job, WorkflowRun
from harness_cli.sandbox.github_routes_checks import pulls_of
from harness_cli.sandbox.httpbase import Response

__all__ = ["BLOB_TTL", "ROUTES", "run_json"]

BLOB_TTL = 60.0
"""Seconds a log download URL stays valid (GitHub: "expires after 1 minute")."""
STATUS_STATES = ("error", "failure", "pending", "success")


# -- workflows and runs --------------------------------------------------------------------
def workflow_json(ctx: Ctx, repo: Repo, wf_id: int) -> dict[str, Any]:
    wf = ctx.state.workflows[wf_id]
    return {
        "id": wf.id,
        "node_id": node_id("W", "workflow", wf.id),
        "name": wf.name,
        "path": wf.path,
        "state": wf.state,
        "created_at": iso(wf.created_at),
        "updated_at": iso(wf.created_at),
        "url": f"{ctx.urls.repo(repo)}/actions/workflows/{wf.id}",
        "html_url": f"{ctx.urls.html(repo)}/blob/{repo.default_branch}/{wf.path}",
        "badge_url": f"{ctx.urls.html(repo)}/workflows/{wf.name}/badge.svg",
    }


def run_json(ctx: Ctx, repo: Repo, run: WorkflowRun) -> dict[str, Any]:
    api = f"{ctx.urls.repo(repo)}/actions/runs/{run.id}"
    info = gitlab_git.commit_info(repo.bare, run.head_sha)
    return {
        "id": run.id,
        "name": ctx.state.workflows[run.workflow_id].name,
        "node_id": node_id("WFR", "run", run.id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": run.path,
        "display_title": run.display_title,
        "run_number": run.run_number,
        "event": run.event,
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": run.workflow_id,
        "check_suite_id": run.check_suite_id,
        "check_suite_node_id": node_id("CS", "suite", run.check_suite_id),
        "url": api,
        "html_url": f"{ctx.urls.html(repo)}/actions/runs/{run.id}",
        "pull_requests": pulls_of(ctx, repo, run.pull_numbers),
        "created_at": iso(run.created_at),
        "updated_at": iso(run.updated_at),
        "actor": render.user(run.actor, ctx.urls),
        "triggering_actor": render.user(run.actor, ctx.urls),
        "run_attempt": run.attempt,
        "run_started_at": iso(run.run_started_at or run.created_at),
        "jobs_url": f"{api}/jobs",
        "logs_url": f"{api}/logs",
        "check_suite_url": f"{ctx.urls.repo(repo)}/check-suites/{run.check_suite_id}",
        "artifacts_url": f"{api}/artifacts",
        "cancel_url": f"{api}/cancel",
        "rerun_url": f"{api}/rerun",
        "previous_attempt_url": (f"{api}/attempts/{run.attempt - 1}" if run.attempt > 1 else None),
        "workflow_url": f"{ctx.urls.repo(repo)}/actions/workflows/{run.workflow_id}",
        "head_commit": {
            "id": run.head_sha,
            "tree_id": "",
            "message": info.message if info else "",
            "timestamp": iso(run.created_at),
            "author": {"name": info.author_name, "email": info.author_email} if info else None,
            "committer": {"name": info.committer_name, "email": info.committer_email}
            if info
            else None,
        },
        "repository": render.repo(repo, ctx.urls),
        "head_repository": render.repo(repo, ctx.urls),
    }


def job_json(ctx: Ctx, repo: Repo, run: WorkflowRun, job: Job) -> dict[str, Any]:
    api = f"{ctx.urls.repo(repo)}/actions/jobs/{job.id}"
    return {
        "id": job.id,
        "run_id": run.id,
        "workflow_name": ctx.state.workflows[run.workflow_id].name,
        "head_branch": run.head_branch,
        "run_url": f"{ctx.urls.repo(repo)}/actions/runs/{run.id}",
        "run_attempt": job.attempt,
        "node_id": node_id("CR", "check_run", job.id),
        "head_sha": run.head_sha,
        "url": api,
        "html_url": f"{ctx.urls.html(repo)}/actions/runs/{run.id}/job/{job.id}",
        "status": job.status,
        "conclusion": job.conclusion,
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at or job.created_at),
        "completed_at": iso(job.completed_at),
        "name": job.name,
        "steps": [
            {
                "name": s.name,
                "status": s.status,
                "conclusion": s.conclusion,
                "number": s.number,
                "started_at": iso(s.started_at),
                "completed_at": iso(s.completed_at),
            }
            for s in job.steps
        ],
        "check_run_url": f"{ctx.urls.repo(repo)}/check-runs/{job.check_run_id}",
        "labels": ["ubuntu-latest"],
        "runner_id": 1,
        "runner_name": "sandbox-runner",
        "runner_group_id": 1,
        "runner_group_name": "GitHub Actions",
    }


def list_workflows(ctx: Ctx) -> Response:
    repo = ctx.repo()
    ids = sorted(w.id for w in ctx.state.workflows.values() if w.repo_id == repo.id)
    return paginate(ctx, ids, lambda i: workflow_json(ctx, repo, i), key="workflows")


def get_workflow(ctx: Ctx) -> Response:
    repo = ctx.repo()
    wf = ctx.state.actions.find_workflow(repo, ctx.params["workflow_id"])
    return Response.json(workflow_json(ctx, repo, wf.id))


def dispatch(ctx: Ctx) -> Response:
    repo = ctx.repo("write")
    wf = ctx.state.actions.find_workflow(repo, ctx.params["workflow_id"])
    body = ctx.body()
    ref = body.get("ref")
    if not ref:
        raise error(422, 'Invalid request.\n\n"ref" wasn\'t supplied.')
    inputs = body.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise error(422, "Invalid request.\n\nFor 'properties/inputs', is not an object.")
    run = ctx.state.actions.dispatch(repo, wf, str(ref), inputs, ctx.user)
    if body.get("return_run_details"):
        api = f"{ctx.urls.repo(repo)}/actions/runs/{run.id}"
        html = f"{ctx.urls.html(repo)}/actions/runs/{run.id}"
        return Response.json({"workflow_run_id": run.id, "run_url": api, "html_url": html})
    return Response(status=204)


_RUN_STATES = {"queued", "in_progress", "completed", "requested", "waiting", "pending"}


def list_runs(ctx: Ctx) -> Response:
    repo = ctx.repo()
    items = [r for r in ctx.state.runs.values() if r.repo_id == repo.id]
    if "workflow_id" in ctx.params:
        wf = ctx.state.actions.find_workflow(repo, ctx.params["workflow_id"])
        items = [r for r in items if r.workflow_id == wf.id]
    for name, attr in (("branch", "head_branch"), ("event", "event"), ("head_sha", "head_sha")):
        wanted = ctx.arg(name)
        if wanted:
            items = [r for r in items if getattr(r, attr) == wanted]
    actor = ctx.arg("actor")
    if actor:
        items = [r for r in items if r.actor.login == actor]
    status = ctx.arg("status")
    if status:
        attr = "status" if status in _RUN_STATES else "conclusion"
        items = [r for r in items if getattr(r, attr) == status]
    items.sort(key=lambda r: r.id, reverse=True)
    return paginate(ctx, items, lambda r: run_json(ctx, repo, r), key="workflow_runs")


def _run(ctx: Ctx, role: str = "read") -> tuple[Repo, WorkflowRun]:
    repo = ctx.repo(role)
    run = ctx.state.runs.get(ctx.number("run_id"))
    if run is None or run.repo_id != repo.id:
        raise not_found()
    return repo, run


def get_run(ctx: Ctx) -> Response:
    repo, run = _run(ctx)
    return Response.json(run_json(ctx, repo, run))


def run_jobs(ctx: Ctx) -> Response:
    repo, run = _run(ctx)
    attempt = ctx.params.get("attempt")
    if attempt is not None:
        jobs = [j for j in run.jobs if str(j.attempt) == attempt]
    elif (ctx.arg("filter") or "latest") == "all":
        jobs = list(run.jobs)
    else:
        jobs = run.current_jobs()
    return paginate(ctx, jobs, lambda j: job_json(ctx, repo, run, j), key="jobs")


def _job(ctx: Ctx) -> tuple[Repo, WorkflowRun, Job]:
    repo = ctx.repo()
    for run in ctx.state.runs.values():
        for job in run.jobs:
            if run.repo_id == repo.id and job.id == ctx.number("job_id"):
                return repo, run, job
    raise not_found()


def get_job(ctx: Ctx) -> Response:
    return Response.json(job_json(ctx, *_job(ctx)))


def _blob(ctx: Ctx, kind: str, ident: int, suffix: str) -> Response:
    token = secrets.token_urlsafe(16)
    ctx.state.blobs[token] = (kind, ident, time.time() + BLOB_TTL)
    location = f"{ctx.urls.web}/_blobs/{kind}/{token}{suffix}"
    return Response(status=302, headers={"Location": location})


def job_logs(ctx: Ctx) -> Response:
    _, _, job = _job(ctx)
    return _blob(ctx, "job-logs", job.id, ".txt")


def run_logs(ctx: Ctx) -> Response:
    _, run = _run(ctx)
    if run.status != "completed":
        raise not_found()
    return _blob(ctx, "run-logs", run.id, ".zip")


def rerun(ctx: Ctx) -> Response:
    _, run = _run(ctx, "write")
    ctx.state.actions.rerun(run, failed_only=ctx.req.path.endswith("/rerun-failed-jobs"))
    return Response.json({}, status=201)


def cancel(ctx: Ctx) -> Response:
    _, run = _run(ctx, "write")
    ctx.state.actions.cancel(run)
    return Response.json({}, status=202)


R = "/repos/:owner/:repo"
A = f"{R}/actions"
ROUTES: list[Route] = [
    route("GET", f"{A}/workflows", list_workflows, "actions:read"),
    route("GET", f"{A}/workflows/:workflow_id", get_workflow, "actions:read"),
    route("POST", f"{A}/workflows/:workflow_id/dispatches", dispatch, "actions:write"),
    route("GET", f"{A}/workflows/:workflow_id/runs", list_runs, "actions:read"),
    route("GET", f"{A}/runs", list_runs, "actions:read"),
    route("GET", f"{A}/runs/:run_id", get_run, "actions:read"),
    route("GET", f"{A}/runs/:run_id/jobs", run_jobs, "actions:read"),
    route("GET", f"{A}/runs/:run_id/attempts/:attempt/jobs", run_jobs, "actions:read"),
    route("GET", f"{A}/runs/:run_id/logs", run_logs, "actions:read"),
    route("POST", f"{A}/runs/:run_id/rerun", rerun, "actions:write"),
    route("POST", f"{A}/runs/:run_id/rerun-failed-jobs", rerun, "actions:write"),
    route("POST", f"{A}/runs/:run_id/cancel", cancel, "actions:write"),
    route("GET", f"{A}/jobs/:job_id", get_job, "actions:read"),
    route("GET", f"{A}/jobs/:job_id/logs", job_logs, "actions:read"),
]

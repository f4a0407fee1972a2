"""A GitLab REST v4 emulator that python-gitlab talks to unchanged, backed by real bare git
repositories and a CI runner that runs each project's tests on every pushed sha.

    emu = GitLabEmulator(data_dir=tmp_path)
    emu.start()
    seed_sample_project(emu)                # scenarios.sample_repo
    gl = gitlab.Gitlab(emu.url, private_token="glpat-…")

Clients push with plain git to ``http_url_to_repo`` (a ``file://`` URL of the bare repo). A
watcher thread (and every API request that names a project) notices new branch heads; a new
sha on a branch with an open merge request starts a pipeline.
"""

from __future__ import annotations

import logging
import threading
from http import HTTPStatus
from pathlib import Path
from typing import Any

from harness_cli.sandbox import gitlab_reviews as reviews
from harness_cli.sandbox.gitlab_git import GitError, commit_files
from harness_cli.sandbox.gitlab_http import Ctx, dispatch, rate_limited
from harness_cli.sandbox.gitlab_routes import ROUTES as CORE_ROUTES
from harness_cli.sandbox.gitlab_routes_mr import ROUTES as MR_ROUTES
from harness_cli.sandbox.gitlab_state import ApiError, GitLabState
from harness_cli.sandbox.httpbase import Emulator, Fault, Request, Response

__all__ = ["GitLabEmulator"]

log = logging.getLogger(__name__)

API_PREFIX = "/api/v4"


class GitLabEmulator(Emulator):
    name = "gitlab"

    def __init__(
        self,
        data_dir: Path,
        *,
        ci_timeout: float = 120.0,
        ci_workers: int = 1,
        watch_interval: float = 0.3,
    ) -> None:
        super().__init__()
        self.state = GitLabState(Path(data_dir), ci_timeout=ci_timeout, ci_workers=ci_workers)
        reviews.enable_auto_merge(self.state)
        self.routes = [*CORE_ROUTES, *MR_ROUTES]
        self.watch_interval = watch_interval
        self._watch_stop = threading.Event()
        self._watcher: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        url = super().start(host, port)
        self._watch_stop.clear()
        self._watcher = threading.Thread(target=self._watch, name="gitlab-watch", daemon=True)
        self._watcher.start()
        return url

    def stop(self) -> None:
        self._watch_stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
            self._watcher = None
        self.state.runner.stop()
        super().stop()

    def _watch(self) -> None:
        while not self._watch_stop.wait(self.watch_interval):
            try:
                self.state.sync_all()
            except GitError:
                log.exception("GitLab emulator: reading branch heads failed")

    def wait_for_pipelines(self, timeout: float = 60.0) -> None:
        """Block until no pipeline is created/pending/running (raises TimeoutError)."""
        self.state.wait_idle(timeout)

    # -- HTTP -------------------------------------------------------------------------------
    def route(self, req: Request) -> Response:
        if not req.path.startswith(API_PREFIX + "/"):
            return Response.json({"error": "404 Not Found"}, status=404)
        token = req.headers.get("private-token")
        bearer = req.headers.get("authorization", "")
        if not token and bearer.lower().startswith("bearer "):
            token = bearer[7:].strip()
        user = self.state.authenticate(token)
        if user is None:
            return Response.json({"message": "401 Unauthorized"}, status=401)
        host = req.headers.get("host")
        ctx = Ctx(self.state, req, user, base=f"http://{host}" if host else self.url)
        with self.state.lock:
            return dispatch(self.routes, ctx, req.path[len(API_PREFIX) :])

    def fault_response(self, fault: Fault, req: Request) -> Response:
        """GitLab's error shapes. A 429 carries Retry-After (``fault.seconds``, default 1) and
        the RateLimit-* headers; a fault header with an empty value removes that header, e.g.
        ``{"Retry-After": ""}`` for the variant that only has RateLimit-Reset."""
        if fault.status == 429:
            removed = {k.lower() for k, v in fault.headers.items() if v == ""}
            resp = rate_limited(fault.seconds or 1.0, retry_after="retry-after" not in removed)
        else:
            try:
                phrase = HTTPStatus(fault.status).phrase
            except ValueError:
                phrase = "Error"
            body = fault.body if fault.body is not None else {"message": f"{fault.status} {phrase}"}
            if isinstance(body, str) and body.lstrip().startswith("<"):
                # what a proxy in front of GitLab answers (nginx's 502 page), not GitLab's JSON
                html = {"Content-Type": "text/html"}
                resp = Response.text(body, status=fault.status, headers=html)
            else:
                resp = Response.json(body, status=fault.status)
        for key, value in fault.headers.items():
            for existing in [k for k in resp.headers if k.lower() == key.lower()]:
                del resp.headers[existing]
            if value != "":
                resp.headers[key] = value
        return resp

    # -- control ----------------------------------------------------------------------------
    def control(self, action: str, body: dict[str, Any]) -> Any:
        handler = getattr(self, f"_ctl_{action}", None)
        if handler is None:
            return super().control(action, body)
        if action == "wait_for_pipelines":
            return handler(**body)  # must not hold the lock the CI runner needs
        with self.state.lock:
            return handler(**body)

    def _ctl_create_project(
        self,
        path: str,
        files: dict[str, str],
        ci_command: str | list[str],
        default_branch: str = "main",
        only_allow_merge_if_pipeline_succeeds: bool = True,
        only_allow_merge_if_all_discussions_are_resolved: bool = True,
        protect_default_branch: bool = True,
    ) -> dict[str, Any]:
        project = self.state.create_project(
            path,
            files,
            ci_command,
            default_branch=default_branch,
            only_allow_merge_if_pipeline_succeeds=only_allow_merge_if_pipeline_succeeds,
            only_allow_merge_if_all_discussions_are_resolved=(
                only_allow_merge_if_all_discussions_are_resolved
            ),
            protect_default_branch=protect_default_branch,
        )
        return {
            "id": project.id,
            "path": project.path,
            "default_branch": project.default_branch,
            "bare_repo": str(project.bare),
            "http_url_to_repo": project.bare.resolve().as_uri(),
        }

    def _ctl_set_pipeline_result(
        self, project: str | int, status: str, pipeline_id: int | None = None
    ) -> dict[str, Any]:
        """Force the next pipeline's result (or, with ``pipeline_id``, that pipeline's)."""
        target = self.state.project(project)
        if pipeline_id is None:
            if status not in ("success", "failed", "canceled", "skipped", "running", "pending"):
                raise ValueError(f"unknown pipeline status {status!r}")
            target.forced_results.append(status)
            return {"ok": True, "queued": list(target.forced_results)}
        pipeline = self.state.pipelines.get(int(pipeline_id))
        if pipeline is None or pipeline.project_id != target.id:
            raise ValueError(f"no pipeline {pipeline_id} in {target.path}")
        self.state.force(pipeline, status)
        return {"ok": True, "pipeline_id": pipeline.id, "status": pipeline.status}

    def _ctl_add_note(
        self,
        project: str | int,
        iid: int,
        author: str,
        body: str,
        discussion: bool = True,
        reply_to: str | None = None,
    ) -> dict[str, Any]:
        target = self.state.project(project)
        self.state.sync(target)
        mr = reviews.find_mr(self.state, target, int(iid))
        into = reviews.find_discussion(mr, reply_to) if reply_to else None
        thread, note = self.state.add_note(
            mr, self.state.user(author), body, discussion=discussion, into=into
        )
        return {"note_id": note.id, "discussion_id": thread.id}

    def _ctl_merge(
        self, project: str | int, iid: int, author: str = "alice", force: bool = False
    ) -> dict[str, Any]:
        target = self.state.project(project)
        mr = reviews.find_mr(self.state, target, int(iid))
        try:
            reviews.merge_mr(self.state, target, mr, self.state.user(author), force=force)
        except ApiError as err:
            return {"ok": False, "status": err.status, "error": err.body}
        return {"ok": True, "merge_commit_sha": mr.merge_commit_sha}

    def _ctl_close(self, project: str | int, iid: int, author: str = "alice") -> dict[str, Any]:
        return self._set_state(project, iid, author, "close")

    def _ctl_reopen(self, project: str | int, iid: int, author: str = "alice") -> dict[str, Any]:
        return self._set_state(project, iid, author, "reopen")

    def _set_state(self, project: str | int, iid: int, author: str, event: str) -> dict[str, Any]:
        target = self.state.project(project)
        mr = reviews.find_mr(self.state, target, int(iid))
        reviews.update_mr(self.state, target, mr, self.state.user(author), {"state_event": event})
        return {"ok": True, "state": mr.state}

    def _ctl_commit(
        self,
        project: str | int,
        branch: str,
        files: dict[str, str | None],
        message: str,
        author: str = "alice",
    ) -> dict[str, Any]:
        """A human's push: commit ``files`` on ``branch`` (created from the default branch if
        missing); ``None`` as a file's content deletes it."""
        target = self.state.project(project)
        user = self.state.user(author)
        identity = (user.name, f"{user.username}@sandbox.invalid")
        sha = commit_files(
            target.bare,
            branch,
            files,
            message,
            identity=identity,
            start_point=target.default_branch,
        )
        self.state.sync(target)
        return {"sha": sha}

    def _ctl_set_ci_variables(
        self, project: str | int, variables: dict[str, str]
    ) -> dict[str, Any]:
        """Settings → CI/CD → Variables of a project (what a team sets once: tokens, URLs)."""
        found = self.state.project(project)
        found.ci_variables.update({str(k): str(v) for k, v in variables.items()})
        return {"path": found.path, "keys": sorted(found.ci_variables)}

    def _ctl_add_token(self, token: str, user: str | int) -> dict[str, Any]:
        self.state.revoked.discard(token)
        self.state.tokens[token] = self.state.user(user).id
        return {"ok": True}

    def _ctl_set_access(self, project: str | int, user: str | int, level: int) -> dict[str, Any]:
        """``user``'s access level on ``project`` (0 hides the project from them, <30 may not
        open merge requests), as a group owner would set it."""
        target = self.state.project(project)
        target.access[self.state.user(user).id] = int(level)
        return {"ok": True}

    def _ctl_revoke_token(self, token: str) -> dict[str, Any]:
        self.state.revoked.add(token)
        return {"ok": True}

    def _ctl_rate_limit(
        self, seconds: float = 1.0, times: int = 1, match: str = "", retry_after: bool = True
    ) -> dict[str, Any]:
        headers = {} if retry_after else {"Retry-After": ""}
        fault = Fault(
            kind="status", status=429, seconds=seconds, times=times, match=match, headers=headers
        )
        self.add_fault(fault)
        return {"ok": True}

    def _ctl_wait_for_pipelines(self, timeout: float = 60.0) -> dict[str, Any]:
        self.wait_for_pipelines(timeout)
        return {"ok": True}

    # -- snapshot ---------------------------------------------------------------------------
    def ci_seconds(self) -> float:
        """Wall time the CI jobs ran (real subprocesses): the emulator's share of a demo."""
        with self.lock:
            return sum(
                job.finished_at - job.started_at
                for pipeline in self.state.pipelines.values()
                for job in pipeline.jobs
                if job.started_at is not None and job.finished_at is not None
            )

    def snapshot(self) -> dict[str, Any]:
        with self.state.lock:
            projects = list(self.state.projects.values())
            mrs = []
            for mr in self.state.merge_requests:
                project = self.state.projects[mr.project_id]
                current = reviews.view(self.state, project, mr, single=False)
                mrs.append(
                    {
                        "project": project.path,
                        "iid": mr.iid,
                        "state": mr.state,
                        "source_branch": mr.source_branch,
                        "target_branch": mr.target_branch,
                        "sha": current.sha,
                        "title": mr.title,
                        "description": mr.description,
                        "detailed_merge_status": current.detailed_merge_status,
                        "labels": list(mr.labels),
                        "approved_by": [u.username for u in mr.approved_by],
                        "reviewers": [u.username for u in mr.reviewers],
                        "notes": [
                            {"author": n.author.username, "body": n.body, "system": n.system}
                            for n in mr.notes
                        ],
                    }
                )
            pipelines = [
                {
                    "project": self.state.projects[p.project_id].path,
                    "id": p.id,
                    "sha": p.sha,
                    "ref": p.ref,
                    "status": p.status,
                }
                for p in self.state.pipelines.values()
            ]
            return {
                "projects": [
                    {
                        "id": p.id,
                        "path": p.path,
                        "default_branch": p.default_branch,
                        "bare_repo": str(p.bare),
                    }
                    for p in projects
                ],
                "merge_requests": mrs,
                "pipelines": pipelines,
                "requests": len(self.requests),
            }

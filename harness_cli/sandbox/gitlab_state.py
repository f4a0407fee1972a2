"""The GitLab emulator's state: users and tokens, projects backed by real bare repositories,
the branch-head watcher that turns pushes into pipelines, and the pipeline lifecycle.

Merge requests, notes and merges live in :mod:`gitlab_reviews`; the HTTP layer in
:mod:`gitlab_routes`. Everything here is guarded by one re-entrant lock (``state.lock``);
the CI runner drops it while a job's process runs.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from harness_cli.sandbox import gitlab_git
from harness_cli.sandbox.gitlab_ci import CiRunner
from harness_cli.sandbox.gitlab_model import (
    ACTIVE_STATUSES,
    FINISHED_STATUSES,
    Discussion,
    Job,
    MergeRequest,
    Note,
    Pipeline,
    Project,
    User,
    now_ms,
)
from harness_cli.sandbox.routing import ApiError

__all__ = ["ApiError", "GitLabState", "not_found"]

# The initial commit is dated and signed by a pinned identity so every seeded repository has
# the same history, run after run.
_INITIAL_DATE = "2024-01-01T00:00:00+00:00"
_FORCEABLE = ACTIVE_STATUSES | FINISHED_STATUSES


def not_found(what: str) -> ApiError:
    return ApiError(404, {"message": f"404 {what} Not Found"})


class GitLabState:
    def __init__(self, data_dir: Path, *, ci_timeout: float = 120.0, ci_workers: int = 1) -> None:
        self.data_dir = data_dir
        self.lock = threading.RLock()
        bot = User(1, "harness-bot", "Harness Bot")
        alice = User(2, "alice", "Alice Reviewer")
        bob = User(3, "bob", "Bob Reviewer")
        self.users: dict[int, User] = {u.id: u for u in (bot, alice, bob)}
        self.tokens: dict[str, int] = {}
        self.revoked: set[str] = set()
        self.projects: dict[int, Project] = {}
        self.merge_requests: list[MergeRequest] = []
        self.pipelines: dict[int, Pipeline] = {}
        self.pipeline_hooks: list[Callable[[Pipeline], None]] = []
        self._ids: defaultdict[str, Iterator[int]] = defaultdict(lambda: itertools.count(1))
        self._clean: dict[tuple[str, str], bool] = {}
        self.runner = CiRunner(
            self.lock,
            self._lookup,
            self._finished,
            data_dir / "builds",
            timeout=ci_timeout,
            workers=ci_workers,
        )

    def next_id(self, kind: str) -> int:
        return next(self._ids[kind])

    # -- users and tokens -------------------------------------------------------------------
    def authenticate(self, token: str | None) -> User | None:
        """Any unrevoked token is the bot unless the registry maps it to another user."""
        if not token or token in self.revoked:
            return None
        return self.users[self.tokens.get(token, 1)]

    def user(self, ref: str | int) -> User:
        for user in self.users.values():
            if str(ref) in (str(user.id), user.username):
                return user
        # Not KeyError: the control API reads a KeyError as "unknown action".
        raise ValueError(f"unknown user {ref!r}")

    # -- projects ---------------------------------------------------------------------------
    def create_project(
        self,
        path: str,
        files: dict[str, str],
        ci_command: str | list[str],
        *,
        default_branch: str = "main",
        only_allow_merge_if_pipeline_succeeds: bool = True,
        only_allow_merge_if_all_discussions_are_resolved: bool = True,
        protect_default_branch: bool = True,
    ) -> Project:
        with self.lock:
            if any(p.path == path for p in self.projects.values()):
                raise ValueError(f"project {path} already exists")
            bare = self.data_dir / "repos" / f"{path}.git"
            gitlab_git.init_bare(bare, default_branch, protect=protect_default_branch)
            gitlab_git.commit_files(
                bare, default_branch, dict(files), "Initial commit", date=_INITIAL_DATE
            )
            project = Project(
                id=self.next_id("project"),
                path=path,
                default_branch=default_branch,
                bare=bare,
                ci_command=ci_command,
                only_allow_merge_if_pipeline_succeeds=only_allow_merge_if_pipeline_succeeds,
                only_allow_merge_if_all_discussions_are_resolved=(
                    only_allow_merge_if_all_discussions_are_resolved
                ),
                created_at=now_ms(),
                seen_heads=gitlab_git.heads(bare),
            )
            self.projects[project.id] = project
            return project

    def project(self, ref: str | int) -> Project:
        """A project by numeric id or by (URL-encoded) ``group/name`` path."""
        text = unquote(str(ref))
        with self.lock:
            for project in self.projects.values():
                if text in (str(project.id), project.path):
                    return project
        raise not_found("Project")

    def merges_cleanly(self, project: Project, target_sha: str, source_sha: str) -> bool:
        """Whether the real merge would succeed; cached, since a pair of shas never changes."""
        key = (target_sha, source_sha)
        with self.lock:
            if key not in self._clean:
                self._clean[key] = gitlab_git.merges_cleanly(project.bare, target_sha, source_sha)
            return self._clean[key]

    # -- the branch-head watcher ------------------------------------------------------------
    def sync(self, project: Project) -> None:
        """Compare the bare repo's branch heads with what was last seen; a new sha on a
        branch with an open merge request counts as a push to that merge request."""
        with self.lock:
            current = gitlab_git.heads(project.bare)
            for branch, sha in current.items():
                old = project.seen_heads.get(branch)
                if old == sha:
                    continue
                for mr in self.merge_requests:
                    if (
                        mr.project_id == project.id
                        and mr.state == "opened"
                        and mr.source_branch == branch
                    ):
                        self._pushed(project, mr, old, sha)
            project.seen_heads = current

    def sync_all(self) -> None:
        with self.lock:
            for project in list(self.projects.values()):
                self.sync(project)

    def _pushed(self, project: Project, mr: MergeRequest, old: str | None, sha: str) -> None:
        target = project.seen_heads.get(mr.target_branch)
        lines = gitlab_git.count_commits(project.bare, old, sha, target)
        mr.sha = sha
        mr.updated_at = now_ms()
        if lines:
            noun = "commit" if len(lines) == 1 else "commits"
            listing = "\n".join(f"* {line}" for line in lines)
            body = f"added {len(lines)} {noun}\n\n{listing}"
            self.add_note(mr, self.users[1], body, discussion=False, system=True)
        self.ensure_pipeline(project, sha, mr.source_branch, "push")

    # -- notes ------------------------------------------------------------------------------
    def add_note(
        self,
        mr: MergeRequest,
        author: User,
        body: str,
        *,
        discussion: bool,
        system: bool = False,
        position: dict[str, Any] | None = None,
        into: Discussion | None = None,
    ) -> tuple[Discussion, Note]:
        """A note as its own thread (``discussion``: resolvable, else an individual comment)
        or as a reply ``into`` an existing thread. A reply to an individual comment turns it
        into a resolvable thread, as GitLab's "Reply to comment" does."""
        with self.lock:
            at = now_ms()
            if into is not None and into.individual_note:
                into.individual_note = False
                for note in into.notes:
                    note.resolvable = True
            resolvable = not system and (discussion or position is not None or into is not None)
            note = Note(
                id=self.next_id("note"),
                body=body,
                author=author,
                created_at=at,
                updated_at=at,
                system=system,
                resolvable=resolvable,
                position=position,
            )
            if into is None:
                into = Discussion(secrets.token_hex(20), individual_note=not resolvable)
                mr.discussions.append(into)
            into.notes.append(note)
            # GitLab touches the noteable, so updated_after polling sees new comments.
            mr.updated_at = at
            return into, note

    # -- pipelines --------------------------------------------------------------------------
    def project_pipelines(self, project: Project) -> list[Pipeline]:
        return [p for p in self.pipelines.values() if p.project_id == project.id]

    def head_pipeline(self, project: Project, sha: str | None) -> Pipeline | None:
        matching = [p for p in self.project_pipelines(project) if p.sha == sha]
        return max(matching, key=lambda p: p.id) if matching else None

    def ensure_pipeline(self, project: Project, sha: str, ref: str, source: str) -> Pipeline:
        existing = self.head_pipeline(project, sha)
        return existing or self.create_pipeline(project, sha, ref, source)

    def create_pipeline(
        self,
        project: Project,
        sha: str,
        ref: str,
        source: str,
        variables: dict[str, str] | None = None,
    ) -> Pipeline:
        with self.lock:
            at = now_ms()
            pipeline = Pipeline(
                id=self.next_id("pipeline"),
                iid=project.next_pipeline_iid,
                project_id=project.id,
                sha=sha,
                ref=ref,
                source=source,
                created_at=at,
                updated_at=at,
                variables=dict(variables or {}),
            )
            project.next_pipeline_iid += 1
            self.pipelines[pipeline.id] = pipeline
            self._start_job(project, pipeline)
            return pipeline

    def _start_job(self, project: Project, pipeline: Pipeline) -> None:
        job = Job(
            id=self.next_id("job"),
            pipeline_id=pipeline.id,
            name="test",
            stage="test",
            created_at=now_ms(),
        )
        pipeline.jobs.append(job)
        if project.forced_results:
            self.force(pipeline, project.forced_results.pop(0))
            return
        job.status = pipeline.status = "pending"
        pipeline.finished_at = None
        self.runner.submit(pipeline.id)

    def force(self, pipeline: Pipeline, status: str) -> None:
        """Put a pipeline (and its current job) in ``status`` without running anything."""
        if status not in _FORCEABLE:
            raise ValueError(f"unknown pipeline status {status!r}")
        with self.lock:
            job = pipeline.jobs[-1]
            at = now_ms()
            pipeline.forced = True
            job.status = pipeline.status = status
            pipeline.updated_at = at
            if status in ("running", *FINISHED_STATUSES):
                job.started_at = job.started_at or at
                pipeline.started_at = pipeline.started_at or at
            if status in FINISHED_STATUSES:
                job.finished_at = pipeline.finished_at = at
                job.failure_reason = "script_failure" if status == "failed" else None
                job.trace.append(f"Result forced by the sandbox control API: {status}\n")
                self._finished(pipeline)

    def retry(self, pipeline: Pipeline) -> None:
        with self.lock:
            if pipeline.status in ACTIVE_STATUSES:
                return
            for job in pipeline.jobs:
                job.retried = True
            pipeline.forced = False
            pipeline.updated_at = now_ms()
            self._start_job(self.projects[pipeline.project_id], pipeline)

    def cancel(self, pipeline: Pipeline) -> None:
        with self.lock:
            if pipeline.status not in ACTIVE_STATUSES:
                return
            job = pipeline.jobs[-1]
            at = now_ms()
            job.status = pipeline.status = "canceled"
            job.finished_at = pipeline.finished_at = pipeline.updated_at = at
        self.runner.cancel(job.id)

    def job(self, project: Project, job_id: int) -> tuple[Job, Pipeline]:
        for pipeline in self.project_pipelines(project):
            for job in pipeline.jobs:
                if job.id == job_id:
                    return job, pipeline
        raise not_found("Job")

    def _lookup(self, pipeline_id: int) -> tuple[Pipeline, Project] | None:
        pipeline = self.pipelines.get(pipeline_id)
        if pipeline is None:
            return None
        return pipeline, self.projects[pipeline.project_id]

    def _finished(self, pipeline: Pipeline) -> None:
        for hook in self.pipeline_hooks:
            hook(pipeline)

    def busy(self) -> list[Pipeline]:
        """Pipelines still on their way to a result (forced ones never get there alone)."""
        with self.lock:
            return [
                p for p in self.pipelines.values() if p.status in ACTIVE_STATUSES and not p.forced
            ]

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.sync_all()
            busy = self.busy()
            if not busy:
                return
            if time.monotonic() > deadline:
                ids = ", ".join(f"#{p.id} ({p.status})" for p in busy)
                raise TimeoutError(f"pipelines still running after {timeout}s: {ids}")
            time.sleep(0.05)

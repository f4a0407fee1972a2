"""GitHub Actions in the emulator: the workflows of each repository (its
``.github/workflows/*.yml``), the runs a push, a pull request or a ``workflow_dispatch``
starts, re-runs (all jobs, or the failed ones) as new attempts, cancellation, results forced
through the control API, and the check runs and commit statuses a sha collects.

Each job of a run is also a check run of the ``github-actions`` app on the run's head sha, as
on GitHub, so ``GET /commits/{sha}/check-runs`` shows CI without knowing about Actions.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from harness_cli.sandbox import gitlab_git
from harness_cli.sandbox.github_model import Account, Repo, Token, now
from harness_cli.sandbox.github_model_ci import CheckRun, Job, Step, Workflow, WorkflowRun
from harness_cli.sandbox.github_runner import ActionsRunner
from harness_cli.sandbox.github_workflows import (
    WORKFLOWS_DIR,
    WorkflowError,
    WorkflowSpec,
    parse_workflow,
)
from harness_cli.sandbox.routing import ApiError

if TYPE_CHECKING:
    from harness_cli.sandbox.github_state import GitHubState

__all__ = ["CONCLUSIONS", "Actions"]

CONCLUSIONS = ("success", "failure", "cancelled", "timed_out", "skipped", "neutral")
ACTIONS_APP = "github-actions"
RUN_TOKEN_PERMISSIONS = {
    p: "write" for p in ("contents", "pull_requests", "issues", "checks", "statuses", "actions")
}
"""``permissions: write-all`` for the run's GITHUB_TOKEN (a repository's default setting)."""


class Actions:
    def __init__(self, state: GitHubState, *, timeout: float = 120.0) -> None:
        self.state = state
        self.specs: dict[int, WorkflowSpec] = {}
        self.runner = ActionsRunner(state, self, timeout=timeout)

    # -- workflows --------------------------------------------------------------------------
    def files_at(self, repo: Repo, sha: str) -> dict[str, str]:
        listing = gitlab_git.git(
            repo.bare, "ls-tree", "--name-only", sha, WORKFLOWS_DIR, ok_codes=(0, 128)
        ).stdout.split()
        return {
            path: gitlab_git.git(repo.bare, "show", f"{sha}:{path}").stdout
            for path in listing
            if path.endswith((".yml", ".yaml"))
        }

    def workflow(self, repo: Repo, path: str, name: str) -> Workflow:
        for wf in self.state.workflows.values():
            if wf.repo_id == repo.id and wf.path == path:
                wf.name = name
                return wf
        wf = Workflow(self.state.next_id("workflow") + 7000, repo.id, path, name, now())
        self.state.workflows[wf.id] = wf
        return wf

    def register_workflows(self, repo: Repo) -> None:
        head = repo.seen_heads.get(repo.default_branch)
        if head is None:
            return
        for path, text in self.files_at(repo, head).items():
            try:
                name = parse_workflow(text, path).name
            except WorkflowError:
                name = path
            self.workflow(repo, path, name)

    def find_workflow(self, repo: Repo, ref: str) -> Workflow:
        """By id or by file name (``ci.yml``), as ``/actions/workflows/{workflow_id}``."""
        for wf in self.state.workflows.values():
            if wf.repo_id == repo.id and ref in (str(wf.id), wf.path.rsplit("/", 1)[-1]):
                return wf
        raise ApiError(404, {"message": "Not Found", "status": "404"})

    # -- runs -------------------------------------------------------------------------------
    def on_push(self, repo: Repo, branch: str, sha: str, actor: Account) -> None:
        if branch == repo.default_branch:
            self.register_workflows(repo)
        for path, text in self.files_at(repo, sha).items():
            self._start(repo, path, text, "push", branch, sha, sha, actor, [], branch)

    def on_pull_request(
        self,
        repo: Repo,
        number: int,
        head_ref: str,
        head_sha: str,
        merge_sha: str | None,
        base_ref: str,
        actor: Account,
    ) -> None:
        """``pull_request`` (opened/synchronize/reopened) runs on the test merge commit; a
        conflicting pull request has none, and GitHub starts no run for it."""
        if merge_sha is None:
            return
        for path, text in self.files_at(repo, merge_sha).items():
            self._start(
                repo,
                path,
                text,
                "pull_request",
                head_ref,
                head_sha,
                merge_sha,
                actor,
                [number],
                base_ref,
            )

    def dispatch(
        self, repo: Repo, wf: Workflow, ref: str, given: dict[str, object], actor: Account
    ) -> WorkflowRun:
        sha = gitlab_git.rev_parse(repo.bare, f"refs/heads/{ref}") or gitlab_git.rev_parse(
            repo.bare, ref
        )
        if sha is None:
            raise ApiError(422, {"message": f"No ref found for: {ref}", "status": "422"})
        text = self.files_at(repo, sha).get(wf.path)
        if text is None:
            raise ApiError(404, {"message": "Not Found", "status": "404"})
        try:
            spec = parse_workflow(text, wf.path)
            if "workflow_dispatch" not in spec.on:
                raise WorkflowError("Workflow does not have 'workflow_dispatch' trigger")
            inputs = spec.inputs(dict(given))
        except WorkflowError as exc:
            raise ApiError(422, {"message": str(exc), "status": "422"}) from None
        branch = ref.removeprefix("refs/heads/")
        run = self._create(repo, wf, spec, "workflow_dispatch", branch, sha, sha, actor, [])
        run.inputs = inputs
        self._submit(repo, run)
        return run

    def _start(
        self,
        repo: Repo,
        path: str,
        text: str,
        event: str,
        branch: str,
        head_sha: str,
        checkout_sha: str,
        actor: Account,
        pulls: list[int],
        filter_branch: str,
    ) -> None:
        try:
            spec = parse_workflow(text, path)
        except WorkflowError:
            return  # GitHub shows a failed run without jobs; nothing to run here
        if not spec.triggered_by(event, filter_branch):
            return
        wf = self.workflow(repo, path, spec.name)
        run = self._create(repo, wf, spec, event, branch, head_sha, checkout_sha, actor, pulls)
        self._submit(repo, run)

    def _create(
        self,
        repo: Repo,
        wf: Workflow,
        spec: WorkflowSpec,
        event: str,
        branch: str,
        head_sha: str,
        checkout_sha: str,
        actor: Account,
        pulls: list[int],
    ) -> WorkflowRun:
        at = now()
        info = gitlab_git.commit_info(repo.bare, head_sha)
        run = WorkflowRun(
            id=self.state.next_id("run") + 50000,
            repo_id=repo.id,
            workflow_id=wf.id,
            run_number=repo.next_run_number,
            event=event,
            head_branch=branch,
            head_sha=head_sha,
            actor=actor,
            check_suite_id=self.state.next_id("suite") + 80000,
            created_at=at,
            updated_at=at,
            display_title=info.title if info else spec.name,
            checkout_sha=checkout_sha,
            pull_numbers=list(pulls),
            path=wf.path,
        )
        repo.next_run_number += 1
        self.specs[run.id] = spec
        self.state.runs[run.id] = run
        self._add_jobs(repo, run, [j.key for j in spec.jobs])
        return run

    def _add_jobs(self, repo: Repo, run: WorkflowRun, keys: list[str]) -> None:
        spec = self.specs[run.id]
        at = now()
        for job_spec in spec.jobs:
            if job_spec.key not in keys:
                continue
            check = CheckRun(
                id=self.state.next_id("check") + 20000,
                repo_id=repo.id,
                head_sha=run.head_sha,
                name=job_spec.name,
                suite_id=run.check_suite_id,
                app=ACTIONS_APP,
            )
            self.state.check_runs[check.id] = check
            steps = [Step(n, s.name, s.run) for n, s in enumerate(job_spec.steps, start=1)]
            run.jobs.append(
                Job(
                    id=check.id,  # GitHub's job id is its check run's id
                    run_id=run.id,
                    attempt=run.attempt,
                    key=job_spec.key,
                    name=job_spec.name,
                    steps=steps,
                    check_run_id=check.id,
                    created_at=at,
                )
            )

    def _submit(self, repo: Repo, run: WorkflowRun) -> None:
        run.token = "ghs_" + secrets.token_hex(18)
        self.state.tokens[run.token] = Token(
            run.token,
            self.state.account("github-actions[bot]").id,
            permissions=dict(RUN_TOKEN_PERMISSIONS),
        )
        run.status, run.conclusion, run.forced = "queued", None, False
        if repo.forced_results:
            self.force(run, repo.forced_results.pop(0))
            return
        self.runner.submit(run.id)

    def rerun(self, run: WorkflowRun, *, failed_only: bool) -> None:
        if run.status != "completed":
            raise ApiError(403, {"message": "This workflow is already running", "status": "403"})
        repo = self.state.repos[run.repo_id]
        previous = run.current_jobs()
        redo = [j.key for j in previous if not failed_only or j.conclusion != "success"]
        run.attempt += 1
        run.updated_at = now()
        self._add_jobs(repo, run, redo)
        for old in previous:  # kept results appear in the new attempt as they were
            if old.key not in redo:
                kept = Job(**{**old.__dict__, "id": self.state.next_id("check") + 20000})
                kept.attempt = run.attempt
                run.jobs.append(kept)
        self._submit(repo, run)

    def cancel(self, run: WorkflowRun) -> None:
        if run.status == "completed":
            message = "Cannot cancel a workflow run that is completed."
            raise ApiError(409, {"message": message, "status": "409"})
        for job in run.current_jobs():
            if job.status != "completed":
                self.finish_job(job, "cancelled")
        self.finish_run(run)
        self.runner.cancel(run)

    def force(self, run: WorkflowRun, conclusion: str) -> None:
        """Put ``run`` (and each of its jobs) to ``conclusion`` without running anything;
        ``in_progress`` leaves it running until forced again."""
        if conclusion not in (*CONCLUSIONS, "in_progress"):
            raise ValueError(f"unknown conclusion {conclusion!r}")
        run.forced = True
        for job in run.current_jobs():
            job.log.append(f"Result forced by the sandbox control API: {conclusion}\n")
            if conclusion == "in_progress":
                job.status = "in_progress"
                job.started_at = job.started_at or now()
            else:
                self.finish_job(job, conclusion)
        if conclusion == "in_progress":
            run.status, run.run_started_at = "in_progress", run.run_started_at or now()
            return
        self.finish_run(run)

    def finish_job(self, job: Job, conclusion: str) -> None:
        at = now()
        job.status, job.conclusion = "completed", conclusion
        job.started_at = job.started_at or at
        job.completed_at = at
        check = self.state.check_runs[job.check_run_id]
        check.status, check.conclusion = "completed", conclusion
        check.started_at, check.completed_at = job.started_at, at

    def finish_run(self, run: WorkflowRun) -> None:
        found = {j.conclusion for j in run.current_jobs()}
        for conclusion in ("failure", "timed_out", "cancelled"):
            if conclusion in found:
                break
        else:
            conclusion = "success"
        run.status, run.conclusion, run.updated_at = "completed", conclusion, now()
        token = self.state.tokens.get(run.token)
        if token is not None:
            token.expired = True

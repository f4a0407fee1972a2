"""The GitHub emulator's Actions runner: each run's jobs, in order, each in a throwaway checkout
of the run's sha, each ``run:`` step a real ``bash -eo pipefail`` process with the variables a
GitHub-hosted runner sets; the job log is GitHub's (timestamped lines, ``##[group]``,
``##[error]Process completed with exit code N.``).

The worker pool, checkout and streaming process are :mod:`ci_exec`'s, shared with GitLab's.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from harness_cli.sandbox.ci_exec import WorkerPool, base_env, checkout, run_streaming
from harness_cli.sandbox.github_model import now
from harness_cli.sandbox.github_model_ci import Job, Step, WorkflowRun
from harness_cli.sandbox.github_workflows import JobSpec, StepSpec, substitute
from harness_cli.sandbox.gitlab_git import GitError

if TYPE_CHECKING:
    from harness_cli.sandbox.github_actions import Actions
    from harness_cli.sandbox.github_state import GitHubState

__all__ = ["ActionsRunner", "log_line"]

SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
"""GitHub's default ``run:`` shell on Linux runners."""


def log_line(text: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z"
    return f"{stamp} {text}"


class ActionsRunner:
    def __init__(self, state: GitHubState, actions: Actions, *, timeout: float) -> None:
        self.state = state
        self.actions = actions
        self.timeout = timeout
        self.builds = state.data_dir / "builds"
        self.pool = WorkerPool(state.lock, self._run, name="github-actions", workers=1)
        self.api_url = ""
        """The emulator's API base, for GITHUB_API_URL (set once it listens)."""

    def submit(self, run_id: int) -> None:
        self.builds.mkdir(parents=True, exist_ok=True)
        self.pool.submit(run_id)

    def stop(self) -> None:
        self.pool.stop()

    def cancel(self, run: WorkflowRun) -> None:
        for job in run.jobs:
            self.pool.cancel(job.id)

    def _append(self, job: Job, text: str) -> None:
        with self.state.lock:
            for line in text.splitlines():
                job.log.append(log_line(line) + "\n")

    def _run(self, run_id: int) -> None:
        with self.state.lock:
            run = self.state.runs.get(run_id)
            if run is None or run.status != "queued":
                return  # cancelled, or forced while it waited
            run.status = "in_progress"
            run.run_started_at = run.run_started_at or now()
            jobs = [j for j in run.current_jobs() if j.status == "queued"]
            specs = {j.key: j for j in self.actions.specs[run.id].jobs}
        failed: set[str] = {j.key for j in run.current_jobs() if j.conclusion == "failure"}
        for job in jobs:
            spec = specs[job.key]
            with self.state.lock:
                if run.status == "completed" or run.forced:
                    return
                if any(need in failed for need in spec.needs):
                    self.actions.finish_job(job, "skipped")
                    continue
                job.status, job.started_at = "in_progress", now()
                check = self.state.check_runs[job.check_run_id]
                check.status, check.started_at = "in_progress", job.started_at
            conclusion = self._job(run, job, spec)
            with self.state.lock:
                if job.status == "completed":
                    return  # cancelled while it ran
                self.actions.finish_job(job, conclusion)
                if conclusion != "success":
                    failed.add(job.key)
        with self.state.lock:
            if run.status != "completed" and not run.forced:
                self.actions.finish_run(run)

    def _job(self, run: WorkflowRun, job: Job, spec: JobSpec) -> str:
        repo = self.state.repos[run.repo_id]
        self._append(job, "Requested labels: ubuntu-latest")
        self._append(job, f"Job defined at: {repo.full_name}/{run.path}@{run.head_branch}")
        workdir = Path(tempfile.mkdtemp(prefix=f"job-{job.id}-", dir=self.builds))
        try:
            try:
                checkout(repo.bare, run.checkout_sha or run.head_sha, workdir)
            except GitError as exc:
                self._append(job, f"##[error]checkout failed: {exc}")
                return "failure"
            env = self._env(run, job, workdir)
            context = self._context(run, env)
            limit = self.timeout
            if spec.timeout_minutes is not None:
                limit = min(limit, spec.timeout_minutes * 60)
            result = "success"
            for step, step_spec in zip(job.steps, spec.steps, strict=True):
                result = self._step(job, step, step_spec, workdir, env, context, result, limit)
                if job.status == "completed":
                    return job.conclusion or "cancelled"
            return result
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _step(
        self,
        job: Job,
        step: Step,
        spec: StepSpec,
        workdir: Path,
        env: dict[str, str],
        context: dict[str, str],
        result: str,
        limit: float,
    ) -> str:
        condition = spec.condition.replace("${{", "").replace("}}", "").strip()
        wanted = (
            "always()" in condition
            or ("failure()" in condition and result != "success")
            or ("failure()" not in condition and result == "success")
        )
        step.started_at = now()
        if not wanted:
            step.status, step.conclusion, step.completed_at = "completed", "skipped", now()
            return result
        step.status = "in_progress"
        self._append(job, f"##[group]{step.name}")
        if spec.run is None:
            self._append(job, f"(sandbox runner: {spec.uses} is not fetched; nothing to do)")
            self._append(job, "##[endgroup]")
            step.status, step.conclusion, step.completed_at = "completed", "success", now()
            return result
        script = substitute(spec.run, context)
        self._append(job, script)
        self._append(job, "shell: /usr/bin/bash -e {0}\n##[endgroup]")
        step_env = {**env, **{k: substitute(v, context) for k, v in spec.env.items()}}
        code, timed_out = run_streaming(
            [*SHELL, "-c", script],
            workdir,
            step_env,
            timeout=limit,
            on_output=lambda text: self._append(job, text),
            on_start=lambda proc: self.pool.track(job.id, proc),
        )
        step.completed_at = now()
        step.status = "completed"
        if timed_out:
            minutes = round(limit / 60, 2)
            self._append(
                job, f"##[error]The job has exceeded the maximum execution time of {minutes}m"
            )
            step.conclusion = "cancelled"
            return "timed_out"
        if code != 0:
            self._append(job, f"##[error]Process completed with exit code {code}.")
            step.conclusion = "failure"
            return "failure"
        step.conclusion = "success"
        return result

    def _env(self, run: WorkflowRun, job: Job, workdir: Path) -> dict[str, str]:
        repo = self.state.repos[run.repo_id]
        spec = self.actions.specs[run.id]
        home = self.builds / "home"
        home.mkdir(exist_ok=True)
        server = self.api_url.removesuffix("/api/v3")
        ref = (
            f"refs/pull/{run.pull_numbers[0]}/merge"
            if run.pull_numbers
            else (f"refs/heads/{run.head_branch}")
        )
        env = {
            **base_env(home),
            "GITHUB_ACTIONS": "true",
            "GITHUB_SHA": run.checkout_sha or run.head_sha,
            "GITHUB_REF": ref,
            "GITHUB_REF_NAME": ref.removeprefix("refs/heads/").removeprefix("refs/"),
            "GITHUB_HEAD_REF": run.head_branch if run.pull_numbers else "",
            "GITHUB_EVENT_NAME": run.event,
            "GITHUB_RUN_ID": str(run.id),
            "GITHUB_RUN_NUMBER": str(run.run_number),
            "GITHUB_RUN_ATTEMPT": str(run.attempt),
            "GITHUB_REPOSITORY": repo.full_name,
            "GITHUB_REPOSITORY_OWNER": repo.owner.login,
            "GITHUB_WORKSPACE": str(workdir),
            "GITHUB_JOB": job.key,
            "GITHUB_WORKFLOW": spec.name,
            "GITHUB_ACTOR": run.actor.login,
            "GITHUB_SERVER_URL": server,
            "GITHUB_API_URL": self.api_url,
            "GITHUB_GRAPHQL_URL": server + "/api/graphql",
            "RUNNER_OS": "Linux",
            "RUNNER_TEMP": str(home),
        }
        env.update(spec.env)
        env.update(next(j.env for j in spec.jobs if j.key == job.key))
        return env

    def _context(self, run: WorkflowRun, env: dict[str, str]) -> dict[str, str]:
        repo = self.state.repos[run.repo_id]
        context = {f"inputs.{k}": v for k, v in run.inputs.items()}
        context.update({f"secrets.{k}": v for k, v in repo.secrets.items()})
        context["secrets.GITHUB_TOKEN"] = context["github.token"] = run.token
        context.update({f"vars.{k}": v for k, v in repo.variables.items()})
        context.update({f"env.{k}": v for k, v in env.items()})
        for key, name in (
            ("sha", "GITHUB_SHA"),
            ("ref", "GITHUB_REF"),
            ("ref_name", "GITHUB_REF_NAME"),
            ("head_ref", "GITHUB_HEAD_REF"),
            ("event_name", "GITHUB_EVENT_NAME"),
            ("run_id", "GITHUB_RUN_ID"),
            ("run_number", "GITHUB_RUN_NUMBER"),
            ("run_attempt", "GITHUB_RUN_ATTEMPT"),
            ("repository", "GITHUB_REPOSITORY"),
            ("workspace", "GITHUB_WORKSPACE"),
            ("actor", "GITHUB_ACTOR"),
            ("job", "GITHUB_JOB"),
            ("server_url", "GITHUB_SERVER_URL"),
            ("api_url", "GITHUB_API_URL"),
        ):
            context[f"github.{key}"] = env[name]
        context["runner.os"] = "Linux"
        return context

"""The GitLab emulator's CI runner: each pipeline's one job checks out the exact sha into its
own throwaway clone and runs the project's CI command for real; the job trace is the live
combined stdout/stderr.

The worker pool, the checkout and the streaming process are :mod:`ci_exec`'s, shared with the
GitHub emulator's Actions runner; a pipeline waits in ``pending`` until a worker is free.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness_cli.sandbox.ci_exec import WorkerPool, base_env, checkout, ci_argv, run_streaming
from harness_cli.sandbox.gitlab_git import GitError
from harness_cli.sandbox.gitlab_model import Job, Pipeline, Project, now_ms

__all__ = ["CiRunner", "ci_argv"]

Lookup = Callable[[int], tuple[Pipeline, Project] | None]
Finished = Callable[[Pipeline], None]


@dataclass
class _Work:
    pipeline: Pipeline
    job: Job
    argv: list[str]
    bare: Path
    project_path: str
    variables: dict[str, str]


class CiRunner:
    def __init__(
        self,
        lock: threading.RLock,
        lookup: Lookup,
        on_finished: Finished,
        builds_dir: Path,
        *,
        timeout: float = 120.0,
        workers: int = 1,
    ) -> None:
        self._lock = lock
        self._lookup = lookup
        self._on_finished = on_finished
        self._builds = builds_dir
        self.timeout = timeout
        self._pool = WorkerPool(lock, self._run, name="gitlab-ci", workers=workers)

    def start(self) -> None:
        self._builds.mkdir(parents=True, exist_ok=True)
        self._pool.start()

    def stop(self) -> None:
        """Kill running jobs and end the workers; queued pipelines stay pending."""
        self._pool.stop()

    def submit(self, pipeline_id: int) -> None:
        self._builds.mkdir(parents=True, exist_ok=True)
        self._pool.submit(pipeline_id)

    def cancel(self, job_id: int) -> None:
        self._pool.cancel(job_id)

    # -- worker -----------------------------------------------------------------------------
    def _claim(self, pipeline_id: int) -> _Work | None:
        with self._lock:
            found = self._lookup(pipeline_id)
            if found is None:
                return None
            pipeline, project = found
            job = pipeline.jobs[-1]
            if pipeline.status != "pending" or job.status != "pending":
                return None  # canceled, or forced to a result while it waited
            at = now_ms()
            job.status = pipeline.status = "running"
            job.started_at = at
            pipeline.started_at = pipeline.started_at or at
            pipeline.updated_at = at
            variables = {**project.ci_variables, **pipeline.variables}
            return _Work(
                pipeline, job, ci_argv(project.ci_command), project.bare, project.path, variables
            )

    def _append(self, job: Job, text: str) -> None:
        with self._lock:
            job.trace.append(text)

    def _run(self, pipeline_id: int) -> None:
        work = self._claim(pipeline_id)
        if work is None:
            return
        job, pipeline = work.job, work.pipeline
        self._append(job, "Running with gitlab-sandbox runner (shell executor)\n")
        self._append(job, f"Checking out {pipeline.sha[:8]} as detached HEAD ({pipeline.ref})\n")
        workdir = Path(tempfile.mkdtemp(prefix=f"job-{job.id}-", dir=self._builds))
        try:
            try:
                checkout(work.bare, pipeline.sha, workdir)
            except GitError as exc:
                self._append(job, f"ERROR: checkout failed: {exc}\n")
                self._finish(pipeline, job, "failed", "runner_system_failure")
                return
            self._append(job, f"$ {shlex.join(work.argv)}\n")
            code, timed_out = self._execute(work, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if timed_out:
            self._append(job, f"ERROR: Job failed: execution took longer than {self.timeout}s\n")
            self._finish(pipeline, job, "failed", "job_execution_timeout")
        elif code == 0:
            self._append(job, "Job succeeded\n")
            self._finish(pipeline, job, "success", None)
        elif job.status == "canceled":
            self._append(job, "ERROR: Job failed: canceled\n")
        else:
            self._append(job, f"ERROR: Job failed: exit code {code}\n")
            self._finish(pipeline, job, "failed", "script_failure")

    def _execute(self, work: _Work, workdir: Path) -> tuple[int, bool]:
        home = self._builds / "home"
        home.mkdir(exist_ok=True)
        env = {
            **base_env(home),
            "GITLAB_CI": "true",
            "CI_COMMIT_SHA": work.pipeline.sha,
            "CI_COMMIT_REF_NAME": work.pipeline.ref,
            "CI_PIPELINE_ID": str(work.pipeline.id),
            "CI_JOB_ID": str(work.job.id),
            "CI_JOB_NAME": work.job.name,
            "CI_PROJECT_PATH": work.project_path,
            "CI_PROJECT_DIR": str(workdir),
        }
        env.update(work.variables)  # project CI/CD variables, then the pipeline's
        return run_streaming(
            work.argv,
            workdir,
            env,
            timeout=self.timeout,
            on_output=lambda text: self._append(work.job, text),
            on_start=lambda proc: self._pool.track(work.job.id, proc),
        )

    def _finish(self, pipeline: Pipeline, job: Job, status: str, reason: str | None) -> None:
        with self._lock:
            if job.status == "canceled":
                return
            at = now_ms()
            job.status = pipeline.status = status
            job.failure_reason = reason
            job.finished_at = pipeline.finished_at = pipeline.updated_at = at
            self._on_finished(pipeline)

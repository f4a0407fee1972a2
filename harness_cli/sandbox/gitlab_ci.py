"""The GitLab emulator's CI runner: each pipeline's one job checks out the exact sha into its
own throwaway clone and runs the project's CI command for real; the job trace is the live
combined stdout/stderr.

A fixed pool of worker threads (one by default, this is a 2-core box) takes pipelines in
order, so a pipeline waits in ``pending`` until a runner is free, as on a real instance, and
no two jobs ever share a checkout directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness_cli.sandbox.gitlab_git import GitError, git
from harness_cli.sandbox.gitlab_model import Job, Pipeline, Project, now_ms

__all__ = ["CiRunner", "ci_argv"]

log = logging.getLogger(__name__)

Lookup = Callable[[int], tuple[Pipeline, Project] | None]
Finished = Callable[[Pipeline], None]


def ci_argv(command: str | list[str]) -> list[str]:
    """The argv of a CI command; a leading ``python``/``python3`` becomes this interpreter so
    the job sees the same installed packages (pytest) as the harness."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return argv


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
        self._queue: queue.Queue[int | None] = queue.Queue()
        self._procs: dict[int, subprocess.Popen[str]] = {}
        self._workers = workers
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        with self._lock:
            if self._threads:
                return
            self._builds.mkdir(parents=True, exist_ok=True)
            self._queue = queue.Queue()
            self._threads = [
                threading.Thread(target=self._loop, name=f"gitlab-ci-{n}", daemon=True)
                for n in range(self._workers)
            ]
            for thread in self._threads:
                thread.start()

    def stop(self) -> None:
        """Kill running jobs and end the workers; queued pipelines stay pending."""
        with self._lock:
            threads, self._threads = self._threads, []
            procs = list(self._procs.values())
            # Sentinels go first: queued pipelines are left pending, not run during shutdown.
            stale, self._queue = self._queue, queue.Queue()
        with stale.mutex:
            stale.queue.clear()
        for _ in threads:
            stale.put(None)
        for proc in procs:
            _kill(proc)
        for thread in threads:
            thread.join(timeout=10)

    def submit(self, pipeline_id: int) -> None:
        with self._lock:
            self.start()
            self._queue.put(pipeline_id)

    def cancel(self, job_id: int) -> None:
        with self._lock:
            proc = self._procs.get(job_id)
        if proc is not None:
            _kill(proc)

    # -- worker -----------------------------------------------------------------------------
    def _loop(self) -> None:
        work = self._queue  # a restart gets a fresh queue; this worker keeps its own
        while True:
            pipeline_id = work.get()
            if pipeline_id is None:
                return
            try:
                self._run(pipeline_id)
            except Exception:  # one broken job must not stop the runner; logged in full
                log.exception("CI runner failed on pipeline %s", pipeline_id)

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
        checkout = Path(tempfile.mkdtemp(prefix=f"job-{job.id}-", dir=self._builds))
        try:
            try:
                git(checkout, "clone", "--quiet", "--shared", "--no-checkout", str(work.bare), ".")
                git(checkout, "checkout", "--quiet", "--detach", pipeline.sha)
            except GitError as exc:
                self._append(job, f"ERROR: checkout failed: {exc}\n")
                self._finish(pipeline, job, "failed", "runner_system_failure")
                return
            self._append(job, f"$ {shlex.join(work.argv)}\n")
            code, timed_out = self._execute(work, checkout)
        finally:
            shutil.rmtree(checkout, ignore_errors=True)
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

    def _execute(self, work: _Work, checkout: Path) -> tuple[int, bool]:
        home = self._builds / "home"
        home.mkdir(exist_ok=True)
        env = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "CI": "true",
            "GITLAB_CI": "true",
            "CI_COMMIT_SHA": work.pipeline.sha,
            "CI_COMMIT_REF_NAME": work.pipeline.ref,
            "CI_PIPELINE_ID": str(work.pipeline.id),
            "CI_JOB_ID": str(work.job.id),
            "CI_JOB_NAME": work.job.name,
            "CI_PROJECT_PATH": work.project_path,
            "CI_PROJECT_DIR": str(checkout),
        }
        env.update(work.variables)  # project CI/CD variables, then the pipeline's
        try:
            proc = subprocess.Popen(
                work.argv,
                cwd=checkout,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                start_new_session=True,  # so a timeout kills the whole process group
            )
        except OSError as exc:
            self._append(work.job, f"{exc}\n")
            return 127, False
        timed_out = threading.Event()

        def expire() -> None:
            timed_out.set()
            _kill(proc)

        timer = threading.Timer(self.timeout, expire)
        with self._lock:
            self._procs[work.job.id] = proc
        timer.start()
        try:
            assert proc.stdout is not None
            with proc.stdout:
                for line in proc.stdout:
                    self._append(work.job, line)
            code = proc.wait()
        finally:
            timer.cancel()
            with self._lock:
                self._procs.pop(work.job.id, None)
        return code, timed_out.is_set()

    def _finish(self, pipeline: Pipeline, job: Job, status: str, reason: str | None) -> None:
        with self._lock:
            if job.status == "canceled":
                return
            at = now_ms()
            job.status = pipeline.status = status
            job.failure_reason = reason
            job.finished_at = pipeline.finished_at = pipeline.updated_at = at
            self._on_finished(pipeline)


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)

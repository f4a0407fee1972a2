"""What every sandbox CI runner shares (GitLab's pipelines, GitHub's Actions): a fixed pool of
worker threads taking work in order, a throwaway checkout of the exact sha, and a real process
whose combined output streams into the job's log, killed (its whole group) on timeout or cancel.

A fixed pool (one worker by default, this is a 2-core box) means queued work waits until a
runner is free, as on a real instance, and no two jobs ever share a checkout directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from harness_cli.sandbox.gitlab_git import git

__all__ = ["WorkerPool", "base_env", "checkout", "ci_argv", "kill", "run_streaming"]

log = logging.getLogger(__name__)


def ci_argv(command: str | list[str]) -> list[str]:
    """The argv of a CI command; a leading ``python``/``python3`` becomes this interpreter so
    the job sees the same installed packages (pytest) as the harness."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return argv


def base_env(home: Path) -> dict[str, str]:
    """A job's environment before its CI variables: this interpreter first on PATH, a home of
    its own, nothing else inherited from the emulator's process."""
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "CI": "true",
    }


def checkout(bare: Path, sha: str, into: Path) -> None:
    """``sha`` checked out (detached) in ``into``, sharing the bare repo's objects."""
    git(into, "clone", "--quiet", "--shared", "--no-checkout", str(bare), ".")
    git(into, "checkout", "--quiet", "--detach", sha)


def kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_streaming(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    *,
    timeout: float,
    on_output: Callable[[str], None],
    on_start: Callable[[subprocess.Popen[str] | None], None],
) -> tuple[int, bool]:
    """Run ``argv``, feeding each output line to ``on_output``; ``on_start`` gets the process
    (so a cancel can kill it) and ``None`` once it ended. Returns (exit code, timed out)."""
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,  # so a timeout kills the whole process group
        )
    except OSError as exc:
        on_output(f"{exc}\n")
        return 127, False
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        kill(proc)

    timer = threading.Timer(timeout, expire)
    on_start(proc)
    timer.start()
    try:
        assert proc.stdout is not None
        with proc.stdout:
            for line in proc.stdout:
                on_output(line)
        code = proc.wait()
    finally:
        timer.cancel()
        on_start(None)
    return code, timed_out.is_set()


class WorkerPool:
    """``workers`` threads calling ``run(item_id)`` for each submitted id, in order."""

    def __init__(
        self, lock: threading.RLock, run: Callable[[int], None], *, name: str, workers: int = 1
    ) -> None:
        self._lock = lock
        self._run = run
        self._name = name
        self._workers = workers
        self._queue: queue.Queue[int | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._procs: dict[int, subprocess.Popen[str]] = {}

    def start(self) -> None:
        with self._lock:
            if self._threads:
                return
            self._queue = queue.Queue()
            self._threads = [
                threading.Thread(target=self._loop, name=f"{self._name}-{n}", daemon=True)
                for n in range(self._workers)
            ]
            for thread in self._threads:
                thread.start()

    def stop(self) -> None:
        """Kill running jobs and end the workers; queued work stays where it was."""
        with self._lock:
            threads, self._threads = self._threads, []
            procs = list(self._procs.values())
            # Sentinels go first: queued work is left pending, not run during shutdown.
            stale, self._queue = self._queue, queue.Queue()
        with stale.mutex:
            stale.queue.clear()
        for _ in threads:
            stale.put(None)
        for proc in procs:
            kill(proc)
        for thread in threads:
            thread.join(timeout=10)

    def submit(self, item_id: int) -> None:
        with self._lock:
            self.start()
            self._queue.put(item_id)

    def track(self, job_id: int, proc: subprocess.Popen[str] | None) -> None:
        """Remember (or forget, with ``None``) the process running ``job_id``."""
        with self._lock:
            if proc is None:
                self._procs.pop(job_id, None)
            else:
                self._procs[job_id] = proc

    def cancel(self, job_id: int) -> None:
        with self._lock:
            proc = self._procs.get(job_id)
        if proc is not None:
            kill(proc)

    def _loop(self) -> None:
        work = self._queue  # a restart gets a fresh queue; this worker keeps its own
        while True:
            item_id = work.get()
            if item_id is None:
                return
            try:
                self._run(item_id)
            except Exception:  # one broken job must not stop the runner; logged in full
                log.exception("%s failed on %s", self._name, item_id)

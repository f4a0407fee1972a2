"""Locks, all as files under ``$HARNESS_HOME/locks/`` (cron runs overlap; threads and processes
must both be excluded, so these are OS-level flocks via the ``filelock`` package)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from harness_cli import paths
from harness_cli.errors import LockHeld

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def lock_path(name: str) -> Path:
    return paths.locks_dir() / f"{_UNSAFE.sub('_', name)}.lock"


@contextmanager
def hold(name: str, *, timeout: float = -1, what: str | None = None) -> Iterator[None]:
    """Hold the named lock. ``timeout=0`` tries once (→ LockHeld at once); ``-1`` waits forever."""
    path = lock_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise LockHeld(
            f"{what or name} is locked by another run ({path})",
            hint="skipped; it will be picked up by the next run",
        ) from None
    try:
        yield
    finally:
        lock.release()


def case_lock(case_id: str, *, timeout: float = 30.0) -> AbstractContextManager[None]:
    """The per-case lockfile: two runs that rewrite the same case (e.g. two consolidations) never
    race — the reference's fix for the 14 KB → 587 B TASK.md incident."""
    return hold(f"case-{case_id}", timeout=timeout, what=f"case {case_id}")


def workflow_lock(workflow: str, case_id: str) -> AbstractContextManager[None]:
    """The same workflow on the same case never runs twice at once (exit 3 for the second)."""
    return hold(f"{workflow}-{case_id}", timeout=0, what=f"{workflow} on case {case_id}")

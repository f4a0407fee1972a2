"""The harness's own commits in a worktree: what the agent left uncommitted is committed under
the message the agent proposed (after the style linter passed it) — but only the paths the task
may touch (#21 p2): changes to tracked files, and new files beside tracked ones. A new file
elsewhere, or one whose name says it holds a secret (``.env``, keys, credentials), stays out of
the commit until the operator says otherwise (``outside_task_paths`` names them)."""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from harness_cli.delivery.style import lint_commit_message
from harness_cli.delivery.worktrees import git_for
from harness_cli.errors import PolicyRefused
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.services.git import Git


def head_sha(worktree: Path) -> str:
    return git_for(worktree).head_sha() or ""


log = logging.getLogger("harness.delivery.commit")

SECRET_NAMES = (
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.keystore", "id_rsa*", "id_dsa*",
    "id_ecdsa*", "id_ed25519*", ".netrc", ".npmrc", ".pypirc", ".git-credentials",
    "credentials*", "*.secret", "*.secrets",
)  # fmt: skip
"""New files with these names never go in by themselves, wherever they are."""


def commit_all(worktree: Path, message: str) -> str | None:
    """Stage what the task may touch and commit; None when there was nothing to commit."""
    git = git_for(worktree)
    git.run("add", "-u", "--", ".")  # changes and deletions of tracked files
    new, left_out = _split_new_files(git)
    git.add(new)
    if left_out:
        event(log, "commit_left_out", logging.WARNING, worktree=str(worktree), paths=left_out)
    sha = git.commit(message)
    if sha:
        crash_point("delivery.committed")
    return sha


def outside_task_paths(worktree: Path) -> list[str]:
    """New files the harness did not commit (outside the task's paths, or secret-looking)."""
    return _split_new_files(git_for(worktree))[1]


def _split_new_files(git: Git) -> tuple[list[str], list[str]]:
    raw = git.run("ls-files", "--others", "--exclude-standard", "-z")
    untracked = [p for p in raw.split("\0") if p]
    tracked_dirs = {
        str(PurePosixPath(p).parent) for p in git.run("ls-files", "-z").split("\0") if p
    }
    new: list[str] = []
    left_out: list[str] = []
    for path in untracked:
        pure = PurePosixPath(path)
        secret = any(fnmatch.fnmatch(pure.name, pattern) for pattern in SECRET_NAMES)
        secret = secret or ".ssh" in pure.parts
        (left_out if secret or str(pure.parent) not in tracked_dirs else new).append(path)
    return new, left_out


def styled_message(
    meta: dict[str, Any], resend: Callable[[list[str]], dict[str, Any]], retries: int
) -> str:
    """The agent's ``commit_message`` once the style linter passes it. A violation goes back
    to the agent (``resend`` gets the guard notes and returns its new JSON block), never out;
    after ``retries`` tries nothing is committed."""
    message = str(meta.get("commit_message") or "")
    for _ in range(retries + 1):
        violations = lint_commit_message(message) if message else []
        if message and not violations:
            return message
        problems = "; ".join(v.message for v in violations) or "no commit_message was given"
        meta.update(resend([f"[STYLE] the commit message was sent back: {problems}"]))
        message = str(meta.get("commit_message") or "")
    raise PolicyRefused(
        "the commit message kept breaking the style SOP", hint="nothing was committed or pushed"
    )

"""The harness's own commits in a worktree: what the agent left uncommitted is committed under
the message the agent proposed (after the style linter passed it)."""

from __future__ import annotations

from pathlib import Path

from harness_cli.services.git import Git


def head_sha(worktree: Path) -> str:
    return Git(worktree).head_sha() or ""


def commit_all(worktree: Path, message: str) -> str | None:
    """Stage everything in the worktree and commit; None when there was nothing to commit."""
    git = Git(worktree)
    git.add(None)
    return git.commit(message)

"""The harness's own commits in a worktree: what the agent left uncommitted is committed under
the message the agent proposed (after the style linter passed it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_cli.delivery.style import lint_commit_message
from harness_cli.errors import PolicyRefused
from harness_cli.services.git import Git


def head_sha(worktree: Path) -> str:
    return Git(worktree).head_sha() or ""


def commit_all(worktree: Path, message: str) -> str | None:
    """Stage everything in the worktree and commit; None when there was nothing to commit."""
    git = Git(worktree)
    git.add(None)
    return git.commit(message)


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

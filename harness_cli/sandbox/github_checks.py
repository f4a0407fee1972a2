"""What a commit's checks say, for the GitHub emulator's merge rules and REST answers: its
check runs (the newest per app and name, as ``filter=latest``), its commit statuses (the
newest per context wins), and both folded into one state per name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness_cli.sandbox.github_model import Repo
from harness_cli.sandbox.github_model_ci import CheckRun, CommitStatus

if TYPE_CHECKING:
    from harness_cli.sandbox.github_state import GitHubState

__all__ = ["checks_for", "checks_state", "sha_checks", "statuses_for"]


def checks_for(state: GitHubState, repo: Repo, sha: str, *, latest: bool = True) -> list[CheckRun]:
    runs = [c for c in state.check_runs.values() if c.repo_id == repo.id and c.head_sha == sha]
    if latest:
        newest: dict[tuple[str, str], CheckRun] = {}
        for check in sorted(runs, key=lambda c: c.id):
            newest[(check.app, check.name)] = check
        runs = list(newest.values())
    return sorted(runs, key=lambda c: c.id, reverse=True)


def statuses_for(state: GitHubState, repo: Repo, sha: str) -> list[CommitStatus]:
    found = [s for s in state.statuses if s.repo_id == repo.id and s.sha == sha]
    return sorted(found, key=lambda s: s.id, reverse=True)


def sha_checks(state: GitHubState, repo: Repo, sha: str) -> dict[str, str]:
    return checks_state(checks_for(state, repo, sha), statuses_for(state, repo, sha))


def checks_state(checks: list[CheckRun], statuses: list[CommitStatus]) -> dict[str, str]:
    """Name → success | failure | pending for every check and status context on a sha (the
    newest status per context wins), what branch protection's required checks look at."""
    found: dict[str, str] = {}
    for status in sorted(statuses, key=lambda s: s.id):
        found[status.context] = {"error": "failure"}.get(status.state, status.state)
    for check in checks:
        if check.status != "completed":
            found[check.name] = "pending"
        elif check.conclusion in ("success", "neutral", "skipped"):
            found[check.name] = "success"
        else:
            found[check.name] = "failure"
    return found

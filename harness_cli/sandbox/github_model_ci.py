"""The GitHub emulator's CI records: commit statuses, check runs, and Actions workflows, runs,
jobs and steps (their JSON shapes are in :mod:`github_render_items` and
:mod:`github_routes_actions`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness_cli.sandbox.github_model import Account

__all__ = ["CheckRun", "CommitStatus", "Job", "Step", "Workflow", "WorkflowRun"]


@dataclass
class CommitStatus:
    id: int
    repo_id: int
    sha: str
    state: str  # error | failure | pending | success
    context: str
    description: str | None
    target_url: str | None
    creator: Account
    created_at: float
    updated_at: float


@dataclass
class CheckRun:
    id: int
    repo_id: int
    head_sha: str
    name: str
    suite_id: int
    app: str  # the app's slug: github-actions, or another app a test names
    status: str = "queued"  # queued | in_progress | completed
    conclusion: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    details_url: str | None = None
    external_id: str = ""
    output: dict[str, Any] = field(default_factory=dict)


@dataclass
class Workflow:
    id: int
    repo_id: int
    path: str
    name: str
    created_at: float
    state: str = "active"


@dataclass
class Step:
    number: int
    name: str
    run: str | None  # the shell script of a ``run:`` step; None for ``uses:``
    status: str = "queued"
    conclusion: str | None = None
    started_at: float | None = None
    completed_at: float | None = None


@dataclass
class Job:
    id: int
    run_id: int
    attempt: int
    key: str  # the job's id in the workflow file
    name: str
    steps: list[Step]
    check_run_id: int
    created_at: float
    status: str = "queued"  # queued | in_progress | completed | waiting
    conclusion: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    log: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class WorkflowRun:
    id: int
    repo_id: int
    workflow_id: int
    run_number: int
    event: str
    head_branch: str
    head_sha: str
    actor: Account
    check_suite_id: int
    created_at: float
    updated_at: float
    display_title: str
    status: str = "queued"  # queued | in_progress | completed
    conclusion: str | None = None
    attempt: int = 1
    run_started_at: float | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)
    forced: bool = False
    checkout_sha: str = ""
    """What the jobs check out: the head, or for ``pull_request`` the test merge commit."""
    pull_numbers: list[int] = field(default_factory=list)
    path: str = ""
    token: str = ""
    """The run's ``secrets.GITHUB_TOKEN``, valid until the run completes."""

    def current_jobs(self) -> list[Job]:
        return [j for j in self.jobs if j.attempt == self.attempt]

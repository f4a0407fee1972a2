"""The GitHub emulator's records. Their REST v3 JSON shapes are in :mod:`github_render`.

Ids follow GitHub's spaces: accounts, repositories, pull requests, reviews, review comments,
issue comments, check runs/suites, workflow runs and jobs each have global ids; a pull
request also has a ``number`` per repository, shared with issues. Every record has a GraphQL
``node_id`` (opaque on GitHub; here ``<prefix>_<base64 of kind:id>``, decoded by ``node()``).
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness_cli.sandbox.routing import ApiError

__all__ = [
    "Account",
    "IssueComment",
    "Protection",
    "PullRequest",
    "Repo",
    "Review",
    "ReviewComment",
    "Thread",
    "Token",
    "decode_node",
    "iso",
    "node_id",
    "not_found",
    "now",
    "parse_iso",
]

ROLES = ("none", "read", "triage", "write", "maintain", "admin")
"""Repository roles, weakest first (docs: "Repository roles for an organization")."""


def not_found() -> ApiError:
    return ApiError(404, {"message": "Not Found", "status": "404"})


def now() -> float:
    # GitHub's timestamps have whole seconds; `since` compares against what a client saw.
    return float(int(time.time()))


def iso(at: float | None) -> str | None:
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def node_id(prefix: str, kind: str, ident: int | str) -> str:
    raw = base64.urlsafe_b64encode(f"{kind}:{ident}".encode()).decode().rstrip("=")
    return f"{prefix}_{raw}"


def decode_node(node: str) -> tuple[str, str] | None:
    """(kind, id) of a node id made by :func:`node_id`, or None for anything else."""
    _, _, raw = node.partition("_")
    try:
        text = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    kind, sep, ident = text.partition(":")
    return (kind, ident) if sep else None


@dataclass
class Account:
    id: int
    login: str
    name: str
    type: str = "User"  # User | Organization | Bot


@dataclass
class Token:
    value: str
    user_id: int
    scopes: list[str] | None = None
    """A classic token's OAuth scopes (sent back in ``X-OAuth-Scopes``)."""
    permissions: dict[str, str] | None = None
    """A fine-grained token's repository permissions: contents, pull_requests, issues, checks,
    statuses, actions, workflows, metadata → read | write (missing: no access)."""
    expired: bool = False

    @property
    def fine_grained(self) -> bool:
        return self.permissions is not None


@dataclass
class Protection:
    """Branch protection as GitHub's settings name it."""

    required_checks: list[str] = field(default_factory=list)
    required_approvals: int = 0
    require_conversation_resolution: bool = False
    require_pull_request: bool = True
    allow_force_pushes: bool = False
    allow_deletions: bool = False

    def json(self) -> dict[str, Any]:
        return {
            "required_checks": list(self.required_checks),
            "required_approvals": self.required_approvals,
            "require_conversation_resolution": self.require_conversation_resolution,
            "require_pull_request": self.require_pull_request,
            "allow_force_pushes": self.allow_force_pushes,
            "allow_deletions": self.allow_deletions,
        }


@dataclass
class Repo:
    id: int
    owner: Account
    name: str
    bare: Path
    default_branch: str
    created_at: float
    ci_command: str | list[str] | None = None
    private: bool = True
    pushed_at: float | None = None
    protections: dict[str, Protection] = field(default_factory=dict)
    roles: dict[int, str] = field(default_factory=dict)
    """User id → role; users not listed have ``write`` (collaborators of a team repo)."""
    seen_heads: dict[str, str] = field(default_factory=dict)
    forced_results: list[str] = field(default_factory=list)
    secrets: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)
    delete_branch_on_merge: bool = False
    next_number: int = 1
    next_run_number: int = 1

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"

    def role(self, user_id: int) -> str:
        return self.roles.get(user_id, "write")

    def can(self, user_id: int, role: str) -> bool:
        return ROLES.index(self.role(user_id)) >= ROLES.index(role)


@dataclass
class PullRequest:
    id: int
    number: int
    repo_id: int
    title: str
    body: str
    head_ref: str
    base_ref: str
    user: Account
    draft: bool
    head_sha: str
    created_at: float
    updated_at: float
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    closed_at: float | None = None
    merged_at: float | None = None
    merged_by: Account | None = None
    merge_commit_sha: str | None = None
    """The test merge (refs/pull/N/merge) while open; the real merge commit once merged."""
    mergeable_key: tuple[str, str] | None = None
    """(base sha, head sha) the mergeability was last computed for."""
    mergeable: bool | None = None
    unknown_reads: int = 0
    """Reads left that answer ``mergeable: null`` (GitHub computes it in the background)."""

    @property
    def merged(self) -> bool:
        return self.merged_at is not None


@dataclass
class Review:
    id: int
    pr_id: int
    user: Account
    body: str
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
    commit_id: str
    submitted_at: float | None


@dataclass
class ReviewComment:
    id: int
    pr_id: int
    review_id: int
    thread_id: int
    user: Account
    body: str
    path: str
    line: int | None
    side: str
    commit_id: str
    original_commit_id: str
    diff_hunk: str
    created_at: float
    updated_at: float
    in_reply_to: int | None = None
    start_line: int | None = None


@dataclass
class Thread:
    """A review thread: its first comment and the replies to it (GraphQL's
    ``PullRequestReviewThread``; REST only shows ``in_reply_to_id``)."""

    id: int
    pr_id: int
    path: str
    line: int | None
    comment_ids: list[int] = field(default_factory=list)
    resolved: bool = False
    resolved_by: Account | None = None


@dataclass
class IssueComment:
    id: int
    repo_id: int
    number: int
    user: Account
    body: str
    created_at: float
    updated_at: float

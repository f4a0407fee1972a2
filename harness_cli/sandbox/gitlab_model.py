"""The GitLab emulator's records and their REST v4 JSON shapes.

Field names follow docs.gitlab.com/api (merge_requests, notes, discussions, pipelines, jobs);
python-gitlab needs ``project_id``/``iid`` on a merge request and ``project_id`` on a pipeline
to build its child managers' paths (API-FACTS §2).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "ACTIVE_STATUSES",
    "FINISHED_STATUSES",
    "Discussion",
    "Job",
    "MergeRequest",
    "MergeView",
    "Note",
    "Pipeline",
    "Project",
    "User",
    "iso",
    "now_ms",
    "parse_iso",
]

ACTIVE_STATUSES = frozenset({"created", "waiting_for_resource", "preparing", "pending", "running"})
FINISHED_STATUSES = frozenset({"success", "failed", "canceled", "skipped"})


def now_ms() -> float:
    # Truncated to milliseconds so a timestamp read back from JSON compares equal to the stored
    # one: updated_after is "on or after" and a client passes back what it saw.
    return math.floor(time.time() * 1000) / 1000


def iso(at: float | None) -> str | None:
    if at is None:
        return None
    stamp = datetime.fromtimestamp(at, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> float:
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


@dataclass
class User:
    id: int
    username: str
    name: str

    def json(self, base: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "username": self.username,
            "name": self.name,
            "state": "active",
            "locked": False,
            "avatar_url": None,
            "web_url": f"{base}/{self.username}",
        }


DEVELOPER = 30
"""The lowest access level that may push a branch and open a merge request."""


@dataclass
class Project:
    id: int
    path: str
    default_branch: str
    bare: Path
    ci_command: str | list[str]
    only_allow_merge_if_pipeline_succeeds: bool
    only_allow_merge_if_all_discussions_are_resolved: bool
    created_at: float
    seen_heads: dict[str, str] = field(default_factory=dict)
    forced_results: list[str] = field(default_factory=list)
    next_mr_iid: int = 1
    next_pipeline_iid: int = 1
    ci_variables: dict[str, str] = field(default_factory=dict)
    """Project CI/CD variables (Settings → CI/CD → Variables): every job of the project gets
    them as environment variables, pipeline variables win."""
    access: dict[int, int] = field(default_factory=dict)
    """User id → GitLab access level (10 guest, 20 reporter, 30 developer, 40 maintainer; 0: not
    a member, so the private project is a 404). Users not listed are developers."""

    def access_level(self, user_id: int) -> int:
        return self.access.get(user_id, DEVELOPER)

    def json(self, base: str) -> dict[str, Any]:
        namespace, _, name = self.path.rpartition("/")
        url = self.bare.resolve().as_uri()
        return {
            "id": self.id,
            "name": name,
            "path": name,
            "name_with_namespace": " / ".join(self.path.split("/")),
            "path_with_namespace": self.path,
            "description": "",
            "default_branch": self.default_branch,
            "visibility": "private",
            "archived": False,
            "empty_repo": False,
            "created_at": iso(self.created_at),
            "last_activity_at": iso(self.created_at),
            "web_url": f"{base}/{self.path}",
            "http_url_to_repo": url,
            "ssh_url_to_repo": url,
            "readme_url": f"{base}/{self.path}/-/blob/{self.default_branch}/README.md",
            "namespace": {
                "id": self.id,
                "name": namespace.rpartition("/")[2] or name,
                "path": namespace.rpartition("/")[2] or name,
                "kind": "group" if namespace else "user",
                "full_path": namespace or name,
                "parent_id": None,
                "web_url": f"{base}/{namespace or name}",
            },
            "merge_method": "merge",
            "only_allow_merge_if_pipeline_succeeds": self.only_allow_merge_if_pipeline_succeeds,
            "only_allow_merge_if_all_discussions_are_resolved": (
                self.only_allow_merge_if_all_discussions_are_resolved
            ),
            "remove_source_branch_after_merge": False,
        }


@dataclass
class Note:
    id: int
    body: str
    author: User
    created_at: float
    updated_at: float
    system: bool
    resolvable: bool
    resolved: bool = False
    resolved_by: User | None = None
    resolved_at: float | None = None
    position: dict[str, Any] | None = None

    def json(self, mr: MergeRequest, base: str) -> dict[str, Any]:
        kind = "DiffNote" if self.position else ("DiscussionNote" if self.resolvable else None)
        data: dict[str, Any] = {
            "id": self.id,
            "type": kind,
            "body": self.body,
            "attachment": None,
            "author": self.author.json(base),
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "system": self.system,
            "noteable_id": mr.id,
            "noteable_type": "MergeRequest",
            "noteable_iid": mr.iid,
            "project_id": mr.project_id,
            "resolvable": self.resolvable,
            "resolved": self.resolved,
            "resolved_by": self.resolved_by.json(base) if self.resolved_by else None,
            "resolved_at": iso(self.resolved_at),
            "confidential": False,
            "internal": False,
        }
        if self.position is not None:
            data["position"] = self.position
        return data


@dataclass
class Discussion:
    id: str
    individual_note: bool
    notes: list[Note] = field(default_factory=list)

    @property
    def unresolved(self) -> bool:
        return any(n.resolvable and not n.resolved for n in self.notes)

    def json(self, mr: MergeRequest, base: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "individual_note": self.individual_note,
            "notes": [n.json(mr, base) for n in self.notes],
        }


@dataclass
class MergeView:
    """What a merge request looks like right now, computed from git and CI by the state."""

    sha: str | None
    detailed_merge_status: str
    has_conflicts: bool
    head_pipeline: Pipeline | None
    base_sha: str | None


@dataclass
class MergeRequest:
    id: int
    iid: int
    project_id: int
    title: str
    description: str
    source_branch: str
    target_branch: str
    author: User
    labels: list[str]
    created_at: float
    updated_at: float
    state: str = "opened"
    sha: str | None = None
    merged_at: float | None = None
    merged_by: User | None = None
    closed_at: float | None = None
    closed_by: User | None = None
    merge_commit_sha: str | None = None
    merge_when_pipeline_succeeds: bool = False
    should_remove_source_branch: bool | None = None
    discussions: list[Discussion] = field(default_factory=list)
    approved_by: list[User] = field(default_factory=list)
    """Who approved it (a ``/approve`` quick action is how the harness's text could)."""
    reviewers: list[User] = field(default_factory=list)

    @property
    def notes(self) -> list[Note]:
        return [n for d in self.discussions for n in d.notes]

    @property
    def draft(self) -> bool:
        lowered = self.title.lower()
        return lowered.startswith(("draft:", "[draft]", "(draft)", "wip:", "[wip]"))

    def json(self, project: Project, view: MergeView, base: str, *, single: bool) -> dict[str, Any]:
        web = f"{base}/{project.path}/-/merge_requests/{self.iid}"
        detailed = view.detailed_merge_status
        data: dict[str, Any] = {
            "id": self.id,
            "iid": self.iid,
            "project_id": self.project_id,
            "title": self.title,
            "description": self.description,
            "state": self.state,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "merged_by": self.merged_by.json(base) if self.merged_by else None,
            "merge_user": self.merged_by.json(base) if self.merged_by else None,
            "merged_at": iso(self.merged_at),
            "closed_by": self.closed_by.json(base) if self.closed_by else None,
            "closed_at": iso(self.closed_at),
            "target_branch": self.target_branch,
            "source_branch": self.source_branch,
            "source_project_id": self.project_id,
            "target_project_id": self.project_id,
            "user_notes_count": sum(1 for n in self.notes if not n.system),
            "upvotes": 0,
            "downvotes": 0,
            "author": self.author.json(base),
            "assignees": [],
            "assignee": None,
            "reviewers": [u.json(base) for u in self.reviewers],
            "labels": list(self.labels),
            "draft": self.draft,
            "work_in_progress": self.draft,
            "milestone": None,
            "merge_when_pipeline_succeeds": self.merge_when_pipeline_succeeds,
            "merge_status": "cannot_be_merged" if view.has_conflicts else "can_be_merged",
            "detailed_merge_status": detailed,
            "has_conflicts": view.has_conflicts,
            "blocking_discussions_resolved": not any(d.unresolved for d in self.discussions),
            "sha": view.sha,
            "merge_commit_sha": self.merge_commit_sha,
            "squash_commit_sha": None,
            "squash": False,
            "discussion_locked": None,
            "should_remove_source_branch": self.should_remove_source_branch,
            "force_remove_source_branch": False,
            "reference": f"!{self.iid}",
            "references": {
                "short": f"!{self.iid}",
                "relative": f"!{self.iid}",
                "full": f"{project.path}!{self.iid}",
            },
            "web_url": web,
        }
        if single:
            pipeline = view.head_pipeline
            data["head_pipeline"] = pipeline.json(project, base) if pipeline else None
            data["pipeline"] = pipeline.summary(project, base) if pipeline else None
            data["diff_refs"] = {
                "base_sha": view.base_sha,
                "head_sha": view.sha,
                "start_sha": view.base_sha,
            }
            data["merge_error"] = None
            data["user"] = {"can_merge": True}
        return data


@dataclass
class Job:
    id: int
    pipeline_id: int
    name: str
    stage: str
    created_at: float
    status: str = "created"
    started_at: float | None = None
    finished_at: float | None = None
    trace: list[str] = field(default_factory=list)
    retried: bool = False
    failure_reason: str | None = None

    def json(self, pipeline: Pipeline, project: Project, base: str) -> dict[str, Any]:
        duration = None
        if self.started_at is not None and self.finished_at is not None:
            duration = round(self.finished_at - self.started_at, 3)
        data: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "stage": self.stage,
            "status": self.status,
            "ref": pipeline.ref,
            "tag": False,
            "coverage": None,
            "allow_failure": False,
            "created_at": iso(self.created_at),
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "duration": duration,
            "queued_duration": None,
            "retried": self.retried,
            "commit": {"id": pipeline.sha, "short_id": pipeline.sha[:8]},
            "pipeline": pipeline.summary(project, base),
            "project_id": project.id,
            "web_url": f"{base}/{project.path}/-/jobs/{self.id}",
            "artifacts": [],
            "tag_list": [],
            "runner": None,
        }
        if self.failure_reason:
            data["failure_reason"] = self.failure_reason
        return data


@dataclass
class Pipeline:
    id: int
    iid: int
    project_id: int
    sha: str
    ref: str
    source: str
    created_at: float
    updated_at: float
    status: str = "created"
    started_at: float | None = None
    finished_at: float | None = None
    jobs: list[Job] = field(default_factory=list)
    forced: bool = False
    variables: dict[str, str] = field(default_factory=dict)
    """Pipeline variables given at creation (``POST …/pipeline`` with ``variables``)."""

    def summary(self, project: Project, base: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "iid": self.iid,
            "project_id": self.project_id,
            "sha": self.sha,
            "ref": self.ref,
            "status": self.status,
            "source": self.source,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "web_url": f"{base}/{project.path}/-/pipelines/{self.id}",
        }

    def json(self, project: Project, base: str) -> dict[str, Any]:
        duration = None
        if self.started_at is not None and self.finished_at is not None:
            duration = round(self.finished_at - self.started_at)
        return {
            **self.summary(project, base),
            "before_sha": "0" * 40,
            "tag": False,
            "yaml_errors": None,
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "committed_at": None,
            "duration": duration,
            "queued_duration": None,
            "coverage": None,
            "detailed_status": {
                "icon": f"status_{self.status}",
                "text": self.status,
                "label": self.status,
                "group": self.status,
                "has_details": True,
                "details_path": f"/{project.path}/-/pipelines/{self.id}",
            },
        }

"""Merge requests in the GitLab emulator: create/update, the honest merge status, the real
merge into the bare repo, and discussion resolution.

Error shapes come from GitLab's API code (``handle_merge_request_errors!``): the duplicate
source branch is a 409 whose message is a list; merge refusals are 405 "Method Not Allowed"
and 406 "Branch cannot be merged" (docs.gitlab.com/api/merge_requests, gitlab#364102).
"""

from __future__ import annotations

from typing import Any

from harness_cli.sandbox import gitlab_git
from harness_cli.sandbox.gitlab_model import (
    ACTIVE_STATUSES,
    Discussion,
    MergeRequest,
    MergeView,
    Note,
    Pipeline,
    Project,
    User,
    now_ms,
)
from harness_cli.sandbox.gitlab_state import ApiError, GitLabState, not_found

__all__ = [
    "create_mr",
    "enable_auto_merge",
    "find_discussion",
    "find_mr",
    "find_note",
    "merge_mr",
    "project_mrs",
    "resolve",
    "update_mr",
    "view",
]

_NOT_ALLOWED = ApiError(405, {"message": "405 Method Not Allowed"})


def project_mrs(state: GitLabState, project: Project) -> list[MergeRequest]:
    return [mr for mr in state.merge_requests if mr.project_id == project.id]


def find_mr(state: GitLabState, project: Project, iid: int) -> MergeRequest:
    for mr in project_mrs(state, project):
        if mr.iid == iid:
            return mr
    raise not_found("Merge Request")


def _open_for(state: GitLabState, project: Project, branch: str) -> MergeRequest | None:
    for mr in project_mrs(state, project):
        if mr.state == "opened" and mr.source_branch == branch:
            return mr
    return None


def _duplicate(existing: MergeRequest) -> ApiError:
    # A list, because the API renders errors[:validate_branches] (renovate#17391).
    message = f"Another open merge request already exists for this source branch: !{existing.iid}"
    return ApiError(409, {"message": [message]})


def _labels(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def create_mr(
    state: GitLabState, project: Project, author: User, args: dict[str, Any]
) -> MergeRequest:
    required = ("source_branch", "target_branch", "title")
    missing = [name for name in required if not args.get(name)]
    if missing:
        raise ApiError(400, {"error": ", ".join(f"{name} is missing" for name in missing)})
    source, target = str(args["source_branch"]), str(args["target_branch"])
    with state.lock:
        state.sync(project)
        if source == target:
            message = "You can't use same project/branch for source and target"
            raise ApiError(422, {"message": [message]})
        for branch, label in ((source, "Source"), (target, "Target")):
            if branch not in project.seen_heads:
                raise ApiError(422, {"message": [f'{label} branch "{branch}" does not exist']})
        duplicate = _open_for(state, project, source)
        if duplicate is not None:
            raise _duplicate(duplicate)
        at = now_ms()
        mr = MergeRequest(
            id=state.next_id("merge_request"),
            iid=project.next_mr_iid,
            project_id=project.id,
            title=str(args["title"]),
            description=str(args.get("description") or ""),
            source_branch=source,
            target_branch=target,
            author=author,
            labels=_labels(args.get("labels")),
            created_at=at,
            updated_at=at,
            sha=project.seen_heads[source],
            should_remove_source_branch=_flag(args.get("remove_source_branch")),
        )
        project.next_mr_iid += 1
        state.merge_requests.append(mr)
        state.ensure_pipeline(project, project.seen_heads[source], source, "merge_request_event")
        return mr


def update_mr(
    state: GitLabState, project: Project, mr: MergeRequest, user: User, args: dict[str, Any]
) -> MergeRequest:
    with state.lock:
        state.sync(project)
        for name in ("title", "description", "target_branch"):
            if args.get(name) is not None:
                setattr(mr, name, str(args[name]))
        if args.get("labels") is not None:
            mr.labels = _labels(args["labels"])
        mr.labels += [x for x in _labels(args.get("add_labels")) if x not in mr.labels]
        removed = set(_labels(args.get("remove_labels")))
        mr.labels = [x for x in mr.labels if x not in removed]
        if args.get("remove_source_branch") is not None:
            mr.should_remove_source_branch = _flag(args["remove_source_branch"])
        event = args.get("state_event")
        if event == "close" and mr.state == "opened":
            mr.state, mr.closed_at, mr.closed_by = "closed", now_ms(), user
            mr.merge_when_pipeline_succeeds = False
        elif event == "reopen" and mr.state == "closed":
            duplicate = _open_for(state, project, mr.source_branch)
            if duplicate is not None:
                raise _duplicate(duplicate)
            mr.state, mr.closed_at, mr.closed_by = "opened", None, None
            head = project.seen_heads.get(mr.source_branch)
            if head is not None:
                mr.sha = head
                state.ensure_pipeline(project, head, mr.source_branch, "merge_request_event")
        mr.updated_at = now_ms()
        return mr


def view(state: GitLabState, project: Project, mr: MergeRequest, *, single: bool) -> MergeView:
    """The merge status computed from the repository and CI as they are now."""
    with state.lock:
        heads = project.seen_heads
        sha = heads.get(mr.source_branch, mr.sha) if mr.state == "opened" else mr.sha
        target = heads.get(mr.target_branch)
        conflicts = False
        if mr.state == "opened" and sha and target:
            conflicts = not state.merges_cleanly(project, target, sha)
        pipeline = state.head_pipeline(project, sha)
        base_sha = None
        if single and sha and target:
            proc = gitlab_git.git(project.bare, "merge-base", target, sha, ok_codes=(0, 1))
            base_sha = proc.stdout.strip() or None
        return MergeView(
            sha=sha,
            detailed_merge_status=_detailed(project, mr, sha, target, conflicts, pipeline),
            has_conflicts=conflicts,
            head_pipeline=pipeline,
            base_sha=base_sha,
        )


def _detailed(
    project: Project,
    mr: MergeRequest,
    sha: str | None,
    target: str | None,
    conflicts: bool,
    pipeline: Pipeline | None,
) -> str:
    # The order of GitLab's mergeability checks: open, draft, commits, conflicts,
    # discussions, CI.
    if mr.state != "opened":
        return "not_open"
    if mr.draft:
        return "draft_status"
    if sha is None or target is None:
        return "commits_status"
    if conflicts:
        return "conflict"
    if project.only_allow_merge_if_all_discussions_are_resolved and any(
        d.unresolved for d in mr.discussions
    ):
        return "discussions_not_resolved"
    if project.only_allow_merge_if_pipeline_succeeds:
        if pipeline is None or pipeline.status in ("failed", "canceled", "skipped"):
            return "ci_must_pass"
        if pipeline.status in ACTIVE_STATUSES:
            return "ci_still_running"
    return "mergeable"


def merge_mr(
    state: GitLabState,
    project: Project,
    mr: MergeRequest,
    user: User,
    *,
    sha: str | None = None,
    message: str | None = None,
    remove_source: bool | None = None,
    when_pipeline_succeeds: bool = False,
    force: bool = False,
) -> MergeRequest:
    """Merge for real: a merge commit on the target branch of the bare repository."""
    with state.lock:
        if mr.state != "opened":
            raise _NOT_ALLOWED
        state.sync(project)
        current = view(state, project, mr, single=False)
        if sha is not None and sha != current.sha:
            raise ApiError(
                409, {"message": f"SHA does not match HEAD of source branch: {current.sha}"}
            )
        status = current.detailed_merge_status
        if when_pipeline_succeeds and status == "ci_still_running":
            mr.merge_when_pipeline_succeeds = True
            mr.updated_at = now_ms()
            return mr
        if status == "conflict":
            raise ApiError(406, {"message": "Branch cannot be merged"})
        if status != "mergeable" and not force:
            raise _NOT_ALLOWED
        assert current.sha is not None
        text = message or (
            f"Merge branch '{mr.source_branch}' into '{mr.target_branch}'\n\n{mr.title}\n\n"
            f"See merge request {project.path}!{mr.iid}"
        )
        identity = (user.name, f"{user.username}@sandbox.invalid")
        try:
            merged = gitlab_git.merge_into(
                project.bare, mr.target_branch, current.sha, text, identity=identity
            )
        except gitlab_git.MergeConflict:
            raise ApiError(406, {"message": "Branch cannot be merged"}) from None
        at = now_ms()
        mr.state, mr.merged_at, mr.merged_by, mr.updated_at = "merged", at, user, at
        mr.merge_commit_sha, mr.sha = merged, current.sha
        mr.merge_when_pipeline_succeeds = False
        remove = remove_source if remove_source is not None else mr.should_remove_source_branch
        if remove:
            gitlab_git.delete_branch(project.bare, mr.source_branch)
        state.sync(project)
        return mr


def enable_auto_merge(state: GitLabState) -> None:
    """Merge requests set to "merge when pipeline succeeds" merge when their pipeline does."""

    def on_finished(pipeline: Pipeline) -> None:
        if pipeline.status != "success":
            return
        project = state.projects[pipeline.project_id]
        for mr in project_mrs(state, project):
            if mr.state == "opened" and mr.merge_when_pipeline_succeeds and mr.sha == pipeline.sha:
                try:
                    merge_mr(state, project, mr, mr.author)
                except (ApiError, gitlab_git.GitError):
                    mr.merge_when_pipeline_succeeds = False

    state.pipeline_hooks.append(on_finished)


def find_discussion(mr: MergeRequest, discussion_id: str) -> Discussion:
    for discussion in mr.discussions:
        if discussion.id == discussion_id:
            return discussion
    raise not_found("Discussion")


def find_note(mr: MergeRequest, note_id: int) -> tuple[Discussion, Note]:
    for discussion in mr.discussions:
        for note in discussion.notes:
            if note.id == note_id:
                return discussion, note
    raise not_found("Note")


def resolve(notes: list[Note], user: User, resolved: bool) -> None:
    if not any(n.resolvable for n in notes):
        raise ApiError(400, {"message": "400 Bad request - Note is not resolvable"})
    at = now_ms()
    for note in notes:
        if note.resolvable:
            note.resolved = resolved
            note.resolved_by = user if resolved else None
            note.resolved_at = at if resolved else None
            note.updated_at = at


def _flag(value: Any) -> bool | None:
    if value is None:
        return None
    return str(value).lower() in ("true", "1", "yes")

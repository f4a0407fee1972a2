"""Reviews, review comments (threads and their replies, resolution) and issue comments in the
GitHub emulator, shared by the REST routes, the GraphQL mutations and the control API.

On GitHub a review comment belongs to a review (a lone comment gets a COMMENTED review of its
own); a reply (``in_reply_to``) joins the thread of the comment it answers — replying to a
reply answers the thread's first comment — and a thread is resolved as a whole (GraphQL only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_cli.sandbox import github_git
from harness_cli.sandbox.github_model import (
    Account,
    IssueComment,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    Thread,
    not_found,
    now,
)
from harness_cli.sandbox.routing import ApiError

if TYPE_CHECKING:
    from harness_cli.sandbox.github_state import GitHubState

__all__ = [
    "EVENTS",
    "add_issue_comment",
    "add_review_comment",
    "create_review",
    "find_review_comment",
    "resolve_thread",
    "thread_of",
]

EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}


def _unprocessable(message: str) -> ApiError:
    return ApiError(422, {"message": "Unprocessable Entity", "errors": [message], "status": "422"})


def create_review(
    state: GitHubState,
    repo: Repo,
    pr: PullRequest,
    user: Account,
    *,
    body: str = "",
    event: str | None = None,
    commit_id: str | None = None,
    comments: list[dict[str, Any]] | None = None,
) -> Review:
    """A review; without ``event`` it stays PENDING (its comments hidden until submitted)."""
    if event is not None and event not in EVENTS:
        raise _unprocessable(f"Invalid event {event!r}")
    if event in ("REQUEST_CHANGES", "COMMENT") and not body and not comments:
        raise _unprocessable(f"Review Cannot {event.lower()} with an empty body")
    if event in ("APPROVE", "REQUEST_CHANGES") and user.id == pr.user.id:
        verb = "approve" if event == "APPROVE" else "request changes on"
        raise _unprocessable(f"Can not {verb} your own pull request")
    state_word = EVENTS[event] if event else "PENDING"
    review = Review(
        id=state.next_id("review") + 3_000_000,
        pr_id=pr.id,
        user=user,
        body=body,
        state=state_word,
        commit_id=commit_id or pr.head_sha,
        submitted_at=now() if event else None,
    )
    state.reviews.append(review)
    for item in comments or []:
        add_review_comment(
            state,
            repo,
            pr,
            user,
            body=str(item.get("body") or ""),
            path=str(item.get("path") or ""),
            line=_int(item.get("line") or item.get("position")),
            side=str(item.get("side") or "RIGHT"),
            review=review,
        )
    pr.updated_at = now()
    return review


def submit_review(state: GitHubState, review: Review, event: str, body: str) -> None:
    if review.state != "PENDING":
        raise _unprocessable("Can not submit a review that is not pending")
    if event not in EVENTS:
        raise _unprocessable(f"Invalid event {event!r}")
    review.state, review.submitted_at = EVENTS[event], now()
    review.body = body or review.body


def add_review_comment(
    state: GitHubState,
    repo: Repo,
    pr: PullRequest,
    user: Account,
    *,
    body: str,
    path: str = "",
    line: int | None = None,
    side: str = "RIGHT",
    commit_id: str | None = None,
    in_reply_to: int | None = None,
    review: Review | None = None,
) -> ReviewComment:
    if not body:
        raise _unprocessable("body is missing")
    at = now()
    if in_reply_to is not None:
        parent = find_review_comment(state, in_reply_to)
        if parent.pr_id != pr.id:
            raise not_found()
        thread = state.threads[parent.thread_id]
        root = find_review_comment(state, thread.comment_ids[0])
        path, line, side, in_reply_to = root.path, root.line, root.side, root.id
        original = root.original_commit_id
        hunk = root.diff_hunk
    else:
        if not path:
            raise _unprocessable("path is missing")
        base = repo.seen_heads.get(pr.base_ref, pr.head_sha)
        if github_git.read_path(repo.bare, commit_id or pr.head_sha, path) is None:
            raise _unprocessable("pull_request_review_thread.path diff too large or not found")
        hunk = github_git.diff_hunk(repo.bare, base, commit_id or pr.head_sha, path, line)
        thread = Thread(state.next_id("thread") + 4_000_000, pr.id, path, line)
        state.threads[thread.id] = thread
        original = commit_id or pr.head_sha
    if review is None:  # a lone comment is a COMMENTED review of its own on GitHub
        review = create_review(state, repo, pr, user, body="", event=None)
        review.state, review.submitted_at = "COMMENTED", at
    comment = ReviewComment(
        id=state.next_id("review_comment") + 5_000_000,
        pr_id=pr.id,
        review_id=review.id,
        thread_id=thread.id,
        user=user,
        body=body,
        path=path,
        line=line,
        side=side,
        commit_id=pr.head_sha,
        original_commit_id=original,
        diff_hunk=hunk,
        created_at=at,
        updated_at=at,
        in_reply_to=in_reply_to,
    )
    state.review_comments.append(comment)
    thread.comment_ids.append(comment.id)
    pr.updated_at = at
    return comment


def find_review_comment(state: GitHubState, comment_id: int) -> ReviewComment:
    for comment in state.review_comments:
        if comment.id == comment_id:
            return comment
    raise not_found()


def visible(state: GitHubState, comment: ReviewComment, viewer: Account) -> bool:
    """A pending review's comments are seen by their author only."""
    review = next((r for r in state.reviews if r.id == comment.review_id), None)
    return review is None or review.state != "PENDING" or review.user.id == viewer.id


def thread_of(state: GitHubState, comment: ReviewComment) -> Thread:
    return state.threads[comment.thread_id]


def resolve_thread(thread: Thread, user: Account, resolved: bool) -> None:
    thread.resolved = resolved
    thread.resolved_by = user if resolved else None


def add_issue_comment(
    state: GitHubState, repo: Repo, number: int, user: Account, body: str
) -> IssueComment:
    if not body:
        raise ApiError(
            422,
            {
                "message": "Validation Failed",
                "errors": [{"resource": "IssueComment", "code": "missing_field", "field": "body"}],
                "status": "422",
            },
        )
    at = now()
    comment = IssueComment(
        id=state.next_id("issue_comment") + 6_000_000,
        repo_id=repo.id,
        number=number,
        user=user,
        body=body,
        created_at=at,
        updated_at=at,
    )
    state.issue_comments.append(comment)
    for pr in state.pulls:
        if pr.repo_id == repo.id and pr.number == number:
            pr.updated_at = at  # a comment touches the pull request, as on GitHub
    return comment


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None

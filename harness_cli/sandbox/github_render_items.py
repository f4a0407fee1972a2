"""REST v3 JSON shapes of reviews, review comments, issue comments, commit statuses and check
runs in the GitHub emulator (users, repositories, commits and pull requests are in
:mod:`github_render`)."""

from __future__ import annotations

from typing import Any

from harness_cli.sandbox.github_model import (
    Account,
    IssueComment,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    iso,
    node_id,
)
from harness_cli.sandbox.github_model_ci import CheckRun, CommitStatus
from harness_cli.sandbox.github_render import Urls, user

__all__ = ["app", "check_run", "issue_comment", "review", "review_comment", "status"]


def review(item: Review, pr: PullRequest, repo_: Repo, urls: Urls) -> dict[str, Any]:
    api = f"{urls.repo(repo_)}/pulls/{pr.number}"
    html = f"{urls.html(repo_)}/pull/{pr.number}#pullrequestreview-{item.id}"
    data = {
        "id": item.id,
        "node_id": node_id("PRR", "review", item.id),
        "user": user(item.user, urls),
        "body": item.body,
        "state": item.state,
        "html_url": html,
        "pull_request_url": api,
        "author_association": "MEMBER",
        "_links": {"html": {"href": html}, "pull_request": {"href": api}},
        "commit_id": item.commit_id,
    }
    if item.submitted_at is not None:
        data["submitted_at"] = iso(item.submitted_at)
    return data


def review_comment(item: ReviewComment, pr: PullRequest, repo_: Repo, urls: Urls) -> dict[str, Any]:
    api = f"{urls.repo(repo_)}/pulls/comments/{item.id}"
    html = f"{urls.html(repo_)}/pull/{pr.number}#discussion_r{item.id}"
    pr_api = f"{urls.repo(repo_)}/pulls/{pr.number}"
    data: dict[str, Any] = {
        "url": api,
        "pull_request_review_id": item.review_id,
        "id": item.id,
        "node_id": node_id("PRRC", "review_comment", item.id),
        "diff_hunk": item.diff_hunk,
        "path": item.path,
        "position": item.line,
        "original_position": item.line,
        "commit_id": item.commit_id,
        "original_commit_id": item.original_commit_id,
        "user": user(item.user, urls),
        "body": item.body,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "html_url": html,
        "pull_request_url": pr_api,
        "author_association": "MEMBER",
        "_links": {"self": {"href": api}, "html": {"href": html}, "pull_request": {"href": pr_api}},
        "start_line": item.start_line,
        "original_start_line": item.start_line,
        "start_side": None,
        "line": item.line,
        "original_line": item.line,
        "side": item.side,
        "subject_type": "line" if item.line is not None else "file",
    }
    if item.in_reply_to is not None:
        data["in_reply_to_id"] = item.in_reply_to
    return data


def issue_comment(item: IssueComment, repo_: Repo, urls: Urls) -> dict[str, Any]:
    issue = f"{urls.repo(repo_)}/issues/{item.number}"
    return {
        "id": item.id,
        "node_id": node_id("IC", "issue_comment", item.id),
        "url": f"{urls.repo(repo_)}/issues/comments/{item.id}",
        "html_url": f"{urls.html(repo_)}/pull/{item.number}#issuecomment-{item.id}",
        "body": item.body,
        "user": user(item.user, urls),
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "issue_url": issue,
        "author_association": "MEMBER",
        "performed_via_github_app": None,
    }


def status(item: CommitStatus, repo_: Repo, urls: Urls) -> dict[str, Any]:
    return {
        "url": f"{urls.repo(repo_)}/statuses/{item.sha}",
        "avatar_url": None,
        "id": item.id,
        "node_id": node_id("SC", "status", item.id),
        "state": item.state,
        "description": item.description,
        "target_url": item.target_url,
        "context": item.context,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "creator": user(item.creator, urls),
    }


def app(slug: str, urls: Urls) -> dict[str, Any]:
    return {
        "id": 15368 if slug == "github-actions" else 90000 + len(slug),
        "slug": slug,
        "node_id": node_id("A", "app", slug),
        "name": "GitHub Actions" if slug == "github-actions" else slug,
        "owner": user(Account(9919, "github", "GitHub", type="Organization"), urls),
        "description": "",
        "external_url": f"{urls.web}/apps/{slug}",
        "html_url": f"{urls.web}/apps/{slug}",
        "created_at": "2018-07-30T09:30:17Z",
        "updated_at": "2024-01-01T00:00:00Z",
        "permissions": {},
        "events": [],
    }


def check_run(item: CheckRun, repo_: Repo, urls: Urls, pulls: list[Any]) -> dict[str, Any]:
    api = f"{urls.repo(repo_)}/check-runs/{item.id}"
    html = item.details_url or f"{urls.html(repo_)}/runs/{item.id}"
    output = {
        "title": None,
        "summary": None,
        "text": None,
        "annotations_count": 0,
        "annotations_url": f"{api}/annotations",
        **item.output,
    }
    return {
        "id": item.id,
        "head_sha": item.head_sha,
        "node_id": node_id("CR", "check_run", item.id),
        "external_id": item.external_id,
        "url": api,
        "html_url": html,
        "details_url": html,
        "status": item.status,
        "conclusion": item.conclusion,
        "started_at": iso(item.started_at),
        "completed_at": iso(item.completed_at),
        "output": output,
        "name": item.name,
        "check_suite": {"id": item.suite_id},
        "app": app(item.app, urls),
        "pull_requests": pulls,
    }

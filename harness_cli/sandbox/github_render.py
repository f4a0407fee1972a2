"""REST v3 JSON shapes of the GitHub emulator's records, with the fields GitHub returns (docs
examples of "Get a repository", "Get a pull request", …) so a client's models parse them and
never need a second request to complete a nested object.

Every URL is built from the request's host: PyGithub refuses to follow a URL on another
host, and a Link header must lead back to the emulator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness_cli.sandbox.github_model import (
    Account,
    PullRequest,
    Repo,
    iso,
    node_id,
    parse_iso,
)
from harness_cli.sandbox.gitlab_git import BranchHead

__all__ = ["Urls"]


@dataclass(frozen=True)
class Urls:
    web: str  # http://host:port
    api: str  # http://host:port/api/v3 (GitHub Enterprise Server's layout)

    def repo(self, repo: Repo) -> str:
        return f"{self.api}/repos/{repo.full_name}"

    def html(self, repo: Repo) -> str:
        return f"{self.web}/{repo.full_name}"


def user(account: Account, urls: Urls) -> dict[str, Any]:
    api = f"{urls.api}/users/{account.login}"
    return {
        "login": account.login,
        "id": account.id,
        "node_id": node_id("U" if account.type != "Organization" else "O", "user", account.id),
        "avatar_url": f"{urls.web}/avatars/{account.login}",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{urls.web}/{account.login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": account.type,
        "user_view_type": "public",
        "site_admin": False,
    }


def private_user(account: Account, urls: Urls) -> dict[str, Any]:
    """``GET /user``: the caller's own account, with the private fields."""
    return {
        **user(account, urls),
        "name": account.name,
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "twitter_username": None,
        "public_repos": 0,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": "2024-01-01T00:00:00Z",
        "updated_at": "2024-01-01T00:00:00Z",
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "disk_usage": 0,
        "collaborators": 0,
        "two_factor_authentication": True,
    }


def repo(item: Repo, urls: Urls, viewer: Account | None = None) -> dict[str, Any]:
    api, html = urls.repo(item), urls.html(item)
    data: dict[str, Any] = {
        "id": item.id,
        "node_id": node_id("R", "repo", item.id),
        "name": item.name,
        "full_name": item.full_name,
        "private": item.private,
        "owner": user(item.owner, urls),
        "html_url": html,
        "description": None,
        "fork": False,
        "url": api,
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        **{
            f"{key}_url": f"{api}/{path}"
            for key, path in (
                ("assignees", "assignees{/user}"),
                ("blobs", "git/blobs{/sha}"),
                ("collaborators", "collaborators{/collaborator}"),
                ("contributors", "contributors"),
                ("deployments", "deployments"),
                ("downloads", "downloads"),
                ("events", "events"),
                ("forks", "forks"),
                ("git_commits", "git/commits{/sha}"),
                ("git_tags", "git/tags{/sha}"),
                ("hooks", "hooks"),
                ("issue_events", "issues/events{/number}"),
                ("keys", "keys{/key_id}"),
                ("labels", "labels{/name}"),
                ("languages", "languages"),
                ("merges", "merges"),
                ("milestones", "milestones{/number}"),
                ("notifications", "notifications{?since,all,participating}"),
                ("releases", "releases{/id}"),
                ("stargazers", "stargazers"),
                ("subscribers", "subscribers"),
                ("subscription", "subscription"),
                ("tags", "tags"),
                ("teams", "teams"),
                ("trees", "git/trees{/sha}"),
            )
        },
        "branches_url": f"{api}/branches{{/branch}}",
        "comments_url": f"{api}/comments{{/number}}",
        "commits_url": f"{api}/commits{{/sha}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "issues_url": f"{api}/issues{{/number}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "created_at": iso(item.created_at),
        "updated_at": iso(item.pushed_at or item.created_at),
        "pushed_at": iso(item.pushed_at),
        "git_url": f"{html}.git",
        "ssh_url": f"{html}.git",
        "clone_url": f"{html}.git",
        "svn_url": html,
        "homepage": None,
        "size": 1,
        "stargazers_count": 0,
        "watchers_count": 0,
        "language": "Python",
        "has_issues": True,
        "has_projects": False,
        "has_downloads": True,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "forks_count": 0,
        "mirror_url": None,
        "archived": False,
        "disabled": False,
        "open_issues_count": 0,
        "license": None,
        "allow_forking": False,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": [],
        "visibility": "private" if item.private else "public",
        "forks": 0,
        "open_issues": 0,
        "watchers": 0,
        "default_branch": item.default_branch,
        "allow_merge_commit": True,
        "allow_squash_merge": True,
        "allow_rebase_merge": True,
        "allow_auto_merge": False,
        "delete_branch_on_merge": item.delete_branch_on_merge,
        "network_count": 0,
        "subscribers_count": 0,
    }
    if viewer is not None:
        data["permissions"] = {
            "admin": item.can(viewer.id, "admin"),
            "maintain": item.can(viewer.id, "maintain"),
            "push": item.can(viewer.id, "write"),
            "triage": item.can(viewer.id, "triage"),
            "pull": item.can(viewer.id, "read"),
        }
    return data


def commit(item: Repo, head: BranchHead, urls: Urls) -> dict[str, Any]:
    api = f"{urls.repo(item)}/commits/{head.sha}"
    return {
        "sha": head.sha,
        "node_id": node_id("C", "commit", head.sha),
        "url": api,
        "html_url": f"{urls.html(item)}/commit/{head.sha}",
        "comments_url": f"{api}/comments",
        "commit": {
            "url": f"{urls.repo(item)}/git/commits/{head.sha}",
            "author": {
                "name": head.author_name,
                "email": head.author_email,
                "date": _utc(head.authored_date),
            },
            "committer": {
                "name": head.committer_name,
                "email": head.committer_email,
                "date": _utc(head.committed_date),
            },
            "message": head.message.rstrip("\n"),
            "tree": {"sha": "", "url": ""},
            "comment_count": 0,
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
            },
        },
        "author": None,
        "committer": None,
        "parents": [
            {
                "sha": p,
                "url": f"{urls.repo(item)}/commits/{p}",
                "html_url": f"{urls.html(item)}/commit/{p}",
            }
            for p in head.parent_ids
        ],
    }


def _utc(stamp: str) -> str:
    return iso(parse_iso(stamp)) or stamp


def pull(
    pr: PullRequest,
    item: Repo,
    urls: Urls,
    *,
    base_sha: str | None,
    labels: list[dict[str, Any]],
    detail: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pull request; ``detail`` (mergeable, counts) only on the single-PR GET, as GitHub."""
    api = f"{urls.repo(item)}/pulls/{pr.number}"
    issue = f"{urls.repo(item)}/issues/{pr.number}"
    html = f"{urls.html(item)}/pull/{pr.number}"
    statuses = f"{urls.repo(item)}/statuses/{pr.head_sha}"

    def side(ref: str, sha: str | None) -> dict[str, Any]:
        return {
            "label": f"{item.owner.login}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": user(item.owner, urls),
            "repo": repo(item, urls),
        }

    data: dict[str, Any] = {
        "url": api,
        "id": pr.id,
        "node_id": node_id("PR", "pull", pr.id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": issue,
        "number": pr.number,
        "state": pr.state,
        "locked": False,
        "title": pr.title,
        "user": user(pr.user, urls),
        "body": pr.body or None,
        "created_at": iso(pr.created_at),
        "updated_at": iso(pr.updated_at),
        "closed_at": iso(pr.closed_at),
        "merged_at": iso(pr.merged_at),
        "merge_commit_sha": pr.merge_commit_sha,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "labels": labels,
        "milestone": None,
        "draft": pr.draft,
        "commits_url": f"{api}/commits",
        "review_comments_url": f"{api}/comments",
        "review_comment_url": f"{urls.repo(item)}/pulls/comments{{/number}}",
        "comments_url": f"{issue}/comments",
        "statuses_url": statuses,
        "head": side(pr.head_ref, pr.head_sha),
        "base": side(pr.base_ref, base_sha),
        "_links": {
            "self": {"href": api},
            "html": {"href": html},
            "issue": {"href": issue},
            "comments": {"href": f"{issue}/comments"},
            "review_comments": {"href": f"{api}/comments"},
            "review_comment": {"href": f"{urls.repo(item)}/pulls/comments{{/number}}"},
            "commits": {"href": f"{api}/commits"},
            "statuses": {"href": statuses},
        },
        "author_association": "MEMBER",
        "auto_merge": None,
        "active_lock_reason": None,
    }
    if detail is not None:
        data.update(detail)
    return data

"""The slice of GitHub's GraphQL API the REST API cannot replace: review threads with
``isResolved`` (REST has no thread resolution), ``resolveReviewThread`` /
``unresolveReviewThread``, ``markPullRequestReadyForReview`` / ``convertPullRequestToDraft``
(REST cannot flip ``draft``), ``addPullRequestReviewThreadReply``, plus ``viewer``,
``repository { pullRequest(s) }``, ``node(id:)`` and ``rateLimit``.

Errors come as GitHub sends them: HTTP 200 with ``errors`` (``type`` NOT_FOUND, FORBIDDEN)
beside whatever ``data`` resolved.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any

from harness_cli.sandbox import github_pulls, github_reviews
from harness_cli.sandbox.github_graphql_mutations import mutation
from harness_cli.sandbox.github_model import (
    Account,
    IssueComment,
    PullRequest,
    Repo,
    ReviewComment,
    Thread,
    Token,
    decode_node,
    iso,
    node_id,
)
from harness_cli.sandbox.github_state import GitHubState
from harness_cli.sandbox.graphql import GraphQLError, Obj, execute
from harness_cli.sandbox.routing import ApiError

__all__ = ["Fn", "Schema", "run_graphql"]

Fn = Callable[[dict[str, Any]], Any]


def _const(value: Any) -> Fn:
    return lambda _args: value


def _connection(items: Sequence[Any], args: dict[str, Any], make: Callable[[Any], Obj]) -> Obj:
    """A cursor connection (``first``/``after``; cursors are base64 offsets)."""
    start = 0
    if args.get("after"):
        start = int(base64.b64decode(str(args["after"])).decode().split(":")[1]) + 1
    count = int(args.get("first") or args.get("last") or 100)
    page = list(items[start : start + count])
    nodes = [make(item) for item in page]

    def cursor(n: int) -> str:
        return base64.b64encode(f"cursor:{n}".encode()).decode()

    end = start + len(page) - 1
    info = Obj(
        "PageInfo",
        {
            "hasNextPage": _const(start + len(page) < len(items)),
            "hasPreviousPage": _const(start > 0),
            "endCursor": _const(cursor(end) if page else None),
            "startCursor": _const(cursor(start) if page else None),
        },
    )
    edges = [
        Obj("Edge", {"node": _const(n), "cursor": _const(cursor(start + i))})
        for i, n in enumerate(nodes)
    ]
    return Obj(
        "Connection",
        {
            "nodes": _const(nodes),
            "edges": _const(edges),
            "pageInfo": _const(info),
            "totalCount": _const(len(items)),
        },
    )


class Schema:
    def __init__(self, state: GitHubState, viewer: Account, token: Token, web: str) -> None:
        self.state, self.viewer, self.token, self.web = state, viewer, token, web

    def need(self, permission: str, level: str) -> None:
        perms = self.token.permissions
        if (
            perms is not None
            and {"read": 1, "write": 2}.get(perms.get(permission, ""), 0)
            < {"read": 1, "write": 2}[level]
        ):
            raise GraphQLError("Resource not accessible by personal access token", "FORBIDDEN")

    def user(self, account: Account) -> Obj:
        return Obj(
            "User" if account.type != "Bot" else "Bot",
            {
                "login": _const(account.login),
                "id": _const(node_id("U", "user", account.id)),
                "databaseId": _const(account.id),
                "name": _const(account.name),
                "url": _const(f"{self.web}/{account.login}"),
            },
        )

    def repo_of(self, pr: PullRequest) -> Repo:
        return self.state.repos[pr.repo_id]

    def pull(self, pr: PullRequest) -> Obj:
        repo = self.repo_of(pr)
        state = "MERGED" if pr.merged else pr.state.upper()

        def mergeable(_args: dict[str, Any]) -> str:
            value, _ = github_pulls.mergeability(self.state, repo, pr, read=True)
            return {True: "MERGEABLE", False: "CONFLICTING", None: "UNKNOWN"}[value]

        threads = [t for t in self.state.threads.values() if t.pr_id == pr.id and t.comment_ids]
        comments = [
            c for c in self.state.issue_comments if c.repo_id == repo.id and c.number == pr.number
        ]
        return Obj(
            "PullRequest",
            {
                "id": _const(node_id("PR", "pull", pr.id)),
                "databaseId": _const(pr.id),
                "number": _const(pr.number),
                "title": _const(pr.title),
                "body": _const(pr.body),
                "isDraft": _const(pr.draft),
                "state": _const(state),
                "merged": _const(pr.merged),
                "headRefName": _const(pr.head_ref),
                "headRefOid": _const(pr.head_sha),
                "baseRefName": _const(pr.base_ref),
                "mergeable": mergeable,
                "url": _const(f"{self.web}/{repo.full_name}/pull/{pr.number}"),
                "createdAt": _const(iso(pr.created_at)),
                "updatedAt": _const(iso(pr.updated_at)),
                "author": _const(self.user(pr.user)),
                "reviewThreads": lambda a: _connection(threads, a, self.thread),
                "comments": lambda a: _connection(comments, a, self.issue_comment),
            },
        )

    def thread(self, thread: Thread) -> Obj:
        pr = next(p for p in self.state.pulls if p.id == thread.pr_id)
        found = [github_reviews.find_review_comment(self.state, i) for i in thread.comment_ids]
        outdated = bool(found) and found[0].original_commit_id != pr.head_sha
        return Obj(
            "PullRequestReviewThread",
            {
                "id": _const(node_id("PRRT", "thread", thread.id)),
                "isResolved": _const(thread.resolved),
                "isOutdated": _const(outdated),
                "isCollapsed": _const(thread.resolved),
                "path": _const(thread.path),
                "line": _const(thread.line),
                "originalLine": _const(thread.line),
                "diffSide": _const("RIGHT"),
                "resolvedBy": _const(self.user(thread.resolved_by) if thread.resolved_by else None),
                "viewerCanResolve": _const(True),
                "viewerCanUnresolve": _const(True),
                "viewerCanReply": _const(True),
                "pullRequest": lambda _a: self.pull(pr),
                "comments": lambda a: _connection(found, a, self.review_comment),
            },
        )

    def review_comment(self, comment: ReviewComment) -> Obj:
        pr = next(p for p in self.state.pulls if p.id == comment.pr_id)
        repo = self.repo_of(pr)
        parent = comment.in_reply_to
        return Obj(
            "PullRequestReviewComment",
            {
                "id": _const(node_id("PRRC", "review_comment", comment.id)),
                "databaseId": _const(comment.id),
                "body": _const(comment.body),
                "author": _const(self.user(comment.user)),
                "path": _const(comment.path),
                "line": _const(comment.line),
                "createdAt": _const(iso(comment.created_at)),
                "updatedAt": _const(iso(comment.updated_at)),
                "url": _const(
                    f"{self.web}/{repo.full_name}/pull/{pr.number}#discussion_r{comment.id}"
                ),
                "outdated": _const(comment.original_commit_id != pr.head_sha),
                "replyTo": lambda _a: (
                    self.review_comment(github_reviews.find_review_comment(self.state, parent))
                    if parent
                    else None
                ),
                "pullRequestReview": _const(
                    Obj(
                        "PullRequestReview",
                        {
                            "databaseId": _const(comment.review_id),
                            "id": _const(node_id("PRR", "review", comment.review_id)),
                        },
                    )
                ),
            },
        )

    def issue_comment(self, comment: IssueComment) -> Obj:
        return Obj(
            "IssueComment",
            {
                "id": _const(node_id("IC", "issue_comment", comment.id)),
                "databaseId": _const(comment.id),
                "body": _const(comment.body),
                "author": _const(self.user(comment.user)),
                "createdAt": _const(iso(comment.created_at)),
                "updatedAt": _const(iso(comment.updated_at)),
            },
        )

    def repository(self, args: dict[str, Any]) -> Obj:
        try:
            repo = self.state.repo(str(args.get("owner")), str(args.get("name")))
        except ApiError:
            repo = None
        if repo is None or not repo.can(self.viewer.id, "read"):
            wanted = f"{args.get('owner')}/{args.get('name')}"
            message = f"Could not resolve to a Repository with the name '{wanted}'."
            raise GraphQLError(message, "NOT_FOUND")

        def pull_request(a: dict[str, Any]) -> Obj:
            self.need("pull_requests", "read")
            try:
                return self.pull(github_pulls.find_pull(self.state, repo, int(a["number"])))
            except ApiError:
                message = f"Could not resolve to a PullRequest with the number of {a['number']}."
                raise GraphQLError(message, "NOT_FOUND") from None

        def pull_requests(a: dict[str, Any]) -> Obj:
            self.need("pull_requests", "read")
            states = [str(s).lower() for s in (a.get("states") or ["OPEN", "CLOSED", "MERGED"])]
            items = [
                p
                for p in self.state.pulls
                if p.repo_id == repo.id and (("merged" if p.merged else p.state) in states)
            ]
            for key, attr in (("headRefName", "head_ref"), ("baseRefName", "base_ref")):
                if a.get(key):
                    items = [p for p in items if getattr(p, attr) == a[key]]
            return _connection(items, a, self.pull)

        return Obj(
            "Repository",
            {
                "id": _const(node_id("R", "repo", repo.id)),
                "databaseId": _const(repo.id),
                "name": _const(repo.name),
                "nameWithOwner": _const(repo.full_name),
                "pullRequest": pull_request,
                "pullRequests": pull_requests,
            },
        )

    def node(self, args: dict[str, Any]) -> Obj:
        decoded = decode_node(str(args.get("id") or ""))
        kind, ident = decoded if decoded else ("", "")
        try:
            if kind == "pull":
                return self.pull(next(p for p in self.state.pulls if p.id == int(ident)))
            if kind == "thread":
                return self.thread(self.state.threads[int(ident)])
            if kind == "review_comment":
                return self.review_comment(
                    github_reviews.find_review_comment(self.state, int(ident))
                )
        except (StopIteration, KeyError, ValueError, ApiError):
            pass
        raise GraphQLError(
            f"Could not resolve to a node with the global id of '{args.get('id')}'", "NOT_FOUND"
        )

    def query(self) -> Obj:
        rate = self.state.rate(self.viewer, "graphql")
        return Obj(
            "Query",
            {
                "viewer": _const(self.user(self.viewer)),
                "repository": self.repository,
                "node": self.node,
                "rateLimit": _const(
                    Obj(
                        "RateLimit",
                        {
                            "limit": _const(rate.limit),
                            "remaining": _const(rate.remaining),
                            "used": _const(rate.used),
                            "cost": _const(1),
                            "resetAt": _const(iso(rate.reset)),
                            "nodeCount": _const(0),
                        },
                    )
                ),
            },
        )


def run_graphql(
    state: GitHubState, viewer: Account, token: Token, web: str, body: Any
) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return {
            "errors": [{"message": "A query attribute must be specified and must be a string."}]
        }
    schema = Schema(state, viewer, token, web)
    variables = body.get("variables") if isinstance(body.get("variables"), dict) else None
    with state.lock:
        return execute(
            body["query"],
            variables,
            lambda kind: mutation(schema) if kind == "mutation" else schema.query(),
        )

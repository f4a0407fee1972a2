"""Pull requests in the GitHub emulator: open/update/close, the head sha bound to each push,
the computed mergeability (a real test merge; ``null`` while GitHub would still compute it),
branch protection at merge time, and the real merge into the bare repository.

Error answers are GitHub's (docs "Merge a pull request", "Create a pull request"): 422
"Validation Failed" with ``errors``, 405 "Pull Request is not mergeable", 409 "Head branch was
modified. Review and try the merge again.".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_cli.sandbox import github_git, gitlab_git
from harness_cli.sandbox.github_checks import sha_checks
from harness_cli.sandbox.github_model import Account, PullRequest, Repo, not_found, now
from harness_cli.sandbox.routing import ApiError

if TYPE_CHECKING:
    from harness_cli.sandbox.github_state import GitHubState

__all__ = [
    "blocked_reason",
    "branch_deleted",
    "branch_moved",
    "create_pull",
    "find_pull",
    "merge_pull",
    "mergeability",
    "update_pull",
]

MERGE_METHODS = ("merge", "squash", "rebase")


def invalid(message: str, **error: Any) -> ApiError:
    """GitHub's 422 shape: ``{"message": "Validation Failed", "errors": [...]}``."""
    detail = {"resource": "PullRequest", "code": "custom", "message": message, **error}
    return ApiError(422, {"message": "Validation Failed", "errors": [detail], "status": "422"})


def find_pull(state: GitHubState, repo: Repo, number: int) -> PullRequest:
    for pr in state.pulls:
        if pr.repo_id == repo.id and pr.number == number:
            return pr
    raise not_found()


def _refresh(state: GitHubState, repo: Repo, pr: PullRequest) -> str | None:
    """Recompute the test merge for the current base and head; returns its sha (None on a
    conflict). Starts the ``null`` window GitHub shows while it computes."""
    base = repo.seen_heads.get(pr.base_ref)
    if base is None:
        return None
    key = (base, pr.head_sha)
    if pr.mergeable_key != key:
        pr.merge_commit_sha = github_git.test_merge(repo.bare, pr.number, base, pr.head_sha)
        pr.mergeable = pr.merge_commit_sha is not None
        pr.mergeable_key = key
        pr.unknown_reads = state.mergeable_lag
    return pr.merge_commit_sha


def mergeability(
    state: GitHubState, repo: Repo, pr: PullRequest, *, read: bool = False
) -> tuple[bool | None, str]:
    """(``mergeable``, ``mergeable_state``) as a single-PR GET shows them; ``read`` counts
    this answer against the ``null`` window."""
    if pr.state != "open":
        return (None if not pr.merged else False), "unknown"
    _refresh(state, repo, pr)
    if pr.unknown_reads > 0:
        if read:
            pr.unknown_reads -= 1
        return None, "unknown"
    if not pr.mergeable:
        return False, "dirty"
    if pr.draft:
        return True, "draft"
    if blocked_reason(state, repo, pr) is not None:
        return True, "blocked"
    checks = sha_checks(state, repo, pr.head_sha)
    if any(v != "success" for v in checks.values()):
        return True, "unstable"
    return True, "clean"


def blocked_reason(state: GitHubState, repo: Repo, pr: PullRequest) -> str | None:
    """Why branch protection on the base refuses the merge (GitHub's 405 messages)."""
    rule = repo.protections.get(pr.base_ref)
    if rule is None:
        return None
    checks = sha_checks(state, repo, pr.head_sha)
    for name in rule.required_checks:
        if checks.get(name) != "success":
            state_word = checks.get(name, "expected")
            if state_word == "pending":
                state_word = "in progress"
            return f'Required status check "{name}" is {state_word}.'
    if rule.required_approvals:
        latest: dict[int, str] = {}
        for review in state.reviews:
            if review.pr_id == pr.id and review.state in ("APPROVED", "CHANGES_REQUESTED"):
                latest[review.user.id] = review.state
        approvals = sum(1 for v in latest.values() if v == "APPROVED")
        if approvals < rule.required_approvals:
            count = rule.required_approvals
            noun = "review" if count == 1 else "reviews"
            return f"At least {count} approving {noun} is required by reviewers with write access."
    unresolved = any(t.pr_id == pr.id and not t.resolved for t in state.threads.values())
    if rule.require_conversation_resolution and unresolved:
        return "All comments must be resolved."
    return None


def create_pull(state: GitHubState, repo: Repo, user: Account, args: dict[str, Any]) -> PullRequest:
    title, head, base = args.get("title"), args.get("head"), args.get("base")
    if not head or not base:
        missing = "head" if not head else "base"
        raise invalid(f"{missing} is missing", field=missing, code="missing_field")
    head = str(head).split(":", 1)[-1]  # "owner:branch" names the same repo's branch here
    if not title and not args.get("issue"):
        raise invalid("title is missing", field="title", code="missing_field")
    if head not in repo.seen_heads:
        raise invalid("head is invalid", field="head", code="invalid")
    if base not in repo.seen_heads:
        raise invalid("base is invalid", field="base", code="invalid")
    for pr in state.pulls:
        if (
            pr.repo_id == repo.id
            and pr.state == "open"
            and (pr.head_ref, pr.base_ref)
            == (
                head,
                base,
            )
        ):
            raise invalid(f"A pull request already exists for {repo.owner.login}:{head}.")
    head_sha, base_sha = repo.seen_heads[head], repo.seen_heads[base]
    if not gitlab_git.git(repo.bare, "rev-list", f"{base_sha}..{head_sha}").stdout.strip():
        raise invalid(f"No commits between {base} and {head}")
    at = now()
    pr = PullRequest(
        id=state.next_id("pull") + 1_000_000,
        number=repo.next_number,
        repo_id=repo.id,
        title=str(title or ""),
        body=str(args.get("body") or ""),
        head_ref=head,
        base_ref=str(base),
        user=user,
        draft=str(args.get("draft")).lower() in ("true", "1"),
        head_sha=head_sha,
        created_at=at,
        updated_at=at,
    )
    repo.next_number += 1
    state.pulls.append(pr)
    _opened(state, repo, pr, user)
    return pr


def _opened(state: GitHubState, repo: Repo, pr: PullRequest, actor: Account) -> None:
    merge_sha = _refresh(state, repo, pr)
    state.actions.on_pull_request(
        repo, pr.number, pr.head_ref, pr.head_sha, merge_sha, pr.base_ref, actor
    )


def update_pull(
    state: GitHubState, repo: Repo, pr: PullRequest, user: Account, args: dict[str, Any]
) -> None:
    for name, attr in (("title", "title"), ("body", "body")):
        if args.get(name) is not None:
            setattr(pr, attr, str(args[name]))
    base = args.get("base")
    if base is not None and base != pr.base_ref:
        if pr.state != "open":
            raise invalid("Cannot change the base branch of a closed pull request.", field="base")
        if base not in repo.seen_heads:
            raise invalid(f"Proposed base branch '{base}' was not found", field="base")
        pr.base_ref = str(base)
        _refresh(state, repo, pr)  # "edited" is not among pull_request's default triggers
    wanted = args.get("state")
    if wanted == "closed" and pr.state == "open":
        pr.state, pr.closed_at = "closed", now()
    elif wanted == "open" and pr.state == "closed" and not pr.merged:
        if pr.head_ref not in repo.seen_heads:
            raise invalid("state cannot be changed. The head branch was deleted.", field="state")
        pr.state, pr.closed_at = "open", None
        pr.head_sha = repo.seen_heads[pr.head_ref]
        _opened(state, repo, pr, user)
    pr.updated_at = now()


def merge_pull(
    state: GitHubState,
    repo: Repo,
    pr: PullRequest,
    user: Account,
    *,
    sha: str | None = None,
    method: str = "merge",
    title: str | None = None,
    message: str | None = None,
) -> str:
    """Merge for real; returns the merge commit's sha."""
    if method not in MERGE_METHODS:
        raise invalid(f"merge_method {method} is not one of {list(MERGE_METHODS)}")
    if pr.state != "open":
        raise ApiError(405, {"message": "Pull Request is not mergeable", "status": "405"})
    if sha is not None and sha != pr.head_sha:
        message409 = "Head branch was modified. Review and try the merge again."
        raise ApiError(409, {"message": message409, "status": "409"})
    _refresh(state, repo, pr)
    pr.unknown_reads = 0  # a merge waits for the computation GitHub runs
    if not pr.mergeable:
        raise ApiError(405, {"message": "Pull Request is not mergeable", "status": "405"})
    if pr.draft:
        raise ApiError(405, {"message": "Pull Request is still a draft", "status": "405"})
    reason = blocked_reason(state, repo, pr)
    if reason is not None:
        raise ApiError(405, {"message": reason, "status": "405"})
    identity = (user.name, f"{user.login}@users.noreply.github.invalid")
    subject = title or f"Merge pull request #{pr.number} from {repo.owner.login}/{pr.head_ref}"
    text = f"{subject}\n\n{message if message is not None else pr.title}"
    if method == "merge":
        merged = gitlab_git.merge_into(repo.bare, pr.base_ref, pr.head_sha, text, identity=identity)
    else:  # squash and rebase both land the change as one new commit on the base here
        base_sha = repo.seen_heads[pr.base_ref]
        tree = gitlab_git.merged_tree(repo.bare, base_sha, pr.head_sha)
        if tree is None:
            raise ApiError(405, {"message": "Pull Request is not mergeable", "status": "405"})
        squash = title or f"{pr.title} (#{pr.number})"
        env = gitlab_git.identity_env(identity)
        merged = gitlab_git.git(
            repo.bare, "commit-tree", tree, "-p", base_sha, "-m", squash, env=env
        ).stdout.strip()
        gitlab_git.git(repo.bare, "update-ref", f"refs/heads/{pr.base_ref}", merged, base_sha)
    at = now()
    pr.state, pr.merged_at, pr.closed_at, pr.merged_by = "closed", at, at, user
    pr.merge_commit_sha, pr.updated_at = merged, at
    if repo.delete_branch_on_merge:
        gitlab_git.delete_branch(repo.bare, pr.head_ref)
    state.sync(repo, user)
    return merged


def branch_moved(state: GitHubState, repo: Repo, branch: str, sha: str, actor: Account) -> None:
    for pr in state.pulls:
        if pr.repo_id != repo.id or pr.state != "open":
            continue
        if pr.head_ref == branch and pr.head_sha != sha:
            pr.head_sha, pr.updated_at = sha, now()
            _opened(state, repo, pr, actor)  # "synchronize"
        elif pr.base_ref == branch:
            _refresh(state, repo, pr)


def branch_deleted(state: GitHubState, repo: Repo, branch: str) -> None:
    """Deleting a pull request's head (or base) branch closes it, as on GitHub."""
    for pr in state.pulls:
        if pr.repo_id == repo.id and pr.state == "open" and branch in (pr.head_ref, pr.base_ref):
            pr.state, pr.closed_at, pr.updated_at = "closed", now(), now()

"""What humans do on the GitHub emulator, through its control API: push, force-push a base,
make a conflict, review, comment, resolve a thread, merge, close, reopen; and the state dump
(``sandbox-state.json``). Seeding, tokens, CI results and faults are in :mod:`github_control`.
"""

from __future__ import annotations

import time
from typing import Any

from harness_cli.sandbox import github_pulls, github_reviews, gitlab_git
from harness_cli.sandbox.github_model import PullRequest, Repo
from harness_cli.sandbox.github_state import GitHubState
from harness_cli.sandbox.routing import ApiError

__all__ = ["HumanActions"]


class HumanActions:
    def __init__(self, state: GitHubState) -> None:
        self.state = state

    # -- what humans do ---------------------------------------------------------------------
    def _pull(self, repo: str, number: int) -> tuple[Repo, PullRequest]:
        target = self.state.find_repo(repo)
        return target, github_pulls.find_pull(self.state, target, int(number))

    def ctl_commit(
        self,
        repo: str,
        branch: str,
        files: dict[str, str | None],
        message: str = "update",
        author: str = "alice",
    ) -> dict[str, Any]:
        """A human's push (branch protection does not apply: an admin's): ``files`` on
        ``branch``, created from the default branch if missing; ``None`` deletes a file."""
        target = self.state.find_repo(repo)
        user = self.state.account(author)
        sha = gitlab_git.commit_files(
            target.bare,
            branch,
            files,
            message,
            identity=(user.name, f"{user.login}@users.noreply.github.invalid"),
            start_point=target.default_branch,
        )
        self.state.sync(target, user)
        return {"sha": sha}

    def ctl_force_push(
        self,
        repo: str,
        branch: str | None = None,
        files: dict[str, str | None] | None = None,
        message: str = "rewrite history",
        author: str = "alice",
        drop: int = 1,
    ) -> dict[str, Any]:
        """An admin rewrites ``branch`` (default: the default branch): its last ``drop``
        commits replaced by one commit of ``files`` — every clone's history now diverges."""
        target = self.state.find_repo(repo)
        name = branch or target.default_branch
        old = gitlab_git.rev_parse(target.bare, f"refs/heads/{name}")
        base = gitlab_git.rev_parse(target.bare, f"{old}~{drop}")
        if old is None or base is None:
            raise ValueError(f"{name} has fewer than {drop} commits to drop")
        gitlab_git.git(target.bare, "update-ref", f"refs/heads/{name}", base, old)
        user = self.state.account(author)
        sha = gitlab_git.commit_files(
            target.bare,
            name,
            files or {f"rewritten-{int(time.time())}.txt": "rewritten\n"},
            message,
            identity=(user.name, f"{user.login}@users.noreply.github.invalid"),
        )
        self.state.sync(target, user)
        return {"old": old, "sha": sha}

    def ctl_create_conflict(self, repo: str, number: int, author: str = "alice") -> dict[str, Any]:
        """Commit on the pull request's base a different change to each file it changes."""
        target, pr = self._pull(repo, number)
        base = target.seen_heads[pr.base_ref]
        names = gitlab_git.git(target.bare, "diff", "--name-only", base, pr.head_sha).stdout
        files: dict[str, str | None] = {
            n: f"conflicting change by {author}\n" for n in names.split()
        }
        if not files:
            raise ValueError("the pull request changes no file")
        return self.ctl_commit(repo, pr.base_ref, files, "a conflicting change", author)

    def ctl_add_review(
        self,
        repo: str,
        number: int,
        author: str = "alice",
        event: str = "COMMENT",
        body: str = "",
        comments: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        target, pr = self._pull(repo, number)
        review = github_reviews.create_review(
            self.state,
            target,
            pr,
            self.state.account(author),
            body=body,
            event=event,
            comments=comments,
        )
        made = [c.id for c in self.state.review_comments if c.review_id == review.id]
        return {"review_id": review.id, "comment_ids": made}

    def ctl_add_review_comment(
        self,
        repo: str,
        number: int,
        body: str,
        author: str = "alice",
        path: str = "",
        line: int | None = None,
        reply_to: int | None = None,
    ) -> dict[str, Any]:
        target, pr = self._pull(repo, number)
        comment = github_reviews.add_review_comment(
            self.state,
            target,
            pr,
            self.state.account(author),
            body=body,
            path=path,
            line=line,
            in_reply_to=reply_to,
        )
        thread = self.state.threads[comment.thread_id]
        return {"comment_id": comment.id, "thread_id": thread.id}

    def ctl_add_issue_comment(
        self, repo: str, number: int, body: str, author: str = "alice"
    ) -> dict[str, Any]:
        target, _ = self._pull(repo, number)
        comment = github_reviews.add_issue_comment(
            self.state, target, int(number), self.state.account(author), body
        )
        return {"comment_id": comment.id}

    def ctl_resolve_thread(
        self, comment_id: int, author: str = "alice", resolved: bool = True
    ) -> dict[str, Any]:
        comment = github_reviews.find_review_comment(self.state, int(comment_id))
        thread = self.state.threads[comment.thread_id]
        github_reviews.resolve_thread(thread, self.state.account(author), resolved)
        return {"thread_id": thread.id, "resolved": thread.resolved}

    def ctl_merge(
        self, repo: str, number: int, author: str = "alice", method: str = "merge"
    ) -> dict[str, Any]:
        target, pr = self._pull(repo, number)
        try:
            sha = github_pulls.merge_pull(
                self.state, target, pr, self.state.account(author), method=method
            )
        except ApiError as err:
            return {"ok": False, "status": err.status, "error": err.body}
        return {"ok": True, "sha": sha}

    def ctl_close(self, repo: str, number: int, author: str = "alice") -> dict[str, Any]:
        target, pr = self._pull(repo, number)
        github_pulls.update_pull(
            self.state, target, pr, self.state.account(author), {"state": "closed"}
        )
        return {"ok": True, "state": pr.state}

    def ctl_reopen(self, repo: str, number: int, author: str = "alice") -> dict[str, Any]:
        target, pr = self._pull(repo, number)
        github_pulls.update_pull(
            self.state, target, pr, self.state.account(author), {"state": "open"}
        )
        return {"ok": True, "state": pr.state}

    # -- state dump -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        state = self.state
        pulls = []
        for pr in state.pulls:
            repo = state.repos[pr.repo_id]
            threads = [t for t in state.threads.values() if t.pr_id == pr.id]
            pulls.append(
                {
                    "repo": repo.full_name,
                    "number": pr.number,
                    "state": pr.state,
                    "merged": pr.merged,
                    "draft": pr.draft,
                    "title": pr.title,
                    "body": pr.body,
                    "head": pr.head_ref,
                    "base": pr.base_ref,
                    "head_sha": pr.head_sha,
                    "labels": list(pr.labels),
                    "issue_comments": [
                        {"author": c.user.login, "body": c.body}
                        for c in state.issue_comments
                        if c.repo_id == repo.id and c.number == pr.number
                    ],
                    "threads": [
                        {
                            "resolved": t.resolved,
                            "comments": [
                                {"author": c.user.login, "body": c.body}
                                for c in state.review_comments
                                if c.thread_id == t.id
                            ],
                        }
                        for t in threads
                    ],
                    "reviews": [
                        {"author": r.user.login, "state": r.state}
                        for r in state.reviews
                        if r.pr_id == pr.id and r.body
                    ],
                }
            )
        return {
            "repos": [
                {
                    "id": r.id,
                    "full_name": r.full_name,
                    "default_branch": r.default_branch,
                    "bare_repo": str(r.bare),
                    "protected": sorted(r.protections),
                }
                for r in state.repos.values()
            ],
            "pulls": pulls,
            "runs": [
                {
                    "repo": state.repos[r.repo_id].full_name,
                    "id": r.id,
                    "workflow": r.path,
                    "event": r.event,
                    "head_sha": r.head_sha,
                    "attempt": r.attempt,
                    "status": r.status,
                    "conclusion": r.conclusion,
                }
                for r in state.runs.values()
            ],
            "rate_limits": [
                {
                    "account": state.accounts[a].login,
                    "resource": res,
                    "used": w.used,
                    "remaining": w.remaining,
                }
                for (a, res), w in state.rates.items()
            ],
        }

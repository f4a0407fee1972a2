"""The GitHub emulator's control API (``POST /_control/<action>``, or ``emu.control(...)``):
seeding, what humans do (push, review, comment, resolve, merge, force-push a base, make a
conflict), CI results, tokens and their scopes/permissions, roles, branch protection, the
primary rate limit; and the smart-HTTP git endpoint with GitHub's authentication.

Faults use the base ``fault`` action: ``{kind: status|drop|hang|delay|lost|
primary_rate_limit|secondary_rate_limit, status, match, method, seconds, times}``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from harness_cli.sandbox import git_http, github_pulls, github_reviews, gitlab_git
from harness_cli.sandbox.github_actions import CONCLUSIONS
from harness_cli.sandbox.github_model import (
    ROLES,
    CheckRun,
    CommitStatus,
    Protection,
    PullRequest,
    Repo,
    Token,
    now,
)
from harness_cli.sandbox.httpbase import Request, Response
from harness_cli.sandbox.routing import ApiError

if TYPE_CHECKING:
    from harness_cli.sandbox.github_api import GitHubEmulator

__all__ = ["GitHubControl"]

_NEED_AUTH = {"WWW-Authenticate": 'Basic realm="GitHub"'}


class GitHubControl:
    def __init__(self, emulator: GitHubEmulator) -> None:
        self.emu = emulator
        self.state = emulator.state

    # -- git over smart HTTP ----------------------------------------------------------------
    def serve_git(self, req: Request, full_name: str, service: str) -> Response:
        """GitHub's rules: the token as the Basic password (``x-access-token:<t>``) or user,
        or a Bearer ``http.extraheader``; anonymous fetches of public repositories only; a
        repository the caller cannot read is "not found"; pushing needs write access and a
        token that may write contents (and workflows, to touch ``.github/workflows``)."""
        owner, _, name = full_name.partition("/")
        pushing = service == "git-receive-pack" or "git-receive-pack" in str(req.query)
        creds = git_http.basic_credentials(req)
        token = creds[1] or creds[0] if creds else None
        scheme, _, value = req.headers.get("authorization", "").partition(" ")
        if scheme.lower() in ("bearer", "token"):
            token = value.strip()
        with self.state.lock:
            found = self.state.authenticate(token) if token else None
            try:
                repo = self.state.repo(owner, name)
            except ApiError:
                repo = None
            if found is None and (token or repo is None or repo.private or pushing):
                return Response.text("Invalid username or token.\n", 401, headers=_NEED_AUTH)
            user, tok = found if found else (None, None)
            if repo is None or (user is not None and not repo.can(user.id, "read")):
                return Response.text("Repository not found.\n", status=404)
            if pushing and (
                user is None or not repo.can(user.id, "write") or not _token_may(tok, "contents")
            ):
                login = user.login if user else "anonymous"
                return Response.text(f"Permission to {full_name}.git denied to {login}.\n", 403)
            workflows = _token_may(tok, "workflows", scope="workflow")
        resp = git_http.serve(
            repo.bare,
            service,
            req,
            remote_user=user.login if user else None,
            hook_env={"GH_SANDBOX_WORKFLOW_SCOPE": "1" if workflows else "0"},
        )
        if service == "git-receive-pack":
            self.state.sync(repo, user)
        return resp

    # -- seeding, tokens, roles, protection -------------------------------------------------
    def ctl_create_repo(
        self,
        repo: str,
        files: dict[str, str],
        ci_command: str | list[str] | None = None,
        default_branch: str = "main",
        private: bool = True,
        protection: dict[str, Any] | bool = True,
    ) -> dict[str, Any]:
        """A repository seeded with ``files`` (and, given ``ci_command``, a CI workflow
        running it); its default branch protected unless ``protection`` is false."""
        rule = None
        if protection:
            rule = Protection(**protection) if isinstance(protection, dict) else Protection()
        made = self.state.create_repo(
            repo,
            files,
            ci_command,
            default_branch=default_branch,
            private=private,
            protection=rule,
        )
        return {
            "id": made.id,
            "full_name": made.full_name,
            "default_branch": default_branch,
            "clone_url": f"{self.emu.url}/{made.full_name}.git",
            "bare_repo": str(made.bare),
        }

    def ctl_add_token(
        self,
        token: str,
        user: str | int = "harness-bot",
        scopes: list[str] | None = None,
        permissions: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Register ``token`` for ``user``: classic with ``scopes`` (default repo, workflow)
        or fine-grained with ``permissions`` (contents, pull_requests, issues, checks,
        statuses, actions, workflows, metadata → read|write)."""
        if permissions is None and scopes is None:
            scopes = list(self.state.default_scopes)
        self.state.tokens[token] = Token(token, self.state.account(user).id, scopes, permissions)
        return {"ok": True}

    def ctl_expire_token(self, token: str) -> dict[str, Any]:
        known = self.state.tokens.get(token) or Token(token, 1, list(self.state.default_scopes))
        known.expired = True
        self.state.tokens[token] = known
        return {"ok": True}

    def ctl_set_role(self, repo: str, user: str | int, role: str) -> dict[str, Any]:
        if role not in ROLES:
            raise ValueError(f"role is one of {ROLES}")
        self.state.find_repo(repo).roles[self.state.account(user).id] = role
        return {"ok": True}

    def ctl_set_protection(
        self, repo: str, branch: str | None = None, protected: bool = True, **rule: Any
    ) -> dict[str, Any]:
        target = self.state.find_repo(repo)
        name = branch or target.default_branch
        if protected:
            target.protections[name] = Protection(**rule)
        else:
            target.protections.pop(name, None)
        self.state.write_protection(target)
        return {"ok": True, "protected": sorted(target.protections)}

    def ctl_set_secrets(
        self,
        repo: str,
        secrets: dict[str, str] | None = None,
        variables: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Actions secrets and variables (``${{ secrets.X }}``, ``${{ vars.X }}``)."""
        target = self.state.find_repo(repo)
        target.secrets.update({str(k): str(v) for k, v in (secrets or {}).items()})
        target.variables.update({str(k): str(v) for k, v in (variables or {}).items()})
        return {"secrets": sorted(target.secrets), "variables": sorted(target.variables)}

    def ctl_rate_limit(
        self,
        remaining: int,
        user: str | int = "harness-bot",
        reset_in: float = 3600.0,
        resource: str = "core",
        status: int = 403,
        limit: int = 5000,
    ) -> dict[str, Any]:
        """Set ``user``'s primary rate limit: ``remaining`` requests until ``reset_in``
        seconds from now; once spent, requests answer ``status`` (403 or 429)."""
        window = self.state.rate(self.state.account(user), resource)
        window.limit, window.used = limit, max(0, limit - remaining)
        window.reset = time.time() + reset_in
        self.emu.rate_limit_status = status
        return {"limit": window.limit, "remaining": window.remaining, "reset": int(window.reset)}

    def ctl_mergeable_lag(self, reads: int) -> dict[str, Any]:
        """How many reads answer ``mergeable: null`` after a head or base moves (default 1)."""
        self.state.mergeable_lag = int(reads)
        return {"ok": True}

    # -- CI ---------------------------------------------------------------------------------
    def ctl_set_ci_result(
        self, repo: str, conclusion: str, run_id: int | None = None
    ) -> dict[str, Any]:
        """Force the next workflow run's result (or, with ``run_id``, that run's)."""
        target = self.state.find_repo(repo)
        if conclusion not in (*CONCLUSIONS, "in_progress"):
            raise ValueError(f"conclusion is one of {CONCLUSIONS} or in_progress")
        if run_id is None:
            target.forced_results.append(conclusion)
            return {"ok": True, "queued": list(target.forced_results)}
        run = self.state.runs.get(int(run_id))
        if run is None or run.repo_id != target.id:
            raise ValueError(f"no run {run_id} in {target.full_name}")
        self.state.actions.force(run, conclusion)
        return {"ok": True, "run_id": run.id, "conclusion": run.conclusion}

    def ctl_add_check_run(
        self,
        repo: str,
        ref: str,
        name: str,
        conclusion: str | None = None,
        app: str = "sandbox-ci",
        summary: str = "",
    ) -> dict[str, Any]:
        """A check run from another GitHub App (only apps may create check runs)."""
        target = self.state.find_repo(repo)
        sha = gitlab_git.rev_parse(target.bare, ref)
        if sha is None:
            raise ValueError(f"no commit {ref}")
        at = now()
        check = CheckRun(
            id=self.state.next_id("check") + 20000,
            repo_id=target.id,
            head_sha=sha,
            name=name,
            suite_id=self.state.next_id("suite") + 80000,
            app=app,
            status="completed" if conclusion else "in_progress",
            conclusion=conclusion,
            started_at=at,
            completed_at=at if conclusion else None,
            output={"title": name, "summary": summary} if summary else {},
        )
        self.state.check_runs[check.id] = check
        return {"id": check.id, "head_sha": sha}

    def ctl_add_status(
        self,
        repo: str,
        ref: str,
        context: str,
        state: str,
        author: str = "alice",
        description: str | None = None,
    ) -> dict[str, Any]:
        target = self.state.find_repo(repo)
        sha = gitlab_git.rev_parse(target.bare, ref)
        if sha is None:
            raise ValueError(f"no commit {ref}")
        at = now()
        status = CommitStatus(
            self.state.next_id("status") + 7_000_000,
            target.id,
            sha,
            state,
            context,
            description,
            None,
            self.state.account(author),
            at,
            at,
        )
        self.state.statuses.append(status)
        return {"id": status.id, "sha": sha}

    def ctl_wait_for_runs(self, timeout: float = 60.0) -> dict[str, Any]:
        self.emu.wait_for_runs(timeout)
        return {"ok": True}

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


def _token_may(token: Token | None, permission: str, *, scope: str = "repo") -> bool:
    """Whether ``token`` may write ``permission`` (fine-grained) or has ``scope`` (classic)."""
    if token is None:
        return False
    if token.permissions is not None:
        return token.permissions.get(permission) == "write"
    return scope in (token.scopes or [])

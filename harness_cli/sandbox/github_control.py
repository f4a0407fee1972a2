"""The GitHub emulator's control API (``POST /_control/<action>``, or ``emu.control(...)``):
seeding, CI results, check runs and statuses from other apps, tokens and their
scopes/permissions, roles, branch protection, the primary rate limit; and the smart-HTTP git
endpoint with GitHub's authentication. What humans do (push, review, merge…) is in
:mod:`github_humans`.

Faults use the base ``fault`` action: ``{kind: status|drop|hang|delay|lost|
primary_rate_limit|secondary_rate_limit, status, match, method, seconds, times}``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_cli.sandbox import git_http, gitlab_git
from harness_cli.sandbox.github_actions import CONCLUSIONS
from harness_cli.sandbox.github_model import ROLES, Protection, Token, now
from harness_cli.sandbox.github_model_ci import CheckRun, CommitStatus
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
        files: dict[str, str] | None = None,
        ci_command: str | list[str] | None = None,
        folder: str | None = None,
        default_branch: str = "main",
        private: bool = True,
        protection: dict[str, Any] | bool = True,
    ) -> dict[str, Any]:
        """A repository seeded with the text files under ``folder`` (``.git`` left out) and
        ``files`` (and, given ``ci_command``, a CI workflow running it, unless the files
        bring their own); its default branch protected unless ``protection`` is false."""
        seeded = _read_folder(Path(folder)) if folder else {}
        seeded.update(files or {})
        rule = None
        if protection:
            rule = Protection(**protection) if isinstance(protection, dict) else Protection()
        made = self.state.create_repo(
            repo,
            seeded,
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


def _token_may(token: Token | None, permission: str, *, scope: str = "repo") -> bool:
    """Whether ``token`` may write ``permission`` (fine-grained) or has ``scope`` (classic)."""
    if token is None:
        return False
    if token.permissions is not None:
        return token.permissions.get(permission) == "write"
    return scope in (token.scopes or [])


def _read_folder(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder")
    return {
        path.relative_to(folder).as_posix(): path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink() and ".git" not in path.relative_to(folder).parts
    }

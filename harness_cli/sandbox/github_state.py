"""The GitHub emulator's state: accounts and tokens, repositories backed by real bare repos,
what a push changes (pull request heads, the workflows it triggers), and the primary rate
limit of each account.

Pull requests, reviews and comments are in :mod:`github_pulls`; Actions, check runs and
statuses in :mod:`github_actions`; the HTTP layer in :mod:`github_http`. One re-entrant lock
(``state.lock``) guards everything; the Actions runner drops it while a step's process runs.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness_cli.sandbox import github_git, github_pulls, gitlab_git
from harness_cli.sandbox.github_actions import Actions
from harness_cli.sandbox.github_model import (
    Account,
    IssueComment,
    Protection,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    Thread,
    Token,
    not_found,
    now,
)
from harness_cli.sandbox.github_model_ci import CheckRun, CommitStatus, Workflow, WorkflowRun
from harness_cli.sandbox.github_workflows import WORKFLOWS_DIR, default_workflow

__all__ = ["BOT_IDENTITY", "GitHubState", "RateWindow", "not_found"]

BOT_IDENTITY = ("GitHub", "noreply@github.invalid")
_INITIAL_DATE = "2024-01-01T00:00:00+00:00"
RATE_LIMIT = 5000
"""Requests per hour for a personal access token (docs: "Rate limits for the REST API")."""
RATE_WINDOW = 3600.0


@dataclass
class RateWindow:
    """One account's primary rate limit in one resource (``core``, ``graphql``)."""

    limit: int
    used: int
    reset: float

    def roll(self, at: float) -> None:
        if at >= self.reset:
            self.used, self.reset = 0, at + RATE_WINDOW

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


class GitHubState:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.lock = threading.RLock()
        bot = Account(1, "harness-bot", "Harness Bot")
        alice = Account(2, "alice", "Alice Reviewer")
        bob = Account(3, "bob", "Bob Reviewer")
        actions = Account(41898282, "github-actions[bot]", "GitHub Actions", type="Bot")
        self.accounts: dict[int, Account] = {a.id: a for a in (bot, alice, bob, actions)}
        self.tokens: dict[str, Token] = {}
        self.default_scopes = ["repo", "workflow"]
        self.repos: dict[int, Repo] = {}
        self.pulls: list[PullRequest] = []
        self.reviews: list[Review] = []
        self.review_comments: list[ReviewComment] = []
        self.threads: dict[int, Thread] = {}
        self.issue_comments: list[IssueComment] = []
        self.statuses: list[CommitStatus] = []
        self.check_runs: dict[int, CheckRun] = {}
        self.workflows: dict[int, Workflow] = {}
        self.runs: dict[int, WorkflowRun] = {}
        self.rates: dict[tuple[int, str], RateWindow] = {}
        self.blobs: dict[str, tuple[str, int, float]] = {}
        """Log download URLs handed out: token → (kind, run or job id, expiry)."""
        self.mergeable_lag = 1
        """Reads of a pull request that answer ``mergeable: null`` after its head or base
        moved: GitHub computes mergeability in the background (docs: "Get a pull request")."""
        self._ids: defaultdict[str, Iterator[int]] = defaultdict(lambda: itertools.count(1))
        self.actions = Actions(self)

    def next_id(self, kind: str) -> int:
        return next(self._ids[kind])

    # -- accounts, tokens, rate limits ------------------------------------------------------
    def authenticate(self, token: str | None) -> tuple[Account, Token] | None:
        """Any token not registered is the bot's classic token with the default scopes (as the
        GitLab emulator does); a registered one may be another user's, fine-grained, or
        expired."""
        if not token:
            return None
        known = self.tokens.get(token)
        if known is None:
            known = Token(token, 1, scopes=list(self.default_scopes))
        if known.expired:
            return None
        return self.accounts[known.user_id], known

    def account(self, ref: str | int) -> Account:
        for account in self.accounts.values():
            if str(ref) in (str(account.id), account.login):
                return account
        # Not KeyError: the control API reads a KeyError as "unknown action".
        raise ValueError(f"unknown account {ref!r}")

    def owner(self, login: str) -> Account:
        """The account ``login``, made an organization if nobody has that name yet."""
        for account in self.accounts.values():
            if account.login == login:
                return account
        org = Account(self.next_id("org") + 9000, login, login, type="Organization")
        self.accounts[org.id] = org
        return org

    def rate(self, account: Account, resource: str) -> RateWindow:
        at = time.time()
        window = self.rates.get((account.id, resource))
        if window is None:
            window = RateWindow(RATE_LIMIT, 0, at + RATE_WINDOW)
            self.rates[(account.id, resource)] = window
        window.roll(at)
        return window

    # -- repositories -----------------------------------------------------------------------
    def create_repo(
        self,
        full_name: str,
        files: dict[str, str],
        ci_command: str | list[str] | None,
        *,
        default_branch: str = "main",
        private: bool = True,
        protection: Protection | None = None,
    ) -> Repo:
        owner_login, _, name = full_name.partition("/")
        if not owner_login or not name or "/" in name:
            raise ValueError(f"a GitHub repository is owner/name, not {full_name!r}")
        with self.lock:
            if any(r.full_name == full_name for r in self.repos.values()):
                raise ValueError(f"repository {full_name} already exists")
            bare = self.data_dir / "repos" / owner_login / f"{name}.git"
            github_git.init_bare(bare, default_branch)
            seeded: dict[str, str | None] = dict(files)
            if ci_command is not None and not any(p.startswith(WORKFLOWS_DIR) for p in seeded):
                seeded[f"{WORKFLOWS_DIR}ci.yml"] = default_workflow(ci_command, default_branch)
            gitlab_git.commit_files(
                bare,
                default_branch,
                seeded,
                "Initial commit",
                identity=BOT_IDENTITY,
                date=_INITIAL_DATE,
            )
            repo = Repo(
                id=self.next_id("repo") + 100,
                owner=self.owner(owner_login),
                name=name,
                bare=bare,
                default_branch=default_branch,
                created_at=now(),
                ci_command=ci_command,
                private=private,
                seen_heads=gitlab_git.heads(bare),
            )
            repo.pushed_at = repo.created_at
            if protection is not None:
                repo.protections[default_branch] = protection
            self.write_protection(repo)
            self.repos[repo.id] = repo
            self.actions.register_workflows(repo)
            return repo

    def write_protection(self, repo: Repo) -> None:
        github_git.write_config(repo.bare, {b: p.json() for b, p in repo.protections.items()})

    def repo(self, owner: str, name: str) -> Repo:
        with self.lock:
            for repo in self.repos.values():
                if repo.owner.login.lower() == owner.lower() and repo.name.lower() == name.lower():
                    return repo
        raise not_found()

    def find_repo(self, ref: str | int) -> Repo:
        """A repository by id or ``owner/name`` (the control API's way to name one)."""
        for repo in self.repos.values():
            if str(ref) in (str(repo.id), repo.full_name):
                return repo
        raise ValueError(f"unknown repository {ref!r}")

    # -- pushes -----------------------------------------------------------------------------
    def sync(self, repo: Repo, pusher: Account | None = None) -> list[tuple[str, str | None]]:
        """Compare the bare repo's branch heads with what was last seen and act on each moved
        branch: pull requests from it get the new head ("synchronize"), pull requests into it
        are recomputed, and the workflows the push triggers start. Returns (branch, new sha)
        for each change (None: deleted)."""
        with self.lock:
            current = gitlab_git.heads(repo.bare)
            changes: list[tuple[str, str | None]] = [
                (b, s) for b, s in current.items() if repo.seen_heads.get(b) != s
            ]
            changes += [(b, None) for b in repo.seen_heads if b not in current]
            repo.seen_heads = current
            if not changes:
                return []
            repo.pushed_at = now()
            actor = pusher or self.accounts[1]
            for branch, sha in changes:
                if sha is None:
                    github_pulls.branch_deleted(self, repo, branch)
                    continue
                self.actions.on_push(repo, branch, sha, actor)
                github_pulls.branch_moved(self, repo, branch, sha, actor)
            return changes

    def busy(self) -> list[WorkflowRun]:
        with self.lock:
            return [r for r in self.runs.values() if r.status != "completed" and not r.forced]

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            busy = self.busy()
            if not busy:
                return
            if time.monotonic() > deadline:
                ids = ", ".join(f"#{r.id} ({r.status})" for r in busy)
                raise TimeoutError(f"workflow runs still going after {timeout}s: {ids}")
            time.sleep(0.05)

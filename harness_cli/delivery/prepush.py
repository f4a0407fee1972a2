"""The style check of every new commit before it is pushed, whoever made it.

Reference, "A style guide that keeps output from reading as machine-written": "No AI
attribution at all. No Co-Authored-By: Claude, no 'Generated with Claude Code' and no [bot]
suffix on commit messages." The agent has Bash in its worktree and may commit by itself; the
harness only ever lints the message it proposes in its JSON block. So before any push (the one
pre-push point is :func:`harness_cli.delivery.push.rebase.real_push`) every commit the push
would add to origin is linted again:

- attribution (S1) is removed mechanically and the commit reworded, its tree untouched;
- an author or committer that is a placeholder or the model (``harness@localhost``,
  ``Claude <noreply@anthropic.com>``) becomes the worktree's configured identity
  (:mod:`harness_cli.delivery.identity`);
- anything else the SOP forbids (a subject in the past tense, a template heading …) cannot be
  fixed without writing the author's words for them: the push is refused, naming the commit.

The rewrite replays the new commits with ``git commit-tree`` (same trees, same dates) and moves
the branch with a compare-and-swap ``update-ref``: the working tree never changes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from harness_cli.delivery.identity import is_placeholder
from harness_cli.delivery.style import lint_commit_message, strip_attribution
from harness_cli.delivery.worktrees import Worktree
from harness_cli.logs import event
from harness_cli.services.git import Git

log = logging.getLogger("harness.delivery.prepush")

_FORMAT = "%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B"


@dataclass(frozen=True)
class Commit:
    sha: str
    tree: str
    parents: tuple[str, ...]
    author: tuple[str, str, str]
    """(name, email, ISO date)"""
    committer: tuple[str, str, str]
    message: str


def new_commits(wt: Worktree) -> list[Commit]:
    """The commits a push of the case branch would add to origin, oldest first: not on the
    remote branch, not on the base branch (as of the last fetch)."""
    git = wt.git()
    known = [
        f"^{ref}"
        for ref in (f"refs/remotes/origin/{wt.branch}", f"refs/remotes/origin/{wt.base_branch}")
        if git.head_sha(ref)
    ]
    shas = git.run("rev-list", "--reverse", "--topo-order", f"refs/heads/{wt.branch}", *known)
    return [_read(git, sha) for sha in shas.split()]


def _read(git: Git, sha: str) -> Commit:
    fields = git.run("show", "-s", f"--format={_FORMAT}", sha).split("\0")
    full, tree, parents, an, ae, ad, cn, ce, cd = fields[:9]
    return Commit(full, tree, tuple(parents.split()), (an, ae, ad), (cn, ce, cd), fields[9])


def check_before_push(wt: Worktree) -> str | None:
    """Lint the new commits; reword what can be reworded. Returns why the push is refused
    (None: every new commit now passes the style SOP)."""
    git = wt.git()
    identity = (git.run("config", "user.name"), git.run("config", "user.email"))
    commits = new_commits(wt)
    rewritten: dict[str, str] = {}
    changed: list[str] = []
    for commit in commits:
        message = commit.message
        violations = lint_commit_message(message)
        if any(v.code == "S1" for v in violations):
            message = strip_attribution(message)
            violations = lint_commit_message(message)
        if violations:
            subject = commit.message.strip().splitlines()[0] if commit.message.strip() else ""
            problems = "; ".join(v.render() for v in violations[:3])
            event(log, "prepush_refused", logging.WARNING, branch=wt.branch, sha=commit.sha)
            return (
                f"refused: commit {commit.sha[:10]} {subject[:60]!r} breaks the style SOP "
                f"({problems})"
            )
        author = _person(commit.author, identity)
        committer = _person(commit.committer, identity)
        parents = tuple(rewritten.get(p, p) for p in commit.parents)
        if (message, author, committer, parents) == (
            commit.message,
            commit.author,
            commit.committer,
            commit.parents,
        ):
            continue
        rewritten[commit.sha] = _commit_tree(git, commit.tree, parents, message, author, committer)
        changed.append(commit.sha[:10])
    if rewritten:
        tip = commits[-1].sha
        git.run("update-ref", f"refs/heads/{wt.branch}", rewritten.get(tip, tip), tip)
        event(log, "prepush_reworded", branch=wt.branch, commits=changed)
    return None


def _person(who: tuple[str, str, str], identity: tuple[str, str]) -> tuple[str, str, str]:
    """A placeholder or model identity becomes the configured one (the date is kept)."""
    name, email, date = who
    if is_placeholder(name, email) and not is_placeholder(*identity):
        return (identity[0], identity[1], date)
    return who


def _commit_tree(
    git: Git,
    tree: str,
    parents: tuple[str, ...],
    message: str,
    author: tuple[str, str, str],
    committer: tuple[str, str, str],
) -> str:
    env = {  # added to git's hardened environment (services.git_guard), never os.environ
        "GIT_AUTHOR_NAME": author[0],
        "GIT_AUTHOR_EMAIL": author[1],
        "GIT_AUTHOR_DATE": author[2],
        "GIT_COMMITTER_NAME": committer[0],
        "GIT_COMMITTER_EMAIL": committer[1],
        "GIT_COMMITTER_DATE": committer[2],
    }
    args = ["commit-tree", tree, *[a for p in parents for a in ("-p", p)]]
    return git.run(*args, input=message, env=env).strip()

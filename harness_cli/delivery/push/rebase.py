"""L1 of push recovery, and the real push whose exit code is the only success.

L1 (reference, "Recovering from single operations"): "right before pushing, the harness runs
git fetch origin and git rebase origin/<branch>. A clean rebase lets the push go ahead. A
conflict or failed fetch makes L1 abort safely, list the conflicting files and pass the case to
L2. L1 can't be creative, on purpose."

The push goes to the fetch URL with an explicit refspec (``refs/heads/<case branch>``): the
worktree's ``pushurl`` is a trap for agents, and the branch ref — not a detached HEAD left in
the middle of a rebase, which can be a fast-forward that silently drops the case's own commits
— is what the case has committed.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import BaseModel, Field

from harness_cli.delivery import case_repos, secret_scan
from harness_cli.delivery.prepush import check_before_push
from harness_cli.delivery.worktrees import BRANCH_PREFIX, Worktree, mirror_lock
from harness_cli.errors import ServiceError
from harness_cli.logs import event
from harness_cli.services.git import Git, PushRejected
from harness_cli.sessions.guard import run_base, write_guard

log = logging.getLogger("harness.delivery.push")

ALWAYS_PROTECTED = frozenset({"main", "master", "develop", "production", "release"})
"""Never pushed by the harness, whatever the project's default branch is called."""
HUNK_CONTEXT = 3
HUNK_CHARS = 4000
"""Conflict text kept per file for the L2 prompt and the trail."""


class RebaseResult(BaseModel):
    """What L1 did. ``ok``: the branch now sits on ``onto`` and may be pushed."""

    ok: bool
    onto: str = ""
    """The ref rebased onto: ``origin/<case branch>`` once it exists, else ``origin/<base>``."""
    before_sha: str | None = None
    after_sha: str | None = None
    conflicts: list[str] = Field(default_factory=list)
    """Files the rebase stopped on (the rebase was aborted: none is left in progress)."""
    hunks: dict[str, str] = Field(default_factory=dict)
    """File → its conflict hunks with markers, read before the abort."""
    error: str = ""


class PushResult(BaseModel):
    """One real ``git push``. ``ok`` is its exit code 0 and nothing else."""

    ok: bool
    branch: str
    sha: str | None = None
    """The commit the push sent (the case branch's tip when it ran)."""
    forced: bool = False
    """``--force-with-lease`` on the case's own branch."""
    rejected: bool = False
    """Refused as a non-fast-forward: the remote has commits the branch lacks."""
    refused: bool = False
    """Not attempted: the harness's own policy said no (a protected branch)."""
    error: str = ""


def protected_branches(wt: Worktree) -> set[str]:
    """Branches no push may touch: the base, the remote's default, and the usual names."""
    protected = set(ALWAYS_PROTECTED) | {wt.base_branch}
    head = wt.git().head_sha("refs/remotes/origin/HEAD")
    if head is not None:
        with_name = wt.git().run("symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD")
        protected.add(with_name.removeprefix("origin/"))
    return protected


def _write_guard(wt: Worktree) -> str | None:
    """The files this branch changes against another session's exclusive reservation."""

    blocked = write_guard(wt.project, wt.path, run_base(wt))
    return "; ".join(b.render() for b in blocked[:5]) if blocked else None


def push_refusal(wt: Worktree) -> str | None:
    """Why the harness will not push ``wt.branch`` at all (None: it may)."""
    if not wt.branch.startswith(BRANCH_PREFIX):
        return f"refused: {wt.branch} is not a case branch ({BRANCH_PREFIX}…)"
    if wt.branch in protected_branches(wt):
        return f"refused: {wt.branch} is a protected branch"
    return None


def remote_tip(wt: Worktree) -> str | None:
    """``origin/<case branch>`` as of the last fetch or push."""
    return wt.git().head_sha(f"refs/remotes/origin/{wt.branch}")


def wire_tip(wt: Worktree) -> str | None:
    """The case branch's sha on the remote itself (``git ls-remote``), not as last fetched:
    the ground truth a reply gate reads before and after a run."""
    url = wt.git().remote_url("origin")
    if url is None:
        return None
    out = wt.git().run("ls-remote", url, f"refs/heads/{wt.branch}")
    return out.split()[0] if out.strip() else None


def fetch(wt: Worktree) -> None:
    """``git fetch origin`` into the case's repository (its base and its own branch), never
    two at once on one repository."""
    with mirror_lock(wt.mirror()):
        case_repos.fetch(wt.git(), wt.branch)


def pre_push_rebase(wt: Worktree, *, target: str | None = None) -> RebaseResult:
    """L1: fetch, then rebase onto ``origin/<case branch>`` (or ``origin/<base>`` before the
    first push). ``target``: the incident is a conflict with that branch (GitLab's
    ``detailed_merge_status: conflict``), so the branch is then rebased onto
    ``origin/<target>`` as well. On a conflict or a failed fetch, abort and report; never
    anything cleverer."""
    git = wt.git()
    before = git.head_sha()
    if git.rebase_in_progress() or git.merge_in_progress():
        return RebaseResult(ok=False, before_sha=before, error="a rebase or merge is in progress")
    if git.current_branch() != wt.branch:
        found = git.current_branch() or "a detached HEAD"
        return RebaseResult(ok=False, before_sha=before, error=f"HEAD is on {found}")
    try:
        fetch(wt)
    except ServiceError as exc:
        return RebaseResult(ok=False, before_sha=before, error=f"fetch failed: {exc.message}")
    onto = f"origin/{wt.branch}" if remote_tip(wt) else f"origin/{wt.base_branch}"
    result = _rebase_onto(wt, onto, RebaseResult(ok=True, onto=onto, before_sha=before))
    if not result.ok or target is None:
        return result
    if git.head_sha(f"refs/remotes/origin/{target}") is None:
        return result.model_copy(update={"ok": False, "error": f"origin/{target} not found"})
    return _rebase_onto(
        wt, f"origin/{target}", result.model_copy(update={"onto": f"origin/{target}"})
    )


def _rebase_onto(wt: Worktree, onto: str, result: RebaseResult) -> RebaseResult:
    git = wt.git()
    result = result.model_copy(update={"after_sha": git.head_sha()})
    if git.is_ancestor(onto, "HEAD"):
        return result
    try:
        clean = git.rebase(onto)
    except ServiceError as exc:
        _abort(git)
        return result.model_copy(update={"ok": False, "error": f"rebase failed: {exc.message}"})
    if not clean:
        conflicts = git.unmerged_paths()
        hunks = {p: h for p in conflicts if (h := marker_hunks(wt.path / p))}
        _abort(git)
        event(
            log, "push_l1_conflict", logging.WARNING, branch=wt.branch, onto=onto, files=conflicts
        )
        return result.model_copy(
            update={
                "ok": False,
                "conflicts": conflicts,
                "hunks": hunks,
                "error": f"rebase onto {onto} conflicts in: {', '.join(conflicts)}",
                "after_sha": git.head_sha(),
            }
        )
    return result.model_copy(update={"after_sha": git.head_sha()})


def _abort(git: Git) -> None:
    if git.rebase_in_progress():
        git.rebase_abort()


def real_push(wt: Worktree, *, lease: str | None = None) -> PushResult:
    """Push ``refs/heads/<case branch>`` to origin's URL. ``lease``: push with
    ``--force-with-lease=refs/heads/<branch>:<lease>`` (the caller decides when that is
    allowed; a protected branch is refused here whatever the caller asked)."""
    git = wt.git()
    # The pre-push point: every check on what may leave goes here, one line each.
    refusal = push_refusal(wt) or check_before_push(wt) or _write_guard(wt)
    if refusal is not None:
        return PushResult(ok=False, branch=wt.branch, refused=True, error=refusal)

    found = secret_scan.scan_branch(wt.path, wt.branch, wt.base_branch, base_sha=wt.base_sha)
    if found:  # every push, L2's too: a secret the healer added never leaves either
        error = "refused by the secret scan: " + ", ".join(f.render() for f in found[:5])
        return PushResult(ok=False, branch=wt.branch, refused=True, error=error)
    url = git.remote_url("origin")
    sha = git.head_sha(f"refs/heads/{wt.branch}")
    if url is None or sha is None:
        error = "no origin remote" if url is None else f"branch {wt.branch} has no commit"
        return PushResult(ok=False, branch=wt.branch, error=error)
    ref = f"refs/heads/{wt.branch}"
    try:
        if lease is None:
            git.push(url, wt.branch)
        else:
            git.run("push", "--porcelain", f"--force-with-lease={ref}:{lease}", url, f"{ref}:{ref}")
    except ServiceError as exc:
        rejected = isinstance(exc, PushRejected) or "stale info" in exc.message
        event(log, "push_failed", logging.WARNING, branch=wt.branch, error=exc.message)
        return PushResult(
            ok=False, branch=wt.branch, sha=sha, forced=lease is not None,
            rejected=rejected, error=exc.message,
        )  # fmt: skip
    git.run("update-ref", f"refs/remotes/origin/{wt.branch}", sha)
    event(log, "push_ok", branch=wt.branch, sha=sha, forced=lease is not None)
    return PushResult(ok=True, branch=wt.branch, sha=sha, forced=lease is not None)


def marker_hunks(path: Path) -> str:
    """The conflict regions of a file (markers plus a few lines around), or '' when none."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    keep: set[int] = set()
    start: int | None = None
    for index, line in enumerate(lines):
        if line.startswith("<<<<<<<"):
            start = index
        elif line.startswith(">>>>>>>") and start is not None:
            keep.update(
                range(max(0, start - HUNK_CONTEXT), min(len(lines), index + 1 + HUNK_CONTEXT))
            )
            start = None
    out: list[str] = []
    previous = -2
    for index in sorted(keep):
        if index != previous + 1 and out:
            out.append("…")
        out.append(lines[index])
        previous = index
    return "\n".join(out)[:HUNK_CHARS]

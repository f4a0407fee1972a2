"""Commit and push the case workspaces to their private git remote — the durable state layer.

A second machine that clones the remote picks up the same cases (reference, Layer 3). Every
git operation on the workspace runs under one file lock, because two git writers in one
repository corrupt each other through ``index.lock`` (reference: "a stuck session start
overlapped with a meta-enricher run"). Every step is safe to kill: the next call removes a
stale ``index.lock``, aborts a rebase or merge a killed run left behind, and pushes a commit
an earlier run could not push. A local commit is never dropped: when histories conflict, both
are kept by a merge and the local side wins the conflicting hunks.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness_cli.errors import ConfigError, HarnessError, InputError, LockHeld, ServiceError
from harness_cli.faults import crash_point
from harness_cli.logs import event, redact
from harness_cli.redaction import redact_bytes
from harness_cli.services.git import Git, PushRejected
from harness_cli.state import nofollow
from harness_cli.workspace.case_merge import merge_json

log = logging.getLogger(__name__)

LOCK_NAME = "workspace-git.lock"
REMOTE = "origin"
DEFAULT_BRANCH = "main"
LOCK_TIMEOUT = 600.0
"""Seconds to wait for another sync of the same workspace; generous, since a sync that is
pushing over a slow network is legitimately slow, and giving up only delays the commit."""
FRESH_INDEX_LOCK_WAIT = 5.0
"""Seconds to wait for a young ``index.lock`` (an outside git still working) to go away."""


@dataclass
class SyncResult:
    """What one :func:`sync` did."""

    committed: str | None = None
    """This sync's commit (its sha after any rebase); None when nothing had changed."""
    pushed: bool = False
    attempts: int = 0
    """Push attempts made (0 when there was nothing to push)."""
    conflicts: list[str] = field(default_factory=list)
    """Paths both machines changed in the same hunks; the local side was kept."""
    refused: list[str] = field(default_factory=list)
    """Local case transitions the merge with another machine's refused (one line each)."""
    skipped: str | None = None
    """Why nothing was pushed, e.g. ``"no remote: local-only workspace"``."""
    head: str | None = None
    left_out: list[str] = field(default_factory=list)
    """State files that do not parse, kept out of the commit (#34 item 3)."""


@dataclass
class PullResult:
    """What one :func:`pull` did."""

    before: str | None = None
    after: str | None = None
    conflicts: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    skipped: str | None = None

    @property
    def updated(self) -> bool:
        return self.before != self.after


@dataclass
class EnsureResult:
    """What :func:`ensure_repo` did: ``existing``, ``initialized``, ``cloned`` or ``adopted``
    (local files committed on top of the remote's history)."""

    action: str
    head: str | None
    pushed: bool = False


@contextmanager
def workspace_lock(lock_dir: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Serialize git on one workspace across threads and processes (flock: a killed holder
    releases it with its process)."""
    from filelock import FileLock, Timeout

    lock_dir.mkdir(parents=True, exist_ok=True)
    path = lock_dir / LOCK_NAME
    lock = FileLock(path, timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise LockHeld(
            f"workspace git lock {path} still held after {timeout:.0f}s",
            hint="another sync is running or hung; check for a stuck git process",
        ) from None
    try:
        yield
    finally:
        lock.release()


def sync(
    workspace: Path,
    message: str,
    *,
    paths: Sequence[Path] | None = None,
    lock_dir: Path,
    max_push_attempts: int = 3,
    stale_lock_seconds: float = 60.0,
    lock_timeout: float = LOCK_TIMEOUT,
    fresh_lock_wait: float = FRESH_INDEX_LOCK_WAIT,
) -> SyncResult:
    """Commit the changes under ``paths`` (the whole tree when None) and push them."""
    if max_push_attempts < 1:
        raise ConfigError(f"max_push_attempts={max_push_attempts} must be at least 1")
    git = Git(workspace)
    with workspace_lock(lock_dir, lock_timeout):
        _prepare(git, stale_lock_seconds, fresh_lock_wait)
        specs = None if paths is None else _pathspecs(git, workspace, paths)
        git.add(specs)
        if scrub_staged(git, workspace):
            git.add(specs)
        left_out = unstage_unparsable(git, workspace)
        result = SyncResult(committed=git.commit(message), left_out=left_out)
        result.head = git.head_sha()
        if result.committed:
            crash_point("workspace.committed")
        if not git.has_remote(REMOTE):
            result.skipped = "no remote: local-only workspace"
            return result
        _publish(git, result, max_push_attempts)
        if result.pushed:
            crash_point("workspace.pushed")
        return result


def unstage_unparsable(git: Git, workspace: Path) -> list[str]:
    """#34 item 3: a state file that does not parse never leaves with a commit. Before, the
    next poll-slack that committed anything pushed a corrupt case.json to the shared
    workspace, and the error's fix (``git checkout -- case.json``) restored the corrupt copy.
    Such a file stays in the working tree, unstaged (its last good version stays in HEAD for
    :func:`last_good`); the run that reads it names it and that version."""
    names = git.run("diff", "--cached", "--name-only", "--diff-filter=AM", "-z").split("\0")
    bad: list[str] = []
    for name in filter(None, names):
        if not name.endswith(".json"):
            continue
        path = workspace / name
        if path.is_symlink():
            continue
        try:
            json.loads(path.read_bytes())
        except OSError:
            continue
        except ValueError:
            bad.append(name)
    if not bad:
        return []
    if git.head_sha() is None:
        git.run("rm", "-q", "--cached", "--", *bad)
    else:
        git.run("reset", "-q", "--", *bad)
    event(log, "workspace_unparsable_left_out", logging.ERROR, paths=bad)
    return bad


def last_good(
    workspace: Path,
    rel: str,
    *,
    look_back: int = 50,
    accept: Callable[[str], object] = json.loads,
) -> str | None:
    """The newest commit whose copy of ``rel`` parses as JSON (None: none within
    ``look_back`` commits, or no history). ``accept`` raises ValueError for a copy that does
    not do (``admin: repair`` asks for a valid case record, not just JSON)."""
    git = Git(workspace)
    try:
        shas = git.run("log", f"-{look_back}", "--format=%H", "--", rel).split()
    except HarnessError:
        return None
    for sha in shas:
        try:
            accept(git.run("show", f"{sha}:{rel}"))
        except (HarnessError, ValueError):
            continue
        return sha
    return None


def scrub_staged(git: Git, workspace: Path) -> list[str]:
    """Case files leave with the push: what an agent (or anything but the harness's own atomic
    writes) put in the workspace passes the one redaction point before it is committed.
    Returns the paths rewritten."""

    names = git.run("diff", "--cached", "--name-only", "--diff-filter=AM", "-z").split("\0")
    rewritten: list[str] = []
    for name in filter(None, names):
        path = workspace / name
        if path.is_symlink():
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        cleaned = redact_bytes(data)
        if cleaned != data:
            mode = path.stat().st_mode
            path.chmod(mode | 0o200)  # message.json is read-only: scrubbed all the same
            nofollow.write(workspace, path, cleaned, atomic=False)  # never through a link
            path.chmod(mode)
            rewritten.append(name)
    if rewritten:
        event(log, "workspace_secrets_masked", logging.WARNING, paths=rewritten)
    return rewritten


def pull(
    workspace: Path,
    lock_dir: Path,
    *,
    stale_lock_seconds: float = 60.0,
    lock_timeout: float = LOCK_TIMEOUT,
    fresh_lock_wait: float = FRESH_INDEX_LOCK_WAIT,
) -> PullResult:
    """Bring in what other machines pushed (fast-forward, or rebase of unpushed local work).

    Uncommitted local files are stashed around the update and put back.
    """
    git = Git(workspace)
    with workspace_lock(lock_dir, lock_timeout):
        _prepare(git, stale_lock_seconds, fresh_lock_wait)
        result = PullResult(before=git.head_sha())
        result.after = result.before
        if not git.has_remote(REMOTE):
            result.skipped = "no remote: local-only workspace"
            return result
        branch = _branch(git)
        git.fetch(REMOTE)
        upstream = f"refs/remotes/{REMOTE}/{branch}"
        if git.head_sha(upstream) is None:
            result.skipped = f"the remote has no branch {branch} yet"
        elif result.before and git.is_ancestor(upstream, "HEAD"):
            result.skipped = "already up to date"
        else:
            result.conflicts = _integrate(git, upstream, result.refused)
            result.after = git.head_sha()
        return result


def ensure_repo(
    workspace: Path,
    remote_url: str | None = None,
    *,
    lock_dir: Path,
    branch: str = DEFAULT_BRANCH,
    lock_timeout: float = LOCK_TIMEOUT,
) -> EnsureResult:
    """Make ``workspace`` a repository with at least one commit, tied to ``remote_url``.

    A remote with history is cloned (or, when local files already exist, its history is
    adopted and the local files are committed on top); an empty remote receives the initial
    commit. Safe to run again: an existing repository is left as it is.
    """
    if remote_url:
        refuse_credentials(remote_url)
    git = Git(workspace)
    with workspace_lock(lock_dir, lock_timeout):
        if git.is_repo():
            action = "existing"
            _prepare(git, 60.0, FRESH_INDEX_LOCK_WAIT)
        elif remote_url and _is_empty_dir(workspace) and _remote_has_history(workspace, remote_url):
            _clone(remote_url, workspace)
            _check_out_shared_branch(git, branch)
            return EnsureResult("cloned", git.head_sha())
        else:
            git.init(branch)
            action = "initialized"
        if remote_url:
            _ensure_origin(git, remote_url)
        if git.head_sha() is None:
            action = _first_commit(git, branch)
        result = EnsureResult(action, git.head_sha())
        # An existing repository is left to sync, which pushes whatever is unpushed: starting
        # work offline must not fail here.
        if action != "existing" and git.has_remote(REMOTE):
            published = SyncResult(head=result.head)
            _publish(git, published, max_push_attempts=3)
            result.pushed, result.head = published.pushed, published.head
        return result


def refuse_credentials(url: str) -> None:
    """A remote URL that carries a password or token (``https://oauth2:glpat-…@host/…``) is
    refused (#28 R9): git hands it to its helpers on their command lines, where any process on
    the machine reads it, and keeps it in .git/config."""
    parts = urllib.parse.urlsplit(url)
    if parts.password:
        raise ConfigError(
            f"the workspace remote {redact(url)} carries a credential in its URL",
            hint="give it without one (https://host/group/repo.git or an SSH URL) and let git "
            "find the credential (a credential helper, ~/.git-credentials or an SSH key)",
        )


# -- steps -----------------------------------------------------------------------------------


def _prepare(git: Git, stale_lock_seconds: float, fresh_lock_wait: float) -> None:
    """Check the repository and undo what a killed run left behind."""
    if not git.is_repo():
        raise ConfigError(
            f"{git.repo_dir} is not a git repository",
            hint="create it with gitsync.ensure_repo (or `git init` and a first commit)",
        )
    index_lock, rebase_merge, rebase_apply, merge_head = git.git_paths(
        "index.lock", "rebase-merge", "rebase-apply", "MERGE_HEAD"
    )
    _clear_index_lock(index_lock, stale_lock_seconds, fresh_lock_wait)
    if rebase_merge.exists() or rebase_apply.exists():  # git.rebase_in_progress, one call fewer
        log.warning("aborting a rebase left in progress in %s by an interrupted run", git.repo_dir)
        git.rebase_abort()
    if merge_head.exists():  # git.merge_in_progress
        log.warning("aborting a merge left in progress in %s by an interrupted run", git.repo_dir)
        git.merge_abort()


def _clear_index_lock(path: Path, stale_seconds: float, wait: float) -> None:
    """Remove an ``index.lock`` older than ``stale_seconds``; wait a little for a young one.

    We hold the workspace lock, so no sync of ours is inside git; a young lock belongs to an
    outside git, an old one to a crashed one. Age is measured against the OS clock on purpose:
    the file's mtime comes from it, and a pinned HARNESS_NOW would make a live lock look old.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return
        if age >= stale_seconds:
            log.warning("removing stale %s (%.0fs old, left by a crashed git)", path, age)
            path.unlink(missing_ok=True)
            return
        if time.monotonic() >= deadline:
            raise LockHeld(
                f"{path} is held by another git process ({age:.0f}s old)",
                hint=f"let it finish; it is removed automatically once {stale_seconds:.0f}s old",
            )
        time.sleep(0.1)


def _pathspecs(git: Git, workspace: Path, paths: Sequence[Path]) -> list[str]:
    """Paths relative to the workspace; gone-and-untracked ones dropped (nothing to stage)."""
    root = Path(os.path.normpath(workspace.absolute()))
    specs: list[str] = []
    for path in paths:
        full = Path(os.path.normpath(path if path.is_absolute() else root / path))
        if full != root and root not in full.parents:
            raise InputError(f"{path} is outside the workspace {workspace}")
        rel = full.relative_to(root).as_posix() or "."
        if full.exists() or git.is_tracked(rel):
            specs.append(rel)
    return specs


def _branch(git: Git) -> str:
    branch = git.current_branch()
    if branch is None:
        raise ServiceError(
            f"the workspace {git.repo_dir} has a detached HEAD",
            hint=f"check out its branch (git -C {git.repo_dir} switch {DEFAULT_BRANCH})",
        )
    return branch


def _publish(git: Git, result: SyncResult, max_push_attempts: int) -> None:
    """Push the branch; on a rejection integrate the remote and retry, within the budget."""
    branch = _branch(git)
    upstream = f"refs/remotes/{REMOTE}/{branch}"
    known = git.head_sha(upstream)
    if result.head is None or (known and git.is_ancestor("HEAD", known)):
        result.skipped = "nothing to push"
        return
    safe = f"commit {result.head[:12]} is safe locally and will be pushed by the next sync"
    try:
        for attempt in range(1, max_push_attempts + 1):
            result.attempts = attempt
            try:
                git.push(REMOTE, branch)
            except PushRejected:
                if attempt == max_push_attempts:
                    break
                log.info("push of %s rejected (attempt %d); integrating", git.repo_dir, attempt)
                git.fetch(REMOTE)
                result.conflicts += _integrate(git, upstream, result.refused)
                result.head = git.head_sha()
                if result.committed and not git.is_ancestor(result.committed, "HEAD"):
                    # A rebase rewrote our commit (the tip it was) into the new tip.
                    result.committed = result.head
                continue
            result.pushed = True
            return
    except ServiceError as exc:
        raise ServiceError(f"{exc.message}; {safe}", hint=exc.hint) from exc
    raise ServiceError(
        f"push of {git.repo_dir} rejected {max_push_attempts} times (the remote kept moving); "
        f"{safe}",
        hint="nothing is lost; run the sync again",
    )


def _integrate(git: Git, upstream: str, refused: list[str] | None = None) -> list[str]:
    """Put local work on top of ``upstream``; return the paths whose conflicts kept the local
    side. Rebase first (a linear history); on a conflict keep both histories with a merge.
    JSON files both sides changed (case.json, the shared maps) are merged by meaning, never by
    hunks (:mod:`harness_cli.workspace.case_merge`); a local case transition that merge refused
    is added to ``refused``."""
    shared = _both_changed_json(git, upstream)
    has_merges = bool(git.run("rev-list", "--merges", "-n", "1", f"{upstream}..HEAD"))
    # Rebasing an unpushed merge would drop it and replay the conflict it resolved; a rebase
    # would also replay a case.json change as a text patch over the other machine's.
    if not has_merges and not shared:
        if git.rebase(upstream):
            return []
        git.rebase_abort()
    conflicts: list[str] = []
    if git.merge(upstream):
        if not shared:
            return []
    else:
        # A trial merge names the conflicting paths, which -X ours would resolve silently.
        conflicts = git.unmerged_paths()
        git.merge_abort()
        if not git.merge(upstream, strategy_option="ours"):
            _keep_ours(git, git.unmerged_paths())
            git.conclude_merge()
    merged = _merge_by_meaning(git, shared, refused if refused is not None else [])
    kept = [p for p in conflicts if p not in merged]
    if kept:
        log.warning(
            "conflict merging %s into %s: kept the local side of %s; both histories kept",
            upstream,
            git.repo_dir,
            ", ".join(kept),
        )
    return kept


def _both_changed_json(git: Git, upstream: str) -> list[str]:
    """JSON files changed since the merge base on both the local and the remote side."""
    base = git.merge_base("HEAD", upstream)
    if not base:
        return []

    def changed(ref: str) -> set[str]:
        out = git.run("diff", "--name-only", "-z", base, ref, "--", "*.json")
        return {p for p in out.split("\0") if p}

    return sorted(changed("HEAD") & changed(upstream))


def _merge_by_meaning(git: Git, shared: list[str], refused: list[str]) -> list[str]:
    """Rewrite the merge commit's version of each ``shared`` file with its meaning-merge;
    returns the files so merged."""
    if not shared:
        return []

    base = git.merge_base("HEAD^1", "HEAD^2")
    rewritten = []
    for rel in shared:
        ours = git.show(f"HEAD^1:{rel}")
        theirs = git.show(f"HEAD^2:{rel}")
        if ours is None or theirs is None:
            continue  # deleted on one side: the merge's handling stands
        merged = merge_json(rel, git.show(f"{base}:{rel}") if base else None, ours, theirs)
        if merged is None:
            continue
        path = git.repo_dir / rel
        mode = path.stat().st_mode if path.exists() else 0o644
        if path.exists():
            path.chmod(mode | 0o200)
        nofollow.write(git.repo_dir, path, (merged.text + "\n").encode("utf-8"), atomic=False)
        path.chmod(mode)
        refused += merged.refused
        rewritten.append(rel)
    if rewritten:
        git.run("add", "--", *rewritten)
        git.amend()
        event(log, "workspace_merged_by_meaning", paths=rewritten, refused=refused)
    return rewritten


def _keep_ours(git: Git, paths: list[str]) -> None:
    """Resolve what ``-X ours`` cannot (modify/delete, …) by taking the local file, or its
    absence."""
    for path in paths:
        stages = {line.split()[2] for line in git.run("ls-files", "-s", "--", path).splitlines()}
        if "2" in stages:
            git.run("checkout", "--ours", "--", path)
            git.run("add", "--", path)
        else:
            git.run("rm", "-q", "-f", "--ignore-unmatch", "--", path)


# -- ensure_repo helpers ---------------------------------------------------------------------


def _is_empty_dir(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def _remote_has_history(workspace: Path, url: str) -> bool:
    probe = Git(workspace.parent)
    workspace.parent.mkdir(parents=True, exist_ok=True)
    return bool(probe.remote_heads(url))


def _clone(url: str, workspace: Path) -> None:
    """Clone next to the workspace, then rename: a killed clone never leaves a half tree."""
    staging = workspace.with_name(f".{workspace.name}.cloning")
    shutil.rmtree(staging, ignore_errors=True)
    Git.clone(url, staging)
    if workspace.exists():
        workspace.rmdir()
    staging.rename(workspace)


def _shared_branch(git: Git, heads: dict[str, str], branch: str) -> str:
    """The branch the other machines push: the remote's HEAD when it names a branch that exists,
    else ``branch``, else the only (or first) one. A bare remote made by a git that defaults to
    ``master`` has a HEAD naming a branch nobody pushes; following it would fork the history."""
    named = git.remote_default_branch(REMOTE)
    if named in heads:
        return str(named)
    return branch if branch in heads else min(heads)


def _check_out_shared_branch(git: Git, branch: str) -> None:
    """After a clone: when the remote's HEAD led nowhere (an unborn branch, nothing checked
    out), check out the branch that carries the history."""
    if git.head_sha() is not None:
        return
    heads = git.remote_heads(REMOTE)
    if not heads:
        return
    name = _shared_branch(git, heads, branch)
    log.warning("the workspace remote's HEAD names no pushed branch; using %s", name)
    git.run("checkout", "-q", "-B", name, f"refs/remotes/{REMOTE}/{name}")


def _ensure_origin(git: Git, url: str) -> None:
    current = git.remote_url(REMOTE)
    if current is None:
        git.add_remote(REMOTE, url)
    elif current != url:
        raise ConfigError(
            redact(f"{git.repo_dir} already pushes to {current}, not {url}"),
            hint=f"fix it with `git -C {git.repo_dir} remote set-url {REMOTE} <url>`",
        )


def _first_commit(git: Git, branch: str) -> str:
    """Give an unborn repository its first commit, on top of the remote's history if any."""
    heads = git.remote_heads(REMOTE) if git.has_remote(REMOTE) else {}
    if heads:
        name = _shared_branch(git, heads, branch)
        git.fetch(REMOTE)
        git.run("symbolic-ref", "HEAD", f"refs/heads/{name}")
        # Mixed reset: the branch takes the remote's history, local files stay as changes.
        git.run("reset", "-q", f"refs/remotes/{REMOTE}/{name}")
        git.add()
        git.commit("Add the local files to the case workspace")
        return "adopted"
    git.add()
    git.commit("Initialize the case workspace", allow_empty=True)
    return "initialized"

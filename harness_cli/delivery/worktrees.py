"""worktree_manager: one git worktree per case, from a per-repo mirror no agent ever sees.

The reference's old design had the agent emit a diff and the harness ``git apply`` it in the
main checkout: a concurrent commit broke the diff headers, and a half-applied patch left the
main tree dirty for the next case. Here each case gets ``<root>/case-<case_id>-<stamp>/`` on its
own branch ``harness/<case_id>``; the agent edits files there with its own tools and the harness
commits and pushes. A failure stays inside that worktree.

The "main checkout" is a bare mirror (``<root>/.mirrors/<group>__<project>.git``): it has no
working tree to dirty, only the harness fetches into it, and no agent may write it. Each case's
worktree hangs off the case's own bare repository (:mod:`case_repos`), which borrows the
mirror's objects and holds only the case's branch and its base: a case never sees another's.
That repository's config enables ``extensions.worktreeConfig`` so each worktree carries its own
git identity and a push trap (``remote.origin.pushurl``): an agent's ``git push`` fails, and
only the harness pushes, to the fetch URL, in ``delivery.push``. Every git command the harness
runs in a worktree goes through :func:`git_for`: the ``.git`` file must name the git dir the
harness made for it (#28 R1), or nothing runs.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock, paths
from harness_cli.delivery import case_repos
from harness_cli.delivery.identity import commit_identity
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.errors import ConfigError, ServiceError
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.services import git_guard
from harness_cli.services.git import Git
from harness_cli.state.locks import hold
from harness_cli.state.store import JsonFile

log = logging.getLogger("harness.delivery.worktrees")

BRANCH_PREFIX = "harness/"
"""Every case branch starts with this; the harness pushes no other branch."""
PUSH_TRAP_URL = "/nonexistent/only-the-harness-pushes-this-branch"
"""The worktree's ``remote.origin.pushurl``: a ``git push origin …`` typed by an agent fails
here, so the push whose exit code counts is always the harness's own."""
MIRRORS_DIR = ".mirrors"
NO_CASE_BRANCHES = f"^refs/heads/{BRANCH_PREFIX}*"
"""The mirror's negative refspec: it fetches every branch but the case branches."""
IMPROVE_SUFFIX = ".improve"
"""The key suffix of a case's worktree of a second repository (the harness's own)."""
LOCK_TIMEOUT_S = 600.0
"""A mirror fetch may be slow; a second case on the same repo waits rather than failing."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Worktree:
    """One case's checkout. ``base_sha`` is ``origin/<base_branch>`` when it was created."""

    path: Path
    branch: str
    base_branch: str
    base_sha: str
    project: str
    case_id: str

    def git(self) -> Git:
        return git_for(self.path)

    def mirror(self) -> Path:
        """The bare repository this worktree was added from (its git common dir): the case's
        own (:mod:`case_repos`); for a worktree an older harness made, the shared mirror."""
        common = Path(self.git().run("rev-parse", "--git-common-dir"))
        return common if common.is_absolute() else (self.path / common).resolve()


# -- the registry ($HARNESS_HOME/worktrees.json) -------------------------------------------------


class WorktreeRecord(BaseModel):
    """One live worktree, as ``create`` made it."""

    model_config = ConfigDict(extra="allow")

    case_id: str
    path: str
    """Absolute path of the worktree."""
    branch: str
    base_branch: str
    base_sha: str
    project: str
    """``group/project`` on GitLab."""
    repo_url: str
    """The remote the mirror fetches from (GitLab's ``http_url_to_repo``)."""
    mirror: str
    """Absolute path of the bare mirror."""
    repo: str = ""
    """Absolute path of the case's own repository (empty: an older worktree of the mirror)."""
    created_at: datetime
    case: str = ""
    """The case the worktree works for (the registry key may differ: ``<case>.improve`` for
    the harness's own repo while the ticket's worktree still exists). Empty in records written
    before the field existed: the key is the case then."""

    def owner(self) -> str:
        return self.case or self.case_id

    def worktree(self) -> Worktree:
        return Worktree(
            path=Path(self.path),
            branch=self.branch,
            base_branch=self.base_branch,
            base_sha=self.base_sha,
            project=self.project,
            case_id=self.case_id,
        )


class WorktreeRegistry(BaseModel):
    """``worktrees.json``: case id → its worktree."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    worktrees: dict[str, WorktreeRecord] = Field(default_factory=dict)


def registry() -> JsonFile[WorktreeRegistry]:
    return JsonFile(paths.state_file("worktrees.json"), WorktreeRegistry)


# -- naming and locking -------------------------------------------------------------------------


def case_branch(case_id: str) -> str:
    return BRANCH_PREFIX + _safe(case_id)


def mirror_path(root: Path, project_path: str) -> Path:
    """``<root>/.mirrors/<group>__<project>.git`` (nested groups joined the same way)."""
    parts = [_safe(p) for p in project_path.strip("/").split("/") if p]
    if not parts:
        raise ConfigError(f"project path {project_path!r} is empty", hint="use group/project")
    return root / MIRRORS_DIR / ("__".join(parts) + ".git")


@contextmanager
def mirror_lock(mirror: Path) -> Iterator[None]:
    """Fetches into one mirror never overlap (two cases, or two cron runs, on one repo)."""
    with hold(f"mirror-{mirror.name}", timeout=LOCK_TIMEOUT_S, what=f"mirror {mirror}"):
        yield


def git_for(path: Path) -> Git:
    """Git for the worktree at ``path``, checked before every command: its ``.git`` must name
    the git dir that the repository the harness recorded for it keeps for it (registry, then
    the repository's own back-pointers); any other is refused (``git_guard.TamperedRepo``).
    A path the registry does not know gets the generic check of :func:`git_guard.verify_link`."""
    path = Path(path)
    if not path.is_dir():  # gone (the operator deleted it): nothing there to run git on
        return Git(path)
    real = os.path.realpath(path)
    for record in registry().read().worktrees.values():
        if os.path.realpath(record.path) != real:
            continue
        common = Path(record.repo or record.mirror)
        gitdir = case_repos.gitdir_of(common, path)
        if gitdir is None:
            raise git_guard.TamperedRepo(
                f"refusing to run git in {path}: its repository {common} keeps no git dir for it",
                hint="the worktree is broken or was replaced; remove the folder and run again",
            )
        return Git(path, gitdir=gitdir, common=common)
    return Git(path)


def _safe(text: str) -> str:
    cleaned = _UNSAFE.sub("-", text).strip(".-")
    if not cleaned:
        raise ConfigError(f"{text!r} cannot name a branch or a folder")
    return cleaned


# -- create --------------------------------------------------------------------------------------


def ensure_mirror(root: Path, repo_url: str, project_path: str) -> Git:
    """The project's bare mirror, created on first use and fetched now. Hold ``mirror_lock``."""
    path = mirror_path(root, project_path)
    mirror = Git(path)
    if not (path / "HEAD").exists():
        path.mkdir(parents=True, exist_ok=True)
        mirror.run("init", "-q", "--bare")
        # worktreeConfig makes every worktree read core.bare from the common config unless it
        # moves to the mirror's own config.worktree; left there, each worktree would act bare.
        mirror.run("config", "extensions.worktreeConfig", "true")
        mirror.run("config", "--unset", "core.bare")
        mirror.run("config", "--worktree", "core.bare", "true")
        mirror.run("remote", "add", "origin", repo_url)
    elif mirror.remote_url("origin") != repo_url:
        mirror.run("remote", "set-url", "origin", repo_url)
    if mirror.run("config", "--default", "", "--get", "gc.auto") != "0":
        mirror.run("config", "gc.auto", "0")  # case repositories borrow its objects
    # never the case branches: their objects would be readable to every case that borrows
    # the mirror's (each case fetches its own branch into its own repository)
    specs = mirror.run("config", "--get-all", "remote.origin.fetch").split()
    if NO_CASE_BRANCHES not in specs:
        mirror.run("config", "--add", "remote.origin.fetch", NO_CASE_BRANCHES)
    mirror.run("fetch", "-q", "--prune", "origin")
    with suppress(ServiceError):  # the remote may not advertise HEAD; protection still holds
        mirror.run("remote", "set-head", "origin", "--auto")
    return mirror


def worktree_key(case_id: str, project_path: str, *, branch: str | None = None) -> str:
    """The registry key (and branch suffix) of the case's worktree of ``project_path``: the
    case id itself, unless the case already has a worktree of another repository (the ticket's,
    while its improvement MR goes to the harness repo) — then ``<case>.improve``. An existing
    MR's ``harness/…`` branch names its key outright."""
    if branch and branch.startswith(BRANCH_PREFIX + _safe(case_id)):
        return branch.removeprefix(BRANCH_PREFIX)
    for key in (case_id, f"{case_id}{IMPROVE_SUFFIX}"):
        record = registry().read().worktrees.get(key)
        if record is None or record.project == project_path:
            return key
    return f"{case_id}{IMPROVE_SUFFIX}"


def create(
    case_id: str,
    repo_url: str,
    project_path: str,
    base_branch: str,
    *,
    thresholds: DeliveryThresholds | None = None,
    identity: tuple[str, str] | None = None,
    case: str | None = None,
) -> Worktree:
    """The worktree registered as ``case_id`` on ``harness/<case_id>``: the existing one when
    there is one; else a new one, from the remote branch when it exists (a re-run keeps its
    pushed commits), from a local branch a pruned worktree left (unpushed commits are never
    dropped), else fresh from ``origin/<base_branch>``. ``identity``: the commits' author
    (default: :func:`identity.commit_identity`); it is (re)applied to an existing worktree too.
    ``case``: the case it works for, when ``case_id`` is a key like ``<case>.improve``."""

    th = thresholds or DeliveryThresholds()
    identity = identity or commit_identity(th)
    root = th.root()
    branch = case_branch(case_id)
    with hold(f"worktree-{_safe(case_id)}", timeout=LOCK_TIMEOUT_S, what=f"worktree of {case_id}"):
        existing = for_case(case_id)
        if existing is not None:
            _set_identity(existing.git(), identity)
            return existing
        mirror_dir = mirror_path(root, project_path)
        path = root / f"case-{_safe(case_id)}-{clock.stamp()}"
        with mirror_lock(mirror_dir):
            mirror = ensure_mirror(root, repo_url, project_path)
            repo = case_repos.ensure(root, mirror, _safe(case_id), repo_url, base_branch, branch)
        repo.run("worktree", "prune")
        base_sha = repo.head_sha(f"refs/remotes/origin/{base_branch}")
        if base_sha is None:
            raise ServiceError(
                f"branch {base_branch!r} does not exist on {project_path}",
                hint="check the project's default branch in projects.yaml",
            )
        orphan = _orphan(repo, branch, root / f"case-{_safe(case_id)}-")
        source = "adopted" if orphan else _checkout_source(repo, branch, base_branch)
        if orphan is not None:  # #20 p4: a run died between `worktree add` and its record
            path = orphan
        elif source is None:
            repo.run("worktree", "add", "-q", str(path), branch)
        else:  # no upstream: a bare `git push` must never find a branch to go to
            repo.run("worktree", "add", "-q", "--no-track", "-b", branch, str(path), source)
        crash_point("worktree.added")
        gitdir = case_repos.gitdir_of(repo.repo_dir, path)
        wt = Git(path, gitdir=gitdir, common=repo.repo_dir)
        _set_identity(wt, identity)
        wt.run("config", "--worktree", "remote.origin.pushurl", PUSH_TRAP_URL)
        record = WorktreeRecord(
            case_id=case_id,
            path=str(path),
            branch=branch,
            base_branch=base_branch,
            base_sha=base_sha,
            project=project_path,
            repo_url=repo_url,
            mirror=str(mirror_dir),
            repo=str(repo.repo_dir),
            created_at=clock.now(),
            case=case or case_id,
        )
        with registry().update() as state:
            state.worktrees[case_id] = record
        event(log, "worktree_created", case_id=case_id, path=str(path), source=source or branch)
        return record.worktree()


def apply_identity(wt: Worktree, thresholds: DeliveryThresholds) -> None:
    """(Re)apply the configured commit identity to an existing worktree."""

    _set_identity(wt.git(), commit_identity(thresholds))


def _set_identity(git: Git, identity: tuple[str, str]) -> None:
    for key, value in zip(("user.name", "user.email"), identity, strict=True):
        if git.run("config", "--worktree", "--default", "", "--get", key) != value:
            git.run("config", "--worktree", key, value)


def _orphan(repo: Git, branch: str, prefix: Path) -> Path | None:
    """A worktree of the case's repository that has ``branch`` checked out but no record (its
    run was killed before it wrote one): adopted, since ``worktree add`` of that branch would
    fail ("already checked out") for every later run — but only a folder where the harness
    puts the case's worktrees (``prefix…``): an entry an agent forged names anything."""
    current: Path | None = None
    for line in repo.run("worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            current = Path(line.removeprefix("worktree "))
        elif line == f"branch refs/heads/{branch}" and current is not None and current.exists():
            ours = current.parent == prefix.parent and current.name.startswith(prefix.name)
            return current if ours else None
    return None


def _checkout_source(mirror: Git, branch: str, base_branch: str) -> str | None:
    """What ``harness/<case>`` starts from; None: the local branch as it is."""
    remote = mirror.head_sha(f"refs/remotes/origin/{branch}")
    local = mirror.head_sha(f"refs/heads/{branch}")
    if local is None:
        return f"refs/remotes/origin/{branch}" if remote else f"refs/remotes/origin/{base_branch}"
    if remote is not None and mirror.is_ancestor(local, remote):
        mirror.run("branch", "-f", branch, remote)  # catch up; nothing of ours is lost
    return None


# -- look up and remove ---------------------------------------------------------------------------


def for_case(case_id: str) -> Worktree | None:
    """The case's worktree when it is registered and still on disk."""
    record = registry().read().worktrees.get(case_id)
    if record is None or not git_for(Path(record.path)).is_repo():
        return None
    return record.worktree()


def for_case_repo(case_id: str, project_path: str) -> Worktree | None:
    """The case's worktree of that repository, whatever its key, when still on disk."""
    for record in registry().read().worktrees.values():
        mine = record.owner() == case_id and record.project == project_path
        if mine and git_for(Path(record.path)).is_repo():
            return record.worktree()
    return None


def keys_for_case(case_id: str, project_path: str | None = None) -> list[str]:
    """Registry keys of the case's worktrees (of one repository, when given)."""
    return [
        key
        for key, record in registry().read().worktrees.items()
        if record.owner() == case_id and project_path in (None, record.project)
    ]


def remove_for_case(case_id: str) -> list[Path]:
    """The MR was merged or closed: remove the case's worktree and prune the mirror. The local
    branch goes too unless it holds commits no remote branch has (those are kept, and logged).
    Returns the folders removed (empty when there was none)."""
    with hold(f"worktree-{_safe(case_id)}", timeout=LOCK_TIMEOUT_S, what=f"worktree of {case_id}"):
        record = registry().read().worktrees.get(case_id)
        if record is None:
            return []
        removed = _remove(record)
        with registry().update() as state:
            state.worktrees.pop(case_id, None)
    event(log, "worktree_removed", case_id=case_id, removed=[str(p) for p in removed])
    return removed


def prune_stale(days: float | None = None) -> list[Path]:
    """Remove worktrees idle for more than ``days`` (default: ``stale_worktree_days``) — cases
    whose MR never reported back — and forget the ones whose folder is already gone."""
    limit = (days if days is not None else DeliveryThresholds().stale_worktree_days) * 86400
    now = clock.epoch()
    removed: list[Path] = []
    for case_id, record in registry().read().worktrees.items():
        path = Path(record.path)
        if path.exists() and now - _last_activity(record) <= limit:
            continue
        removed += remove_for_case(case_id)
    return removed


def _last_activity(record: WorktreeRecord) -> float:
    """The newest of: creation, the worktree's index, HEAD and reflog (a commit, a checkout,
    a ``git add`` all touch one of them)."""
    newest = record.created_at.timestamp()
    path = Path(record.path)
    candidates = [path]
    with suppress(ServiceError):
        gitdir = Path(git_for(path).run("rev-parse", "--absolute-git-dir"))
        candidates += [gitdir / "index", gitdir / "HEAD", gitdir / "logs" / "HEAD"]
    for candidate in candidates:
        with suppress(OSError):
            newest = max(newest, candidate.stat().st_mtime)
    return newest


def _remove(record: WorktreeRecord) -> list[Path]:
    path = Path(record.path)
    common = Path(record.repo or record.mirror)
    removed: list[Path] = []
    if not (common / "HEAD").exists():  # repository gone: only the folder is left to delete
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        return removed
    repo = Git(common)
    # an older worktree of the shared mirror: other cases' fetches must not overlap
    held = mirror_lock(common) if not record.repo else nullcontext()
    with held:
        if path.exists():
            # Twice --force: also a worktree left dirty, mid-rebase or locked by a crashed run.
            with suppress(ServiceError):
                repo.run("worktree", "remove", "--force", "--force", str(path))
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        repo.run("worktree", "prune")
        kept = _drop_branch_if_pushed(repo, record.branch)
    others = common / "worktrees"
    if record.repo and not kept and not (others.is_dir() and any(others.iterdir())):
        shutil.rmtree(common, ignore_errors=True)  # the case's own repository: nothing left in it
    return removed


def _drop_branch_if_pushed(repo: Git, branch: str) -> bool:
    """Delete the local ``branch`` when a remote branch holds its commits; True when it is
    kept (unpushed work, logged)."""
    sha = repo.head_sha(f"refs/heads/{branch}")
    if sha is None:
        return False
    holders = repo.run(
        "for-each-ref", "--contains", sha, "--format=%(refname)", "refs/remotes/origin"
    )
    if holders.strip():
        repo.run("branch", "-q", "-D", branch)
        return False
    event(log, "worktree_branch_kept", logging.WARNING, branch=branch, sha=sha)
    return True

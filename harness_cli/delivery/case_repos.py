"""One repository per case: an agent sees its own branch and nothing of another case's (#28 R8).

Worktrees of one shared mirror share its refs and objects: an agent could read another case's
branch there and move it (a foreign commit landed in another case's MR). So each case's
worktree hangs off its own bare repository, ``<root>/.repos/<key>.git``:

- its objects are its own; the mirror's (``<root>/.mirrors/…``, which only the harness
  fetches into) are borrowed read-only through ``objects/info/alternates`` — nothing is copied;
- its refs are the base branch and the remote's default branch, fetched from the mirror, and
  the case's own branch, fetched from the remote (the mirror never holds a case branch); its
  ``origin`` fetches the first two, :func:`fetch` the case's branch as well (a refspec git
  requires to exist cannot name a branch not yet pushed), never more;
- its config is what :func:`ensure` wrote (``git_guard`` refuses a key it did not write).

The box (``agents.sandbox.git_view``) lets an agent write this repository's objects, refs and
logs and its own worktree's git dir: all of it this case's. The mirror is read-only to it.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

from harness_cli.errors import ServiceError
from harness_cli.services.git import Git

REPOS_DIR = ".repos"


def repo_path(root: Path, key: str) -> Path:
    """``<root>/.repos/<key>.git`` (``key``: the worktree's registry key, already safe)."""
    return root / REPOS_DIR / f"{key}.git"


def refspecs(branches: list[str]) -> list[str]:
    return [f"+refs/heads/{b}:refs/remotes/origin/{b}" for b in dict.fromkeys(branches)]


def ensure(root: Path, mirror: Git, key: str, repo_url: str, base_branch: str, branch: str) -> Git:
    """The case's repository, made on first use, its refs brought up to date from ``mirror``
    (fetched just before, under the mirror's lock). Hold the case's worktree lock."""
    path = repo_path(root, key)
    repo = Git(path)
    if not (path / "HEAD").exists():
        path.mkdir(parents=True, exist_ok=True)
        repo.run("init", "-q", "--bare")
        # as the mirror's was: every worktree carries its own identity and push trap
        repo.run("config", "extensions.worktreeConfig", "true")
        repo.run("config", "--unset", "core.bare")
        repo.run("config", "--worktree", "core.bare", "true")
        repo.run("config", "gc.auto", "0")  # its objects borrow the mirror's: never pruned here
        repo.run("remote", "add", "origin", repo_url)
        alternates = path / "objects" / "info" / "alternates"
        alternates.write_text(f"{os.path.realpath(mirror.repo_dir / 'objects')}\n")
    elif repo.remote_url("origin") != repo_url:
        repo.run("remote", "set-url", "origin", repo_url)
    default = _default_branch(mirror)
    wanted = [base_branch, *([default] if default else []), branch]
    with suppress(ServiceError):  # none set yet
        repo.run("config", "--unset-all", "remote.origin.fetch")
    for spec in refspecs(wanted[:-1]):
        repo.run("config", "--add", "remote.origin.fetch", spec)
    present = [b for b in dict.fromkeys(wanted[:-1]) if mirror.head_sha(f"refs/remotes/origin/{b}")]
    specs = [f"+refs/remotes/origin/{b}:refs/remotes/origin/{b}" for b in present]
    # a local case branch an older harness left in the shared mirror (unpushed work)
    if mirror.head_sha(f"refs/heads/{branch}") and repo.head_sha(f"refs/heads/{branch}") is None:
        specs.append(f"refs/heads/{branch}:refs/heads/{branch}")
    if specs:
        repo.run("fetch", "-q", "--no-tags", str(mirror.repo_dir), *specs)
    _fetch_branch(repo, branch)
    if default and default in present:
        repo.run("symbolic-ref", "refs/remotes/origin/HEAD", f"refs/remotes/origin/{default}")
    # packed-refs exists from now on, so the box can pin it (a file that does not exist yet
    # cannot be pinned in the claude CLI's sandbox)
    repo.run("pack-refs", "--all")
    return repo


def fetch(git: Git, branch: str) -> None:
    """``git fetch origin`` of the case's repository: its base and default branches, then the
    case's own branch when the remote has it (not before its first push)."""
    git.fetch("origin")
    _fetch_branch(git, branch)


def _fetch_branch(git: Git, branch: str) -> None:
    try:
        git.run("fetch", "-q", "--no-tags", "origin", *refspecs([branch]))
    except ServiceError as exc:
        if "couldn't find remote ref" not in exc.message:
            raise


def _default_branch(mirror: Git) -> str | None:
    try:
        name = mirror.run("symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD")
    except ServiceError:  # the remote did not advertise its HEAD
        return None
    return name.removeprefix("origin/") or None


def gitdir_of(repo: Path, worktree: Path) -> Path | None:
    """The git dir ``repo`` keeps for ``worktree``, found from the repository's side: the one
    named after the worktree's folder (as ``git worktree add`` names it), else another whose
    back-pointer names it (git adds a number on a clash) — never what the ``.git`` file says."""
    folder = repo / "worktrees"
    want = os.path.realpath(worktree / ".git")
    named = folder / worktree.name
    others = sorted(p for p in folder.iterdir() if p != named) if folder.is_dir() else []
    for gitdir in [named, *others]:
        try:
            back = (gitdir / "gitdir").read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if os.path.realpath(back) == want:
            return gitdir
    return None

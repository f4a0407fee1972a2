"""Git plumbing for the GitLab emulator: every project is a real bare repository.

Merges use ``git merge-tree --write-tree`` + ``commit-tree`` + a compare-and-swap
``update-ref`` inside the bare repo, so no working tree is needed and a concurrent push is
never clobbered (git-update-ref(1)). ``merge-tree --write-tree`` needs git ≥ 2.38.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BOT_IDENTITY",
    "ZERO_SHA",
    "BranchHead",
    "GitError",
    "MergeConflict",
    "branches",
    "commit_files",
    "commit_info",
    "count_commits",
    "delete_branch",
    "git",
    "heads",
    "identity_env",
    "init_bare",
    "merge_into",
    "merged_branches",
    "merged_tree",
    "merges_cleanly",
    "rev_parse",
]

ZERO_SHA = "0" * 40
BOT_IDENTITY = ("GitLab Sandbox", "sandbox@gitlab.invalid")

# The protection GitLab applies to a project's default branch: nobody pushes to it directly;
# changes land through merge requests (which the emulator writes with plumbing, not a push).
_PROTECT_HOOK = """#!/bin/sh
while read old new ref; do
  if [ "$ref" = "refs/heads/{branch}" ]; then
    echo "GitLab: You are not allowed to push code to protected branches on this project." >&2
    exit 1
  fi
done
exit 0
"""


class GitError(RuntimeError):
    """A git command failed; the message carries its stderr."""


class MergeConflict(GitError):
    """The source cannot be merged into the target without conflicts."""


@dataclass(frozen=True)
class BranchHead:
    name: str
    sha: str
    title: str
    message: str
    author_name: str
    author_email: str
    authored_date: str
    committer_name: str
    committer_email: str
    committed_date: str
    parent_ids: tuple[str, ...]


def _env(identity: tuple[str, str] = BOT_IDENTITY, date: str | None = None) -> dict[str, str]:
    # A user's ~/.gitconfig (signing, hooks paths, templates) must not leak into the sandbox.
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": identity[0],
        "GIT_AUTHOR_EMAIL": identity[1],
        "GIT_COMMITTER_NAME": identity[0],
        "GIT_COMMITTER_EMAIL": identity[1],
    }
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return env


identity_env = _env
"""The environment of a git command that writes commits as ``identity`` (no user config)."""


def git(
    repo: Path,
    *args: str,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    ok_codes: tuple[int, ...] = (0,),
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env or _env(),
        check=False,
    )
    if proc.returncode not in ok_codes:
        raise GitError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def init_bare(path: Path, default_branch: str, *, protect: bool) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--bare", f"--initial-branch={default_branch}")
    if protect:
        hook = path / "hooks" / "pre-receive"
        hook.write_text(_PROTECT_HOOK.format(branch=default_branch), encoding="utf-8")
        hook.chmod(0o755)


def rev_parse(repo: Path, rev: str) -> str | None:
    proc = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", ok_codes=(0, 1))
    return proc.stdout.strip() or None


def heads(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads").stdout
    return dict(line.rsplit(" ", 1) for line in out.splitlines() if line)


_FIELDS = (
    "%(refname:short)",
    "%(objectname)",
    "%(subject)",
    "%(contents)",
    "%(authorname)",
    "%(authoremail:trim)",
    "%(authordate:iso-strict)",
    "%(committername)",
    "%(committeremail:trim)",
    "%(committerdate:iso-strict)",
    "%(parent)",
)


def branches(repo: Path) -> list[BranchHead]:
    fmt = "%00".join(_FIELDS) + "%00%01"
    out = git(repo, "for-each-ref", f"--format={fmt}", "refs/heads").stdout
    result = []
    for record in out.split("\x00\x01"):
        parts = record.lstrip("\n").split("\x00")
        if len(parts) != len(_FIELDS):
            continue
        name, sha, title, message, an, ae, ad, cn, ce, cd, parents = parts
        result.append(
            BranchHead(name, sha, title, message, an, ae, ad, cn, ce, cd, tuple(parents.split()))
        )
    return result


def merged_branches(repo: Path, into: str) -> set[str]:
    out = git(
        repo,
        "for-each-ref",
        f"--merged=refs/heads/{into}",
        "--format=%(refname:short)",
        "refs/heads",
    ).stdout
    return set(out.split())


def commit_info(repo: Path, rev: str) -> BranchHead | None:
    sha = rev_parse(repo, rev)
    if sha is None:
        return None
    fmt = "%x00".join(["%H", "%s", "%B", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%P"])
    parts = git(repo, "show", "-s", f"--format={fmt}", sha).stdout.rstrip("\n").split("\x00")
    _, title, message, an, ae, ad, cn, ce, cd, parents = parts
    return BranchHead(rev, sha, title, message, an, ae, ad, cn, ce, cd, tuple(parents.split()))


def count_commits(repo: Path, old: str | None, new: str, base: str | None) -> list[str]:
    """One-line summaries of the commits ``new`` adds over ``old`` (or over ``base``)."""
    exclude = [f"^{sha}" for sha in (old, base) if sha]
    out = git(repo, "log", "--format=%h - %s", new, *exclude).stdout
    return out.splitlines()


def commit_files(
    repo: Path,
    branch: str,
    files: dict[str, str | None],
    message: str,
    *,
    identity: tuple[str, str] = BOT_IDENTITY,
    date: str | None = None,
    start_point: str | None = None,
) -> str:
    """Commit ``files`` (path → content, ``None`` deletes) on top of ``branch`` without a
    working tree, through a throwaway index; a missing branch starts at ``start_point``
    (or as a root commit without one)."""
    old = rev_parse(repo, f"refs/heads/{branch}")
    parent = old or (rev_parse(repo, start_point) if start_point else None)
    env = _env(identity, date)
    with tempfile.TemporaryDirectory(prefix="gl-index-") as tmp:
        env["GIT_INDEX_FILE"] = str(Path(tmp) / "index")
        if parent:
            git(repo, "read-tree", parent, env=env)
        for path, content in sorted(files.items()):
            if content is None:
                git(repo, "update-index", "--force-remove", path, env=env)
                continue
            blob = git(repo, "hash-object", "-w", "--stdin", stdin=content, env=env).stdout
            info = f"100644,{blob.strip()},{path}"
            git(repo, "update-index", "--add", "--cacheinfo", info, env=env)
        tree = git(repo, "write-tree", env=env).stdout.strip()
    parents = ["-p", parent] if parent else []
    sha = git(repo, "commit-tree", tree, *parents, "-m", message, env=env).stdout.strip()
    git(repo, "update-ref", f"refs/heads/{branch}", sha, old or ZERO_SHA)
    return sha


def merged_tree(repo: Path, target_sha: str, source_sha: str) -> str | None:
    """The tree of the merge, or None when it conflicts (or the histories are unrelated)."""
    proc = git(repo, "merge-tree", "--write-tree", target_sha, source_sha, ok_codes=(0, 1, 128))
    if proc.returncode == 128 and "unrelated histories" not in proc.stderr:
        raise GitError(f"git merge-tree failed: {proc.stderr.strip()}")
    return proc.stdout.splitlines()[0].strip() if proc.returncode == 0 else None


def merges_cleanly(repo: Path, target_sha: str, source_sha: str) -> bool:
    return merged_tree(repo, target_sha, source_sha) is not None


def merge_into(
    repo: Path,
    target_branch: str,
    source_sha: str,
    message: str,
    *,
    identity: tuple[str, str] = BOT_IDENTITY,
) -> str:
    """Create a merge commit of ``source_sha`` on ``target_branch`` (GitLab's default
    ``merge`` method: always a merge commit) and return its sha."""
    target_sha = rev_parse(repo, f"refs/heads/{target_branch}")
    if target_sha is None:
        raise GitError(f"target branch {target_branch} does not exist")
    tree = merged_tree(repo, target_sha, source_sha)
    if tree is None:
        raise MergeConflict(f"{source_sha[:8]} conflicts with {target_branch}")
    env = _env(identity)
    sha = git(
        repo, "commit-tree", tree, "-p", target_sha, "-p", source_sha, "-m", message, env=env
    ).stdout.strip()
    git(repo, "update-ref", f"refs/heads/{target_branch}", sha, target_sha)
    return sha


def delete_branch(repo: Path, branch: str) -> None:
    git(repo, "update-ref", "-d", f"refs/heads/{branch}")

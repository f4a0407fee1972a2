"""Git plumbing of the GitHub emulator, beside the shared helpers of :mod:`gitlab_git`: the
pre-receive hook that enforces branch protection and the ``workflow`` scope, the
``refs/pull/N/head`` and ``refs/pull/N/merge`` refs GitHub keeps for each pull request, and
compare/diff/contents reads for the REST API.

GitHub's refusals, as the hook prints them (git shows them as ``remote:`` lines)::

    error: GH006: Protected branch update failed for refs/heads/main.
    error: Cannot force-push to this branch
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_cli.sandbox.gitlab_git import ZERO_SHA, git, merged_tree, rev_parse

__all__ = [
    "CONFIG_FILE",
    "FileChange",
    "compare",
    "diff_hunk",
    "init_bare",
    "read_path",
    "test_merge",
    "write_config",
]

CONFIG_FILE = "sandbox-github.json"
"""In the bare repo: what the hook enforces (protected branches)."""

# The hook runs under the emulator's interpreter; env tells it who pushes and with which scopes.
_HOOK = r"""#!{python}
import json, os, subprocess, sys
ZERO = "0" * 40
config = json.load(open(os.path.join(os.environ.get("GIT_DIR", "."), "{config}")))
protected = config.get("protected", {{}})
workflows_ok = os.environ.get("GH_SANDBOX_WORKFLOW_SCOPE", "1") == "1"

def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True).stdout

def refuse(ref, *lines):
    for line in lines:
        print("error: " + line, file=sys.stderr)
    sys.exit(1)

for line in sys.stdin:
    old, new, ref = line.split()
    branch = ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else None
    rule = protected.get(branch) if branch else None
    if rule is not None:
        head = f"GH006: Protected branch update failed for {{ref}}."
        if new == ZERO and not rule["allow_deletions"]:
            refuse(ref, head, "Cannot delete this protected branch")
        forced = old != ZERO and new != ZERO and subprocess.run(
            ["git", "merge-base", "--is-ancestor", old, new]).returncode != 0
        if forced and not rule["allow_force_pushes"]:
            refuse(ref, head, "Cannot force-push to this branch")
        if rule["require_pull_request"]:
            refuse(ref, head, "Changes must be made through a pull request.")
    if not workflows_ok and new != ZERO:
        since = [old] if old != ZERO else ["--not", "--all"]
        for sha in git("rev-list", new, *since).split():
            for path in git("diff-tree", "--no-commit-id", "--name-only", "-r", "--root",
                            sha).split():
                if path.startswith(".github/workflows/"):
                    refuse(ref, "refusing to allow a Personal Access Token to create or update "
                           f"workflow `{{path}}` without `workflow` scope")
"""


def init_bare(path: Path, default_branch: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--bare", f"--initial-branch={default_branch}")
    # GitHub advertises refs/pull/* to fetches but refuses pushes to them.
    git(path, "config", "receive.hideRefs", "refs/pull")
    hook = path / "hooks" / "pre-receive"
    hook.write_text(_HOOK.format(python=sys.executable, config=CONFIG_FILE), encoding="utf-8")
    hook.chmod(0o755)
    write_config(path, {})


def write_config(path: Path, protected: dict[str, dict[str, Any]]) -> None:
    (path / CONFIG_FILE).write_text(json.dumps({"protected": protected}), encoding="utf-8")


def test_merge(repo: Path, number: int, base_sha: str, head_sha: str) -> str | None:
    """GitHub's test merge of a pull request (``refs/pull/N/merge``): its sha, or None (and
    the ref removed) when head and base conflict."""
    git(repo, "update-ref", f"refs/pull/{number}/head", head_sha)
    tree = merged_tree(repo, base_sha, head_sha)
    if tree is None:
        git(repo, "update-ref", "-d", f"refs/pull/{number}/merge")
        return None
    message = f"Merge {head_sha} into {base_sha}"
    sha = git(repo, "commit-tree", tree, "-p", base_sha, "-p", head_sha, "-m", message).stdout
    git(repo, "update-ref", f"refs/pull/{number}/merge", sha.strip())
    return sha.strip()


@dataclass(frozen=True)
class FileChange:
    filename: str
    status: str  # added | removed | modified | renamed
    additions: int
    deletions: int
    patch: str
    blob: str

    def json(self, repo_api: str, repo_html: str, head: str) -> dict[str, Any]:
        return {
            "sha": self.blob,
            "filename": self.filename,
            "blob_url": f"{repo_html}/blob/{head}/{self.filename}",
            "raw_url": f"{repo_html}/raw/{head}/{self.filename}",
            "contents_url": f"{repo_api}/contents/{self.filename}?ref={head}",
            "status": self.status,
            "additions": self.additions,
            "deletions": self.deletions,
            "changes": self.additions + self.deletions,
            "patch": self.patch,
        }


_STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed"}


def compare(repo: Path, base: str, head: str) -> dict[str, Any]:
    """What ``GET /compare/base...head`` needs: merge base, ahead/behind, commits (oldest
    first) and the files changed since the merge base."""
    merge_base = git(repo, "merge-base", base, head, ok_codes=(0, 1)).stdout.strip() or None
    ahead = git(repo, "rev-list", "--reverse", f"{base}..{head}").stdout.split()
    behind = int(git(repo, "rev-list", "--count", f"{head}..{base}").stdout.strip() or 0)
    status = "identical"
    if ahead and behind:
        status = "diverged"
    elif ahead:
        status = "ahead"
    elif behind:
        status = "behind"
    files: list[FileChange] = []
    if merge_base:
        names = git(repo, "diff", "--raw", "-M", merge_base, head).stdout.splitlines()
        counts = git(repo, "diff", "--numstat", "-M", merge_base, head).stdout.splitlines()
        for entry, count in zip(names, counts, strict=False):
            meta, *paths = entry.split("\t")
            parts = [meta.split()[-1], *paths]
            blob = meta.split()[3]
            added, removed, _ = count.split("\t", 2)
            name = parts[-1]
            patch = git(repo, "diff", merge_base, head, "--", name).stdout
            patch = patch[patch.find("@@") :] if "@@" in patch else ""
            files.append(
                FileChange(
                    name,
                    _STATUS.get(parts[0][:1], "modified"),
                    int(added) if added.isdigit() else 0,
                    int(removed) if removed.isdigit() else 0,
                    patch,
                    blob,
                )
            )
    return {
        "merge_base": merge_base,
        "ahead": ahead,
        "behind": behind,
        "status": status,
        "files": files,
    }


def diff_hunk(repo: Path, base: str, head: str, path: str, line: int | None) -> str:
    """The diff hunk a review comment on ``line`` of ``path`` shows (up to that line)."""
    merge_base = git(repo, "merge-base", base, head, ok_codes=(0, 1)).stdout.strip() or base
    patch = git(repo, "diff", merge_base, head, "--", path).stdout
    hunks = patch.split("\n@@")
    if len(hunks) < 2:
        return ""
    for raw in hunks[1:]:
        hunk = "@@" + raw
        header = hunk.split("\n", 1)[0]
        try:
            start = int(header.split("+")[1].split(",")[0].split()[0])
        except (IndexError, ValueError):
            continue
        lines = hunk.split("\n")
        taken, new_line = [lines[0]], start - 1
        for text in lines[1:]:
            taken.append(text)
            if not text.startswith("-"):
                new_line += 1
            if line is not None and new_line >= line:
                return "\n".join(taken)
    return "@@" + hunks[1]


def read_path(repo: Path, ref: str, path: str) -> tuple[str, Any] | None:
    """("file", bytes) or ("dir", [(mode, type, sha, name)]) at ``ref``; None if missing."""
    sha = rev_parse(repo, ref)
    if sha is None:
        return None
    spec = f"{sha}:{path.strip('/')}" if path.strip("/") else f"{sha}^{{tree}}"
    kind = git(repo, "cat-file", "-t", spec, ok_codes=(0, 128)).stdout.strip()
    if kind == "blob":
        data = git(repo, "cat-file", "blob", spec).stdout
        return "file", data.encode()
    if kind == "tree":
        rows = []
        for entry in git(repo, "ls-tree", spec).stdout.splitlines():
            meta, name = entry.split("\t", 1)
            mode, typ, obj = meta.split()
            rows.append((mode, typ, obj, name))
        return "dir", rows
    return None


def branch_exists(repo: Path, branch: str) -> bool:
    return rev_parse(repo, f"refs/heads/{branch}") is not None


def is_zero(sha: str | None) -> bool:
    return sha is None or sha == ZERO_SHA

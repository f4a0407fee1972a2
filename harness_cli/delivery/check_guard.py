"""The required checks stay out of the agent's reach: a change to what they run fails closed.

Reference 003 ("l'acceptation nécessite des éléments probants indépendants"): acceptance is
bound to what was tested. An agent that replaces the real assertion with ``assert True`` gets a
green run of the required checks and the bug stays. So a change that deletes, skips or edits a
required check — or a test file it runs, its conftest, the pytest config — is not accepted
without the operator's explicit OK, given for exactly that change (a digest of its diff):
``harness case accept-checks CASE`` / ``admin: accept-checks <case>``.

What a check depends on is derived from its command: ``pytest tests/test_x.py`` runs that file
(and every conftest, and the pytest config); ``pytest`` alone or a command the harness cannot
read (``make test``) depends on every test path (:data:`DEFAULT_CHECK_PATHS`).

Whatever the command, a check also depends on what shapes the run without being a test
(#28 R6): the runner's config wherever pytest looks for it (``.pytest.ini`` included), what git
ignores or how it filters (``.gitignore``, ``.gitattributes``, the repository's
``info/exclude`` and ``info/attributes``: a file hidden from git is hidden from the MR), and a
module that would shadow one the runner imports (:func:`shadowing`: ``pytest.py`` at the top,
a stdlib or installed module's name where Python would find it first).
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import importlib.metadata
import json
import shlex
import sys
import tomllib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from harness_cli import clock
from harness_cli.delivery.worktrees import git_for
from harness_cli.errors import HarnessError
from harness_cli.services.git import Git
from harness_cli.workspace import control

_PYTEST_CONFIG = (
    "*conftest.py",
    "*pytest.ini",
    "*tox.ini",
    "*setup.cfg",
    "*pyproject.toml#tool.pytest",
    "*.gitignore",
    "*.gitattributes",
)
"""The runner's config where pytest looks for it (from the tests' folder up: ``pytest.ini``,
``.pytest.ini``, …), and what decides which files git — and so the MR — sees at all."""
DEFAULT_CHECK_PATHS = (
    "tests/",
    "test/",
    *_PYTEST_CONFIG,
    "noxfile.py",
    ".gitlab-ci.yml",
    ".github/workflows/",
)
"""What the default checks depend on. ``dir/`` is a prefix, a glob matches the whole path, and
``file#a.b`` means only the TOML table ``[a.b]`` of the files the glob ``file`` matches."""
SHADOW_ALWAYS = frozenset({"pytest", "_pytest", "py", "pluggy", "sitecustomize", "usercustomize"})
"""Module names that shadow the runner whether or not this interpreter has them."""
REPO_FILES = ("info/exclude", "info/attributes")
"""Files of the repository (not the tree) that hide or filter files: only comments allowed."""
APPROVALS = "acceptance/checks-approved.json"
DESCRIBE_BYTES = 256 << 10
"""Of the check files' diff (and its --stat), what :func:`describe` reads: it shows a few
lines of it."""
"""``control/<case>/acceptance/checks-approved.json``: the digests the operator accepted —
in the harness's control folder, never the case folder an agent writes (#28 R4); the case
folder's copy is a mirror for humans (:mod:`harness_cli.workspace.control`)."""


def check_paths(checks: Sequence[str]) -> list[str]:
    """The paths the required ``checks`` depend on (patterns as in DEFAULT_CHECK_PATHS)."""
    found: list[str] = []
    for command in checks:
        try:
            argv = shlex.split(command)
        except ValueError:
            return list(DEFAULT_CHECK_PATHS)
        named = _pytest_targets(argv)
        if named is None:  # not a pytest run the harness can read: every test path counts
            found += DEFAULT_CHECK_PATHS
            if argv and argv[0] == "make":
                found.append("Makefile")
            continue
        found += [*named, *_PYTEST_CONFIG, ".gitlab-ci.yml"] if named else DEFAULT_CHECK_PATHS
    return list(dict.fromkeys(found))


def _pytest_targets(argv: list[str]) -> list[str] | None:
    """The files/dirs a pytest command names ([] = the whole suite); None: not pytest."""
    words = [w.rsplit("/", 1)[-1] for w in argv]
    if "pytest" in words or "py.test" in words:
        start = max(words.index(w) for w in ("pytest", "py.test") if w in words) + 1
    else:
        return None
    targets: list[str] = []
    skip_value = {"-k", "-m", "-p", "-c", "-o", "--rootdir", "--deselect", "--ignore"}
    args = argv[start:]
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg in skip_value:
            index += 1
            continue
        if arg.startswith("-"):
            continue
        path = arg.split("::", 1)[0].rstrip("/")
        targets.append(path if path.endswith(".py") else path + "/")
    return targets


@dataclass(frozen=True)
class GuardVerdict:
    changed: list[str] = field(default_factory=list)
    """Check paths that differ from the base (committed, uncommitted or untracked)."""
    digest: str = ""
    """sha256 of exactly that change; the operator's OK is given for it."""
    approved: bool = False

    @property
    def blocks(self) -> bool:
        return bool(self.changed) and not self.approved

    def reason(self) -> str:
        return (
            f"the change edits what the required checks run ({', '.join(self.changed)}); "
            "not accepted without the operator's OK"
        )


def guard_verdict(
    worktree: Path, base_sha: str, checks: Sequence[str], approved: Collection[str] = ()
) -> GuardVerdict:
    changed = checks_changed(worktree, base_sha, check_paths(checks))
    if not changed:
        return GuardVerdict()
    digest = changes_digest(worktree, base_sha, changed)
    return GuardVerdict(changed, digest, digest in approved)


def changes_digest(worktree: Path, base_sha: str, changed: Iterable[str]) -> str:
    files = sorted({c.split("#", 1)[0] for c in changed})
    digest = hashlib.sha256(base_sha.encode())
    repo = dict(zip(REPO_FILES, git_for(Path(worktree)).git_paths(*REPO_FILES), strict=True))
    for rel in files:
        path = repo[rel[5:]] if rel.startswith(".git/") else Path(worktree) / rel
        digest.update(rel.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"(deleted)")
        digest.update(b"\0")
    return digest.hexdigest()


def describe(worktree: Path, base_sha: str, changed: Sequence[str], limit: int = 8) -> str:
    """``git diff --stat`` of the check paths and the first lines the change removed."""
    git = git_for(Path(worktree))
    files = [c.split("#", 1)[0] for c in changed if not c.startswith(".git/")]
    hidden = [c for c in changed if c.startswith(".git/")]
    if not files:
        return f"{', '.join(hidden)} changed (files git no longer shows in the MR)"
    try:
        # The agent's change, as large as it made it: its start is what is shown (#28 R10).
        stat = git.cut("diff", "--stat", base_sha, "--", *files, head=DESCRIBE_BYTES)
        diff = git.cut("diff", "--unified=0", base_sha, "--", *files, head=DESCRIBE_BYTES)
    except HarnessError as exc:
        return f"(git diff failed: {exc.message})"
    removed = [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    lines = [stat or "(new untracked files only)"]
    lines += [f"  {ln[:160]}" for ln in (removed[:limit] + added[: max(0, limit - len(removed))])]
    return "\n".join(lines)


# -- the operator's OK ------------------------------------------------------------------------
def approved_digests(case_dir: Path) -> set[str]:
    try:
        data = json.loads(control.read_bytes(Path(case_dir), APPROVALS))
    except (OSError, ValueError):
        return set()
    return {str(a.get("digest")) for a in data.get("approved", []) if isinstance(a, dict)}


def approve(case_dir: Path, verdict: GuardVerdict, *, by: str) -> bool:
    """Record the operator's OK for exactly this change; False when it was already given.
    Only the operator's channels call this (``case accept-checks``, ``admin: accept-checks``)."""
    try:
        data: dict[str, Any] = json.loads(control.read_bytes(Path(case_dir), APPROVALS))
    except (OSError, ValueError):
        data = {"schema_version": 1, "approved": []}
    if any(a.get("digest") == verdict.digest for a in data["approved"]):
        return False
    entry = {"digest": verdict.digest, "paths": verdict.changed, "by": by}
    data["approved"].append({**entry, "at": clock.now().isoformat()})
    control.write_text(Path(case_dir), APPROVALS, json.dumps(data, indent=2) + "\n")
    return True


# -- what changed -----------------------------------------------------------------------------
def _matches(pattern: str, path: str) -> bool:
    if pattern.endswith("/"):
        return path.startswith(pattern)
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(path, pattern)
    return path == pattern


def _changed_files(git: Git, base_sha: str) -> set[str]:
    changed = set(git.run("diff", "--name-only", "-z", "--no-renames", base_sha).split("\0"))
    changed |= set(git.run("ls-files", "--others", "--exclude-standard", "-z").split("\0"))
    changed.discard("")
    return {c for c in changed if "__pycache__" not in c and not c.endswith((".pyc", ".pyo"))}


def checks_changed(
    worktree: Path, base_sha: str, check_paths: Iterable[str] = DEFAULT_CHECK_PATHS
) -> list[str]:
    """Paths the required checks depend on that differ from ``base_sha`` — committed,
    uncommitted or untracked — for the operator to approve before a pass is trusted."""
    git = git_for(Path(worktree))
    changed = _changed_files(git, base_sha)
    flagged: set[str] = set()
    for pattern in check_paths:
        if "#" in pattern:
            glob, _, dotted = pattern.partition("#")
            for file in (c for c in changed if _matches(glob, c)):
                if _section_differs(git, Path(worktree), base_sha, file, dotted):
                    flagged.add(f"{file}#{dotted}")
            continue
        flagged.update(p for p in changed if _matches(pattern, p))
    flagged.update(shadowing(Path(worktree), changed))
    flagged.update(_repo_files(git))
    return sorted(flagged)


def shadowing(worktree: Path, changed: Iterable[str]) -> list[str]:
    """Changed ``.py`` files (or packages) that Python would import in place of a module of
    the runner's interpreter: a top-level name of the stdlib, of an installed distribution or
    of :data:`SHADOW_ALWAYS`, in a folder the run puts on ``sys.path`` (the root, or any folder
    that is not itself a package: pytest inserts those to import tests and conftests)."""
    found = []
    for rel in changed:
        path = PurePosixPath(rel)
        if path.suffix == ".py" and path.stem != "__init__":
            name, folder = path.stem, path.parent
        elif path.name == "__init__.py" and path.parent != PurePosixPath("."):
            name, folder = path.parent.name, path.parent.parent
        else:
            continue
        in_package = str(folder) != "." and (worktree / folder / "__init__.py").is_file()
        if not in_package and _runner_module(name):
            found.append(rel)
    return found


def _runner_module(name: str) -> bool:
    if name in SHADOW_ALWAYS or name in sys.stdlib_module_names:
        return True
    return name in _installed()


@functools.cache
def _installed() -> frozenset[str]:
    """Top-level module names of the distributions installed beside the harness."""
    names: set[str] = set()
    for dist in importlib.metadata.distributions():
        top = dist.read_text("top_level.txt") or ""
        names.update(line.strip() for line in top.splitlines() if line.strip())
        names.add(str(dist.metadata["Name"] or "").replace("-", "_").lower())
    names.discard("")
    return frozenset(names)


def _repo_files(git: Git) -> list[str]:
    """``.git/info/exclude`` and ``.git/info/attributes`` of the worktree's repository, when
    they hold anything but comments: the harness never writes there, so an agent did."""
    found = []
    for name, path in zip(REPO_FILES, git.git_paths(*REPO_FILES), strict=True):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        if any(ln.strip() and not ln.lstrip().startswith("#") for ln in lines):
            found.append(f".git/{name}")
    return found


def _table(text: str | None, dotted: str) -> Any:
    if text is None:
        return None
    try:
        node: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return text  # unparseable: compare the raw text, so any edit shows
    for key in dotted.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _section_differs(git: Git, worktree: Path, base_sha: str, file: str, dotted: str) -> bool:
    try:
        before: str | None = git.run("show", f"{base_sha}:{file}")
    except HarnessError:
        before = None
    try:
        now: str | None = (worktree / file).read_text(encoding="utf-8")
    except OSError:
        now = None
    return bool(_table(before, dotted) != _table(now, dotted))

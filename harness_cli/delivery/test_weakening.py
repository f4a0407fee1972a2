"""A CI fix may not make CI green by taking the failing test away (#31 item 8).

The failed job's log names the tests that failed (``FAILED tests/test_x.py::test_y``); the
harness keeps them with the case (``FILE``) and every later acceptance run compares each one
at the head with the branch's base: a test file deleted, a failing test removed or renamed
away, a skip or xfail added (decorator, ``pytestmark``, a ``pytest.skip`` call), fewer
assertions than before or an assertion of a constant, and a collection rule that hides tests
(``collect_ignore``, ``--deselect``/``--ignore``/``-k`` in the runner's config) all count as
weakening. Such a change is never accepted, so its MR is never marked ready — whatever the
pipeline says afterwards. Changing what an assertion expects (a stale pinned value) is not
weakening: the test still runs and still asserts.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from harness_cli.workspace import control

FILE = "acceptance/ci-failing-tests.json"
"""Control state of the case (``workspace.control``: no agent writes there): the test ids CI
reported failing, as fix_ci read them."""

_FAILED = re.compile(r"^(?:FAILED|ERROR)\s+(\S+?\.py)(?:::(\S+?))?(?:\s|$)", re.MULTILINE)
_SKIPS = ("skip", "xfail", "importorskip")
_COLLECTION = ("collect_ignore", "--deselect", "--ignore", "-k ", "skip", "xfail")
_RUNNER_CONFIG = ("conftest.py", "pytest.ini", ".pytest.ini", "setup.cfg", "tox.ini",
                  "pyproject.toml")  # fmt: skip


def failing_tests(trace: str) -> list[str]:
    """``path.py::name`` (or ``path.py``) of each test the job log reports failing."""
    found = []
    for path, name in _FAILED.findall(trace):
        node = f"{path}::{name}" if name else path
        if node not in found:
            found.append(node)
    return found


def remember(case_dir: Path, tests: Iterable[str]) -> None:
    """Add ``tests`` to the case's failing tests (idempotent)."""
    known = protected(case_dir)
    merged = known + [t for t in tests if t not in known]
    if merged != known:
        control.write_text(Path(case_dir), FILE, json.dumps(merged, indent=1) + "\n")


def protected(case_dir: Path) -> list[str]:
    try:
        data = json.loads(control.read_bytes(Path(case_dir), FILE))
    except (OSError, ValueError):
        return []
    return [str(t) for t in data] if isinstance(data, list) else []


def _base_text(worktree: Path, base_sha: str, path: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(worktree), "show", f"{base_sha}:{path}"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return proc.stdout if proc.returncode == 0 else None


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    wanted = name.split("::")[-1].split("[", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == wanted:
            return node
    return None


def _skips(nodes: Iterable[ast.AST]) -> int:
    return sum(1 for node in nodes for word in _SKIPS if word in ast.unparse(node))


def _asserts(node: ast.AST) -> tuple[int, int]:
    """(assertions, assertions of a constant) in ``node``: ``assert`` statements and the
    ``pytest.raises``/``self.assert*`` calls."""
    count = constant = 0
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert):
            count += 1
            constant += isinstance(sub.test, ast.Constant) and bool(sub.test.value)
        elif isinstance(sub, ast.Call):
            called = ast.unparse(sub.func)
            count += called.endswith("raises") or ".assert" in called
    return count, constant


def _module_marks(tree: ast.Module) -> list[ast.AST]:
    def marks(node: ast.stmt) -> bool:
        targets = node.targets if isinstance(node, ast.Assign) else []
        return any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets)

    return [n for n in tree.body if marks(n)]


def weakened(worktree: Path, base_sha: str, tests: Iterable[str]) -> list[str]:
    """How the worktree weakens each of ``tests`` against ``base_sha``; [] when none is."""
    worktree = Path(worktree)
    found: list[str] = []
    tests = list(tests)
    for node_id in tests:
        path, _, name = node_id.partition("::")
        before = _base_text(worktree, base_sha, path)
        if before is None:
            continue  # a test the base did not have: nothing to weaken
        current = worktree / path
        if not current.is_file():
            found.append(f"deletes {path}")
            continue
        try:
            old = ast.parse(before)
            new = ast.parse(current.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue  # the checks will fail on it anyway
        if _skips(_module_marks(new)) > _skips(_module_marks(old)):
            found.append(f"skips every test of {path} (pytestmark)")
        old_fn, new_fn = (_function(old, name), _function(new, name)) if name else (old, new)
        if old_fn is None:
            continue
        if new_fn is None:
            found.append(f"removes {node_id}")
            continue
        was, now = ast.unparse(old_fn), ast.unparse(new_fn)
        if sum(now.count(w) for w in _SKIPS) > sum(was.count(w) for w in _SKIPS):
            found.append(f"skips {node_id}")
        (a_old, c_old), (a_new, c_new) = _asserts(old_fn), _asserts(new_fn)
        if a_new < a_old:
            found.append(f"drops {a_old - a_new} assertion(s) of {node_id}")
        elif c_new > c_old:
            found.append(f"asserts a constant in {node_id}")
    if tests:
        found += _collection(worktree, base_sha)
    return found


def _collection(worktree: Path, base_sha: str) -> list[str]:
    """Runner config that newly hides tests (conftest, pytest.ini, setup.cfg, …)."""
    proc = subprocess.run(["git", "-C", str(worktree), "diff", base_sha, "--", *(
        f":(glob)**/{name}" for name in _RUNNER_CONFIG)], capture_output=True, text=True,
        check=False)  # fmt: skip
    added = [ln[1:] for ln in proc.stdout.splitlines() if ln.startswith("+")
             and not ln.startswith("+++")]  # fmt: skip
    hits = sorted({word.strip() for ln in added for word in _COLLECTION if word in ln})
    return [f"changes what pytest collects ({', '.join(hits)})"] if hits else []

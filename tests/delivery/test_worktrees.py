"""worktree_manager on real git: a bare mirror per repo, one repository, worktree and branch per
case (the case's repository borrows the mirror's objects and holds only its own branch).

The reference's failure this replaces: "the agent emits a diff, git apply half-applies and
dirties main" — a partial failure must stay inside its own worktree.
"""

from __future__ import annotations

import ast
import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness_cli import paths
from harness_cli.delivery import worktrees
from harness_cli.delivery.push.rebase import pre_push_rebase, real_push
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.services.git import FALLBACK_EMAIL, FALLBACK_NAME, Git
from tests.delivery.conftest import APP, PROJECT, Origin, commit

DELIVERY = Path(worktrees.__file__).parent


GIT_DIR_ENTRIES = {
    "HEAD", "FETCH_HEAD", "ORIG_HEAD", "branches", "config", "config.worktree", "description",
    "hooks", "info", "objects", "refs", "packed-refs", "logs", "worktrees",
}  # fmt: skip
"""All a bare git dir holds; anything else (a file of the project, an index) is a checkout."""


def mirror_state(mirror: Path) -> dict[str, str]:
    """What a bare mirror shows of itself: still bare, with no work tree, HEAD untouched."""
    git = Git(mirror)
    stray = sorted(p.name for p in mirror.iterdir() if p.name not in GIT_DIR_ENTRIES)
    return {
        "bare": git.run("rev-parse", "--is-bare-repository"),
        "head": git.run("symbolic-ref", "HEAD"),
        "head_commit": git.head_sha() or "(unborn)",
        "stray": " ".join(stray),
    }


def outside_refs(mirror: Path) -> list[str]:
    """The mirror's refs other than the case branches, with their shas."""
    out = Git(mirror).run("for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    return sorted(r for r in out if not r.startswith("refs/heads/harness/"))


def test_create_makes_a_case_worktree_on_its_own_branch(
    make_wt, origin: Origin, thresholds: DeliveryThresholds
) -> None:
    wt = make_wt("T-1")

    root = thresholds.root()
    assert wt.path.parent == root and wt.path.name.startswith("case-T-1-")
    assert (wt.branch, wt.base_branch, wt.project, wt.case_id) == (
        "harness/T-1",
        "main",
        PROJECT,
        "T-1",
    )
    assert wt.base_sha == origin.sha("main")
    git = wt.git()
    assert git.current_branch() == "harness/T-1" and git.head_sha() == wt.base_sha
    assert (wt.path / "app.txt").read_text() == APP
    # The machine's identity (the test's global one), pinned in the worktree's own config —
    # never the harness@localhost placeholder.
    assert (git.run("config", "user.name"), git.run("config", "user.email")) != (
        FALLBACK_NAME,
        FALLBACK_EMAIL,
    )
    assert git.run("config", "--worktree", "--get", "user.name") == "Test"
    assert git.run("config", "--worktree", "--get", "user.email") == "test@example.invalid"
    mirror = wt.mirror()
    assert mirror == root / ".repos" / "T-1.git"  # the case's own repository
    assert Git(mirror).run("rev-parse", "--is-bare-repository") == "true"
    shared = root / ".mirrors" / "acme__shop.git"
    assert (mirror / "objects/info/alternates").read_text().strip() == str(shared / "objects")
    saved = json.loads(paths.state_file("worktrees.json").read_text())
    assert saved["worktrees"]["T-1"]["path"] == str(wt.path)
    assert worktrees.for_case("T-1") == wt
    assert worktrees.for_case("T-404") is None


def test_create_is_idempotent(make_wt) -> None:
    first = make_wt("T-1")
    (first.path / "scratch.txt").write_text("agent work in progress\n")
    again = make_wt("T-1")
    assert again == first
    assert (again.path / "scratch.txt").exists()  # the same checkout, not a fresh one
    assert len(list(first.path.parent.glob("case-T-1-*"))) == 1


def test_two_cases_on_one_repo_never_collide(make_wt, origin: Origin) -> None:
    one, two = make_wt("T-1"), make_wt("T-2")
    mirror = one.path.parent / ".mirrors" / "acme__shop.git"
    assert one.mirror() != two.mirror() and one.path != two.path and one.branch != two.branch
    # each case's repository shows its own branch and the base, never the other case's
    for wt, other in ((one, "harness/T-2"), (two, "harness/T-1")):
        refs = wt.git().run("for-each-ref", "--format=%(refname)")
        assert other not in refs and wt.branch in refs, refs
    before, refs_before = mirror_state(mirror), outside_refs(mirror)
    assert before == {
        "bare": "true",
        "head": before["head"],
        "head_commit": "(unborn)",
        "stray": "",
    }

    commit(one, "app.txt", "greeting = one\ncolour = blue\n", "case one")
    commit(two, "README.md", "# shop, by case two\n", "case two")
    for wt in (one, two):
        assert pre_push_rebase(wt).ok
        assert real_push(wt).ok

    assert origin.show("harness/T-1", "app.txt") == "greeting = one\ncolour = blue\n"
    assert origin.show("harness/T-1", "README.md") == "# shop\n"
    assert origin.show("harness/T-2", "app.txt") == APP
    assert origin.show("harness/T-2", "README.md") == "# shop, by case two\n"
    assert (one.path / "README.md").read_text() == "# shop\n"  # nothing crossed over
    assert (two.path / "app.txt").read_text() == APP
    assert mirror_state(mirror) == before
    # Nothing of the cases lands in the mirror, not even once pushed: the next fetch into it
    # leaves the case branches out (their objects would be readable to every case).
    assert outside_refs(mirror) == refs_before
    make_wt("T-3")
    assert "refs/remotes/origin/harness/" not in Git(mirror).run("for-each-ref")
    assert origin.sha("main") == one.base_sha  # the default branch never moved


def test_a_wrecked_worktree_leaves_the_mirror_and_other_cases_clean(
    make_wt, origin: Origin
) -> None:
    bad, good = make_wt("T-bad"), make_wt("T-good")
    commit(good, "README.md", "# shop, good\n", "good work")
    good_head = good.git().head_sha()
    mirror = bad.mirror()
    before = mirror_state(mirror)
    main_tracking = Git(mirror).head_sha("refs/remotes/origin/main")

    # The old failure, replayed inside one worktree: a patch half-applied, stray files, a
    # partly staged change and a rebase stopped on a conflict.
    origin.push_change("main", "app.txt", "greeting = upstream\ncolour = blue\n", "upstream")
    commit(bad, "app.txt", "greeting = mine\ncolour = blue\n", "mine")
    (bad.path / "app.txt.rej").write_text("@@ -1 +1 @@\n-greeting\n+garbage\n")
    (bad.path / "half.txt").write_text("half of a new file")
    bad.git().add(["half.txt"])
    bad.git().fetch("origin")
    assert bad.git().rebase("origin/main") is False  # stopped, left in progress on purpose
    assert bad.git().rebase_in_progress()

    assert mirror_state(mirror) == before
    # The bad case fetched into its own repository: only its tracking ref of main moved.
    assert Git(mirror).head_sha("refs/remotes/origin/main") == origin.sha("main") != main_tracking
    assert good.git().head_sha("refs/remotes/origin/main") == main_tracking
    assert good.git().status_porcelain() == ""
    assert good.git().head_sha() == good_head and good.git().current_branch() == "harness/T-good"
    fresh = make_wt("T-next")  # the next case on the same repo starts clean
    assert fresh.git().status_porcelain() == "" and not fresh.git().rebase_in_progress()
    assert (fresh.path / "app.txt").read_text() == "greeting = upstream\ncolour = blue\n"

    assert worktrees.remove_for_case("T-bad") == [bad.path]
    assert not bad.path.exists()
    assert str(bad.path) not in Git(mirror).run("worktree", "list")
    assert good.git().status_porcelain() == "" and good.git().head_sha() == good_head
    # Its unpushed commit is never thrown away: the branch stays in the case's repository.
    assert Git(mirror).head_sha("refs/heads/harness/T-bad") is not None


def test_delivery_never_calls_git_apply() -> None:
    """Agents edit files with their own tools; no diff text ever goes through ``git apply``."""
    sources = sorted(DELIVERY.glob("*.py"))
    assert DELIVERY / "worktrees.py" in sources
    offending = []
    for source in sources:
        tree = ast.parse(source.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value.strip()
                if id(node) in docstrings:
                    continue
                if text in {"apply", "am"} or "git apply" in text or text.startswith("apply "):
                    offending.append(f"{source.name}:{node.lineno}: {text!r}")
    assert offending == []


def test_agents_cannot_push_from_a_worktree(make_wt, origin: Origin) -> None:
    wt = make_wt("T-1")
    commit(wt, "app.txt", "greeting = sneaky\n", "sneaky")
    main_before = origin.sha("main")
    proc = subprocess.run(
        ["git", "push", "--force", "origin", "HEAD:main"],
        cwd=wt.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0 and worktrees.PUSH_TRAP_URL in proc.stderr
    assert origin.sha("main") == main_before
    fetched = subprocess.run(["git", "fetch", "origin"], cwd=wt.path, check=False)
    assert fetched.returncode == 0  # reading from the remote still works


def test_rerun_checks_out_the_pushed_branch_instead_of_resetting_it(
    make_wt, origin: Origin
) -> None:
    wt = make_wt("T-1")
    pushed = commit(wt, "app.txt", "greeting = first run\ncolour = blue\n", "first run")
    assert pre_push_rebase(wt).ok and real_push(wt).ok
    mirror = wt.mirror()
    assert worktrees.remove_for_case("T-1") == [wt.path]
    assert not mirror.exists()  # pushed: the branch and the case's repository are dropped
    origin.push_change("harness/T-1", "README.md", "# reviewed\n", "review suggestion")

    again = make_wt("T-1")
    assert again.path != wt.path and again.branch == "harness/T-1"
    assert again.git().head_sha() == origin.sha("harness/T-1")
    assert again.git().is_ancestor(pushed, "HEAD")
    assert (again.path / "app.txt").read_text() == "greeting = first run\ncolour = blue\n"


def test_a_local_branch_with_unpushed_work_is_reused(
    make_wt, monkeypatch: pytest.MonkeyPatch
) -> None:
    wt = make_wt("T-1")
    unpushed = commit(wt, "app.txt", "greeting = unpushed\n", "never pushed")
    monkeypatch.setenv("HARNESS_NOW", (datetime.now(UTC) + timedelta(days=8)).isoformat())
    assert worktrees.prune_stale(7) == [wt.path]
    monkeypatch.delenv("HARNESS_NOW")

    again = make_wt("T-1")
    assert again.git().head_sha() == unpushed


def test_prune_stale_removes_only_idle_worktrees(make_wt, monkeypatch: pytest.MonkeyPatch) -> None:
    old, gone = make_wt("T-old"), make_wt("T-gone")
    later = datetime.now(UTC)
    monkeypatch.setenv("HARNESS_NOW", (later + timedelta(days=1)).isoformat())
    assert worktrees.prune_stale(7) == []
    assert worktrees.for_case("T-old") == old

    Git(gone.mirror()).run("worktree", "remove", "--force", str(gone.path))
    assert worktrees.prune_stale(7) == []  # its folder is gone: forgotten, nothing to remove
    assert "T-gone" not in worktrees.registry().read().worktrees

    monkeypatch.setenv("HARNESS_NOW", (later + timedelta(days=8)).isoformat())
    assert worktrees.prune_stale(7) == [old.path]
    assert not old.path.exists() and worktrees.for_case("T-old") is None
    assert worktrees.registry().read().worktrees == {}


def test_remove_for_an_unknown_case_is_a_no_op() -> None:
    assert worktrees.remove_for_case("T-none") == []

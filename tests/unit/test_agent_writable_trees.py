"""The rules behind "agent-writable trees are data" (#28 R1, R2, R6, R7), one by one, on real
files and real git: the git guard, the file tools' ``.git`` rule, the no-follow writer, the
box's view of a worktree's repository and the shadowing-module rule. The end-to-end attacks
are in tests/delivery/test_git_hardening.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness_cli.agents import sandbox, tools
from harness_cli.delivery import check_guard, worktrees
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.errors import PolicyRefused
from harness_cli.services import git_guard
from harness_cli.services.git import Git
from harness_cli.state import nofollow


def sh(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def wt(tmp_path: Path) -> worktrees.Worktree:
    """A case worktree as the harness makes it, from a bare origin with one commit."""
    origin = tmp_path / "origin.git"
    sh(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    sh(tmp_path, "init", "-q", "-b", "main", str(seed))
    (seed / "app.py").write_text("x = 1\n")
    sh(seed, "add", "-A")
    sh(seed, "commit", "-q", "-m", "initial")
    sh(seed, "push", "-q", str(origin), "main")
    th = DeliveryThresholds(worktree_root=str(tmp_path / "worktrees"))
    return worktrees.create("T-1", origin.as_uri(), "acme/app", "main", thresholds=th)


# -- the git guard ----------------------------------------------------------------------------


def test_git_runs_without_a_single_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", "glpat-must-not-reach-git")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-must-not-reach-git")
    env = git_guard.env()
    assert "glpat-must-not-reach-git" not in env.values()
    assert "aws-must-not-reach-git" not in env.values()
    assert set(env) <= {*git_guard.PASSED_ENV, "LC_ALL", "LANGUAGE", "GIT_TERMINAL_PROMPT",
                        "GIT_EDITOR", "GIT_MERGE_AUTOEDIT"}  # fmt: skip


def test_no_hook_or_fsmonitor_runs_whatever_the_config_says(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sh(tmp_path, "init", "-q", str(repo))
    marker = tmp_path / "ran"
    sh(repo, "config", "core.fsmonitor", f"touch {marker}; echo")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (repo / "a.txt").write_text("a\n")
    git = Git(repo)
    git.status_porcelain()
    git.add()
    assert git.commit("Add a") is not None
    assert not marker.exists()


@pytest.mark.parametrize(
    "tamper",
    ["link-elsewhere", "link-symlink", "fsmonitor", "include", "filter", "shallow", "extension"],
)
def test_a_tampered_worktree_runs_no_git(wt: worktrees.Worktree, tamper: str) -> None:
    common = wt.mirror()
    gitdir = Path(sh(wt.path, "rev-parse", "--absolute-git-dir"))
    link = wt.path / ".git"
    if tamper == "link-elsewhere":
        fake = wt.path / "fake"
        fake.mkdir()
        link.write_text(f"gitdir: {fake}\n")
    elif tamper == "link-symlink":
        link.unlink()
        link.symlink_to(gitdir)
    elif tamper == "shallow":
        (common / "shallow").write_text(sh(wt.path, "rev-parse", "HEAD") + "\n")
    else:
        key, value = {
            "fsmonitor": ("core.fsmonitor", "touch /tmp/never; echo"),
            "include": ("include.path", "/tmp/elsewhere"),
            "filter": ("filter.x.clean", "cat"),
            "extension": ("extensions.objectFormat", "sha1"),
        }[tamper]
        sh(common, "config", "--file", str(gitdir / "config.worktree"), key, value)
    with pytest.raises(git_guard.TamperedRepo, match="refusing to run git in"):
        worktrees.git_for(wt.path).status_porcelain()
    with pytest.raises(git_guard.TamperedRepo):
        Git(wt.path).status_porcelain()  # without the registry: the generic check


def test_the_worktree_the_harness_made_passes(wt: worktrees.Worktree) -> None:
    assert wt.git().current_branch() == "harness/T-1"
    assert Git(wt.path).status_porcelain() == ""


# -- the file tools ---------------------------------------------------------------------------


@pytest.fixture
def ctx(wt: worktrees.Worktree, tmp_path: Path) -> tools.ToolContext:
    home = tmp_path / "agent-home"
    home.mkdir()
    box = sandbox.view_for(wt.path, [wt.path], [], home)
    return tools.ToolContext(wt.path, wt.path, time.monotonic() + 60, (wt.path,), box, home)


def call(ctx: tools.ToolContext, name: str, **args: Any) -> str:
    return tools.call(tools.TOOLS[name], ctx, args)


@pytest.mark.parametrize(
    "target", [".git", ".GIT", ".Git.", "git~1", "sub/.git/config", "a/.git/hooks/pre-commit",
               "here/.git", "gitlink"],
)  # fmt: skip
def test_the_file_tools_never_write_git_files(ctx: tools.ToolContext, target: str) -> None:
    root = ctx.allowed_root
    (root / "here").symlink_to(".")
    (root / "gitlink").symlink_to(".git")
    before = (root / ".git").read_text()
    with pytest.raises(tools.ToolFailure, match=r"refused: .*\.git|refused: .*git"):
        call(ctx, "Write", file_path=target, content="gitdir: /tmp/evil\n")
    with pytest.raises(tools.ToolFailure, match="refused"):
        call(ctx, "Edit", file_path=".git", old_string="gitdir", new_string="x")
    assert (root / ".git").read_text() == before
    assert not (root / "sub").exists() and not (root / "a").exists()


def test_the_file_tools_write_through_no_planted_link(ctx: tools.ToolContext) -> None:
    root = ctx.allowed_root
    (root / "real").mkdir()
    call(ctx, "Write", file_path="real/ok.txt", content="ok\n")
    script = root / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    call(ctx, "Edit", file_path="run.sh", old_string="#!/bin/sh", new_string="#!/bin/bash")
    assert (root / "real/ok.txt").read_text() == "ok\n"
    assert os.access(script, os.X_OK)  # an in-place write keeps the mode


# -- the no-follow writer ---------------------------------------------------------------------


def test_the_writer_refuses_a_link_at_any_step(tmp_path: Path) -> None:
    root, outside = tmp_path / "tree", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "harness.yaml").write_text("operator: config\n")
    (root / "evals").mkdir()
    (root / "evals" / "baseline.json").symlink_to(outside / "harness.yaml")
    (root / "door").symlink_to(outside)
    for target in ("evals/baseline.json", "door/harness.yaml", "door/new.txt"):
        for atomic in (True, False):
            with pytest.raises(PolicyRefused, match="refusing to write"):
                nofollow.write(root, root / target, b"{}", atomic=atomic)
    assert (outside / "harness.yaml").read_text() == "operator: config\n"
    assert sorted(p.name for p in outside.iterdir()) == ["harness.yaml"]
    assert nofollow.write(root, root / "evals" / "new" / "ok.json", b"{}")
    assert not nofollow.write(root, root / "evals" / "new" / "ok.json", b"[]", exclusive=True)
    assert (root / "evals" / "new" / "ok.json").read_bytes() == b"{}"


def test_state_writes_into_the_workspace_follow_no_link(tmp_path: Path) -> None:
    from harness_cli import paths
    from harness_cli.state.store import atomic_write_text

    case = paths.cases_root() / "C-1"
    case.mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (case / "acceptance").symlink_to(tmp_path)
    with pytest.raises(PolicyRefused):
        atomic_write_text(case / "acceptance" / "outside.txt", "overwritten\n")
    assert outside.read_text() == "keep\n"


# -- the box's view of the repository (R7) ----------------------------------------------------


def test_the_box_writes_only_objects_refs_and_logs_of_its_own_repository(
    wt: worktrees.Worktree, tmp_path: Path
) -> None:
    other = worktrees.create(
        "T-2", wt.mirror().parent.parent.joinpath("..", "origin.git").resolve().as_uri(),
        "acme/app", "main",
        thresholds=DeliveryThresholds(worktree_root=str(wt.path.parent)),
    )  # fmt: skip
    common = wt.mirror()
    view = sandbox.view_for(wt.path, [wt.path], [], tmp_path / "home")
    writable = {p.resolve() for p in view.writable}
    assert {common / "objects", common / "refs", common / "logs"} <= writable
    assert not any(p == common or other.path in p.parents for p in writable)
    pinned = {p.resolve() for p in view.pinned}
    for name in ("HEAD", "config", "packed-refs", "info", "hooks"):
        assert common / name in pinned, name
    settings = sandbox.claude_settings(view, [], None)["sandbox"]["filesystem"]
    assert str(common / "info") in settings["denyWrite"]
    assert other.mirror() != common  # and the other case's repository is not in view at all
    seen = {*view.readable, *view.writable}
    assert not any(p == other.mirror() or other.mirror() in p.parents for p in seen)


def test_a_link_to_a_foreign_git_dir_gets_no_git_access(
    wt: worktrees.Worktree, tmp_path: Path
) -> None:
    fake = tmp_path / "evil"
    (fake / "worktrees" / "x").mkdir(parents=True)
    (wt.path / ".git").write_text(f"gitdir: {fake / 'worktrees' / 'x'}\n")
    writable, pinned, readable = sandbox.git_view(wt.path)
    assert writable == [] and readable == [] and pinned == [wt.path / ".git"]


# -- the shadowing rule (R6) ------------------------------------------------------------------


def test_a_module_that_would_shadow_the_runner_is_a_change_to_the_checks(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "tests").mkdir()
    changed = ["pytest.py", "pluggy/__init__.py", "tests/json.py", "pkg/json.py", "app.py",
               "sitecustomize.py"]  # fmt: skip
    found = check_guard.shadowing(tmp_path, changed)
    assert found == ["pytest.py", "pluggy/__init__.py", "tests/json.py", "sitecustomize.py"]


def test_a_refused_worktree_is_made_again_once_its_folder_is_deleted(
    wt: worktrees.Worktree, tmp_path: Path
) -> None:
    """The refusal's hint is the way out: delete the folder, the next run makes a new one from
    the case's branch (its commits kept)."""
    (wt.path / "app.py").write_text("x = 2\n")
    wt.git().add(["app.py"])
    kept = wt.git().commit("Keep this")
    (wt.path / ".git").write_text(f"gitdir: {tmp_path}\n")
    with pytest.raises(git_guard.TamperedRepo) as refused:
        worktrees.for_case("T-1")
    assert f"delete the folder {wt.path}" in refused.value.line()
    shutil.rmtree(wt.path)
    th = DeliveryThresholds(worktree_root=str(wt.path.parent))
    origin = (tmp_path / "origin.git").as_uri()
    again = worktrees.create("T-1", origin, "acme/app", "main", thresholds=th)
    assert again.path != wt.path and again.git().head_sha() == kept

"""The git wrapper: redacted errors, identity fallback, error shapes, lazy imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness_cli.errors import ServiceError
from harness_cli.services.git import Git, PushRejected


@pytest.fixture(autouse=True)
def _no_machine_git_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-identity.gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("NAME", "EMAIL"):
        for role in ("AUTHOR", "COMMITTER"):
            monkeypatch.delenv(f"GIT_{role}_{var}", raising=False)


def test_errors_hide_credentials_of_remote_urls(tmp_path: Path) -> None:
    git = Git(tmp_path / "repo")
    git.init()
    # git hides credentials of http URLs itself, but names a file remote verbatim.
    with pytest.raises(ServiceError) as caught:
        git.run("fetch", "file:///nowhere/oauth2:glpat-SECRETSECRET42@x")
    assert "SECRETSECRET42" not in caught.value.line()
    assert "/nowhere/" in caught.value.line()


def test_fresh_machine_without_identity_commits_as_harness(tmp_path: Path) -> None:
    git = Git(tmp_path / "repo")
    git.init()
    (tmp_path / "repo" / "f").write_text("x")
    git.add()
    sha = git.commit("first")
    assert sha and sha == git.head_sha()
    assert git.run("log", "-1", "--format=%an <%ae>") == "harness <harness@localhost>"
    assert git.commit("nothing staged") is None
    assert git.current_branch() == "main" and git.is_repo()


def test_config_identity_wins_over_the_fallback(tmp_path: Path) -> None:
    git = Git(tmp_path / "repo")
    git.init()
    git.run("config", "user.name", "Op Erator")
    git.run("config", "user.email", "op@example.invalid")
    git.commit("first", allow_empty=True)
    assert git.run("log", "-1", "--format=%an <%ae>") == "Op Erator <op@example.invalid>"


def test_subdirectory_of_a_repo_is_not_a_repo(tmp_path: Path) -> None:
    Git(tmp_path).init()
    (tmp_path / "sub").mkdir()
    assert not Git(tmp_path / "sub").is_repo()
    assert not Git(tmp_path / "missing").is_repo()


def test_missing_git_binary_says_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(ServiceError, match=r"git failed\. Is it installed"):
        Git(tmp_path).run("status")


def test_push_rejection_is_typed(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    one, two = Git(tmp_path / "one"), Git(tmp_path / "two")
    for git in (one, two):
        git.init()
        git.add_remote("origin", str(remote))
        git.commit(f"root of {git.repo_dir.name}", allow_empty=True)
    one.push("origin", "main")
    with pytest.raises(PushRejected, match="rejected"):
        two.push("origin", "main")
    with pytest.raises(ServiceError) as caught:
        two.push("origin", "no-such-branch")
    assert not isinstance(caught.value, PushRejected)


def test_importing_the_git_service_and_sync_stays_light() -> None:
    code = (
        "import sys, harness_cli.services.git, harness_cli.workspace.gitsync\n"
        "heavy = [m for m in ('git', 'filelock') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

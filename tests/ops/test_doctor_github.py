"""`harness init --forge github` and `harness doctor` on a team whose repositories are on
GitHub (the sandbox's GitHub emulator): the token's scopes (classic) or permissions
(fine-grained, by trying each), each repository's reachability and write access."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.runner import GITHUB_SANDBOX_TOKEN, Sandbox
from tests.forges import on_github
from tests.ops.test_doctor import doctor, fill_env_file

REPO = "acme/pricing-service"


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sandbox", github_enabled=True) as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        yield sandbox


@pytest.fixture
def github_team(cli: Any, box: Sandbox, config_dir: Path) -> Path:
    on_github(config_dir)
    assert cli("init")[0] == 0
    fill_env_file(box)
    return config_dir


def _use_token(box: Sandbox, token: str, **kind: Any) -> None:
    assert box.github is not None
    box.github.control("add_token", {"token": token, **kind})
    env_file = Path(os.environ["HARNESS_HOME"]) / "env"
    env_file.write_text(env_file.read_text().replace(GITHUB_SANDBOX_TOKEN, token))
    os.environ["GITHUB_TOKEN"] = token


def test_a_healthy_github_team_passes(cli: Any, github_team: Path) -> None:
    code, checks, out = doctor(cli)
    assert code == 0, out
    bad = {n: c for n, c in checks.items() if c["status"] == "fail"}
    assert bad == {}, out
    assert checks["reach GitHub"]["detail"] == "as harness-bot"
    assert checks["GitHub token scopes"]["status"] == "ok"
    assert checks["GITHUB_TOKEN"]["status"] == "ok"
    assert checks[f"repo {REPO}"]["detail"] == "harness-bot may push and open PRs"
    assert "GITLAB_TOKEN" not in checks  # no project is on GitLab: its token is not needed
    assert GITHUB_SANDBOX_TOKEN not in out


def test_a_classic_token_without_the_workflow_scope_is_named(
    cli: Any, box: Sandbox, github_team: Path
) -> None:
    _use_token(box, "ghp_noWorkflowScope000000000000000000000", scopes=["repo"])
    code, checks, out = doctor(cli)
    assert code == 1
    failed = {n for n, c in checks.items() if c["status"] == "fail"}
    assert failed == {"GitHub token scopes"}, out
    assert "missing workflow (actions" in checks["GitHub token scopes"]["detail"]
    assert "repo, workflow" in checks["GitHub token scopes"]["fix"]


def test_a_fine_grained_token_without_actions_is_named_per_repo(
    cli: Any, box: Sandbox, github_team: Path
) -> None:
    permissions = {"contents": "write", "pull_requests": "write", "checks": "read",
                   "metadata": "read", "issues": "write"}  # fmt: skip
    _use_token(box, "github_pat_noActions0000000000000000000", permissions=permissions)
    code, checks, out = doctor(cli)
    assert code == 1
    failed = {n for n, c in checks.items() if c["status"] == "fail"}
    assert failed == {f"repo {REPO}"}, out
    assert "may not read actions" in checks[f"repo {REPO}"]["detail"]
    assert "GitHub token scopes" not in checks  # fine-grained: no scopes to read


def test_a_repo_that_does_not_exist_is_named(cli: Any, github_team: Path) -> None:
    path = github_team / "projects.yaml"
    path.write_text(path.read_text().replace(REPO, "acme/nope"))
    code, checks, _ = doctor(cli)
    assert code == 1
    assert checks["repo acme/nope"]["status"] == "fail"
    assert "not found" in checks["repo acme/nope"]["detail"]
    assert "projects.yaml" in checks["repo acme/nope"]["fix"]


def test_init_forge_github_writes_the_forge_and_its_token(cli: Any, tmp_path: Path) -> None:
    args = ["init", "--slack-user", "U0OPERATOR", "--self-dm", "D0SELF", "--repo", REPO]
    code, _, err = cli(*args, "--forge", "github")
    assert code == 0, err
    config = Path(os.environ["HARNESS_CONFIG"])
    from harness_cli.config import load_config

    [project] = load_config(config).projects.projects.values()
    assert project.forge == "github" and project.repos == [REPO]
    env_file = (Path(os.environ["HARNESS_HOME"]) / "env").read_text()
    assert "\nGITHUB_TOKEN=\n" in env_file and "GITLAB_TOKEN" not in env_file
    assert cli(*args, "--forge", "github")[0] == 0  # idempotent
    code, _, err = cli(*args, "--forge", "gitlab")
    assert code == 2 and "has forge github, --forge says gitlab" in err
    code, _, err = cli(*args, "--forge", "bitbucket")
    assert code == 2 and "use gitlab or github" in err

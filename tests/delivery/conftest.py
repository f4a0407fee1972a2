"""Real git for delivery tests: a bare ``origin`` (as the sandbox GitLab serves it, by file://),
a teammate's clone that pushes concurrent commits, and worktrees under a temp root."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness_cli.delivery import worktrees
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.runner import GITHUB_SANDBOX_TOKEN, Sandbox
from harness_cli.services.git import Git
from tests.conftest import REPO
from tests.delivery.desk import Desk
from tests.forges import use_github

PROJECT = "acme/shop"
APP = "greeting = hello\ncolour = blue\n"


@dataclass
class Origin:
    """The remote, and a teammate who pushes to it behind the harness's back."""

    bare: Path
    teammate: Git

    @property
    def url(self) -> str:
        return f"file://{self.bare}"

    def sha(self, branch: str) -> str | None:
        return Git(self.bare).head_sha(f"refs/heads/{branch}")

    def show(self, branch: str, path: str) -> str:
        return Git(self.bare).run("show", f"refs/heads/{branch}:{path}") + "\n"

    def push_change(self, branch: str, path: str, content: str, message: str) -> str:
        """The teammate commits ``content`` to ``path`` on ``branch`` and pushes it."""
        mate = self.teammate
        mate.fetch("origin")
        mate.run("checkout", "-q", "-B", branch, f"origin/{branch}")
        (mate.repo_dir / path).write_text(content)
        mate.add([path])
        sha = mate.commit(message)
        assert sha is not None
        mate.push("origin", branch)
        return sha


def commit(wt: worktrees.Worktree, path: str, content: str, message: str) -> str:
    """A commit in the worktree, as the dev agent's harness-side commit would make it."""
    (wt.path / path).write_text(content)
    git = wt.git()
    git.add([path])
    sha = git.commit(message)
    assert sha is not None
    return sha


@pytest.fixture
def origin(tmp_path: Path) -> Origin:
    bare = tmp_path / "remote" / "shop.git"
    bare.mkdir(parents=True)
    Git(bare).run("init", "-q", "--bare", "--initial-branch=main")
    seed = Git(tmp_path / "seed")
    seed.init("main")
    (seed.repo_dir / "app.txt").write_text(APP)
    (seed.repo_dir / "README.md").write_text("# shop\n")
    seed.add()
    seed.commit("initial")
    seed.add_remote("origin", f"file://{bare}")
    seed.push("origin", "main")
    teammate = Git.clone(f"file://{bare}", tmp_path / "teammate")
    return Origin(bare=bare, teammate=teammate)


@pytest.fixture
def thresholds(tmp_path: Path) -> DeliveryThresholds:
    return DeliveryThresholds(worktree_root=str(tmp_path / "worktrees"))


@pytest.fixture
def make_wt(origin: Origin, thresholds: DeliveryThresholds):  # type: ignore[no-untyped-def]
    def make(case_id: str, base: str = "main") -> worktrees.Worktree:
        return worktrees.create(case_id, origin.url, PROJECT, base, thresholds=thresholds)

    return make


@pytest.fixture(scope="session")
def model_server() -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator("push_heal")
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def model(
    model_server: AnthropicEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AnthropicEmulator:
    """The scripted model behind the Anthropic emulator, reset, with both runtimes pointed at
    it (the claude CLI keeps its sessions under $HOME)."""
    model_server.reset()
    model_server.load_script("push_heal")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-push-heal")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    return model_server


@pytest.fixture
def desk(forge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any) -> Iterator[Desk]:
    """The operator's desk on a fresh sandbox: the example config, `harness init` done, the
    harness's own loop against the delivery_adversarial script; the team's repository on
    ``forge`` (GitLab and GitHub, by the parameter)."""
    with Sandbox(tmp_path / "sb", github_enabled=forge == "github") as box:
        for key, value in box.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        shutil.copytree(REPO / "agent-config", tmp_path / "agent-config")
        shutil.copytree(REPO / "sops", tmp_path / "sops")
        if forge == "github":
            use_github(box.github, tmp_path, monkeypatch, token=GITHUB_SANDBOX_TOKEN)
        box.anthropic.load_script("delivery_adversarial")
        assert cli("init")[0] == 0
        yield Desk(box, cli, tmp_path / "harness-home", forge=forge)

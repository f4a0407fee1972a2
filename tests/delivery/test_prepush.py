"""Every commit that reaches origin passes the style SOP, whoever made it, and is authored by
the configured identity: real git, a bare origin, commits made the way an agent's Bash makes
them (``git -c user.name=… commit``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness_cli.delivery import worktrees
from harness_cli.delivery.identity import commit_identity, is_placeholder
from harness_cli.delivery.push.rebase import pre_push_rebase, real_push
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.errors import ConfigError
from harness_cli.services.git import Git
from tests.delivery.conftest import Origin

AI_MESSAGE = (
    "Fix the greeting [bot]\n\nSay hello to the world.\n\n"
    "🤖 Generated with [Claude Code](https://claude.ai/code)\n\n"
    "Co-Authored-By: Claude <noreply@anthropic.com>\n"
)


def agent_commit(wt: worktrees.Worktree, path: str, text: str, message: str) -> str:
    """What an agent's Bash does: its own identity, its own message."""
    (wt.path / path).write_text(text)
    subprocess.run(
        ["git", "-c", "user.name=Claude", "-c", "user.email=noreply@anthropic.com",
         "commit", "-q", "-am" if (wt.path / path).exists() else "-m", message],
        cwd=wt.path, check=True, capture_output=True,
    )  # fmt: skip
    return Git(wt.path).head_sha() or ""


def log(bare: Path, branch: str) -> list[str]:
    out = Git(bare).run("log", "--format=%an <%ae>|%cn <%ce>|%B%x00", f"refs/heads/{branch}")
    return [entry.strip() for entry in out.split("\0") if entry.strip()]


def test_ai_attribution_is_reworded_and_the_author_is_the_team(make_wt, origin: Origin) -> None:
    wt = make_wt("T-1")
    (wt.path / "app.txt").write_text("greeting = hello, world\n")
    Git(wt.path).add(["app.txt"])
    agent_commit(wt, "app.txt", "greeting = hello, world\ncolour = green\n", AI_MESSAGE)
    tree_before = wt.git().run("rev-parse", "HEAD^{tree}")
    assert pre_push_rebase(wt).ok

    pushed = real_push(wt)

    assert pushed.ok, pushed.error
    [newest, *_] = log(origin.bare, "harness/T-1")
    author, committer, message = newest.split("|", 2)
    assert author == committer == "Test <test@example.invalid>"
    assert message == "Fix the greeting\n\nSay hello to the world."
    assert Git(origin.bare).run("rev-parse", "refs/heads/harness/T-1^{tree}") == tree_before
    assert wt.git().status_porcelain() == ""  # the working tree never changed


def test_a_commit_the_harness_cannot_reword_is_never_pushed(make_wt, origin: Origin) -> None:
    wt = make_wt("T-2")
    agent_commit(wt, "app.txt", "greeting = hi\n", "Fixed the greeting.")
    assert pre_push_rebase(wt).ok

    pushed = real_push(wt)

    assert not pushed.ok and pushed.refused
    assert "breaks the style SOP" in pushed.error and "S10" in pushed.error
    assert origin.sha("harness/T-2") is None


def test_the_identity_comes_from_config_or_the_machine_never_a_placeholder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    configured = DeliveryThresholds(commit_author="Jane Doe <jane@team.example>")
    assert commit_identity(configured) == ("Jane Doe", "jane@team.example")
    assert commit_identity(DeliveryThresholds()) == ("Test", "test@example.invalid")
    with pytest.raises(ConfigError, match="placeholder"):
        commit_identity(DeliveryThresholds(commit_author="harness <harness@localhost>"))
    with pytest.raises(ConfigError, match="Name <email>"):
        commit_identity(DeliveryThresholds(commit_author="just a name"))
    empty = tmp_path / "empty-gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    with pytest.raises(ConfigError, match="no git identity") as caught:
        commit_identity(DeliveryThresholds())
    assert "commit_author" in caught.value.line()
    assert is_placeholder("Claude", "noreply@anthropic.com")
    assert not is_placeholder("Ada", "ada@team.example")

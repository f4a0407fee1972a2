"""`harness init` as a new operator runs it: from the repo root, from an empty directory, again
with other flags, and on a second machine joining an existing workspace. Real subprocesses and
real git; the first ticket runs on the sandbox emulators with the config init wrote."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_cli.agents import factory
from harness_cli.sandbox.runner import Sandbox
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, SAMPLE_TICKET
from tests.conftest import REPO, harness_subprocess

REAL = ("--slack-user", "U123REAL", "--self-dm", "D456", "--channel", "C789")


@pytest.fixture
def no_config_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator who exported nothing but HARNESS_HOME (the README's path)."""
    monkeypatch.delenv("HARNESS_CONFIG")
    monkeypatch.delenv("HARNESS_WORKSPACE")


def harness_yaml(tmp_path: Path) -> dict[str, Any]:
    data = yaml.safe_load((tmp_path / "harness-home/agent-config/harness.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_init_from_the_repo_root_writes_what_its_flags_say(
    tmp_path: Path, no_config_env: None
) -> None:
    example = (REPO / "agent-config" / "harness.yaml").read_bytes()
    code, out, err = harness_subprocess("init", *REAL, "--repo", "team/service", "--json", cwd=REPO)
    assert code == 0, err
    assert harness_yaml(tmp_path)["operator"] == {
        "slack_user_id": "U123REAL",
        "self_dm_channel": "D456",
    }
    projects = yaml.safe_load((tmp_path / "harness-home/agent-config/projects.yaml").read_text())
    assert projects["projects"]["team-a"]["slack_channels"] == ["C789"]
    assert projects["projects"]["team-a"]["repos"] == ["team/service"]
    assert (REPO / "agent-config" / "harness.yaml").read_bytes() == example  # untouched
    result = json.loads(out)
    assert any(str(REPO / "agent-config") in m and "not used" in m for m in result["messages"])
    # every later command, wherever it starts, reads the config init wrote
    for cwd in (REPO, tmp_path):
        code, out, _ = harness_subprocess("doctor", "--offline", "--json", cwd=cwd)
        checks = {c["name"]: c for c in json.loads(out)["data"]}
        assert str(tmp_path / "harness-home/agent-config") in checks["config"]["detail"]


def test_a_config_that_contradicts_the_flags_is_refused_with_the_conflict_named(
    tmp_path: Path, no_config_env: None
) -> None:
    assert harness_subprocess("init", *REAL, cwd=tmp_path)[0] == 0
    before = (tmp_path / "harness-home/agent-config/harness.yaml").read_text()
    code, _, err = harness_subprocess("init", "--slack-user", "U999OTHER", cwd=tmp_path)
    assert code == 2
    assert "U123REAL" in err and "U999OTHER" in err and "--force" in err
    assert (tmp_path / "harness-home/agent-config/harness.yaml").read_text() == before
    # the same flags again: nothing to do
    code, out, _ = harness_subprocess("init", *REAL, "--json", cwd=tmp_path)
    assert code == 0 and json.loads(out)["changed"] == []
    # --force rewrites from the flags, keeping what the flags do not say, and keeps a backup
    code, _, err = harness_subprocess("init", "--slack-user", "U999OTHER", "--force", cwd=tmp_path)
    assert code == 0, err
    assert harness_yaml(tmp_path)["operator"]["slack_user_id"] == "U999OTHER"
    assert harness_yaml(tmp_path)["operator"]["self_dm_channel"] == "D456"
    backup = tmp_path / "harness-home/agent-config/harness.yaml.bak"
    assert backup.read_text() == before


def test_a_new_config_needs_the_operators_ids(tmp_path: Path, no_config_env: None) -> None:
    code, _, err = harness_subprocess("init", cwd=tmp_path)
    assert code == 2
    assert "--slack-user" in err and "--self-dm" in err
    assert not (tmp_path / "harness-home" / "agent-config").exists()


def test_init_writes_the_env_file_for_cron_with_token_names_and_no_token(
    tmp_path: Path, no_config_env: None
) -> None:
    secret = "xoxp-1234567890-do-not-copy"
    code, out, err = harness_subprocess(
        "init", *REAL, cwd=tmp_path, env={"SLACK_USER_TOKEN": secret, "GITLAB_URL": ""}
    )
    assert code == 0, err
    env = tmp_path / "harness-home" / "env"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    text = env.read_text()
    # GitLab's address has no default: a line to fill in like the tokens, named in init's
    # "fill in" line (README's step names it; it used to be a comment to find and uncomment)
    for name in ("SLACK_USER_TOKEN=", "GITLAB_TOKEN=", "ANTHROPIC_API_KEY=", "GITLAB_URL="):
        assert f"\n{name}\n" in text
    assert re.search(r"fill in .*GITLAB_URL", out + err), out + err
    assert secret not in text
    # an existing env file is kept, its mode tightened when others could read it
    env.write_text(text + "GITLAB_TOKEN=glpat-mine00000000\n")
    env.chmod(0o644)
    code, _, _ = harness_subprocess("init", "--json", cwd=tmp_path)
    assert code == 0
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert "glpat-mine00000000" in env.read_text()


# -- the first ticket and the first MR on the config init wrote ------------------------------


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sandbox") as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_DISPATCH", "inline")
        # an install without the claude CLI: the runtime falls back to its own tool loop
        monkeypatch.setenv("HARNESS_CLAUDE_BIN", str(tmp_path / "no-claude-here"))
        # ...and says so once per process: a test before this one in the same worker may
        # already have heard it
        monkeypatch.setattr(factory, "_warned", [])
        yield sandbox


@pytest.mark.slow
def test_a_fresh_init_carries_the_first_ticket_to_an_mr(
    cli: Any, box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No prompts/ and no sops/STYLE.md in the operator's config: the packaged ones serve."""
    monkeypatch.delenv("HARNESS_CONFIG")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    code, _, err = cli(
        "init",
        *("--slack-user", "U0OPERATOR", "--self-dm", "D0SELF", "--project", "pricing"),
        *("--channel", "C0SUPPORT", "--jira-prefix", "AAA", "--repo", SAMPLE_PROJECT_PATH),
    )
    assert code == 0, err
    config = tmp_path / "harness-home" / "agent-config"
    assert not (config / "prompts").exists()
    assert (tmp_path / "harness-home" / "sops" / "pricing" / "SOP.md").exists()
    box.slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{SAMPLE_TICKET} (AAA-101)")
    code, _, err = cli("poll-slack")
    assert code == 0, err
    said = [line for line in err.splitlines() if "claude CLI not found" in line]
    assert len(said) == 1 and "anthropic" in said[0], err
    assert json.loads(said[0])["level"] == "warning"  # not a terminal: a JSON line, as for cron
    case = json.loads(
        (tmp_path / "workspace/case-workspaces/AAA-101/case.json").read_text(encoding="utf-8")
    )
    assert case["status"] == "awaiting_approval", case
    assert (tmp_path / "workspace/case-workspaces/AAA-101/ANALYSIS.md").exists()
    code, _, err = cli("admin", "task AAA-101 --auto")
    assert code == 0, err
    mrs = box.gitlab.snapshot()["merge_requests"]
    assert [m["source_branch"] for m in mrs] == ["harness/AAA-101"]


# -- a second machine ------------------------------------------------------------------------


def test_a_second_machine_joins_the_workspace_on_its_branch_with_its_history(
    cli: Any, config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote was created on a host whose git still defaults to ``master``: its HEAD names
    a branch nobody pushes, while machine 1 pushes ``main``."""
    remote = tmp_path / "cases.git"
    subprocess.run(
        ["git", "-c", "init.defaultBranch=master", "init", "--bare", "-q", str(remote)], check=True
    )

    def machine(n: int) -> None:
        monkeypatch.setenv("HARNESS_HOME", str(tmp_path / f"home{n}"))
        monkeypatch.setenv("HARNESS_WORKSPACE", str(tmp_path / f"workspace{n}"))

    machine(1)
    assert cli("init", "--remote", str(remote))[0] == 0
    assert cli("case", "new", "--project", "team-a", "--title", "one", "--id", "AAA-1")[0] == 0
    machine(2)
    code, _, err = cli("init", "--remote", str(remote), "--json")
    assert code == 0, err
    ws2 = tmp_path / "workspace2"
    branch = subprocess.run(
        ["git", "-C", str(ws2), "branch", "--show-current"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert branch == "main"
    assert (ws2 / "case-workspaces" / "AAA-1" / "case.json").exists()
    assert cli("case", "new", "--project", "team-a", "--title", "two", "--id", "AAA-2")[0] == 0
    heads = subprocess.run(
        ["git", "ls-remote", "--heads", str(remote)], capture_output=True, text=True, check=True
    ).stdout
    assert [line.split("\t")[1] for line in heads.splitlines()] == ["refs/heads/main"]
    tree = subprocess.run(
        ["git", "-C", str(remote), "ls-tree", "-r", "--name-only", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "case-workspaces/AAA-1/case.json" in tree and "case-workspaces/AAA-2/case.json" in tree
    assert os.environ["HARNESS_HOME"].endswith("home2")

"""harness doctor against the sandbox emulators and real MCP servers: a healthy setup exits 0;
a broken one lists each problem once, with its fix, and exits 1 — never printing a token."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.runner import SANDBOX_TOKENS, Sandbox
from tests.ops.mcp_server import HttpMcpServer, Idp
from tests.ops.test_cron import fake_crontab  # noqa: F401 - the fixture, shared

pytestmark = pytest.mark.filterwarnings("ignore:Field 'lifespan' has an incomplete definition")
SERVER_SCRIPT = Path(__file__).with_name("mcp_server.py")


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sandbox") as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        yield sandbox


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "cases.git"
    subprocess.run(["git", "init", "--bare", "-q", str(bare)], check=True)
    return bare


@pytest.fixture
def mcp(tmp_path: Path, config_dir: Path) -> Iterator[Idp]:
    idp = Idp.create(tmp_path / "idp")
    with HttpMcpServer(tokens=idp.tokens) as server:
        servers = {
            "atlassian": {
                "type": "http",
                "url": server.url,
                "headersHelper": idp.helper_command(),
                "noop_tool": "ping",
                "runbook": "run `atlassian-login` and approve the prompt",
            },
            "local": {
                "command": sys.executable,
                "args": [str(SERVER_SCRIPT), "stdio"],
                "noop_tool": "ping",
            },
        }
        (config_dir / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
        yield idp


def doctor(cli: Any, *args: str) -> tuple[int, dict[str, dict[str, str]], str]:
    code, out, _ = cli("doctor", "--json", *args)
    names = [c["name"] for c in json.loads(out)["data"]]
    assert len(names) == len(set(names)), f"a check appears twice: {names}"
    return code, {c["name"]: c for c in json.loads(out)["data"]}, out


def fill_env_file(box: Sandbox, drop: tuple[str, ...] = ()) -> None:
    """What the operator does after `harness init`: the tokens (and, here, the sandbox's URLs)
    go into the env file cron reads."""
    env_file = Path(os.environ["HARNESS_HOME"]) / "env"
    lines = [f"{k}={v}" for k, v in box.env().items() if k not in drop]
    before = env_file.read_text() if env_file.exists() else ""
    env_file.write_text(before + "\n".join(lines) + "\n")
    for key in drop:
        os.environ.pop(key, None)


def test_a_healthy_setup_passes(
    cli: Any, box: Sandbox, remote: Path, mcp: Idp, fake_crontab: Path,  # noqa: F811
) -> None:  # fmt: skip
    from tests.conftest import REPO

    shutil.copytree(REPO / "sops", Path(os.environ["HARNESS_CONFIG"]).parent / "sops")
    assert cli("init", "--remote", str(remote), "--install-cron", "--yes")[0] == 0
    fill_env_file(box)
    code, checks, out = doctor(cli)
    assert code == 0, out
    bad = {n: c for n, c in checks.items() if c["status"] == "fail"}
    assert bad == {}
    for name in (
        "config",
        "templates",
        "SOPs",
        "git identity",
        "workspace",
        "workspace remote",
        "env file",
        "SLACK_USER_TOKEN",
        "GITLAB_TOKEN",
        "ANTHROPIC_API_KEY",
        "schedule",
        "reach Slack",
        "Slack user",
        "self-DM D0SELF",
        "channel C0SUPPORT",
        "reach GitLab",
        "repo acme/pricing-service",
        "reach Anthropic",
        "MCP atlassian",
        "MCP local",
    ):
        assert checks[name]["status"] == "ok", checks[name]
    assert checks["reach GitLab"]["detail"].startswith("as ")
    assert "claude-sonnet-4-6" in checks["reach Anthropic"]["detail"]
    for token in SANDBOX_TOKENS.values():
        assert token not in out


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


BROKEN = {
    # what the operator got wrong → the one check that must fail, and a word its line must name
    "token of another user": ("Slack user", "U0CUSTOMER"),
    "self-DM that does not exist": ("self-DM D0NOPE", "channel_not_found"),
    "support channel that does not exist": ("channel C0NOPE", "channel_not_found"),
    "repo that does not exist": ("repo acme/nope", "not found"),
    "repo the token may not push to": ("repo acme/pricing-service", "Reporter"),
    "model that does not exist": ("reach Anthropic", "claude-nope"),
    "no SLACK_USER_TOKEN": ("SLACK_USER_TOKEN", "not set"),
    "no GITLAB_TOKEN": ("GITLAB_TOKEN", "not set"),
    "no ANTHROPIC_API_KEY": ("ANTHROPIC_API_KEY", "not set"),
}


@pytest.mark.parametrize("broken", list(BROKEN))
def test_each_broken_id_or_token_fails_doctor_naming_it(
    cli: Any, box: Sandbox, config_dir: Path, broken: str
) -> None:
    assert cli("init")[0] == 0
    drop: tuple[str, ...] = ()
    if broken == "token of another user":
        box.slack.add_token(SANDBOX_TOKENS["SLACK_USER_TOKEN"], "U0CUSTOMER")
    elif broken == "self-DM that does not exist":
        _edit(config_dir / "harness.yaml", "self_dm_channel: D0SELF", "self_dm_channel: D0NOPE")
    elif broken == "support channel that does not exist":
        _edit(config_dir / "projects.yaml", '["C0SUPPORT"]', '["C0SUPPORT", "C0NOPE"]')
    elif broken == "repo that does not exist":
        _edit(config_dir / "projects.yaml", "repos: []", 'repos: ["acme/nope"]')
    elif broken == "repo the token may not push to":
        box.gitlab.control(
            "set_access", {"project": "acme/pricing-service", "user": "harness-bot", "level": 20}
        )
    elif broken == "model that does not exist":
        _edit(config_dir / "harness.yaml", "model: claude-sonnet-4-6", "model: claude-nope")
    else:
        drop = (broken.removeprefix("no "),)
    fill_env_file(box, drop)
    code, checks, out = doctor(cli)
    assert code == 1, out
    name, word = BROKEN[broken]
    failed = {n for n, c in checks.items() if c["status"] == "fail"}
    assert failed == {name}, out
    assert word in checks[name]["detail"] and checks[name]["fix"], checks[name]
    for token in SANDBOX_TOKENS.values():
        assert token not in out


def test_a_broken_setup_lists_each_problem_once_with_its_fix(
    cli: Any, box: Sandbox, remote: Path, mcp: Idp
) -> None:
    assert cli("init", "--remote", str(remote))[0] == 0
    fill_env_file(box)
    box.slack.revoke_token(SANDBOX_TOKENS["SLACK_USER_TOKEN"])
    box.gitlab.control("revoke_token", {"token": SANDBOX_TOKENS["GITLAB_TOKEN"]})
    shutil.rmtree(remote)
    mcp.expire_all()
    code, checks, out = doctor(cli)
    assert code == 1
    failed = {n for n, c in checks.items() if c["status"] == "fail"}
    assert failed == {"reach Slack", "reach GitLab", "workspace remote", "MCP atlassian"}
    for name in failed:
        assert checks[name]["fix"], f"{name} has no fix"
    assert "auth.test" in checks["reach Slack"]["fix"]
    assert "GET /user" in checks["reach GitLab"]["fix"]
    assert "HTTP 401" in checks["MCP atlassian"]["detail"]
    assert checks["MCP atlassian"]["fix"] == "run `atlassian-login` and approve the prompt"
    assert checks["MCP local"]["status"] == "ok"
    # each server's tools with the effect its contract gives them: untrusted, undeclared → write
    assert "writes (untrusted): " in checks["MCP local"]["detail"], checks["MCP local"]
    # the fix works on this machine: cron's where there is a crontab command, else systemd's
    how = "--install-cron" if shutil.which("crontab") else "--install-systemd"
    assert checks["schedule"]["status"] == "warn" and how in checks["schedule"]["fix"]
    for token in SANDBOX_TOKENS.values():
        assert token not in out


def test_at_80_columns_each_red_line_is_followed_by_its_fix_and_no_path_is_cut(
    box: Sandbox, tmp_path: Path, config_dir: Path
) -> None:
    """The file doctor asks you to fix is named whole, however narrow the terminal."""
    from tests.conftest import harness_subprocess

    deep = tmp_path / ("a-rather-long-folder-name-" * 2) / "agent-config"
    shutil.copytree(config_dir, deep)
    _edit(deep / "projects.yaml", "default_project: team-a", "default_project: team-z")
    code, out, _ = harness_subprocess(
        "doctor", "--offline", env={"COLUMNS": "80", "HARNESS_CONFIG": str(deep)}
    )
    assert code == 1
    lines = out.splitlines()
    for line in lines:
        assert len(line) <= 80 or " " not in line.strip(), line
    assert "…/" not in out and ".…" not in out  # the cut path of the issue: "…/projects.…"
    text = " ".join(line.strip() for line in lines)
    assert str(deep / "projects.yaml") in text
    [at] = [i for i, line in enumerate(lines) if line.startswith("FAIL  config")]
    assert any(line.strip().startswith("fix: ") for line in lines[at + 1 : at + 6])

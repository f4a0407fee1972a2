"""harness doctor against the sandbox emulators and real MCP servers: a healthy setup exits 0;
a broken one lists each problem once, with its fix, and exits 1 — never printing a token."""

from __future__ import annotations

import json
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


def doctor(cli: Any) -> tuple[int, dict[str, dict[str, str]], str]:
    code, out, _ = cli("doctor", "--json")
    names = [c["name"] for c in json.loads(out)["data"]]
    assert len(names) == len(set(names)), f"a check appears twice: {names}"
    return code, {c["name"]: c for c in json.loads(out)["data"]}, out


def test_a_healthy_setup_passes(
    cli: Any, box: Sandbox, remote: Path, mcp: Idp, fake_crontab: Path,  # noqa: F811
) -> None:  # fmt: skip
    assert cli("init", "--remote", str(remote), "--install-cron", "--yes")[0] == 0
    code, checks, out = doctor(cli)
    assert code == 0, out
    bad = {n: c for n, c in checks.items() if c["status"] == "fail"}
    assert bad == {}
    for name in (
        "config",
        "git identity",
        "workspace",
        "workspace remote",
        "schedule",
        "reach Slack",
        "reach GitLab",
        "reach Anthropic",
        "MCP atlassian",
        "MCP local",
    ):
        assert checks[name]["status"] == "ok", checks[name]
    assert checks["reach GitLab"]["detail"].startswith("as ")
    for token in SANDBOX_TOKENS.values():
        assert token not in out


def test_a_broken_setup_lists_each_problem_once_with_its_fix(
    cli: Any, box: Sandbox, remote: Path, mcp: Idp
) -> None:
    assert cli("init", "--remote", str(remote))[0] == 0
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
    assert checks["schedule"]["status"] == "warn" and "--install-cron" in checks["schedule"]["fix"]
    for token in SANDBOX_TOKENS.values():
        assert token not in out


def test_the_table_shows_the_fix_next_to_each_red_line(
    cli: Any, box: Sandbox, config_dir: Path
) -> None:
    box.slack.revoke_token(SANDBOX_TOKENS["SLACK_USER_TOKEN"])
    code, out, _ = cli("doctor")
    assert code == 1
    [line] = [row for row in out.splitlines() if "reach Slack" in row]
    assert "FAIL" in line and "auth.test refused" in line

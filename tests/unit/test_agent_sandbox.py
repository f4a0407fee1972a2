"""Fail closed (#17 p1): on a machine where no sandbox works, no run with a shell starts unless
harness.yaml opts out, loudly; runs without a shell are not affected; doctor says how to fix it.
The machine without bubblewrap is a PATH without it (the probe is real)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from harness_cli.agents import policy, sandbox
from harness_cli.agents.anthropic_loop import AnthropicRuntime
from harness_cli.agents.sandbox_settings import SandboxSettings
from harness_cli.errors import PolicyRefused
from harness_cli.services.runtime import RunRequest


class NoModel(Exception):
    """The run got past the sandbox check and asked for its model client."""


def no_model() -> Any:
    raise NoModel


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def request(tmp_path: Path, role: str) -> RunRequest:
    return RunRequest(role=role, prompt="p", workdir=tmp_path, allowed_root=tmp_path)


@pytest.mark.usefixtures("no_bwrap")
def test_without_bubblewrap_a_run_with_a_shell_is_refused(tmp_path: Path) -> None:
    assert sandbox.problem("anthropic") == "bubblewrap (bwrap) is not installed"
    runtime = AnthropicRuntime(client_factory=no_model)
    with pytest.raises(PolicyRefused) as refused:
        runtime.run(request(tmp_path, "dev-agent"))
    assert "apt-get install bubblewrap" in refused.value.line()
    assert "sandbox.required: false" in refused.value.line()
    with pytest.raises(NoModel):  # no shell, no sandbox needed: the run starts
        runtime.run(request(tmp_path, "investigator"))


@pytest.mark.usefixtures("no_bwrap")
def test_the_operator_may_opt_out_and_is_told_at_every_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = AnthropicRuntime(
        client_factory=no_model, sandbox_settings=SandboxSettings(required=False)
    )
    with caplog.at_level(logging.WARNING), pytest.raises(NoModel):
        runtime.run(request(tmp_path, "push-healer"))
    assert any("UNSANDBOXED" in r.getMessage() for r in caplog.records)


@pytest.mark.usefixtures("no_bwrap")
def test_doctor_names_the_fix() -> None:
    from harness_cli.ops.doctor.checks import agent_sandbox

    check = agent_sandbox()
    assert check.status == "fail" and "apt-get install bubblewrap socat" in check.fix


def test_the_claude_cli_needs_socat_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed here")
    only = tmp_path / "bin"
    only.mkdir()
    (only / "bwrap").symlink_to(bwrap)
    monkeypatch.setenv("PATH", str(only))
    assert sandbox.problem("anthropic") is None
    assert "socat" in str(sandbox.problem("claude-code"))


def test_one_deny_list_for_every_role(tmp_path: Path) -> None:
    mcp = tmp_path / "mcp.json"
    mcp.write_text('{"mcpServers": {"slack": {"command": "x"}, "jira": {"command": "y"}}}')
    for role in ("dev-agent", "push-healer", "patch-suggester", "investigator", "followup"):
        req = RunRequest(role=role, prompt="p", workdir=tmp_path, allowed_root=tmp_path)
        denied = policy.disallowed_tools(
            RunRequest(**{**vars(req), "mcp_config": mcp, "on_event": None})
        )
        for server in ("slack", "jira"):
            assert f"mcp__{server}__send_message_to_self" in denied
            assert f"mcp__{server}__edit_message_to_self" in denied
        assert ("Bash" in denied) == (not policy.ROLES[role].bash)
    assert "Bash" in policy.disallowed_tools(request(tmp_path, "someone-new"))  # fail closed

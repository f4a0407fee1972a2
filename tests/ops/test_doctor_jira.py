"""`harness doctor` checks Jira (#30): the credentials of the env file are accepted, and each
``jira_prefixes`` entry of projects.yaml is a project the account sees — on the sandbox's Jira
emulator, never printing the token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_cli.sandbox.runner import SANDBOX_TOKENS, Sandbox
from tests.ops.test_doctor import _edit, box, doctor, fill_env_file

__all__ = ["box"]


def test_doctor_checks_the_jira_credentials_and_every_prefix(
    cli: Any, box: Sandbox, config_dir: Path
) -> None:
    assert cli("init")[0] == 0
    fill_env_file(box)
    _, checks, out = doctor(cli)
    assert (
        checks["reach Jira"]["status"] == "ok" and "Harness Bot" in checks["reach Jira"]["detail"]
    )
    for prefix in ("AAA", "BBB", "XX", "YY"):
        assert checks[f"Jira prefix {prefix}"]["status"] == "ok", checks
    assert SANDBOX_TOKENS["JIRA_TOKEN"] not in out


def test_a_prefix_jira_does_not_know_fails_naming_it_and_the_file(
    cli: Any, box: Sandbox, config_dir: Path
) -> None:
    assert cli("init")[0] == 0
    _edit(config_dir / "projects.yaml", '["AAA", "BBB"]', '["AAA", "BBX"]')
    fill_env_file(box)
    code, checks, out = doctor(cli)
    assert code == 1, out
    failed = {n for n, c in checks.items() if c["status"] == "fail"}
    assert failed == {"Jira prefix BBX"}, out
    assert "BBX is not a Jira project" in checks["Jira prefix BBX"]["detail"]
    assert "projects.yaml" in checks["Jira prefix BBX"]["fix"]


def test_a_refused_jira_token_fails_once_and_the_prefixes_are_left_out(
    cli: Any, box: Sandbox, config_dir: Path
) -> None:
    assert cli("init")[0] == 0
    fill_env_file(box)
    box.jira.control("revoke_token", {"token": SANDBOX_TOKENS["JIRA_TOKEN"]})
    code, checks, out = doctor(cli)
    assert code == 1
    failed = {n for n, c in checks.items() if c["status"] == "fail"}
    assert failed == {"reach Jira"}, out
    assert "401" in checks["reach Jira"]["detail"] and "JIRA_TOKEN" in checks["reach Jira"]["fix"]
    assert not any(n.startswith("Jira prefix") for n in checks)
    assert SANDBOX_TOKENS["JIRA_TOKEN"] not in out

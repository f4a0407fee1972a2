"""The CLI frame: lazy table, help for every subcommand, exit codes, one-line errors, crash
logs, and that start-up imports no SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from harness_cli.cli import COMMANDS
from harness_cli.dispatch.run import Outcome, Run
from harness_cli.state.locks import workflow_lock
from harness_cli.workflows.table import WORKFLOWS, entry
from tests.conftest import harness_subprocess

CONTRACT_SUBCOMMANDS = {
    "poll-slack",
    "listen",
    "investigate",
    "review",
    "followup",
    "dev-agent",
    "mr-monitor",
    "consolidate",
    "finalize",
    "gap-patterns",
    "kb-update",
    "mcp-watch",
    "admin",
    "case",
    "status",
    "pause",
    "resume",
    "gates",
    "sandbox",
    "demo",
    "doctor",
}


def test_every_contract_subcommand_is_registered() -> None:
    assert set(COMMANDS) >= CONTRACT_SUBCOMMANDS


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_subcommand_has_help(cli, name: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli(name, "--help")
    assert code == 0, err
    assert "Usage" in out or "usage" in out


def test_root_help_lists_everything_and_imports_no_command_module() -> None:
    probe = (
        "import sys, io, contextlib\n"
        "from harness_cli.cli import run\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    code = run(['--help'])\n"
        "heavy = [m for m in ('anthropic', 'slack_sdk', 'gitlab', 'github', 'git',"
        " 'atlassian', 'mcp',"
        " 'harness_cli.commands.case', 'harness_cli.commands.demo',"
        " 'harness_cli.sandbox.slack_api') if m in sys.modules]\n"
        "print(code, heavy, 'poll-slack' in buf.getvalue())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "0 [] True"


def test_importing_the_cli_imports_no_sdk() -> None:
    probe = (
        "import sys, harness_cli.cli\n"
        "print([m for m in ('anthropic','slack_sdk','gitlab','github','git','atlassian','mcp')"
        " if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_unknown_command_is_usage_error_with_suggestion(cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("pol-slack")
    assert code == 2
    assert "did you mean 'poll-slack'" in err


def test_json_flag_anywhere_gives_machine_output(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("investigate", "NOPE-1", "--json")
    assert code == 2
    data = json.loads(out)
    assert data["ok"] is False and data["error"] == "ConfigError" and "init" in data["message"]
    code, out, _ = cli("case", "list", "--json")
    assert code == 0 and json.loads(out)["ok"] is True


def test_bad_config_exits_2_with_one_line_and_no_traceback(config_dir: Path) -> None:
    (config_dir / "harness.yaml").write_text("operator: [oops\n")
    code, _, err = harness_subprocess("case", "new", "--project", "team-a", "--title", "x")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "harness.yaml:" in lines[0] and "broken YAML" in lines[0]
    assert "Traceback" not in err


def test_workflow_is_never_started_twice_concurrently(cli) -> None:  # type: ignore[no-untyped-def]
    assert "investigate" in WORKFLOWS
    with workflow_lock("investigate", "AAA-1"):
        code, _, err = cli("investigate", "AAA-1")
    assert code == 3
    assert "locked by another run" in err


def test_every_workflow_is_a_command_and_its_entry_takes_a_run_and_returns_an_outcome() -> None:
    for name in WORKFLOWS:
        assert name in COMMANDS, name
        hints = typing.get_type_hints(entry(name))
        assert hints.pop("return") is Outcome, name
        assert list(hints.values()) == [Run], name


def test_malformed_payload_is_bad_input(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "p.json"
    bad.write_text('{"workflow": "investigate"}')
    code, _, err = cli("investigate", "--payload", str(bad))
    assert code == 2
    assert "not a dispatch payload" in err


def test_unexpected_error_writes_a_crash_log_with_versions(
    cli,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from harness_cli.commands import case as case_cmd

    def explode(**_: object) -> list[dict[str, object]]:
        raise ZeroDivisionError("glpat-SECRETSECRETSECRET leaked?")

    monkeypatch.setattr(case_cmd, "list_cases", explode)
    code, _, err = cli("case", "list")
    assert code == 1
    assert "this is a bug" in err and "SECRETSECRET" not in err
    logs = list((tmp_path / "harness-home" / "logs").glob("crash-*.log"))
    assert len(logs) == 1
    text = logs[0].read_text()
    assert "ZeroDivisionError" in text and "pydantic:" in text and "SECRETSECRET" not in text

"""The schedule runs as printed: the crontab line and the systemd unit that `harness init`
generates are executed the way cron and systemd start them — an empty environment plus only
what the crontab / unit sets — against the sandbox, and each opens the ticket it should."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.ops import schedule
from harness_cli.paths import read_env_file
from harness_cli.sandbox.runner import Sandbox
from tests.ops.test_cron import fake_crontab  # noqa: F401 - the fixture, shared


@pytest.fixture
def installed(
    cli: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_crontab: Path,  # noqa: F811
) -> Iterator[tuple[Sandbox, Path]]:
    """init on an empty machine, the schedule installed, the tokens filled in by the operator."""
    monkeypatch.delenv("HARNESS_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with Sandbox(tmp_path / "sandbox") as box:
        code, _, err = cli(
            "init",
            *("--slack-user", "U0OPERATOR", "--self-dm", "D0SELF", "--channel", "C0SUPPORT"),
            *("--jira-prefix", "AAA", "--install-cron", "--install-systemd", "--yes"),
        )
        assert code == 0, err
        env_file = tmp_path / "harness-home" / "env"
        lines = [f"{k}={v}" for k, v in box.env().items()]
        env_file.write_text(env_file.read_text() + "\n".join(lines) + "\n")
        # workflows would start detached; here they are recorded (an operator's config choice)
        config = tmp_path / "harness-home" / "agent-config" / "harness.yaml"
        config.write_text(config.read_text() + "dispatch: record\n")
        yield box, fake_crontab


def bare_env(tmp_path: Path) -> dict[str, str]:
    """What cron gives a job before the crontab's own lines: HOME, LOGNAME, SHELL, PATH."""
    home = tmp_path / "login-home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "LOGNAME": "tester", "SHELL": "/bin/sh", "PATH": "/usr/bin:/bin"}


def case_file(tmp_path: Path, case_id: str) -> Path:
    return tmp_path / "workspace" / "case-workspaces" / case_id / "case.json"


def test_the_installed_crontab_line_runs_with_cron_s_environment_only(
    installed: tuple[Sandbox, Path], tmp_path: Path
) -> None:
    box, table = installed
    box.slack.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-7: checkout shows the wrong total")
    crontab = table.read_text()
    [line] = [e for e in schedule.entries(crontab) if e.argv[1:] == ["poll-slack"]]
    env = {**bare_env(tmp_path), **schedule.assignments(crontab)}
    # cron runs the command through /bin/sh -c with exactly that environment
    assignments = [f"{k}={v}" for k, v in env.items()]
    done = subprocess.run(
        ["/usr/bin/env", "-i", *assignments, "/bin/sh", "-c", shlex.join(line.argv)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    log = (tmp_path / "harness-home" / "logs" / "cron" / "poll-slack.log").read_text()
    assert done.returncode == 0, log
    assert done.stdout == "" and done.stderr == ""  # nothing for cron to mail
    assert log.rstrip().endswith("exit 0")
    case = json.loads(case_file(tmp_path, "AAA-7").read_text())
    assert case["project"] == "team-a"
    for name in ("HARNESS_HOME", "HARNESS_CONFIG", "HARNESS_WORKSPACE", "HARNESS_ENV_FILE"):
        assert Path(env[name]).is_absolute(), name


def _unit(path: Path) -> tuple[dict[str, str], Path, list[str]]:
    """Environment=, EnvironmentFile= and ExecStart= of a unit file, parsed as systemd does."""
    env: dict[str, str] = {}
    env_file = Path()
    argv: list[str] = []
    for raw in path.read_text().splitlines():
        key, _, value = raw.partition("=")
        if key == "Environment":
            name, _, val = shlex.split(value)[0].partition("=")
            env[name] = val
        elif key == "EnvironmentFile":
            env_file = Path(value.removeprefix("-"))
        elif key == "ExecStart":
            argv = shlex.split(value)
    return env, env_file, argv


def test_the_installed_systemd_unit_runs_with_its_own_environment_only(
    installed: tuple[Sandbox, Path], tmp_path: Path
) -> None:
    box, _ = installed
    box.slack.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-8: invoices are emailed twice")
    unit = tmp_path / "xdg" / "systemd" / "user" / "harness-poll-slack.service"
    env, env_file, argv = _unit(unit)
    assert Path(argv[0]).is_absolute() and os.access(argv[0], os.X_OK)
    full = {"HOME": str(tmp_path / "login-home"), **env, **read_env_file(env_file)}
    done = subprocess.run(
        ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in full.items()), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(case_file(tmp_path, "AAA-8").read_text())["project"] == "team-a"
    # the listener's unit starts the same harness with the same paths
    listen_env, listen_file, listen_argv = _unit(unit.with_name("harness-listen.service"))
    assert listen_argv == [argv[0], "listen"]
    assert (listen_env, listen_file) == (env, env_file)

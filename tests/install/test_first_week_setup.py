"""The way from `pip install` to a schedule that runs, as a new operator walks it (#34 items 1,
7, 8, 9): the installed wheel run from an empty directory, a login home with no git identity
and no crontab command (this machine has no cron), the sandbox's services, and — for systemd,
which no test box runs — a ``systemctl`` on PATH that keeps which units are enabled in a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness_cli.ops import schedule
from tests.install.conftest import Operator

pytestmark = pytest.mark.slow


def test_doctor_is_not_green_while_no_commit_can_be_made(operator: Operator) -> None:
    """#34 item 1: no git identity and no delivery.commit_author means every approved ticket
    fails at its first commit, so doctor fails and names both fixes; each fix turns it ok."""
    operator.init()
    operator.fill_tokens()
    code, checks = operator.doctor("--offline")
    identity = checks["git identity"]
    assert (code, identity["status"]) == (1, "fail"), identity
    assert "commit_author" in identity["fix"] and "git config --global" in identity["fix"]

    # the fix in harness.yaml, as doctor words it
    harness_yaml = operator.config / "harness.yaml"
    data = yaml.safe_load(harness_yaml.read_text())
    data["delivery"] = {"commit_author": "Ops Person <ops@team.example>"}
    harness_yaml.write_text(yaml.safe_dump(data))
    _, checks = operator.doctor("--offline")
    assert checks["git identity"]["status"] == "ok"
    assert "Ops Person <ops@team.example>" in checks["git identity"]["detail"]

    # a placeholder is no identity either
    data["delivery"] = {"commit_author": "harness <harness@localhost>"}
    harness_yaml.write_text(yaml.safe_dump(data))
    _, checks = operator.doctor("--offline")
    assert checks["git identity"]["status"] == "fail"


def test_hand_run_subcommands_read_the_env_file_and_the_shell_wins(operator: Operator) -> None:
    """#34 item 8: right after a green doctor, `harness poll-slack` from the same shell finds
    the tokens doctor found (in $HARNESS_HOME/env); a variable set in the shell still wins."""
    operator.init()
    operator.fill_tokens()
    assert operator.box is not None
    operator.box.slack.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-11: the export button is gone")
    code, _, err = operator.run("poll-slack", HARNESS_DISPATCH="record")
    assert code == 0, err
    case = operator.home / "workspace" / "case-workspaces" / "AAA-11" / "case.json"
    assert json.loads(case.read_text())["project"] == "team-a"
    code, _, err = operator.run("poll-slack", SLACK_USER_TOKEN="revoked-in-the-shell")
    assert code != 0 and "invalid_auth" in err, err


def test_init_refuses_flag_values_that_are_not_ids(operator: Operator) -> None:
    """#34 item 9: a value that is not a Slack id is refused in one line naming the flag, and
    nothing is written."""
    for flags, named in (
        (("--slack-user", "U0OPERATOR", "--self-dm", "#alice"), "--self-dm"),
        (("--slack-user", "@alice", "--self-dm", "D0SELF"), "--slack-user"),
        (("--slack-user", "U0OPERATOR", "--self-dm", "D0SELF", "--channel", "support"),
         "--channel"),
        (("--slack-user", "U0OPERATOR", "--self-dm", "D0SELF\nauto_monitor: false"),
         "--self-dm"),
    ):  # fmt: skip
        code, _, err = operator.run("init", *flags)
        assert code == 2, (flags, err)
        assert named in err and len(err.strip().splitlines()) == 1, err
        assert not (operator.config / "harness.yaml").exists()


def test_init_writes_yaml_it_reads_back_whatever_the_names(operator: Operator) -> None:
    """#34 item 9: a project name with spaces, accents or YAML's own characters is written by a
    serializer, so the config loads and doctor reads it."""
    name = 'Équipe paiements: "core" #1'
    operator.init("--slack-user", "U0OPERATOR", "--self-dm", "D0SELF", "--project", name)
    projects = yaml.safe_load((operator.config / "projects.yaml").read_text())
    assert projects["default_project"] == name and name in projects["projects"]
    _, checks = operator.doctor("--offline")
    assert checks["config"]["status"] == "ok", checks["config"]
    assert (operator.config.parent / "sops" / name / "SOP.md").is_file()


def test_init_force_rewrites_only_what_conflicts_and_keeps_every_backup(
    operator: Operator,
) -> None:
    """#34 item 9: --force replaces a config init cannot read, touches only the file that
    contradicts the flags (the other keeps its hand edits), and never overwrites a backup."""
    config = operator.config
    config.mkdir(parents=True)
    broken = "operator:\n  slack_user_id: U0OPERATOR\n  self_dm_channel: #alice\n"
    (config / "harness.yaml").write_text("schema_version: 1\n" + broken)
    (config / "projects.yaml").write_text("projects: [\n")
    code, _, err = operator.run("init", "--slack-user", "U0OPERATOR", "--self-dm", "D0SELF")
    assert code == 2 and "--force" in err, err
    operator.init("--slack-user", "U0OPERATOR", "--self-dm", "D0SELF", "--force")
    assert (config / "harness.yaml.bak").read_text().endswith(broken)
    harness_yaml = config / "harness.yaml"
    edited = harness_yaml.read_text() + "# my note\nauto_monitor: false\n"
    edited = edited.replace("auto_monitor: true\n", "")
    harness_yaml.write_text(edited)

    # a new channel contradicts projects.yaml only: harness.yaml keeps the hand edit
    operator.init("--channel", "C0OTHER", "--force")
    assert harness_yaml.read_text() == edited
    projects = yaml.safe_load((config / "projects.yaml").read_text())
    assert projects["projects"]["team-a"]["slack_channels"] == ["C0OTHER"]
    # a second and a third forced rewrite of harness.yaml: every earlier version is kept
    operator.init("--self-dm", "D0OTHER", "--force")
    operator.init("--self-dm", "D0THIRD", "--force")
    backups = sorted(p.name for p in config.glob("harness.yaml.bak*"))
    assert len(backups) == 3, backups
    texts = {(config / b).read_text() for b in backups}
    assert edited in texts and any("D0OTHER" in t for t in texts)
    after = yaml.safe_load(harness_yaml.read_text())
    assert after["operator"]["self_dm_channel"] == "D0THIRD"
    assert after["auto_monitor"] is False  # the hand edit survived the rewrite of one key


def _fake_systemctl(folder: Path) -> Path:
    """``systemctl --user`` as a test box can have it: enable/disable/is-enabled kept in a
    file; daemon-reload accepted. No unit ever runs."""
    state = folder / "enabled.txt"
    exe = folder / "systemctl"
    folder.mkdir(parents=True, exist_ok=True)
    exe.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        f"state = pathlib.Path({str(state)!r})\n"
        "on = set(state.read_text().split()) if state.exists() else set()\n"
        "args = [a for a in sys.argv[1:] if a not in ('--user', '--now', '--quiet')]\n"
        "verb, names = args[0], args[1:]\n"
        "if verb == 'daemon-reload':\n"
        "    sys.exit(0)\n"
        "if verb in ('enable', 'disable'):\n"
        "    on = on | set(names) if verb == 'enable' else on - set(names)\n"
        "    state.write_text('\\n'.join(sorted(on)))\n"
        "    sys.exit(0)\n"
        "if verb == 'is-enabled':\n"
        "    print('\\n'.join('enabled' if n in on else 'disabled' for n in names))\n"
        "    sys.exit(0 if all(n in on for n in names) else 1)\n"
        "sys.exit(1)\n"
    )
    exe.chmod(0o755)
    return exe


def test_without_cron_the_systemd_path_schedules_every_periodic_subcommand(
    operator: Operator,
) -> None:
    """#34 item 7: no crontab command on this machine. doctor's fix for an empty schedule is one
    that works here; the units it installs cover every job of the crontab; units written but
    not enabled are no schedule; an installed, disabled listener needs no SLACK_APP_TOKEN."""
    systemctl = _fake_systemctl(operator.root / "sysbin")
    path = f"{systemctl.parent}{os.pathsep}{operator.installed.harness.parent}"
    operator.env["PATH"] = path + os.pathsep + operator.base_env()["PATH"]
    operator.init()
    operator.fill_tokens()
    env_text = operator.env_file.read_text().replace("SLACK_APP_TOKEN=", "# SLACK_APP_TOKEN=")
    operator.env_file.write_text(env_text)

    _, checks = operator.doctor("--offline")
    assert checks["schedule"]["status"] == "warn"
    fix = checks["schedule"]["fix"]
    assert "--install-cron" not in fix and "--install-systemd" in fix, fix

    # the units alone, written but not enabled, are no schedule — and the listener's unit
    # being on disk asks for no Socket Mode token
    code, _, err = operator.run("init", "--install-systemd", "--yes")
    assert code == 0, err
    code, checks = operator.doctor("--offline")
    assert checks["schedule"]["status"] == "warn", checks["schedule"]
    assert "not enabled" in checks["schedule"]["detail"]
    assert "SLACK_APP_TOKEN" not in checks or checks["SLACK_APP_TOKEN"]["status"] != "fail"

    # doctor's fix, typed as printed, makes every periodic subcommand scheduled
    fix = checks["schedule"]["fix"]
    done = subprocess.run(
        ["/bin/sh", "-c", fix], env=operator.base_env(), capture_output=True, text=True,
        timeout=300, check=False, cwd=operator.root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    _, checks = operator.doctor("--offline")
    assert checks["schedule"]["status"] == "ok", checks["schedule"]
    units = operator.login / ".config" / "systemd" / "user"
    crontab = schedule.entries(schedule.template())
    for job in crontab:
        sub = job.argv[1]
        service = (units / f"harness-{sub}.service").read_text()
        assert f"{' '.join(job.argv[1:])}\n" in service.split("ExecStart=", 1)[1], sub
        assert (units / f"harness-{sub}.timer").is_file(), sub
        assert sub in checks["schedule"]["detail"]

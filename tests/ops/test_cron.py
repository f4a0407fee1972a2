"""cron/: the crontab template, the harness-cron wrapper, the systemd units, the GitLab CI
schedules, and `harness init --install-cron` (prints; installs only with --yes)."""

from __future__ import annotations

import configparser
import fcntl
import itertools
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from croniter import croniter

from harness_cli.cli import COMMANDS
from harness_cli.ops import schedule
from harness_cli.resources import cron_dir

CRON = cron_dir()
WRAPPER = CRON / "harness-cron"
CADENCE_S = {
    "poll-slack": 60,
    "mr-monitor": 600,
    "mcp-watch": 600,
    "consolidate": 3600,
    "finalize": 3600,
    "kb-update": 7 * 86400,
}


def rendered() -> str:
    return schedule.render(home=Path("/h"), config=Path("/c"), bin_path="/bin/harness")


def jobs() -> dict[str, schedule.Entry]:
    found = {e.argv[1]: e for e in schedule.entries(rendered())}
    assert len(found) == len(schedule.entries(rendered())), "one line per subcommand"
    return found


def gaps(expr: str, n: int = 6) -> set[float]:
    it = croniter(expr, datetime(2026, 1, 5, tzinfo=UTC))  # a Monday
    times = [it.get_next(datetime) for _ in range(n)]
    return {(b - a).total_seconds() for a, b in itertools.pairwise(times)}


def test_every_crontab_line_parses_and_names_an_existing_subcommand() -> None:
    entries = schedule.entries(rendered())
    assert entries
    for entry in entries:
        assert croniter.is_valid(entry.schedule), entry
        assert entry.argv[0] == str(WRAPPER)
        assert entry.argv[1] in COMMANDS, f"{entry.argv[1]} is not a harness subcommand"
    assert "@HARNESS_" not in rendered()  # every placeholder filled


def test_the_cadences_are_the_issues() -> None:
    found = jobs()
    assert set(found) == {*CADENCE_S, "gap-patterns"}
    for name, seconds in CADENCE_S.items():
        assert gaps(found[name].schedule) == {seconds}, name
    assert gaps(found["gap-patterns"].schedule) <= {d * 86400 for d in range(13, 18)}
    assert found["consolidate"].argv[2:] == ["--due"]
    assert found["finalize"].argv[2:] == ["--due"]


def test_every_option_in_the_crontab_is_one_its_subcommand_accepts(cli: Any) -> None:
    for name, entry in jobs().items():
        options = [a for a in entry.argv[2:] if a.startswith("-")]
        if not options or COMMANDS[name].module is None:
            continue
        code, out, _ = cli(name, "--help")
        assert code == 0
        for option in options:
            assert option in out, f"harness {name} has no {option}"


def test_the_gitlab_schedules_run_the_same_subcommands() -> None:
    data = yaml.safe_load((CRON / "gitlab-ci.schedules.yml").read_text())
    runs = {
        name: job["variables"]["HARNESS_ARGS"].split()
        for name, job in data.items()
        if not name.startswith(".")
    }
    assert set(runs) == set(jobs())
    for name, argv in runs.items():
        assert argv[0] == name and argv == jobs()[name].argv[1:]
        assert data[name]["extends"] == ".harness-cycle"
    assert "resource_group" in data[".harness-cycle"]


def test_the_systemd_units_run_harness_listen_and_every_periodic_subcommand() -> None:
    units = {}
    files = sorted(p.name for p in (CRON / "systemd").iterdir())
    assert files == sorted([*schedule.UNITS, *schedule.PERIODIC])
    for name in schedule.unit_names():
        parser = configparser.ConfigParser(strict=False, interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        text = schedule.render(
            home=Path("/h"), config=Path("/c"), bin_path="/bin/harness", name=f"systemd/{name}"
        )
        assert "@HARNESS_" not in text, name
        parser.read_string(text)
        units[name] = parser
    listen = units["harness-listen.service"]["Service"]
    assert listen["ExecStart"] == '"/bin/harness" listen'
    assert listen["Restart"] == "on-failure" and listen["EnvironmentFile"] == "/h/env"
    poll = units["harness-poll-slack.service"]["Service"]
    assert poll["ExecStart"] == '"/bin/harness" poll-slack' and poll["Type"] == "oneshot"
    assert units["harness-poll-slack.timer"]["Timer"]["OnCalendar"] == "*-*-* *:*:00"
    # one service and timer per crontab line, on the crontab's cadence (#34 item 7)
    analyze = shutil.which("systemd-analyze")
    for job in schedule.jobs():
        service = units[job.service]["Service"]
        assert service["ExecStart"] == f'"/bin/harness" {" ".join(job.args)}'
        calendar = units[job.timer]["Timer"]["OnCalendar"]
        if analyze:  # systemd itself parses it (the box may have the tool without systemd)
            done = subprocess.run([analyze, "calendar", calendar], capture_output=True, check=False)
            assert done.returncode == 0, (job.name, calendar, done.stderr)
    assert units["harness-kb-update.timer"]["Timer"]["OnCalendar"] == "Mon *-*-* 06:15:00"
    assert units["harness-mcp-watch.timer"]["Timer"]["OnCalendar"] == "*-*-* *:05/10:00"


# -- the wrapper ------------------------------------------------------------------------------


@pytest.fixture
def fake_harness(tmp_path: Path) -> Path:
    """A stand-in `harness`: prints its argv and $GREETING, exits with $FAKE_EXIT, and may
    leave a background child behind (as a detached workflow does)."""
    script = tmp_path / "bin" / "harness"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        'echo "args: $*"\n'
        'echo "greeting: ${GREETING:-none}"\n'
        'echo "path: $PATH"\n'
        'if [ -n "${FAKE_CHILD:-}" ]; then sleep 5 & fi\n'
        'exit "${FAKE_EXIT:-0}"\n'
    )
    script.chmod(0o755)
    return script


def wrapper(fake: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("PATH",)}
    return subprocess.run(
        [str(WRAPPER), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**base, "HARNESS_BIN": str(fake), **env},
    )


def test_the_wrapper_passes_the_exit_code_through_and_logs_the_run(
    fake_harness: Path, tmp_path: Path
) -> None:
    home = Path(os.environ["HARNESS_HOME"])
    home.mkdir(parents=True)
    (home / "env").write_text('GREETING="hello from env"\n')  # systemd's quoting too
    done = wrapper(fake_harness, "finalize", "--due", FAKE_EXIT="4")
    assert done.returncode == 4
    assert done.stdout == "" and done.stderr == ""  # nothing for cron to mail
    log = (home / "logs" / "cron" / "finalize.log").read_text()
    assert "args: finalize --due" in log
    assert "greeting: hello from env" in log
    assert "path: " in log and "/usr/bin" in log
    assert log.rstrip().endswith("exit 4")


def test_a_run_still_holding_the_lock_makes_the_next_one_skip_with_exit_3(
    fake_harness: Path,
) -> None:
    home = Path(os.environ["HARNESS_HOME"])
    (home / "locks").mkdir(parents=True)
    with open(home / "locks" / "cron-poll-slack.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = wrapper(fake_harness, "poll-slack")
    assert done.returncode == 3
    log = (home / "logs" / "cron" / "poll-slack.log").read_text()
    assert "skipped" in log and "args:" not in log
    assert wrapper(fake_harness, "poll-slack").returncode == 0  # the lock is free again


def test_a_detached_child_does_not_keep_the_lock(fake_harness: Path) -> None:
    """poll-slack starts workflows that outlive it; they must not inherit the cron lock."""
    assert wrapper(fake_harness, "poll-slack", FAKE_CHILD="1").returncode == 0
    assert wrapper(fake_harness, "poll-slack").returncode == 0


# -- init --install-cron ------------------------------------------------------------------------


@pytest.fixture
def fake_crontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `crontab` on PATH that keeps the table in a file (``-l`` / ``-``)."""
    table = tmp_path / "crontab.txt"
    exe = tmp_path / "cronbin" / "crontab"
    exe.parent.mkdir()
    exe.write_text(
        f"#!{sys.executable}\n"
        "import sys, pathlib\n"
        f"table = pathlib.Path({str(table)!r})\n"
        "if sys.argv[1:] == ['-l']:\n"
        "    if not table.exists():\n"
        "        sys.stderr.write('no crontab for tester\\n'); sys.exit(1)\n"
        "    sys.stdout.write(table.read_text())\n"
        "elif sys.argv[1:] == ['-']:\n"
        "    table.write_text(sys.stdin.read())\n"
        "else:\n"
        "    sys.exit(2)\n"
    )
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    return table


def test_install_cron_prints_and_touches_nothing_without_yes(
    cli: Any, config_dir: Path, fake_crontab: Path
) -> None:
    code, out, err = cli("init", "--install-cron", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert schedule.BEGIN in result["data"]["crontab"]
    assert any("re-run with --yes" in m for m in result["messages"])
    assert not fake_crontab.exists()


def test_install_cron_yes_keeps_the_users_lines_and_replaces_only_its_block(
    cli: Any, config_dir: Path, fake_crontab: Path
) -> None:
    mine = "MAILTO=me@example.invalid\n0 3 * * * /usr/local/bin/backup\n"
    fake_crontab.write_text(
        mine + f"{schedule.BEGIN}\n* * * * * old-harness-line\n{schedule.END}\n"
    )
    code, out, err = cli("init", "--install-cron", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["changed"][-1].startswith("installed the harness block")
    table = fake_crontab.read_text()
    assert table.startswith(mine) and "old-harness-line" not in table
    assert table.count(schedule.BEGIN) == 1 and len(schedule.entries(table)) == 8
    home = os.environ["HARNESS_HOME"]
    assert f"HARNESS_HOME={Path(home).resolve()}" in table
    code, out, _ = cli("init", "--install-cron", "--yes", "--json")
    assert code == 0 and "already has this harness block" in json.loads(out)["skipped"][-1]
    assert fake_crontab.read_text() == table

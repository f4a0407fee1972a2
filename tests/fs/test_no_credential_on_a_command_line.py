"""#28 R9: no credential on a command line. With systemd dispatch every token went out as
``--setenv=NAME=VALUE`` on systemd-run's command line (readable in /proc/*/cmdline) and stayed
in the unit's properties. Now the unit reads its environment from a file only this user can
read, gone once systemd-run returns. A ``systemd-run`` on PATH records what it was given."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

FAKE_SYSTEMD_RUN = """#!{python}
import json, os, shutil, sys
record = os.environ["FAKE_SYSTEMD_RECORD"]
os.makedirs(record, exist_ok=True)
with open(os.path.join(record, "argv.json"), "w") as out:
    json.dump(sys.argv, out)
for arg in sys.argv:
    if arg.startswith("--property=EnvironmentFile="):
        path = arg.split("=", 2)[2]
        shutil.copyfile(path, os.path.join(record, "env.txt"))
        with open(os.path.join(record, "mode"), "w") as out:
            out.write(oct(os.stat(path).st_mode & 0o777))
"""
TOKENS = {
    "GITLAB_TOKEN": "glpat-dispatchdispatch0000",
    "SLACK_USER_TOKEN": "xoxp-1111-dispatch-operator",
    "ANTHROPIC_API_KEY": "sk-ant-dispatch-000000000",
    "HARNESS_ODD": 'a "quoted" $HOME `tick` back\\slash',
}


def systemd_env_file(text: str) -> dict[str, str]:
    """``KEY="value"`` lines as systemd's EnvironmentFile= parser reads them (double quotes,
    backslash escaping the next character)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, _, raw = line.partition("=")
        assert raw.startswith('"') and raw.endswith('"'), line
        value, escaped = [], False
        for ch in raw[1:-1]:
            if escaped:
                value.append(ch)
                escaped = False
            elif ch == "\\":
                escaped = True
            else:
                assert ch not in '"$`', line  # unescaped: systemd would read it otherwise
                value.append(ch)
        found[key] = "".join(value)
    return found


def test_systemd_dispatch_passes_no_value_on_the_command_line(
    cli: Any, harness_ready: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "systemd-run"
    fake.write_text(FAKE_SYSTEMD_RUN.format(python=sys.executable))
    fake.chmod(0o755)
    record = tmp_path / "systemd-record"
    monkeypatch.setenv("FAKE_SYSTEMD_RECORD", str(record))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HARNESS_DISPATCH", "systemd")
    for name, value in TOKENS.items():
        monkeypatch.setenv(name, value)

    code, out, err = cli("admin", "task AAA-7")

    assert code == 0, err
    assert "investigation started" in out, out
    argv: list[str] = json.loads((record / "argv.json").read_text())
    assert argv[1:4] == ["--user", "--collect", "--quiet"] and "--payload" in argv
    command_line = "\0".join(argv)
    for value in TOKENS.values():
        assert value not in command_line
    assert not [a for a in argv if a.startswith("--setenv")]
    [prop] = [a for a in argv if a.startswith("--property=EnvironmentFile=")]
    env_file = Path(prop.split("=", 2)[2])
    # the unit got every value, exactly, from a file only this user could read…
    passed = systemd_env_file((record / "env.txt").read_text())
    assert {k: passed[k] for k in TOKENS} == TOKENS
    assert passed["HARNESS_HOME"] == str(tmp_path / "harness-home")
    assert (record / "mode").read_text() == oct(stat.S_IRUSR | stat.S_IWUSR)
    # …and the file is gone once systemd-run returned
    assert not env_file.exists()


def test_a_workspace_remote_with_a_token_in_its_url_is_refused(
    cli: Any, config_dir: Path, tmp_path: Path
) -> None:
    """git hands a remote's URL to its helpers on their command lines: a token in it is in
    every process list (and in .git/config). One line, exit 2, the token never shown."""
    remote = tmp_path / "cases.git"
    url = f"https://oauth2:glpat-inurlinurlinurl0000@{remote.name}.example/cases.git"

    code, out, err = cli("init", "--remote", url)

    assert code == 2, (out, err)
    assert "carries a credential in its URL" in err and "glpat-inurlinurlinurl0000" not in err
    assert "credential helper" in err
    assert not (tmp_path / "workspace" / ".git").exists()


def test_doctor_fails_a_workspace_remote_that_carries_a_token(
    harness_ready: Path, tmp_path: Path
) -> None:
    import subprocess

    from harness_cli.ops.doctor.checks import workspace_remote

    ws = tmp_path / "workspace"
    url = "https://oauth2:glpat-doctordoctordoc0000@gitlab.example/cases.git"
    subprocess.run(["git", "-C", str(ws), "remote", "add", "origin", url], check=True)

    check = workspace_remote()

    assert check is not None and check.status == "fail", check
    assert "carries a credential" in check.detail and "glpat-" not in check.detail

"""#34 item 3: a state file that does not parse is never committed or pushed by the workspace
sync, and the error's fix restores the last good version (a real command, run here)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from harness_cli.services.git import Git
from tests.intake.conftest import poll

CASE = "slack-C0SUPPORT-"


def test_a_corrupt_case_json_is_not_pushed_and_the_fix_restores_the_good_one(
    cli: Any, slack_emu: Any, harness_ready: Path, tmp_path: Path
) -> None:
    root = tmp_path / "workspace"
    bare = tmp_path / "shared.git"
    Git(bare.parent).run("init", "-q", "--bare", str(bare))
    git = Git(root)
    git.run("remote", "add", "origin", str(bare))
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "the invoice total is wrong")
    [case_id] = poll(cli)["new_cases"]
    rel = f"control/{case_id}/case.json"
    record = root / rel
    good = json.loads(record.read_text())
    assert json.loads(git.run("show", f"HEAD:{rel}"))["id"] == good["id"]

    record.write_text(record.read_text()[:40])  # a torn write, a bad hand edit
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "and the shipping line is missing")
    poll(cli, ok=False)  # commits the new case, whatever it says about the broken one
    assert len(git.run("ls-tree", "--name-only", "HEAD", "control/").split()) == 2
    json.loads(git.run("show", f"HEAD:{rel}"))  # what HEAD holds still parses
    pushed = Git(bare).run("show", f"{git.run('rev-parse', '--abbrev-ref', 'HEAD')}:{rel}")
    json.loads(pushed)  # and so does what the other machines get

    code, _, err = cli("case", "show", case_id)
    assert code == 2 and "case.json" in err
    [fix] = re.findall(r"git -C \S+ checkout [0-9a-f]{7,40} -- \S+", err)
    subprocess.run(shlex.split(fix), check=True, capture_output=True)
    assert json.loads(record.read_text())["id"] == good["id"]
    assert cli("case", "show", case_id)[0] == 0

"""#34 item 3: a state file that does not parse is never committed or pushed by the workspace
sync, and the way back works from Slack: the error names ``admin: repair <case>``, which
restores the newest committed version that reads (real git), keeps the torn copy outside the
workspace, commits the restored file and says what it restored."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness_cli.services.git import Git
from tests.intake.conftest import poll

SELF_DM = "D0SELF"
OPERATOR = "U0OPERATOR"


def _replies(slack_emu: Any, ts: str) -> str:
    return "\n".join(
        m["text"] for m in slack_emu.messages(SELF_DM) if m.get("thread_ts") == ts and m["ts"] != ts
    )


def test_a_corrupt_case_json_is_not_pushed_and_admin_repair_restores_the_good_one(
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

    torn = record.read_text()[:40]
    record.write_text(torn)  # a torn write, a bad hand edit
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "and the shipping line is missing")
    poll(cli, ok=False)  # commits the new case, whatever it says about the broken one
    assert len(git.run("ls-tree", "--name-only", "HEAD", "control/").split()) == 2
    json.loads(git.run("show", f"HEAD:{rel}"))  # what HEAD holds still parses
    pushed = Git(bare).run("show", f"{git.run('rev-parse', '--abbrev-ref', 'HEAD')}:{rel}")
    json.loads(pushed)  # and so does what the other machines get

    # the error names one command, and it works from Slack
    code, _, err = cli("case", "show", case_id)
    assert code == 2 and "case.json" in err
    assert "git -C" not in err, err
    [fix] = re.findall(r"`(admin: repair [^`]+)`", err)
    asked = slack_emu.post_as(SELF_DM, OPERATOR, fix)["ts"]
    poll(cli, ok=False)
    answer = _replies(slack_emu, asked)
    assert "restored from commit" in answer and "status `" in answer, answer
    assert json.loads(record.read_text())["id"] == good["id"]
    assert cli("case", "show", case_id)[0] == 0
    # the torn copy is kept for a look, outside the workspace: no sync can push it
    [kept] = re.findall(r"kept at (\S+?\.json)", answer)
    assert Path(kept).read_text() == torn
    assert not Path(kept).is_relative_to(root)
    # the restored file is committed (the workspace is clean for it) and pushed
    assert git.run("status", "--porcelain", "--", rel) == ""
    assert json.loads(git.run("show", f"HEAD:{rel}"))["id"] == good["id"]


def test_admin_repair_skips_a_committed_version_that_does_not_read(
    cli: Any, slack_emu: Any, harness_ready: Path, tmp_path: Path
) -> None:
    """A corrupt copy that reached git some other way (a hand commit, an older harness) is
    passed over: what comes back is the newest version that is a case record."""
    root = tmp_path / "workspace"
    git = Git(root)
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "the invoice total is wrong")
    [case_id] = poll(cli)["new_cases"]
    rel = f"control/{case_id}/case.json"
    record = root / rel
    good_sha = git.run("rev-parse", "HEAD")
    record.write_text('{"id": "' + case_id + '", "status": 7}\n')  # JSON, not a case record
    git.run("add", "-f", rel)
    git.run("-c", "user.name=someone", "-c", "user.email=s@example.invalid",
            "commit", "-q", "-m", "a hand edit")  # fmt: skip
    record.write_text("{")

    code, out, err = cli("admin", f"repair {case_id}")
    assert code == 0, out + err
    assert f"restored from commit {good_sha[:12]}" in out, out
    assert json.loads(record.read_text())["status"] == "new"
    # asked again, there is nothing to do and nothing changes
    head = git.run("rev-parse", "HEAD")
    code, out, _ = cli("admin", f"repair {case_id}")
    assert code == 0 and "nothing to repair" in out, out
    assert git.run("rev-parse", "HEAD") == head


def test_admin_repair_of_a_case_with_no_good_version_says_so(
    cli: Any, harness_ready: Path, tmp_path: Path
) -> None:
    code, out, err = cli("admin", "repair NOPE-1")
    assert code != 0 and "no case 'NOPE-1'" in out + err, (code, out + err)

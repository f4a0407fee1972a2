"""`harness investigate --no-post` is a dry run: the case folder shows what the investigation
concluded, and nothing leaves the machine — no Slack post or status message, no commit, no
push. And a real run tells the operator its exit line once, not twice."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.investigation.conftest import CASE, TICKET, Investigation


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_dry_run_posts_commits_and_pushes_nothing(inv: Investigation, slack_emu: Any) -> None:
    inv.script("inv_honest")
    workspace = inv.root / "workspace"
    remote = inv.root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    _git(workspace, "remote", "add", "origin", str(remote))
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    code, _, err = inv.cli("poll-slack")  # the case, its thread, one post; committed and pushed
    assert code == 0, err
    posts, head = slack_emu.calls("chat.postMessage"), _git(workspace, "rev-parse", "HEAD")
    assert _git(remote, "rev-parse", "HEAD") == head

    code, out, err = inv.cli("investigate", CASE, "--no-post")

    assert code == 0, err
    assert "exit=complete" in out
    # what it concluded is on disk, for the operator to read …
    folder = inv.case_dir()
    assert "Orders of exactly 10 units" in (folder / "ANALYSIS.md").read_text()
    assert inv.case_json()["status"] == "awaiting_approval"
    # … and nothing went out: no post, no status message edit, no commit, no push
    assert slack_emu.calls("chat.postMessage") == posts
    assert slack_emu.calls("chat.update") == 0
    assert _git(workspace, "rev-parse", "HEAD") == head
    assert _git(remote, "rev-parse", "HEAD") == head
    assert "case-workspaces" in _git(workspace, "status", "--porcelain")  # written, uncommitted
    assert "dry run: nothing posted, committed or pushed" in out

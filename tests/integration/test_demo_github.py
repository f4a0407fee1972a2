"""`harness demo --forge github`: the whole ticket with the team's repository on the GitHub
emulator — the PR opened through PyGithub, pushed with real git, CI as Actions runs, the
reviewer's thread answered after a real push, merged by a human, the case closed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_the_whole_ticket_on_github(tmp_path: Path) -> None:
    keep = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    proc = subprocess.run(
        [sys.executable, "-m", "harness_cli", "demo", "--forge", "github", "--keep", str(keep),
         "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900, check=False,
    )  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr + out
    report = json.loads(out)["data"]
    assert all(s["status"] == "done" for s in report["steps"]), report["steps"]
    summary = report["summary"]
    assert summary["forge"] == "github" and summary["status"] == "closed"
    assert summary["pipelines"][0] == "failed" and summary["pipelines"][-1] == "success"
    assert "/acme/pricing-service/pull/" in summary["mr"]
    state = json.loads((keep / "sandbox-state.json").read_text())
    assert state["gitlab"]["merge_requests"] == []  # nothing went to the other forge
    [pr] = state["github"]["pulls"]
    assert pr["merged"] and not pr["draft"] and pr["head"] == "harness/AAA-101"
    assert not pr["title"].startswith("Draft") and "Changes:" in pr["body"]
    assert "Co-Authored-By" not in pr["body"]
    # the reviewer's thread got one reply, after a real push, naming the pushed commit
    [thread] = pr["threads"]
    replies = [c for c in thread["comments"] if c["author"] == "harness-bot"]
    assert len(replies) == 1 and replies[0]["body"].startswith("Done, updated in ")
    pushed = replies[0]["body"].split()[3].rstrip(":")
    assert pr["head_sha"].startswith(pushed)
    accepted = json.loads(
        (keep / "workspace/case-workspaces/AAA-101/acceptance/latest.json").read_text()
    )
    assert accepted["passed"] is True and accepted["head_sha"] == pr["head_sha"]
    assert pr["issue_comments"] == []  # no proof-of-work comment, no duplicate, no noise
    assert not any((keep / "worktrees").glob("case-AAA-101-*"))

"""`harness sandbox` and `harness demo` as an operator runs them: real subprocesses, real
clients against the emulators they start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import harness_subprocess
from tests.install.terminal import on_a_terminal

pytestmark = pytest.mark.slow


def test_ctrl_c_stops_the_sandbox_even_when_it_was_started_with_sigint_ignored(
    tmp_path: Path,
) -> None:
    """A background job of a non-interactive shell (and some test runners' workers) starts
    with SIGINT ignored; Python keeps it ignored, so Ctrl-C never stopped the sandbox (it hung
    this suite's sandbox test now and then). The sandbox takes SIGINT itself."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_cli", "sandbox", "--dir", str(tmp_path / "box"), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert proc.stdout is not None
        json.loads(proc.stdout.readline())  # serving
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert (tmp_path / "box" / "sandbox-state.json").is_file()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sandbox_serves_the_real_clients_until_interrupted(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_cli", "sandbox", "--dir", str(tmp_path / "box"), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        started = json.loads(proc.stdout.readline())
        env = started["env"]
        env_file = Path(started["env_file"]).read_text()
        assert f"export SLACK_API_URL={env['SLACK_API_URL']}" in env_file

        from slack_sdk import WebClient

        slack = WebClient(token=env["SLACK_USER_TOKEN"], base_url=env["SLACK_API_URL"])
        assert slack.auth_test()["user_id"] == "U0OPERATOR"
        history = slack.conversations_history(channel="C0SUPPORT")
        assert history["ok"] is True

        import gitlab

        gl = gitlab.Gitlab(env["GITLAB_URL"], private_token=env["GITLAB_TOKEN"])
        project = gl.projects.get("acme/pricing-service")
        assert project.default_branch == "main"

        import urllib.request

        req = urllib.request.Request(
            f"{env['ANTHROPIC_BASE_URL']}/v1/models",
            headers={"x-api-key": env["ANTHROPIC_API_KEY"]},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert json.loads(resp.read())["data"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    state = json.loads((tmp_path / "box" / "sandbox-state.json").read_text())
    assert {"slack", "gitlab", "anthropic"} <= set(state)


def test_unknown_scenario_is_bad_usage() -> None:
    code, _, err = harness_subprocess("sandbox", "--scenario", "nope", "--for", "0")
    assert code == 2 and "unknown sandbox scenario 'nope'" in err


def test_make_demo_path_runs_offline_from_any_directory_and_keeps_its_state(
    tmp_path: Path,
) -> None:
    """Not from the checkout: nothing in the current directory may be needed."""
    keep = tmp_path / "demo"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["COLUMNS"] = "100"
    code, stdout, screen = on_a_terminal(
        [sys.executable, "-m", "harness_cli", "demo", "--keep", str(keep), "--json"],
        cwd=elsewhere,
        env=env,
    )
    assert code == 0, screen
    assert not any(elsewhere.iterdir())
    report = json.loads(stdout)
    # the spinner names each step while it runs
    for name in ("poll-slack: ticket → case", "operator approval", "mr-monitor (merged → close)"):
        assert f"{name}…" in screen, name
    steps = {s["name"]: s["status"] for s in report["data"]["steps"]}
    assert steps["init"] == "done"
    assert steps["poll-slack: ticket → case"] == "done"
    assert report["data"]["summary"]["case"] == "AAA-101"
    # the ticket names AAA-101: its Jira issue is the case's context (#30), read from Jira
    assert report["data"]["summary"]["jira"] == (
        "# Jira AAA-101: Bulk discount not applied at exactly 10 units"
    )
    issue = (keep / "workspace/case-workspaces/AAA-101/jira-issue.md").read_text()
    assert "Two more customers report the same since Monday" in issue
    # everything it wrote is there, in the documented layout
    for sub in ("home", "workspace", "remotes", "sandbox-state.json"):
        assert (keep / sub).exists(), sub
    state = json.loads((keep / "sandbox-state.json").read_text())
    support = next(c for c in state["slack"]["channels"] if c["id"] == "C0SUPPORT")
    assert support["messages"][0]["user"] == "U0CUSTOMER"
    assert {"ts", "thread_ts", "user", "bot_id", "text"} <= set(support["messages"][0])
    assert state["gitlab"]["projects"][0]["path"] == "acme/pricing-service"
    for key in ("merge_requests", "pipelines"):
        assert isinstance(state["gitlab"][key], list)
    assert "requests" in state["anthropic"] and "usage" in state["anthropic"]
    # the case went through the real workspace sync to the remote
    tree = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "main"],
        cwd=keep / "remotes" / "workspace.git",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "case-workspaces/AAA-101/case.json" in tree
    assert "case-workspaces/AAA-101/message.json" in tree
    # the whole ticket: investigation published, MR through red and green CI, review answered,
    # merged by a human, case closed, worktree gone
    assert all(s["status"] == "done" for s in report["data"]["steps"]), report["data"]["steps"]
    summary = report["data"]["summary"]
    assert summary["status"] == "closed"
    assert summary["exit"].startswith("exit=complete")
    # it investigated against the sandbox world: logs and metrics queried (over MCP), cited as
    # HARD, and the exit line and ANALYSIS.md say which sources were used
    assert "sources: logs, metrics (" in summary["exit"], summary["exit"]
    called = {(c["server"], c["tool"]) for c in state["world"]["calls"]}
    assert {("logs", "search_logs"), ("metrics", "query_metrics")} <= called
    assert not {c for c in called if c[0] == "tracker"}  # untrusted, undeclared: not offered
    analysis = (keep / "workspace/case-workspaces/AAA-101/ANALYSIS.md").read_text()
    assert "Sources queried: logs, metrics" in analysis
    assert "[HARD] pricing.bulk_discount.applied fell" in analysis
    assert set(summary["sources"]) == {"logs", "metrics"}, summary["sources"]
    assert summary["pipelines"][0] == "failed" and summary["pipelines"][-1] == "success"
    [mr] = state["gitlab"]["merge_requests"]
    assert mr["state"] == "merged" and mr["source_branch"] == "harness/AAA-101"
    bodies = [n["body"] for n in mr["notes"] if not n.get("system")]
    assert any(b.startswith("Done, updated") for b in bodies)
    assert "Co-Authored-By" not in mr["description"] and "Changes:" in mr["description"]
    # acceptance ran by the harness on the very commit that was pushed last
    accepted = json.loads(
        (keep / "workspace/case-workspaces/AAA-101/acceptance/latest.json").read_text()
    )
    assert accepted["passed"] is True
    assert accepted["head_sha"] == mr["sha"]
    assert not any((keep / "worktrees").glob("case-AAA-101-*"))
    self_dm = next(c for c in state["slack"]["channels"] if c["id"] == "D0SELF")
    assert all(m["user"] == "U0OPERATOR" for m in self_dm["messages"])

"""The github-actions dispatch backend, sibling of gitlab-ci, end to end on the sandbox: a new
ticket polled with HARNESS_DISPATCH=github-actions becomes a workflow_dispatch of the shipped
``cron/github-actions/harness-job.yml`` in the harness's own repository on the GitHub
emulator; its runner runs the workflow's steps for real (the shipped job script: a fresh
HARNESS_HOME, the workspace cloned from its remote, `harness investigate --payload …`), the
run id recorded on the work session. A run stuck past ``ci_dispatch.stuck_minutes`` is
canceled through the API by the next mr-monitor cycle, its session released, the operator
told once."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_cli.resources import DEFAULTS
from harness_cli.sandbox.runner import GITHUB_SANDBOX_TOKEN, Sandbox
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_TICKET
from harness_cli.services.git import Git
from tests.conftest import REPO
from tests.forges import use_github

pytestmark = pytest.mark.slow
SHIPPED = DEFAULTS / "cron" / "github-actions" / "harness-job.yml"
JOB_SCRIPT = DEFAULTS / "cron" / "gitlab-ci" / "harness-job.sh"
OWN = "acme/harness"


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sb", github_enabled=True) as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        shutil.copytree(REPO / "agent-config", tmp_path / "agent-config")
        shutil.copytree(REPO / "sops", tmp_path / "sops")
        yield sandbox


def _runs(box: Sandbox) -> list[dict[str, Any]]:
    assert box.github is not None
    return [r for r in box.github.snapshot()["runs"] if r["repo"] == OWN]


def test_a_run_stuck_past_its_limit_is_canceled_released_and_told_once(
    cli: Any, box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = box.github
    assert hub is not None
    bare = tmp_path / "workspace-remote.git"
    bare.mkdir()
    Git(bare).run("init", "-q", "--bare", "--initial-branch=main")
    use_github(hub, tmp_path, monkeypatch, projects=False, token=GITHUB_SANDBOX_TOKEN)
    assert cli("init", "--remote", f"file://{bare}")[0] == 0
    config = tmp_path / "agent-config" / "harness.yaml"
    data = yaml.safe_load(config.read_text())
    data["improvement"]["self_repo_forge"] = "github"
    config.write_text(yaml.safe_dump(data))
    # the harness's repo with the shipped workflow and job script; what only this sandbox needs
    # (where the config and the harness are, the hang) is the workflow's env, not its steps
    workflow = yaml.safe_load(SHIPPED.read_text())
    workflow["env"] = {
        "HARNESS_CONFIG": str(tmp_path / "agent-config"),
        "HARNESS_RUNTIME": "anthropic",
        "HARNESS_BIN": str(REPO / ".venv" / "bin" / "harness"),
        "HARNESS_DISPATCH": "record",
        "HARNESS_HANG_AT": "session.opened",
        "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"],
        "GIT_CONFIG_NOSYSTEM": "1",
        **{k: v for k, v in box.env().items() if k != "GITHUB_TOKEN"},
    }
    hub.control("create_repo", {"repo": OWN, "files": {
        "README.md": "h\n",
        ".github/workflows/harness-job.yml": yaml.safe_dump(workflow, sort_keys=False),
        "cron/gitlab-ci/harness-job.sh": JOB_SCRIPT.read_text(),
    }})  # fmt: skip
    hub.control("set_secrets", {"repo": OWN, "secrets": {
        "HARNESS_WORKSPACE_REMOTE": f"file://{bare}",
        "SLACK_USER_TOKEN": os.environ["SLACK_USER_TOKEN"],
        "GH_HARNESS_TOKEN": os.environ["GITHUB_TOKEN"],
        "ANTHROPIC_API_KEY": os.environ["ANTHROPIC_API_KEY"],
    }})  # fmt: skip
    monkeypatch.setenv("HARNESS_DISPATCH", "github-actions")
    box.slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{SAMPLE_TICKET} (AAA-101)")
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, err
    [run] = _runs(box)
    assert run["event"] == "workflow_dispatch" and run["workflow"].endswith("harness-job.yml")
    tracked = json.loads((tmp_path / "harness-home" / "pipelines.json").read_text())
    [entry] = tracked["pipelines"]
    assert entry["pipeline"] == run["id"] and entry["backend"] == "github-actions"
    deadline = time.monotonic() + 150
    live: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not live:  # the job clones, opens its session, hangs
        time.sleep(1)
        live = json.loads(cli("session", "list", "--json")[1])["data"]["live"]
    [held] = live
    assert held["pipeline"] == str(run["id"]) and held["workflow"] == "investigate"
    assert _runs(box)[0]["status"] == "in_progress"
    code, out, err = cli("mr-monitor", "--json")  # not stuck yet: nothing happens
    assert code == 0, err
    assert "released" not in out
    later = (datetime.now().astimezone() + timedelta(minutes=121)).isoformat()
    monkeypatch.setenv("HARNESS_NOW", later)  # past stuck_minutes (120)
    dms_before = len(box.slack.messages("D0SELF"))
    code, out, err = cli("mr-monitor", "--json")
    assert code == 0, err
    assert f"pipeline {run['id']} (investigate AAA-101) stuck: released 1 session(s)" in out
    hub.wait_for_runs(timeout=30)
    [after] = _runs(box)
    assert after["conclusion"] == "cancelled"  # the run's process was stopped by the cancel
    assert json.loads(cli("session", "list", "--json")[1])["data"]["live"] == []
    told = [m["text"] for m in box.slack.messages("D0SELF")[dms_before:]]
    assert len(told) == 1 and "canceled, 1 session(s) released" in told[0], told
    code, out, err = cli("mr-monitor", "--json")  # told once
    assert code == 0, err
    assert "stuck" not in out
    assert len(box.slack.messages("D0SELF")) == dms_before + 1

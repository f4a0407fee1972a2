"""The gitlab-ci dispatch backend (issue #19 point 7) end to end on the sandbox: a new ticket
polled with HARNESS_DISPATCH=gitlab-ci becomes a pipeline of the harness's own project,
created through the API with the payload as a CI variable; the GitLab emulator's runner runs
the job template's script for real (a fresh HARNESS_HOME, the workspace cloned from its remote,
`harness investigate --payload …`); the investigation lands in the workspace remote with the
pipeline id on its session. A job that dies holding a session is seen by mr-monitor's poll of
those pipelines, and its session released at once."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_cli.resources import DEFAULTS
from harness_cli.sandbox.runner import Sandbox
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_TICKET
from harness_cli.services.git import Git
from tests.conftest import REPO

pytestmark = pytest.mark.slow
JOB = DEFAULTS / "cron" / "gitlab-ci" / "harness-job.sh"


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sb") as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        shutil.copytree(REPO / "agent-config", tmp_path / "agent-config")
        shutil.copytree(REPO / "sops", tmp_path / "sops")
        yield sandbox


def _show(bare: Path, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(bare), "show", f"main:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_an_investigation_runs_as_a_pipeline_and_a_dead_job_frees_its_session(
    cli, box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    bare = tmp_path / "workspace-remote.git"
    bare.mkdir()
    Git(bare).run("init", "-q", "--bare", "--initial-branch=main")
    assert cli("init", "--remote", f"file://{bare}")[0] == 0
    box.gitlab.control(
        "create_project",
        {"path": "acme/harness", "files": {"README.md": "h\n"}, "ci_command": ["sh", str(JOB)]},
    )
    import os

    job_env = {
        **box.env(),
        "HARNESS_WORKSPACE_REMOTE": f"file://{bare}",
        "HARNESS_CONFIG": str(tmp_path / "agent-config"),
        "HARNESS_RUNTIME": "anthropic",
        "HARNESS_BIN": str(REPO / ".venv" / "bin" / "harness"),
        "HARNESS_DISPATCH": "record",
        "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"],
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    box.gitlab.control("set_ci_variables", {"project": "acme/harness", "variables": job_env})
    monkeypatch.setenv("HARNESS_DISPATCH", "gitlab-ci")
    box.slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{SAMPLE_TICKET} (AAA-101)")
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, err
    box.gitlab.wait_for_pipelines(timeout=240)
    pipelines = [p for p in box.gitlab.snapshot()["pipelines"] if p["project"] == "acme/harness"]
    assert len(pipelines) == 1, pipelines
    [first] = pipelines
    assert first["status"] == "success", first
    tracked = json.loads((tmp_path / "harness-home" / "pipelines.json").read_text())
    assert [t["pipeline"] for t in tracked["pipelines"]] == [first["id"]]
    case = json.loads(_show(bare, "case-workspaces/AAA-101/case.json"))
    assert case["status"] == "awaiting_approval" and str(case["exit"]).startswith("exit=complete")
    listed = Git(bare).run("ls-tree", "-r", "--name-only", "main", "sessions/outcomes")
    outcome = json.loads(_show(bare, listed.splitlines()[0]))
    assert outcome["workflow"] == "investigate" and outcome["pipeline"] == str(first["id"])
    assert outcome["succeeded"] is True

    # a job SIGKILLed right after it took its session: the pipeline fails, the hold stays...
    box.gitlab.control(
        "set_ci_variables",
        {"project": "acme/harness", "variables": {"HARNESS_CRASH_AT": "session.opened"}},
    )
    code, out, err = cli("admin", "finalize AAA-101", "--json")
    assert code == 0, err
    box.gitlab.wait_for_pipelines(timeout=120)
    second = [p for p in box.gitlab.snapshot()["pipelines"] if p["project"] == "acme/harness"][-1]
    assert second["status"] == "failed"
    _, out, _ = cli("session", "list", "--json")
    [held] = json.loads(out)["data"]["live"]
    assert held["workflow"] == "finalize" and held["pipeline"] == str(second["id"])
    # ...until mr-monitor's cycle looks at our pipelines: released at once, not at expiry
    code, out, err = cli("mr-monitor", "--json")
    assert code == 0, err
    assert f"pipeline {second['id']} (finalize AAA-101) failed: released 1 session(s)" in out
    _, out, _ = cli("session", "list", "--json")
    assert json.loads(out)["data"]["live"] == []


def test_past_the_concurrency_cap_a_dispatch_waits_and_starts_when_a_slot_frees(
    cli, box: Sandbox, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    import yaml

    from harness_cli.dispatch.dispatcher import dispatch
    from harness_cli.dispatch.payload import Payload, Trigger

    assert cli("init")[0] == 0
    config = tmp_path / "agent-config" / "harness.yaml"
    data = yaml.safe_load(config.read_text())
    data["ci_dispatch"] = {"project": "acme/harness", "max_concurrent": 1}
    config.write_text(yaml.safe_dump(data))
    box.gitlab.control(
        "create_project",
        {
            "path": "acme/harness",
            "files": {"README.md": "h\n"},
            "ci_command": ["sh", "-c", "sleep 1"],
        },
    )
    done = [
        dispatch(
            Payload(
                workflow="investigate",
                case_id=f"AAA-{n}",
                case_dir="",
                trigger=Trigger(kind="admin_command"),
            ),
            backend="gitlab-ci",
        )
        for n in (1, 2)
    ]
    assert [d.started for d in done] == [True, False]
    assert done[1].detail == "queued: 1 pipelines running (max_concurrent)"
    box.gitlab.wait_for_pipelines(timeout=60)
    code, out, err = cli("mr-monitor", "--json")
    assert code == 0, err
    assert f"started for queued {done[1].payload_file.name}" in out
    box.gitlab.wait_for_pipelines(timeout=60)
    statuses = [
        p["status"] for p in box.gitlab.snapshot()["pipelines"] if p["project"] == "acme/harness"
    ]
    assert statuses == ["success", "success"]


def test_a_job_stuck_past_its_limit_is_canceled_released_and_told_once(
    cli, box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Session 2 point 3: a job that took its session and then hangs (a call that never
    returns) stays `running` on GitLab; the mr-monitor cycle after ci_dispatch.stuck_minutes
    cancels it, releases its session and DMs the operator once."""
    import os
    import time
    from datetime import datetime, timedelta

    bare = tmp_path / "workspace-remote.git"
    bare.mkdir()
    Git(bare).run("init", "-q", "--bare", "--initial-branch=main")
    assert cli("init", "--remote", f"file://{bare}")[0] == 0
    box.gitlab.control(
        "create_project",
        {"path": "acme/harness", "files": {"README.md": "h\n"}, "ci_command": ["sh", str(JOB)]},
    )
    job_env = {
        **box.env(),
        "HARNESS_WORKSPACE_REMOTE": f"file://{bare}",
        "HARNESS_CONFIG": str(tmp_path / "agent-config"),
        "HARNESS_RUNTIME": "anthropic",
        "HARNESS_BIN": str(REPO / ".venv" / "bin" / "harness"),
        "HARNESS_DISPATCH": "record",
        "HARNESS_HANG_AT": "session.opened",
        "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"],
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    box.gitlab.control("set_ci_variables", {"project": "acme/harness", "variables": job_env})
    monkeypatch.setenv("HARNESS_DISPATCH", "gitlab-ci")
    box.slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{SAMPLE_TICKET} (AAA-101)")
    assert cli("poll-slack", "--json")[0] == 0
    deadline = time.monotonic() + 100
    live: list[dict[str, object]] = []
    while time.monotonic() < deadline and not live:  # the job clones, opens its session, hangs
        time.sleep(1)
        live = json.loads(cli("session", "list", "--json")[1])["data"]["live"]
    [held] = live
    [pipeline] = [p for p in box.gitlab.snapshot()["pipelines"] if p["project"] == "acme/harness"]
    assert pipeline["status"] == "running" and held["pipeline"] == str(pipeline["id"])
    code, out, err = cli("mr-monitor", "--json")  # not stuck yet: nothing happens
    assert code == 0, err
    assert "released" not in out
    later = (datetime.now().astimezone() + timedelta(minutes=121)).isoformat()
    monkeypatch.setenv("HARNESS_NOW", later)  # past stuck_minutes (120)
    dms_before = len(box.slack.messages("D0SELF"))
    # #29: a dry run of that cycle says what it would do and touches no pipeline
    code, out, err = cli("mr-monitor", "--dry-run", "--json")
    assert code == 0, err
    assert f"would cancel pipeline {pipeline['id']}" in err, err
    [same] = [p for p in box.gitlab.snapshot()["pipelines"] if p["project"] == "acme/harness"]
    assert same["status"] == "running"
    assert len(box.slack.messages("D0SELF")) == dms_before
    code, out, err = cli("mr-monitor", "--json")
    assert code == 0, err
    assert f"pipeline {pipeline['id']} (investigate AAA-101) stuck: released 1 session(s)" in out
    box.gitlab.wait_for_pipelines(timeout=30)
    [after] = [p for p in box.gitlab.snapshot()["pipelines"] if p["project"] == "acme/harness"]
    assert after["status"] == "canceled"  # the job's process was killed by the cancel
    assert json.loads(cli("session", "list", "--json")[1])["data"]["live"] == []
    told = [m["text"] for m in box.slack.messages("D0SELF")[dms_before:]]
    assert len(told) == 1, told
    assert f"pipeline {pipeline['id']}" in told[0] and "still running after 120 min" in told[0]
    assert "canceled, 1 session(s) released" in told[0] and "AAA-101" in told[0]
    code, out, err = cli("mr-monitor", "--json")  # told once: the next cycle says nothing more
    assert code == 0, err
    assert "stuck" not in out
    assert len(box.slack.messages("D0SELF")) == dms_before + 1

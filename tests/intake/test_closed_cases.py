"""Closing a case by any path stops its threads' polling (issue #13, point 8): close-case and
`case close` always did; a merge seen by mr-monitor did not, so every merged case cost a replies
call per thread per minute for ever."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import gitlab
import pytest

from harness_cli.sandbox.gitlab_api import GitLabEmulator
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, seed_sample_project
from tests.intake.conftest import case_threads, poll


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)


@pytest.fixture
def gitlab_emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitLabEmulator]:
    emulator = GitLabEmulator(tmp_path / "gitlab", ci_timeout=90, watch_interval=0.1)
    emulator.start()
    try:
        seed_sample_project(emulator)
        monkeypatch.setenv("GITLAB_URL", emulator.url)
        monkeypatch.setenv("GITLAB_TOKEN", "glpat-harness-bot")
        yield emulator
    finally:
        emulator.stop()


def _replies_calls(emu, ts: str) -> int:  # type: ignore[no-untyped-def]
    from harness_cli.sandbox.httpbase import Request

    return sum(
        1
        for r in emu.recorded("conversations.replies")
        if Request(r.method, r.path, r.query, r.headers, r.body).arg("ts") == ts
    )


def test_a_case_closed_by_a_merge_stops_polling_its_threads(
    cli,
    slack_emu,
    gitlab_emu: GitLabEmulator,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    ticket = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-91 discount is wrong")
    poll(cli)
    [thread] = case_threads(slack_emu, "AAA-91")
    from harness_cli.config import load_config
    from harness_cli.workspace.registry import update_case

    with update_case("AAA-91", load_config().harness.thresholds, "as the dev-agent would") as c:
        for step in ("approved", "in_progress"):
            c.move(step)
    project = gitlab.Gitlab(gitlab_emu.url, private_token="glpat-harness-bot").projects.get(
        SAMPLE_PROJECT_PATH
    )
    gitlab_emu.control("set_pipeline_result", {"project": SAMPLE_PROJECT_PATH, "status": "success"})
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", project.http_url_to_repo, str(clone))
    _git(clone, "checkout", "-q", "-b", "harness/AAA-91")
    (clone / "NOTES.md").write_text("fixed\n")
    _git(clone, "add", "NOTES.md")
    _git(clone, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "fix")
    _git(clone, "push", "-q", "origin", "HEAD:harness/AAA-91")
    mr = project.mergerequests.create(
        {"source_branch": "harness/AAA-91", "target_branch": "main", "title": "Fix the discount"}
    )
    gitlab_emu.wait_for_pipelines(90)
    assert (
        cli("mr-monitor", "--watch", f"{SAMPLE_PROJECT_PATH}!{mr.iid}", "--case", "AAA-91")[0] == 0
    )
    assert cli("mr-monitor")[0] == 0
    assert gitlab_emu.control("merge", {"project": SAMPLE_PROJECT_PATH, "iid": mr.iid})["ok"]
    assert cli("mr-monitor")[0] == 0
    import json

    case = json.loads((tmp_path / "workspace/case-workspaces/AAA-91/case.json").read_text())
    assert case["status"] == "closed"
    before = (_replies_calls(slack_emu, ticket["ts"]), _replies_calls(slack_emu, thread["ts"]))
    for _ in range(3):
        poll(cli)
    after = (_replies_calls(slack_emu, ticket["ts"]), _replies_calls(slack_emu, thread["ts"]))
    assert after == before, "a merged case's threads are still polled"

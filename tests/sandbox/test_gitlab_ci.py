"""Real git and real CI in the GitLab emulator: a clone pushes to the bare repository, the
watcher notices the new sha, and a pipeline runs the sample project's pytest suite on it."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gitlab
import gitlab.exceptions as glexc
import pytest

from harness_cli.sandbox.gitlab_api import GitLabEmulator
from harness_cli.sandbox.scenarios.sample_repo import (
    SAMPLE_BUG_FIX,
    SAMPLE_PROJECT_PATH,
    seed_sample_project,
)

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Harness Bot",
    "GIT_AUTHOR_EMAIL": "bot@example.invalid",
    "GIT_COMMITTER_NAME": "Harness Bot",
    "GIT_COMMITTER_EMAIL": "bot@example.invalid",
}


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=check
    )


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[GitLabEmulator]:
    emulator = GitLabEmulator(tmp_path / "gitlab", ci_timeout=60, watch_interval=0.2)
    emulator.start()
    seed_sample_project(emulator)
    yield emulator
    emulator.stop()


@pytest.fixture
def project(emu: GitLabEmulator) -> Any:
    return gitlab.Gitlab(emu.url, private_token="glpat-ci").projects.get(SAMPLE_PROJECT_PATH)


@pytest.fixture
def clone(project: Any, tmp_path: Path) -> Path:
    work = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", project.http_url_to_repo, str(work))
    git(work, "checkout", "--quiet", "-b", "fix/bulk-discount")
    return work


def commit_and_push(clone: Path, message: str) -> str:
    git(clone, "commit", "--quiet", "-am", message)
    git(clone, "push", "--quiet", "origin", "HEAD")
    return git(clone, "rev-parse", "HEAD").stdout.strip()


def apply_fix(clone: Path) -> None:
    path, old, new = SAMPLE_BUG_FIX
    target = clone / path
    text = target.read_text(encoding="utf-8")
    assert old in text
    target.write_text(text.replace(old, new), encoding="utf-8")


def test_failing_pipeline_then_fix_then_real_merge(
    emu: GitLabEmulator, project: Any, clone: Path
) -> None:
    readme = clone / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + "\nSee the ticket.\n", "utf-8")
    first_sha = commit_and_push(clone, "Document the ticket")
    mr = project.mergerequests.create(
        {"source_branch": "fix/bulk-discount", "target_branch": "main", "title": "Bulk discount"}
    )
    emu.wait_for_pipelines(60)

    mr = project.mergerequests.get(mr.iid)
    assert mr.sha == first_sha
    assert mr.head_pipeline["sha"] == first_sha and mr.head_pipeline["status"] == "failed"
    assert mr.detailed_merge_status == "ci_must_pass"
    [job] = project.pipelines.get(mr.head_pipeline["id"]).jobs.list(get_all=True)
    trace = project.jobs.get(job.id, lazy=True).trace().decode()
    assert "FAILED tests/test_discount.py::test_discount_starts_at_threshold" in trace
    assert "2 failed, 3 passed" in trace and "exit code 1" in trace
    with pytest.raises(glexc.GitlabMRClosedError) as refused:
        mr.merge()
    assert refused.value.response_code == 405

    apply_fix(clone)
    fixed_sha = commit_and_push(clone, "Apply the bulk discount from 10 units on")
    emu.wait_for_pipelines(60)

    mr = project.mergerequests.get(mr.iid)
    assert mr.sha == fixed_sha
    assert mr.head_pipeline["sha"] == fixed_sha and mr.head_pipeline["status"] == "success"
    assert mr.head_pipeline["source"] == "push"
    assert mr.detailed_merge_status == "mergeable"
    [job] = project.pipelines.get(mr.head_pipeline["id"]).jobs.list(get_all=True)
    trace = project.jobs.get(job.id, lazy=True).trace().decode()
    assert "5 passed" in trace and "Job succeeded" in trace
    statuses = [(p.sha, p.status) for p in project.pipelines.list(ref="fix/bulk-discount")]
    assert statuses == [(fixed_sha, "success"), (first_sha, "failed")]
    system = [n.body for n in mr.notes.list(get_all=True) if n.system]
    assert any("added 1 commit" in body and fixed_sha[:7] in body for body in system)

    mr.merge()
    assert mr.state == "merged"
    bare = Path(project.http_url_to_repo.removeprefix("file://"))
    main = git(bare, "rev-parse", "refs/heads/main").stdout.strip()
    assert main == mr.merge_commit_sha
    assert git(bare, "merge-base", "--is-ancestor", fixed_sha, "main", check=False).returncode == 0
    merged_source = git(bare, "show", f"main:{SAMPLE_BUG_FIX[0]}").stdout
    assert SAMPLE_BUG_FIX[2] in merged_source and SAMPLE_BUG_FIX[1] not in merged_source


def test_watcher_notices_a_push_without_api_calls(
    emu: GitLabEmulator, project: Any, clone: Path
) -> None:
    emu.control("set_pipeline_result", {"project": SAMPLE_PROJECT_PATH, "status": "failed"})
    (clone / "NOTES.md").write_text("notes\n", "utf-8")
    git(clone, "add", "NOTES.md")
    commit_and_push(clone, "Add notes")
    project.mergerequests.create(
        {"source_branch": "fix/bulk-discount", "target_branch": "main", "title": "Notes"}
    )
    apply_fix(clone)
    before = len(emu.requests)
    sha = commit_and_push(clone, "Fix")
    deadline = time.monotonic() + 10
    while not any(p.sha == sha for p in emu.state.pipelines.values()):
        assert time.monotonic() < deadline, "the watcher never saw the push"
        time.sleep(0.05)
    assert len(emu.requests) == before
    emu.wait_for_pipelines(60)
    assert [p.status for p in emu.state.pipelines.values()] == ["failed", "success"]


def test_push_to_protected_default_branch_is_rejected(project: Any, clone: Path) -> None:
    apply_fix(clone)
    git(clone, "commit", "--quiet", "-am", "Straight to main")
    pushed = git(clone, "push", "origin", "HEAD:main", check=False)
    assert pushed.returncode != 0
    assert "not allowed to push code to protected branches" in pushed.stderr
    assert project.branches.get("main").commit["title"] == "Initial commit"


SLEEPER = "import time; print('start', flush=True); time.sleep(30)"


def test_pipeline_timeout_fails_the_job(tmp_path: Path) -> None:
    emu = GitLabEmulator(tmp_path / "gitlab", ci_timeout=0.5)
    emu.start()
    try:
        emu.control(
            "create_project",
            {
                "path": "g/slow",
                "files": {"README.md": "slow\n"},
                "ci_command": ["python", "-c", SLEEPER],
            },
        )
        push = {"project": "g/slow", "branch": "b", "files": {"x": "1"}, "message": "x"}
        emu.control("commit", push)
        project = gitlab.Gitlab(emu.url, private_token="t").projects.get("g/slow")
        mr = project.mergerequests.create(
            {"source_branch": "b", "target_branch": "main", "title": "slow"}
        )
        started = time.monotonic()
        emu.wait_for_pipelines(20)
        assert time.monotonic() - started < 10
        pipeline = project.mergerequests.get(mr.iid).head_pipeline
        assert pipeline["status"] == "failed"
        job = project.jobs.get(project.pipelines.get(pipeline["id"]).jobs.list()[0].id)
        assert job.failure_reason == "job_execution_timeout"
        trace = job.trace().decode()
        assert "start" in trace and "execution took longer than 0.5s" in trace
    finally:
        emu.stop()

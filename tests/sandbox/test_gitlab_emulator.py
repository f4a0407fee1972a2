"""The GitLab emulator driven through python-gitlab, unchanged: projects, branches, merge
requests, notes, discussions, pipelines and jobs, pagination, rate limits, errors, auth.

Pipelines here run a trivial command or have their result forced; the real sample project's
CI (pytest on a planted bug) is exercised in test_gitlab_ci.py.
"""

from __future__ import annotations

import json
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError

import gitlab
import gitlab.exceptions as glexc
import pytest

from harness_cli.sandbox.gitlab_api import GitLabEmulator

PATH = "group/service"
FILES = {"README.md": "# service\n", "app.py": "VALUE = 1\n"}


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[GitLabEmulator]:
    emulator = GitLabEmulator(tmp_path / "gitlab", ci_timeout=30)
    emulator.start()
    emulator.control(
        "create_project",
        {"path": PATH, "files": FILES, "ci_command": ["python", "-c", "print('job ran')"]},
    )
    yield emulator
    emulator.stop()


@pytest.fixture
def gl(emu: GitLabEmulator) -> gitlab.Gitlab:
    return gitlab.Gitlab(emu.url, private_token="glpat-test-token")


@pytest.fixture
def project(gl: gitlab.Gitlab) -> Any:
    return gl.projects.get(PATH)


def branch(emu: GitLabEmulator, name: str, files: dict[str, str] | None = None) -> str:
    """A branch with one commit of its own, pushed as a human would."""
    body = {"project": PATH, "branch": name, "files": files or {f"{name}.txt": name}}
    sha: str = emu.control("commit", {**body, "message": f"work on {name}"})["sha"]
    return sha


def open_mr(project: Any, emu: GitLabEmulator, name: str, **extra: Any) -> Any:
    branch(emu, name)
    data = {"source_branch": name, "target_branch": "main", "title": f"MR {name}", **extra}
    return project.mergerequests.create(data)


# -- projects, auth ------------------------------------------------------------------------
def test_project_by_encoded_path_and_by_id(
    emu: GitLabEmulator, gl: gitlab.Gitlab, project: Any
) -> None:
    assert emu.recorded("/api/v4/projects/group%2Fservice", method="GET")
    assert project.path_with_namespace == PATH
    assert project.default_branch == "main"
    assert project.namespace["full_path"] == "group"
    assert project.web_url == f"{emu.url}/{PATH}"
    assert Path(project.http_url_to_repo.removeprefix("file://"), "HEAD").is_file()
    assert gl.projects.get(project.id).path_with_namespace == PATH
    assert [p.id for p in gl.projects.list(get_all=True)] == [project.id]
    with pytest.raises(glexc.GitlabGetError) as err:
        gl.projects.get("group/missing")
    assert err.value.response_code == 404
    assert err.value.error_message == "404 Project Not Found"


def test_auth_tokens(emu: GitLabEmulator) -> None:
    anonymous = gitlab.Gitlab(emu.url)
    with pytest.raises(glexc.GitlabAuthenticationError) as err:
        anonymous.projects.get(PATH)
    assert err.value.error_message == "401 Unauthorized"

    bot = gitlab.Gitlab(emu.url, oauth_token="any-token")
    bot.auth()
    assert bot.user is not None and bot.user.username == "harness-bot"
    assert emu.recorded("/api/v4/user")[-1].headers["authorization"] == "Bearer any-token"

    emu.control("add_token", {"token": "glpat-alice", "user": "alice"})
    alice = gitlab.Gitlab(emu.url, private_token="glpat-alice")
    alice.auth()
    assert alice.user is not None and alice.user.username == "alice"

    emu.control("revoke_token", {"token": "glpat-alice"})
    with pytest.raises(glexc.GitlabAuthenticationError):
        alice.auth()
    assert gitlab.Gitlab(emu.url, private_token="other").version()[0].startswith("17.")


# -- branches ------------------------------------------------------------------------------
def test_branches_create_get_list_delete(emu: GitLabEmulator, project: Any) -> None:
    main_sha = project.branches.get("main").commit["id"]
    created = project.branches.create({"branch": "feature/x", "ref": "main"})
    assert created.name == "feature/x" and created.commit["id"] == main_sha
    sha = branch(emu, "feature/x")
    got = project.branches.get("feature/x")
    assert got.commit["id"] == sha and got.commit["parent_ids"] == [main_sha]
    assert got.commit["title"] == "work on feature/x"
    assert {b.name for b in project.branches.list(get_all=True)} == {"main", "feature/x"}
    with pytest.raises(glexc.GitlabCreateError) as err:
        project.branches.create({"branch": "feature/x", "ref": "main"})
    assert err.value.response_code == 400
    project.branches.delete("feature/x")
    with pytest.raises(glexc.GitlabGetError) as missing:
        project.branches.get("feature/x")
    assert missing.value.error_message == "404 Branch Not Found"


# -- merge requests ------------------------------------------------------------------------
def test_mr_create_then_duplicate_is_409(emu: GitLabEmulator, project: Any) -> None:
    mr = open_mr(project, emu, "fix-1", description="Fixes it", labels=["bug", "harness"])
    assert (mr.iid, mr.project_id, mr.state) == (1, project.id, "opened")
    assert mr.labels == ["bug", "harness"] and mr.description == "Fixes it"
    assert mr.author["username"] == "harness-bot"
    assert mr.web_url == f"{emu.url}/{PATH}/-/merge_requests/1"
    with pytest.raises(glexc.GitlabCreateError) as err:
        project.mergerequests.create(
            {"source_branch": "fix-1", "target_branch": "main", "title": "again"}
        )
    assert err.value.response_code == 409
    body = json.loads(err.value.response_body or b"")
    assert body == {
        "message": ["Another open merge request already exists for this source branch: !1"]
    }
    # python-gitlab checks required attributes itself; its raw POST reaches the server.
    with pytest.raises(glexc.GitlabHttpError) as missing:
        project.manager.gitlab.http_post(
            f"/projects/{project.id}/merge_requests",
            post_data={"source_branch": "fix-1", "target_branch": "main"},
        )
    assert missing.value.response_code == 400
    assert json.loads(missing.value.response_body or b"") == {"error": "title is missing"}


def test_mr_list_filters_and_order(emu: GitLabEmulator, project: Any) -> None:
    first = open_mr(project, emu, "a")
    second = open_mr(project, emu, "b")
    third = open_mr(project, emu, "c")
    third.state_event = "close"
    third.save()
    assert [m.iid for m in project.mergerequests.list(get_all=True)] == [3, 2, 1]
    assert [m.iid for m in project.mergerequests.list(state="opened", get_all=True)] == [2, 1]
    assert [m.iid for m in project.mergerequests.list(state="closed", get_all=True)] == [3]
    assert [m.iid for m in project.mergerequests.list(source_branch="b", get_all=True)] == [2]
    # updated_after is "on or after": passing back the timestamp we saw includes that MR.
    seen = project.mergerequests.get(second.iid).updated_at
    after = project.mergerequests.list(updated_after=seen, get_all=True)
    assert second.iid in [m.iid for m in after] and first.iid not in [m.iid for m in after]
    emu.control("add_note", {"project": PATH, "iid": 1, "author": "bob", "body": "nit"})
    after = project.mergerequests.list(updated_after=seen, state="opened", get_all=True)
    assert sorted(m.iid for m in after) == [1, 2]
    listed = project.mergerequests.list(iids=[1], get_all=True)[0]
    assert "head_pipeline" not in listed.attributes and listed.sha


def test_mr_get_sha_pipeline_and_merge_status(emu: GitLabEmulator, project: Any) -> None:
    emu.control("set_pipeline_result", {"project": PATH, "status": "success"})
    sha = branch(emu, "feat")
    mr = project.mergerequests.create(
        {"source_branch": "feat", "target_branch": "main", "title": "Feat"}
    )
    mr = project.mergerequests.get(mr.iid)
    assert mr.sha == sha and mr.head_pipeline["sha"] == sha
    assert mr.head_pipeline["status"] == "success" and mr.head_pipeline["project_id"] == project.id
    assert (mr.detailed_merge_status, mr.merge_status) == ("mergeable", "can_be_merged")
    assert mr.diff_refs["head_sha"] == sha and mr.merged_at is None

    note = emu.control(
        "add_note", {"project": PATH, "iid": mr.iid, "author": "alice", "body": "Please rename"}
    )
    assert project.mergerequests.get(mr.iid).detailed_merge_status == "discussions_not_resolved"
    discussion = mr.discussions.get(note["discussion_id"])
    discussion.resolved = True
    discussion.save()
    assert project.mergerequests.get(mr.iid).detailed_merge_status == "mergeable"

    # main moves under the MR, touching the same file: the real merge would conflict.
    conflicting = {"feat.txt": "other"}
    body = {"project": PATH, "branch": "main", "files": conflicting, "message": "conflicting"}
    emu.control("commit", body)
    mr = project.mergerequests.get(mr.iid)
    assert mr.detailed_merge_status == "conflict" and mr.has_conflicts
    with pytest.raises(glexc.GitlabMRClosedError) as err:
        mr.merge()
    assert err.value.response_code == 406


def test_mr_update_close_reopen(emu: GitLabEmulator, project: Any) -> None:
    mr = open_mr(project, emu, "upd")
    before = mr.updated_at
    mr.title = "Better title"
    mr.labels = ["x"]
    mr.save()
    mr = project.mergerequests.get(mr.iid)
    assert (mr.title, mr.labels) == ("Better title", ["x"]) and mr.updated_at >= before
    mr.state_event = "close"
    mr.save()
    mr = project.mergerequests.get(mr.iid)
    assert (mr.state, mr.detailed_merge_status) == ("closed", "not_open")
    assert mr.closed_at is not None
    with pytest.raises(glexc.GitlabMRClosedError) as err:
        mr.merge()
    assert err.value.response_code == 405
    mr.state_event = "reopen"
    mr.save()
    assert project.mergerequests.get(mr.iid).state == "opened"
    with pytest.raises(glexc.GitlabGetError) as missing:
        project.mergerequests.get(99)
    assert missing.value.error_message == "404 Merge Request Not Found"


def test_merge_refused_while_pipeline_failed_then_merged(emu: GitLabEmulator, project: Any) -> None:
    emu.control("set_pipeline_result", {"project": PATH, "status": "failed"})
    mr = open_mr(project, emu, "broken")
    mr = project.mergerequests.get(mr.iid)
    assert mr.head_pipeline["status"] == "failed"
    assert mr.detailed_merge_status == "ci_must_pass"
    with pytest.raises(glexc.GitlabMRClosedError) as err:
        mr.merge()
    assert err.value.response_code == 405
    assert err.value.error_message == "405 Method Not Allowed"

    project.pipelines.get(mr.head_pipeline["id"]).retry()  # runs for real this time
    emu.wait_for_pipelines(30)
    mr = project.mergerequests.get(mr.iid)
    assert mr.detailed_merge_status == "mergeable"
    with pytest.raises(glexc.GitlabMRClosedError) as stale:
        mr.merge(sha="0" * 40)
    assert stale.value.response_code == 409
    mr.merge(sha=mr.sha)
    assert mr.state == "merged" and mr.merge_commit_sha
    main = project.branches.get("main").commit
    assert main["id"] == mr.merge_commit_sha and main["parent_ids"][1] == mr.sha


def test_merge_when_pipeline_succeeds(emu: GitLabEmulator, project: Any) -> None:
    emu.control("set_pipeline_result", {"project": PATH, "status": "running"})
    mr = open_mr(project, emu, "auto")
    mr = project.mergerequests.get(mr.iid)
    assert mr.detailed_merge_status == "ci_still_running"
    mr.merge(merge_when_pipeline_succeeds=True)
    assert mr.state == "opened" and mr.merge_when_pipeline_succeeds
    pipeline_id = mr.head_pipeline["id"]
    emu.control(
        "set_pipeline_result", {"project": PATH, "status": "success", "pipeline_id": pipeline_id}
    )
    assert project.mergerequests.get(mr.iid).state == "merged"


# -- notes and discussions -----------------------------------------------------------------
def test_notes_list_create_order(emu: GitLabEmulator, project: Any) -> None:
    mr = open_mr(project, emu, "notes")
    emu.control(
        "add_note",
        {"project": PATH, "iid": mr.iid, "author": "bob", "body": "first", "discussion": False},
    )
    created = mr.notes.create({"body": "second"})
    assert created.author["username"] == "harness-bot" and created.noteable_iid == mr.iid
    assert created.system is False and created.resolvable is False
    bodies = [n.body for n in mr.notes.list(get_all=True)]
    assert bodies == ["second", "first"]
    ascending = mr.notes.list(sort="asc", order_by="created_at", get_all=True)
    assert [n.body for n in ascending] == ["first", "second"]
    first = ascending[0]
    assert first.author == {**first.author, "id": 3, "username": "bob"}
    assert {"created_at", "updated_at", "system", "resolvable", "noteable_iid"} <= set(
        first.attributes
    )
    with pytest.raises(glexc.GitlabUpdateError) as err:
        first.body = "edited by someone else"
        first.save()
    assert err.value.response_code == 403


def test_discussions_list_reply_resolve(emu: GitLabEmulator, project: Any) -> None:
    mr = open_mr(project, emu, "disc")
    emu.control(
        "add_note", {"project": PATH, "iid": mr.iid, "author": "alice", "body": "Use Decimal"}
    )
    [discussion] = mr.discussions.list(get_all=True)
    assert len(discussion.id) == 40 and int(discussion.id, 16) >= 0
    assert discussion.individual_note is False
    assert discussion.attributes["notes"][0]["resolvable"] is True
    reply = discussion.notes.create({"body": "Done in the next commit"})
    assert reply.author["username"] == "harness-bot"
    discussion.resolved = True
    discussion.save()
    again = mr.discussions.get(discussion.id)
    bodies = [n["body"] for n in again.attributes["notes"]]
    assert bodies == ["Use Decimal", "Done in the next commit"]
    assert all(n["resolved"] for n in again.attributes["notes"])
    own = mr.discussions.create({"body": "A thread of my own"})
    assert own.individual_note is False and len(mr.discussions.list(get_all=True)) == 2
    with pytest.raises(glexc.GitlabGetError):
        mr.discussions.get("f" * 40)


# -- pipelines and jobs --------------------------------------------------------------------
def test_pipelines_jobs_and_trace(emu: GitLabEmulator, project: Any) -> None:
    mr = open_mr(project, emu, "ci")
    emu.wait_for_pipelines(30)
    [pipeline] = project.pipelines.list(ref="ci", get_all=True)
    assert pipeline.sha == project.mergerequests.get(mr.iid).sha
    assert pipeline.status == "success" and pipeline.source == "merge_request_event"
    full = project.pipelines.get(pipeline.id)
    assert full.started_at and full.finished_at and full.web_url.endswith(f"/{pipeline.id}")
    assert project.pipelines.list(sha=pipeline.sha, get_all=True)[0].id == pipeline.id
    assert project.pipelines.list(status="failed", get_all=True) == []
    [job] = full.jobs.list(get_all=True)
    assert (job.name, job.stage, job.status) == ("test", "test", "success")
    assert job.pipeline["id"] == pipeline.id
    trace = project.jobs.get(job.id, lazy=True).trace().decode()
    assert "job ran" in trace and "Job succeeded" in trace
    assert project.jobs.get(job.id).status == "success"
    full.retry()
    emu.wait_for_pipelines(30)
    jobs = full.jobs.list(include_retried=True, get_all=True)
    assert len(jobs) == 2 and len(full.jobs.list(get_all=True)) == 1


# -- pagination, rate limits, 5xx ----------------------------------------------------------
def test_pagination_walks_link_headers(emu: GitLabEmulator, project: Any) -> None:
    mr = open_mr(project, emu, "pages")
    for n in range(45):
        emu.control(
            "add_note",
            {"project": PATH, "iid": mr.iid, "author": "bob", "body": f"n{n}", "discussion": False},
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a foreign base URL in Link would warn
        before = len(emu.recorded("/notes", method="GET"))
        everything = mr.notes.list(get_all=True)
        assert len(emu.recorded("/notes", method="GET")) - before == 3
        assert len(everything) == 45 and everything[0].body == "n44"
        lazy = mr.notes.list(iterator=True, per_page=10)
        assert (lazy.total, lazy.total_pages, lazy.per_page, lazy.next_page) == (45, 5, 10, 2)
        assert [n.body for n in lazy] == [n.body for n in everything]
    with pytest.warns(UserWarning, match="get_all=True"):
        assert len(mr.notes.list()) == 20
    assert len(mr.notes.list(page=3, per_page=20)) == 5


def test_totals_dropped_above_ten_thousand(emu: GitLabEmulator, project: Any) -> None:
    mr = open_mr(project, emu, "huge")
    state = emu.state
    target = state.merge_requests[0]
    for n in range(10_001):
        state.add_note(target, state.users[3], f"n{n}", discussion=False)
    lazy = mr.notes.list(iterator=True, per_page=100)
    assert lazy.total is None and lazy.total_pages is None and lazy.next_page == 2
    link = _raw_get(emu, f"/api/v4/projects/1/merge_requests/{mr.iid}/notes")[1]["Link"]
    assert 'rel="next"' in link and 'rel="last"' not in link


def _raw_get(emu: GitLabEmulator, path: str) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(emu.url + path, headers={"PRIVATE-TOKEN": "t"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, dict(resp.headers)
    except HTTPError as err:
        with err:
            return err.code, dict(err.headers)


def test_rate_limit_retry_after_is_obeyed(emu: GitLabEmulator, gl: gitlab.Gitlab) -> None:
    emu.control("rate_limit", {"seconds": 1, "times": 1, "match": "/projects/"})
    started = time.monotonic()
    assert gl.projects.get(PATH).id == 1
    assert time.monotonic() - started >= 1.0
    assert [r.status for r in emu.recorded("/projects/", method="GET")] == [429, 200]


def test_rate_limit_without_retry_after_uses_reset(emu: GitLabEmulator, gl: gitlab.Gitlab) -> None:
    emu.control("rate_limit", {"seconds": 1, "times": 1, "retry_after": False})
    status, headers = _raw_get(emu, "/api/v4/version")
    assert status == 429 and "Retry-After" not in headers
    reset = int(headers["RateLimit-Reset"])
    assert reset >= time.time() and headers["RateLimit-Remaining"] == "0"
    assert {"RateLimit-Limit", "RateLimit-Observed", "RateLimit-ResetTime"} <= set(headers)
    emu.control("rate_limit", {"seconds": 1, "times": 1, "retry_after": False})
    assert gl.version()[0].startswith("17.")
    assert [r.status for r in emu.recorded("/version")][-2:] == [429, 200]


def test_server_errors_with_and_without_transient_retries(emu: GitLabEmulator) -> None:
    emu.control("fault", {"kind": "status", "status": 502, "match": "/projects/"})
    plain = gitlab.Gitlab(emu.url, private_token="t")
    with pytest.raises(glexc.GitlabGetError) as err:
        plain.projects.get(PATH)
    assert err.value.response_code == 502 and err.value.error_message == "502 Bad Gateway"
    emu.control("fault", {"kind": "status", "status": 503, "match": "/projects/", "times": 2})
    patient = gitlab.Gitlab(emu.url, private_token="t", retry_transient_errors=True)
    assert patient.projects.get(PATH).id == 1
    assert [r.status for r in emu.recorded("/projects/")][-3:] == [503, 503, 200]


# -- snapshot ------------------------------------------------------------------------------
def test_snapshot_shape(emu: GitLabEmulator, project: Any) -> None:
    emu.control("set_pipeline_result", {"project": PATH, "status": "success"})
    mr = open_mr(project, emu, "snap", description="why")
    mr.notes.create({"body": "hello"})
    snap = emu.control("state", {})
    json.dumps(snap)
    [proj] = snap["projects"]
    assert proj["path"] == PATH and Path(proj["bare_repo"]).is_dir()
    [entry] = snap["merge_requests"]
    assert entry["iid"] == mr.iid and entry["state"] == "opened" and entry["description"] == "why"
    assert entry["notes"] == [{"author": "harness-bot", "body": "hello", "system": False}]
    assert snap["pipelines"][0]["status"] == "success" and snap["pipelines"][0]["ref"] == "snap"
    assert snap["requests"] == len(emu.requests) > 0


def test_control_api_over_http(emu: GitLabEmulator, gl: gitlab.Gitlab) -> None:
    def post(action: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            f"{emu.url}/_control/{action}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())

    made = post("create_project", {"path": "g/h/deep", "files": {"a": "1\n"}, "ci_command": "true"})
    assert made["id"] == 2 and made["http_url_to_repo"].startswith("file://")
    deep = gl.projects.get("g/h/deep")
    assert deep.namespace["full_path"] == "g/h" and deep.path == "deep"
    assert post("state", {})["projects"][1]["path"] == "g/h/deep"
    with pytest.raises(HTTPError) as err:
        post("no_such_action", {})
    assert err.value.code == 404
    err.value.close()

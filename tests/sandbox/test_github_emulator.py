"""The GitHub emulator driven through PyGithub and real git over smart HTTP, unchanged: auth
and token scopes, pushes and branch protection, a pull request carried from a push to CI,
review threads, resolution and merge, conflicts, Actions (dispatch, logs, re-runs, cancel),
conditional requests, pagination, rate limits and every fault kind.

One emulator serves the whole module; each test works in a repository of its own.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import subprocess
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError

import github
import pytest
import requests
from github import Auth, Github, GithubException, GithubRetry

from harness_cli.sandbox.github_api import GitHubEmulator

TOKEN = "ghp_sandboxtest0000"
FILES = {"README.md": "# app\n", "app.py": "VALUE = 1\n"}
# CI passes unless app.py says VALUE = 0: a real command on the pushed tree decides.
CI = ["python", "-c", "import app, sys; print('value', app.VALUE); sys.exit(app.VALUE == 0)"]
_names = itertools.count(1)


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHubEmulator]:
    emulator = GitHubEmulator(tmp_path_factory.mktemp("github"), ci_timeout=30)
    emulator.start()
    yield emulator
    emulator.stop()


def client(emu: GitHubEmulator, token: str = TOKEN, **extra: Any) -> Github:
    """PyGithub as a cron CLI would set it up: no client-side throttling, no retries unless
    a test asks for them."""
    options: dict[str, Any] = {
        "retry": None,
        "seconds_between_requests": None,
        "seconds_between_writes": None,
        "timeout": 10,
        **extra,
    }
    return Github(base_url=emu.api_url, auth=Auth.Token(token), **options)


@pytest.fixture
def gh(emu: GitHubEmulator) -> Github:
    return client(emu)


@pytest.fixture
def name(emu: GitHubEmulator) -> str:
    """A fresh repository acme/app-N with CI, main protected."""
    full = f"acme/app-{next(_names)}"
    emu.control("create_repo", {"repo": full, "files": FILES, "ci_command": CI})
    return full


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "Bot",
        "GIT_AUTHOR_EMAIL": "bot@example.invalid",
        "GIT_COMMITTER_NAME": "Bot",
        "GIT_COMMITTER_EMAIL": "bot@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=check
    )


def clone(emu: GitHubEmulator, name: str, into: Path, token: str = TOKEN) -> Path:
    url = f"{emu.url}/{name}.git".replace("http://", f"http://x-access-token:{token}@")
    git(into.parent, "clone", "--quiet", url, str(into))
    return into


def push_change(work: Path, branch: str, files: dict[str, str], *, new: bool = True) -> str:
    if new:
        git(work, "checkout", "-q", "-b", branch)
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", f"change on {branch}")
    git(work, "push", "-q", "origin", branch)
    return git(work, "rev-parse", "HEAD").stdout.strip()


def raw(emu: GitHubEmulator, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        emu.url + path, headers={"Authorization": f"token {TOKEN}", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except HTTPError as err:
        with err:
            return err.code, dict(err.headers), err.read()


# -- auth, scopes, rate-limit headers ------------------------------------------------------
def test_auth_scopes_and_headers(emu: GitHubEmulator, gh: Github, name: str) -> None:
    assert gh.get_user().login == "harness-bot"
    status, headers, _ = raw(emu, "/api/v3/user")
    assert status == 200 and headers["X-OAuth-Scopes"] == "repo, workflow"
    assert headers["X-GitHub-Request-Id"] and headers["X-RateLimit-Resource"] == "core"
    assert int(headers["X-RateLimit-Remaining"]) + int(headers["X-RateLimit-Used"]) == 5000
    emu.control("expire_token", {"token": "ghp_expired"})
    with pytest.raises(github.BadCredentialsException) as err:
        client(emu, "ghp_expired").get_user().login  # noqa: B018 - the call is the point
    assert err.value.status == 401 and err.value.data["message"] == "Bad credentials"

    emu.control(
        "add_token",
        {
            "token": "github_pat_ro",
            "user": "harness-bot",
            "permissions": {"contents": "read", "pull_requests": "read"},
        },
    )
    limited = client(emu, "github_pat_ro").get_repo(name)
    with pytest.raises(GithubException) as denied:
        limited.get_workflows().totalCount  # noqa: B018
    assert denied.value.status == 403
    assert denied.value.data["message"] == "Resource not accessible by personal access token"
    assert denied.value.headers["x-accepted-github-permissions"] == "actions=read"
    status, headers, _ = raw(emu, f"/api/v3/repos/{name}", Authorization="token github_pat_ro")
    assert status == 200 and "X-OAuth-Scopes" not in headers

    emu.control("add_token", {"token": "ghp_noscope", "scopes": []})
    with pytest.raises(github.UnknownObjectException):
        client(emu, "ghp_noscope").get_repo(name)  # private repo, no `repo` scope: 404


# -- git over smart HTTP -------------------------------------------------------------------
def test_git_push_fetch_and_protection(emu: GitHubEmulator, name: str, tmp_path: Path) -> None:
    work = clone(emu, name, tmp_path / "work")
    assert (work / ".github/workflows/ci.yml").is_file()
    sha = push_change(work, "feature", {"app.py": "VALUE = 2\n"})
    assert emu.state.repo(*name.split("/")).seen_heads["feature"] == sha

    # a second clone authenticates with an http.extraheader, as actions/checkout does
    other = tmp_path / "other"
    git(
        tmp_path,
        "-c",
        f"http.extraheader=Authorization: Bearer {TOKEN}",
        "clone",
        "-q",
        f"{emu.url}/{name}.git",
        str(other),
    )
    assert git(other, "rev-parse", "origin/feature").stdout.strip() == sha

    git(work, "checkout", "-q", "main")
    (work / "app.py").write_text("VALUE = 3\n")
    git(work, "commit", "-qam", "straight to main")
    direct = git(work, "push", "origin", "main", check=False)
    assert direct.returncode != 0
    assert "GH006: Protected branch update failed for refs/heads/main." in direct.stderr
    git(work, "reset", "-q", "--hard", "HEAD~1")
    git(work, "commit", "-q", "--amend", "-m", "rewritten")
    forced = git(work, "push", "--force", "origin", "main", check=False)
    assert "Cannot force-push to this branch" in forced.stderr

    anonymous = git(
        tmp_path, "clone", "-q", f"{emu.url}/{name}.git", str(tmp_path / "anon"), check=False
    )
    assert anonymous.returncode != 0
    emu.control("set_role", {"repo": name, "user": "bob", "role": "read"})
    emu.control("add_token", {"token": "ghp_bob", "user": "bob"})
    bob = clone(emu, name, tmp_path / "bob", token="ghp_bob")
    refused = git(bob, "push", "origin", "HEAD:refs/heads/bob-branch", check=False)
    assert refused.returncode != 0 and "denied to bob" in refused.stderr

    emu.control("add_token", {"token": "ghp_noworkflow", "scopes": ["repo"]})
    nowf = clone(emu, name, tmp_path / "nowf", token="ghp_noworkflow")
    (nowf / ".github/workflows/ci.yml").write_text("name: x\n")
    git(nowf, "checkout", "-q", "-b", "wf")
    git(nowf, "commit", "-qam", "touch the workflow")
    scoped = git(nowf, "push", "origin", "wf", check=False)
    assert "without `workflow` scope" in scoped.stderr and scoped.returncode != 0


# -- a pull request from push to merge -----------------------------------------------------
def test_pull_request_ci_review_thread_resolve_merge(
    emu: GitHubEmulator, gh: Github, name: str, tmp_path: Path
) -> None:
    repo = gh.get_repo(name)
    work = clone(emu, name, tmp_path / "work")
    broken = push_change(work, "fix", {"app.py": "VALUE = 0\n"})
    pr = repo.create_pull(base="main", head="fix", title="Fix value", body="why", draft=True)
    assert (pr.draft, pr.head.sha, pr.mergeable) == (True, broken, None)  # being computed
    emu.wait_for_runs(30)
    [run] = repo.get_workflow_runs(head_sha=broken)
    assert (run.event, run.conclusion, run.pull_requests[0].number) == (
        "pull_request",
        "failure",
        pr.number,
    )
    log = requests.get(next(iter(run.jobs())).logs_url(), timeout=10).text
    assert "value 0" in log and "##[error]Process completed with exit code 1." in log

    fixed = push_change(work, "fix", {"app.py": "VALUE = 5\n"}, new=False)
    emu.wait_for_runs(30)
    assert repo.get_pull(pr.number).mergeable_state == "unknown"  # the head moved
    pr = repo.get_pull(pr.number)
    assert pr.head.sha == fixed and pr.mergeable_state == "draft"
    checks = repo.get_commit(fixed).get_check_runs()
    assert [(c.name, c.conclusion, c.app.slug) for c in checks] == [
        ("test", "success", "github-actions")
    ]

    emu.control(
        "set_protection",
        {"repo": name, "required_checks": ["test"], "require_conversation_resolution": True},
    )
    made = emu.control(
        "add_review",
        {
            "repo": name,
            "number": pr.number,
            "author": "alice",
            "event": "COMMENT",
            "body": "One thing",
            "comments": [{"path": "app.py", "line": 1, "body": "Why 5?"}],
        },
    )
    [root_id] = made["comment_ids"]
    before = time.time()
    reply = pr.create_review_comment_reply(root_id, "Because the spec says so")
    assert reply.in_reply_to_id == root_id and reply.path == "app.py"
    since = repo.get_pulls_review_comments(since=_dt(before - 1))
    assert [c.body for c in since] == ["Why 5?", "Because the spec says so"]
    assert [r.user.login for r in pr.get_reviews()] == ["alice", "harness-bot"]

    pr.mark_ready_for_review()
    pr = repo.get_pull(pr.number)
    assert (pr.draft, pr.mergeable_state) == (False, "blocked")
    with pytest.raises(GithubException) as blocked:
        pr.merge(sha=fixed)
    assert (blocked.value.status, blocked.value.data["message"]) == (
        405,
        "All comments must be resolved.",
    )
    query = """query($o: String!, $n: String!, $num: Int!) { repository(owner: $o, name: $n) {
        pullRequest(number: $num) { reviewThreads(first: 10) { nodes { id isResolved
        comments(first: 10) { nodes { databaseId author { login } } } } } } } }"""
    owner, short = name.split("/")
    _, data = gh.requester.graphql_query(query, {"o": owner, "n": short, "num": pr.number})
    [thread] = data["data"]["repository"]["pullRequest"]["reviewThreads"]["nodes"]
    assert thread["isResolved"] is False and len(thread["comments"]["nodes"]) == 2
    _, done = gh.requester.graphql_named_mutation(
        "resolveReviewThread", {"threadId": thread["id"]}, "thread { isResolved }"
    )
    assert done == {"thread": {"isResolved": True}}

    with pytest.raises(GithubException) as moved:
        pr.merge(sha=broken)
    assert moved.value.status == 409
    assert (
        moved.value.data["message"] == "Head branch was modified. Review and try the merge again."
    )
    result = pr.merge(sha=fixed)
    assert result.merged and repo.get_pull(pr.number).merged
    main = repo.get_branch("main").commit
    assert main.sha == result.sha and [p.sha for p in main.parents][1] == fixed


def _dt(at: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC)


def test_conflict_force_pushed_base_and_list_filters(
    emu: GitHubEmulator, gh: Github, name: str
) -> None:
    emu.control("set_protection", {"repo": name, "protected": False})
    repo = gh.get_repo(name)
    for branch in ("a", "b"):
        emu.control("commit", {"repo": name, "branch": branch, "files": {f"{branch}.txt": "x\n"}})
        repo.create_pull(base="main", head=branch, title=f"PR {branch}")
    with pytest.raises(GithubException) as dup:
        repo.create_pull(base="main", head="a", title="again")
    assert dup.value.status == 422
    assert dup.value.data["errors"][0]["message"] == "A pull request already exists for acme:a."
    assert [p.number for p in repo.get_pulls(head="acme:b")] == [2]
    assert [p.number for p in repo.get_pulls(state="open", base="main")] == [2, 1]

    emu.control("create_conflict", {"repo": name, "number": 1})
    repo.get_pull(1)  # the first read after the base moved answers mergeable: null
    pr = repo.get_pull(1)
    assert (pr.mergeable, pr.mergeable_state) == (False, "dirty")
    with pytest.raises(GithubException) as err:
        pr.merge()
    assert (err.value.status, err.value.data["message"]) == (405, "Pull Request is not mergeable")

    old = repo.get_branch("main").commit.sha
    moved = emu.control("force_push", {"repo": name, "files": {"base.txt": "rewritten\n"}})
    assert moved["old"] == old and repo.get_branch("main").commit.sha == moved["sha"]
    compare = repo.compare(old, "main")
    assert compare.status == "diverged" and compare.ahead_by == 1 and compare.behind_by >= 1
    pr.edit(state="closed")
    assert [p.number for p in repo.get_pulls(state="closed")] == [1]


# -- Actions -------------------------------------------------------------------------------
DISPATCH_WORKFLOW = """name: Worker
on:
  workflow_dispatch:
    inputs:
      ticket:
        required: true
      dry_run:
        default: "false"
      sleep:
        default: "0"
jobs:
  work:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: echo "ticket=${{ inputs.ticket }} dry=${{ github.event.inputs.dry_run }}"
      - run: test -n "$GITHUB_API_URL" && test "${{ secrets.GITHUB_TOKEN }}" != ""
      - run: sleep "${{ inputs.sleep }}"
"""


def test_dispatch_inputs_logs_rerun_and_cancel(emu: GitHubEmulator, gh: Github) -> None:
    full = f"acme/worker-{next(_names)}"
    files = {"README.md": "w\n", ".github/workflows/worker.yml": DISPATCH_WORKFLOW}
    emu.control("create_repo", {"repo": full, "files": files})
    repo = gh.get_repo(full)
    [workflow] = repo.get_workflows()
    assert (workflow.name, workflow.path) == ("Worker", ".github/workflows/worker.yml")
    with pytest.raises(GithubException) as missing:
        workflow.create_dispatch("main", {}, throw=True)
    assert missing.value.status == 422
    run = workflow.create_dispatch("main", {"ticket": "T-1"}, throw=True, return_run_details=True)
    emu.wait_for_runs(30)
    run = repo.get_workflow_run(run.id)
    assert (run.event, run.status, run.conclusion) == ("workflow_dispatch", "completed", "success")
    located = requests.get(
        emu.url + f"/api/v3/repos/{full}/actions/runs/{run.id}/logs",
        headers={"Authorization": f"token {TOKEN}"},
        allow_redirects=False,
        timeout=10,
    )
    assert located.status_code == 302
    archive = zipfile.ZipFile(
        io.BytesIO(requests.get(located.headers["Location"], timeout=10).content)
    )
    text = archive.read("0_work.txt").decode()
    assert "ticket=T-1 dry=false" in text

    emu.control("set_ci_result", {"repo": full, "conclusion": "failure"})
    assert workflow.create_dispatch("main", {"ticket": "T-2"})
    [failed] = [r for r in repo.get_workflow_runs(event="workflow_dispatch") if r.id != run.id]
    assert failed.conclusion == "failure"
    assert failed.rerun_failed_jobs()
    emu.wait_for_runs(30)
    again = repo.get_workflow_run(failed.id)
    assert (again.run_attempt, again.conclusion) == (2, "success")
    assert len(list(again.jobs("all"))) == 2

    assert workflow.create_dispatch("main", {"ticket": "T-3", "sleep": "3"})
    deadline = time.monotonic() + 10
    while (slow := repo.get_workflow_runs(status="in_progress")).totalCount == 0:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert slow[0].cancel()
    assert repo.get_workflow_run(slow[0].id).conclusion == "cancelled"
    with pytest.raises(GithubException) as done:
        gh.requester.requestJsonAndCheck("POST", slow[0].cancel_url)
    assert done.value.status == 409


# -- conditional requests, pagination, rate limits -----------------------------------------
def test_etag_304_is_not_counted(emu: GitHubEmulator, name: str) -> None:
    path = f"/api/v3/repos/{name}/pulls?state=all"
    status, first, _ = raw(emu, path)
    assert status == 200 and first["ETag"].startswith('W/"')
    status, second, body = raw(emu, path, **{"If-None-Match": first["ETag"]})
    assert (status, body) == (304, b"")
    assert second["X-RateLimit-Remaining"] == first["X-RateLimit-Remaining"]
    emu.control("commit", {"repo": name, "branch": "etag", "files": {"e.txt": "e\n"}})
    client(emu).get_repo(name).create_pull(base="main", head="etag", title="changes the list")
    status, third, _ = raw(emu, path, **{"If-None-Match": first["ETag"]})
    assert status == 200 and third["ETag"] != first["ETag"]
    assert int(third["X-RateLimit-Remaining"]) < int(first["X-RateLimit-Remaining"])


def test_pagination_link_headers(emu: GitHubEmulator, gh: Github, name: str) -> None:
    emu.control("commit", {"repo": name, "branch": "pages", "files": {"p.txt": "p\n"}})
    pr = gh.get_repo(name).create_pull(base="main", head="pages", title="many comments")
    for n in range(45):
        emu.control("add_issue_comment", {"repo": name, "number": pr.number, "body": f"c{n}"})
    status, headers, body = raw(
        emu, f"/api/v3/repos/{name}/issues/{pr.number}/comments?per_page=20"
    )
    assert status == 200 and len(json.loads(body)) == 20 and 'rel="next"' in headers["Link"]
    assert 'rel="last"' in headers["Link"] and 'rel="prev"' not in headers["Link"]
    assert headers["Link"].startswith(f"<{emu.url}/api/v3/")
    before = len(emu.recorded("/comments", method="GET"))
    paged = client(emu, per_page=20).get_repo(name).get_pull(pr.number).get_issue_comments()
    assert [c.body for c in paged] == [f"c{n}" for n in range(45)]
    assert len(emu.recorded("/comments", method="GET")) - before == 3


def test_primary_rate_limit_spent(emu: GitHubEmulator) -> None:
    emu.control("add_token", {"token": "ghp_carol", "user": "bob"})
    emu.control("rate_limit", {"user": "bob", "remaining": 1, "reset_in": 30, "status": 429})
    carol = client(emu, "ghp_carol")
    assert carol.get_user().login == "bob"
    # PyGithub maps only a 403 to RateLimitExceededException; GitHub may answer 429
    with pytest.raises(GithubException) as err:
        carol.get_user().login  # noqa: B018
    assert err.value.status == 429 and err.value.headers["x-ratelimit-remaining"] == "0"
    assert int(err.value.headers["x-ratelimit-reset"]) > time.time()
    assert carol.get_rate_limit().resources.core.remaining == 0  # /rate_limit is free
    emu.control("rate_limit", {"user": "bob", "remaining": 5000})


@pytest.mark.parametrize(
    ("fault", "expect"),
    [
        ({"kind": "status", "status": 502}, 502),
        ({"kind": "status", "status": 404}, 404),
        ({"kind": "status", "status": 403}, 403),
        ({"kind": "primary_rate_limit", "status": 403}, "rate"),
        ({"kind": "secondary_rate_limit", "status": 403}, "rate"),
        ({"kind": "secondary_rate_limit", "status": 429}, 429),
        ({"kind": "drop"}, "connection"),
        ({"kind": "hang", "seconds": 3}, "timeout"),
    ],
)
def test_each_fault_kind(
    emu: GitHubEmulator, name: str, fault: dict[str, Any], expect: object
) -> None:
    emu.control("fault", {**fault, "match": f"/repos/{name}", "method": "GET", "times": 1})
    impatient = client(emu, timeout=1)
    if isinstance(expect, int):
        with pytest.raises(GithubException) as err:
            impatient.get_repo(name)
        assert err.value.status == expect
    elif expect == "rate":
        with pytest.raises(github.RateLimitExceededException):
            impatient.get_repo(name)
    else:
        with pytest.raises(requests.exceptions.RequestException):
            impatient.get_repo(name)
    assert impatient.get_repo(name).full_name == name  # one time only


def test_lost_answer_after_the_write_happened(emu: GitHubEmulator, gh: Github, name: str) -> None:
    """The comment is made, the answer never arrives: the client cannot tell (what an outbox
    must survive without posting twice)."""
    emu.control("commit", {"repo": name, "branch": "lost", "files": {"l.txt": "l\n"}})
    pr = gh.get_repo(name).create_pull(base="main", head="lost", title="lost answer")
    emu.control("fault", {"kind": "lost", "match": "/comments", "method": "POST"})
    with pytest.raises(requests.exceptions.ConnectionError):
        pr.create_issue_comment("posted once")
    assert [c.body for c in pr.get_issue_comments()] == ["posted once"]


def test_retries_honour_retry_after_and_5xx(emu: GitHubEmulator, name: str) -> None:
    patient = client(emu, retry=GithubRetry(total=3, backoff_factor=0.1))
    emu.control(
        "fault",
        {
            "kind": "secondary_rate_limit",
            "status": 403,
            "seconds": 1,
            "match": f"/repos/{name}",
            "times": 1,
        },
    )
    started = time.monotonic()
    assert patient.get_repo(name).full_name == name
    assert time.monotonic() - started >= 1.0
    emu.control("fault", {"kind": "status", "status": 503, "match": f"/repos/{name}", "times": 2})
    assert patient.get_repo(name).full_name == name
    statuses = [r.status for r in emu.recorded(f"/api/v3/repos/{name}", method="GET")][-5:]
    assert statuses == [403, 200, 503, 503, 200]
    emu.control("fault", {"kind": "delay", "seconds": 0.3, "match": f"/repos/{name}"})
    started = time.monotonic()
    assert patient.get_repo(name).full_name == name and time.monotonic() - started >= 0.3


# -- control API and state dump ------------------------------------------------------------
def test_seed_from_a_folder(emu: GitHubEmulator, gh: Github, tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "mod.py").write_text("X = 1\n")
    (tmp_path / "src" / ".git").mkdir()
    (tmp_path / "src" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    full = f"acme/folder-{next(_names)}"
    emu.control("create_repo", {"repo": full, "folder": str(tmp_path / "src")})
    repo = gh.get_repo(full)
    assert repo.get_contents("pkg/mod.py").decoded_content == b"X = 1\n"
    assert [c.path for c in repo.get_contents("")] == ["pkg"]


def test_control_over_http_and_snapshot(emu: GitHubEmulator, name: str) -> None:
    def post(action: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            f"{emu.url}/_control/{action}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())

    post("commit", {"repo": name, "branch": "snap", "files": {"s.txt": "s\n"}})
    pr = client(emu).get_repo(name).create_pull(base="main", head="snap", title="Snap")
    post("add_issue_comment", {"repo": name, "number": pr.number, "body": "hi", "author": "bob"})
    snap = post("state", {})
    [entry] = [p for p in snap["pulls"] if p["repo"] == name and p["number"] == pr.number]
    assert entry["issue_comments"] == [{"author": "bob", "body": "hi"}]
    assert any(r["full_name"] == name and r["protected"] == ["main"] for r in snap["repos"])
    with pytest.raises(HTTPError) as err:
        post("no_such_action", {})
    assert err.value.code == 404
    err.value.close()

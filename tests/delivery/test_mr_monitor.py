"""L3/L4: `harness mr-monitor` against the GitLab emulator (real bare repos, real pipelines on the
sample project, python-gitlab unchanged) and the Slack emulator for the operator's DMs; every
dispatch is recorded (HARNESS_DISPATCH=record) and counted.

Where a test needs the MR's branch to move after a fix_ci dispatch, a clone pushes a commit
(any push, as a teammate's would). The bot's replies to reviewers are never posted by a test:
the dev-agent end to end is in test_delivery_truth.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gitlab
import pytest

from harness_cli.delivery.monitor import decide as decide
from harness_cli.sandbox.gitlab_api import GitLabEmulator
from harness_cli.sandbox.scenarios.sample_repo import (
    SAMPLE_BUG_FIX,
    SAMPLE_PROJECT_PATH,
    seed_sample_project,
)
from harness_cli.services.gitlab import Discussion, Note
from harness_cli.state.models import MonitoredMr
from tests.conftest import payloads
from tests.forges import GITHUB_TOKEN, seed_github, use_github

PATH = SAMPLE_PROJECT_PATH
CASE = "AAA-1"


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


class World:
    """The sandbox as one team sees it: GitLab with the sample project, the operator's
    self-DM, a clone to push from, and `harness` run in-process."""

    forge = "gitlab"

    def __init__(self, emu: Any, cli: Any, slack: Any, tmp_path: Path) -> None:
        self.emu, self.cli, self.slack, self.tmp = emu, cli, slack, tmp_path
        self.connect()
        self.clone = tmp_path / "clone"
        git(tmp_path, "clone", "-q", self.clone_url, str(self.clone))
        self.counter = 0

    # -- what differs between the forges ------------------------------------------------------
    def connect(self) -> None:
        self.gl = gitlab.Gitlab(self.emu.url, private_token="glpat-harness-bot")
        self.project = self.gl.projects.get(PATH)
        self.clone_url = str(self.project.http_url_to_repo)

    def create_mr(self, branch: str) -> int:
        """An MR for ``branch`` as the harness's account."""
        mr = self.project.mergerequests.create(
            {"source_branch": branch, "target_branch": "main", "title": f"Work on {branch}"}
        )
        return int(mr.iid)

    def wait_ci(self) -> None:
        self.emu.wait_for_pipelines(90)

    def head_pipeline(self, iid: int) -> int:
        return int(self.project.mergerequests.get(iid).head_pipeline["id"])

    def finish_pipeline(self, pipeline_id: int, status: str) -> None:
        self.emu.control(
            "set_pipeline_result", {"project": PATH, "status": status, "pipeline_id": pipeline_id}
        )

    def retry_pipeline(self, pipeline_id: int) -> None:
        """The pipeline retried in place: the same id runs again on the same sha."""
        self.project.pipelines.get(pipeline_id).retry()

    def new_pipeline(self, branch: str) -> int:
        """A new pipeline (a new id) on ``branch``'s head, as "Run pipeline" starts one."""
        return int(self.project.pipelines.create({"ref": branch}).id)

    def mr_calls(self, fragment: str) -> list[Any]:
        """The forge's recorded API requests for the MR numbers starting with ``fragment``."""
        return list(self.emu.recorded(f"/merge_requests/{fragment}"))

    def project_calls(self, project: str) -> list[Any]:
        return list(self.emu.recorded(project.replace("/", "%2F")))

    def merge(self, iid: int) -> bool:
        return bool(self.emu.control("merge", {"project": PATH, "iid": iid})["ok"])

    def close(self, iid: int) -> None:
        self.emu.control("close", {"project": PATH, "iid": iid})

    def commit(self, branch: str, files: dict[str, str], message: str) -> None:
        """A teammate's push straight to ``branch``."""
        self.emu.control(
            "commit", {"project": PATH, "branch": branch, "files": files, "message": message}
        )

    def bot_notes(self, iid: int) -> list[str]:
        """Bodies of the notes the harness's account wrote on the MR."""
        mr = self.project.mergerequests.get(iid)
        return [
            n.body for n in mr.notes.list(get_all=True) if n.author["username"] == "harness-bot"
        ]

    # -- cases and MRs ------------------------------------------------------------------------
    def case(self, case_id: str = CASE, *, project: str = "team-a") -> str:
        code, _, err = self.cli(
            "case", "new", "--project", project, "--title", "t", "--id", case_id
        )
        assert code == 0, err
        from harness_cli.config import load_config
        from harness_cli.workspace.registry import update_case

        with update_case(case_id, load_config().harness.thresholds, "test") as case:
            case.move("approved")
            case.move("in_progress")
        return case_id

    def force(self, status: str, project: str = PATH) -> None:
        self.emu.control("set_pipeline_result", {"project": project, "status": status})

    def open_mr(
        self, branch: str, *, result: str | None = "failed", case: str = CASE, fix: bool = False
    ) -> int:
        """A branch with one commit, an MR for it (as the harness's account), watched."""
        if result:
            self.force(result)
        git(self.clone, "checkout", "-q", "-B", branch, "origin/main")
        self._change(fix=fix)
        git(self.clone, "push", "-q", "origin", f"HEAD:{branch}")
        iid = self.create_mr(branch)
        self.wait_ci()
        code, out, err = self.cli("mr-monitor", "--watch", f"{PATH}!{iid}", "--case", case)
        assert code == 0, out + err
        return iid

    def push(self, branch: str, *, result: str | None = "failed", fix: bool = False) -> str:
        """The dev-agent's (or a human's) next commit on the MR's branch."""
        if result:
            self.force(result)
        git(self.clone, "checkout", "-q", branch)
        self._change(fix=fix)
        git(self.clone, "push", "-q", "origin", f"HEAD:{branch}")
        self.wait_ci()
        return git(self.clone, "rev-parse", "HEAD")

    def _change(self, *, fix: bool) -> None:
        if fix:
            path, old, new = SAMPLE_BUG_FIX
            target = self.clone / path
            target.write_text(target.read_text().replace(old, new))
        else:
            self.counter += 1
            notes = self.clone / "NOTES.md"
            with notes.open("a") as handle:
                handle.write(f"attempt {self.counter}\n")
            git(self.clone, "add", "NOTES.md")
        git(self.clone, "commit", "-q", "-am", f"change {self.counter}")

    # -- GitLab activity ----------------------------------------------------------------------
    def note(
        self, iid: int, body: str, *, author: str = "alice", reply_to: str | None = None
    ) -> str:
        body_ = {"project": PATH, "iid": iid, "author": author, "body": body}
        if reply_to:
            body_["reply_to"] = reply_to
        return str(self.emu.control("add_note", body_)["discussion_id"])

    # -- the harness --------------------------------------------------------------------------
    def cycle(self, *, ok: bool = True) -> dict[str, Any]:
        code, out, err = self.cli("mr-monitor", "--json")
        if ok:
            assert code == 0, out + err
        data: dict[str, Any] = json.loads(out)["data"]
        return data

    def dispatched(self, mode: str | None = None) -> list[dict[str, Any]]:
        found = payloads(self.tmp, "dev-agent")
        return [p for p in found if mode is None or p["args"].get("mode") == mode]

    def state(self) -> dict[str, Any]:
        path = self.tmp / "harness-home" / "monitored-mrs.json"
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        return data

    def entry(self, iid: int, project: str = PATH) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.state().get("mrs", {}).get(f"{project}!{iid}")
        return found

    def dms(self) -> list[str]:
        return [str(m["text"]) for m in self.slack.messages("D0SELF")]


class GitHubWorld(World):
    """The same team on GitHub: the PR opened through PyGithub as the harness's account, a
    reviewer's comment a review thread on a line, CI an Actions workflow run."""

    forge = "github"

    def connect(self) -> None:
        import github

        self.gh = github.Github(
            base_url=self.emu.api_url, auth=github.Auth.Token(GITHUB_TOKEN), lazy=True
        )
        self.repo = self.gh.get_repo(PATH)
        self.clone_url = str(self.repo.clone_url)

    def create_mr(self, branch: str) -> int:
        return int(
            self.repo.create_pull(base="main", head=branch, title=f"Work on {branch}").number
        )

    def force(self, status: str, project: str = PATH) -> None:
        conclusion = {"failed": "failure", "running": "in_progress"}.get(status, status)
        self.emu.control("set_ci_result", {"repo": project, "conclusion": conclusion})

    def wait_ci(self) -> None:
        self.emu.wait_for_runs(90)

    def head_pipeline(self, iid: int) -> int:
        sha = self.repo.get_pull(iid).head.sha
        return max(int(r.id) for r in self.repo.get_workflow_runs(head_sha=sha))

    def finish_pipeline(self, pipeline_id: int, status: str) -> None:
        conclusion = {"failed": "failure"}.get(status, status)
        self.emu.control(
            "set_ci_result", {"repo": PATH, "conclusion": conclusion, "run_id": pipeline_id}
        )

    def retry_pipeline(self, pipeline_id: int) -> None:
        """GitHub's "Re-run all jobs": the same run id, a new attempt on the same sha."""
        self.repo.get_workflow_run(pipeline_id).rerun()

    def new_pipeline(self, branch: str) -> int:
        """A new run (a new id) of the CI workflow on ``branch``'s head (workflow_dispatch)."""
        before = {int(r.id) for r in self.repo.get_workflow_runs()}
        assert self.repo.get_workflow("ci.yml").create_dispatch(ref=branch)
        return max(int(r.id) for r in self.repo.get_workflow_runs() if int(r.id) not in before)

    def mr_calls(self, fragment: str) -> list[Any]:
        return list(self.emu.recorded(f"/pulls/{fragment}"))

    def project_calls(self, project: str) -> list[Any]:
        return list(self.emu.recorded(f"/repos/{project}/"))

    def merge(self, iid: int) -> bool:
        return bool(self.emu.control("merge", {"repo": PATH, "number": iid})["ok"])

    def close(self, iid: int) -> None:
        self.emu.control("close", {"repo": PATH, "number": iid})

    def commit(self, branch: str, files: dict[str, str], message: str) -> None:
        self.emu.control(
            "commit", {"repo": PATH, "branch": branch, "files": files, "message": message}
        )

    def note(
        self, iid: int, body: str, *, author: str = "alice", reply_to: str | None = None
    ) -> str:
        """A review thread on a line (or a reply in one): its discussion id is the id of the
        thread's first comment, what the harness replies to."""
        args: dict[str, Any] = {"repo": PATH, "number": iid, "body": body, "author": author,
                                "path": "pricing/discount.py", "line": 1}  # fmt: skip
        if reply_to:
            args["reply_to"] = int(reply_to)
        made = self.emu.control("add_review_comment", args)
        return reply_to or str(made["comment_id"])

    def bot_notes(self, iid: int) -> list[str]:
        pr = self.repo.get_pull(iid)
        return [c.body for c in pr.get_issue_comments() if c.user.login == "harness-bot"]


@pytest.fixture
def emu(
    forge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config_dir: Path
) -> Iterator[Any]:
    """The sample project on ``forge``: every test here runs on GitLab and on GitHub unless
    it says why not (``GITLAB_ONLY``)."""
    if forge == "gitlab":
        emulator = GitLabEmulator(tmp_path / "gitlab", ci_timeout=90, watch_interval=0.1)
        emulator.start()
        try:
            seed_sample_project(emulator)
            monkeypatch.setenv("GITLAB_URL", emulator.url)
            monkeypatch.setenv("GITLAB_TOKEN", "glpat-harness-bot")
            yield emulator
        finally:
            emulator.stop()
        return
    from harness_cli.sandbox.github_api import GitHubEmulator

    hub = GitHubEmulator(tmp_path / "github", ci_timeout=90)
    hub.start()
    try:
        seed_github(hub)
        use_github(hub, tmp_path, monkeypatch, config=config_dir)
        yield hub
    finally:
        hub.stop()


@pytest.fixture
def world(forge: str, emu: Any, cli, slack_emu, harness_ready: Path, tmp_path: Path) -> World:  # type: ignore[no-untyped-def]
    w = (GitHubWorld if forge == "github" else World)(emu, cli, slack_emu, tmp_path)
    w.case()
    return w


GITLAB_ONLY = pytest.mark.parametrize("forge", ["gitlab"])
"""For a test of python-gitlab's own behaviour or the GitLab emulator's controls."""


def _trace_text(payload: dict[str, Any]) -> str:
    return Path(payload["args"]["trace_file"]).read_text()


# -- CI auto-fix --------------------------------------------------------------------------------
def test_flaky_pipeline_gets_one_fix_and_green_resets_the_count(world: World) -> None:
    """Real CI: pytest fails on the planted bug; the fix run gets the failed job's log."""
    iid = world.open_mr("harness/AAA-1", result=None)  # real pipeline: red on the planted bug
    data = world.cycle()
    [fix] = world.dispatched("fix_ci")
    assert fix["args"]["mr"] == f"{PATH}!{iid}" and fix["trigger"]["kind"] == "ci_failed"
    assert fix["case_id"] == CASE and fix["args"]["pipeline_id"] > 0
    trace = Path(fix["args"]["trace_file"])
    assert trace.parent == Path(fix["case_dir"]) / "ci"
    assert trace.name.startswith(f"{fix['args']['pipeline_id']}-")
    assert "test_discount_starts_at_threshold" in _trace_text(fix)
    assert data["dispatched"] == [f"dev-agent fix_ci {PATH}!{iid}"]
    for _ in range(3):
        assert world.cycle()["dispatched"] == []
    entry = world.entry(iid)
    assert entry is not None and entry["fix_ci_attempts"] == 1
    world.push("harness/AAA-1", result=None, fix=True)  # standing in for the dev-agent
    world.cycle()
    entry = world.entry(iid)
    assert entry is not None and entry["ci_status"] == "success"
    assert entry["fix_ci_attempts"] == 0 and entry["fix_attempts"] == []
    assert len(world.dispatched()) == 1


def test_permanently_red_three_attempts_then_one_escalation_then_silence(world: World) -> None:
    iid = world.open_mr("harness/AAA-1")
    key = f"{PATH}!{iid}"
    world.cycle()
    for _ in range(2):
        world.push("harness/AAA-1")  # the fix did not help: red again
        world.cycle()
    assert len(world.dispatched("fix_ci")) == 3
    assert len({p["args"]["pipeline_id"] for p in world.dispatched()}) == 3
    world.push("harness/AAA-1")  # the 4th red pipeline
    _spent(CASE, 0.07)
    data = world.cycle()
    assert data["escalated"] == [key] and data["dispatched"] == []
    [dm] = [t for t in world.dms() if "still red" in t]
    assert "3 fix attempt(s)" in dm and f"admin: mr resume {key}" in dm
    assert dm.endswith(f"\nCost: case {CASE} so far $0.0700")
    assert dm.count("pipeline #") == 4 and "Result forced by the sandbox" in dm
    for _ in range(10):
        world.cycle()
    world.push("harness/AAA-1")  # a 5th red pipeline while escalated: muted
    muted = world.cycle()
    assert muted["muted"] == [f"escalate_ci {key}"]
    for _ in range(3):
        world.cycle()
    assert len(world.dispatched()) == 3
    assert len([t for t in world.dms() if "still red" in t]) == 1
    # the operator acts: resume re-arms the loop; the next red pipeline is attempt 1 again
    code, out, _ = world.cli("admin", f"mr resume {key}", "--json")
    assert code == 0 and "resumed" in out
    world.cycle()
    entry = world.entry(iid)
    assert entry is not None and not entry["escalated"] and entry["fix_ci_attempts"] == 0
    assert len(world.dispatched()) == 3
    world.push("harness/AAA-1")
    world.cycle()
    assert len(world.dispatched("fix_ci")) == 4


def test_rescan_after_escalation_gives_one_fresh_attempt(world: World) -> None:
    iid = world.open_mr("harness/AAA-1")
    key = f"{PATH}!{iid}"
    world.cycle()
    for _ in range(3):
        world.push("harness/AAA-1")
        world.cycle()
    assert world.entry(iid)["escalated"]  # type: ignore[index]
    assert world.cli("admin", f"mr rescan {key}")[0] == 0
    world.cycle()
    fixes = world.dispatched("fix_ci")
    assert len(fixes) == 4 and fixes[-1]["trigger"]["kind"] == "admin_command"
    for _ in range(3):
        world.cycle()
    assert len(world.dispatched()) == 4


# -- reviewer notes -----------------------------------------------------------------------------
def _monitor_setting(config_dir: Path, **values: Any) -> None:
    import yaml

    path = config_dir / "harness.yaml"
    data = yaml.safe_load(path.read_text())
    data.setdefault("monitor", {}).update(values)
    path.write_text(yaml.safe_dump(data))


def test_five_reviewer_comments_over_ten_cycles_one_dispatch_each(
    world: World, harness_ready: Path
) -> None:
    _monitor_setting(harness_ready, review_round_budget=10)
    iid = world.open_mr("harness/AAA-1", result="success")
    world.cycle()
    world.note(iid, "Self-authored note by the bot itself", author="harness-bot")
    threads: list[str] = []
    for n in range(10):
        if n % 2 == 0:
            if n == 6:  # a second reviewer answers in the first thread
                world.note(iid, "and the rounding?", author="bob", reply_to=threads[0])
                threads.append(threads[0])
            else:
                threads.append(world.note(iid, f"comment {n}"))
        else:  # the MR changes while a reply is being written: it is read again
            world.note(iid, "Pipeline restarted.", author="harness-bot")
        world.cycle()
    reviews = world.dispatched("address_review")
    assert len(reviews) == 5
    assert [p["args"]["discussions"] for p in reviews] == [[t] for t in threads]
    assert {p["trigger"]["kind"] for p in reviews} == {"review_note"}
    assert [p["trigger"]["user"] for p in reviews] == ["alice"] * 3 + ["bob", "alice"]
    # each payload names the note it answers, the MR's branch and its repository
    assert reviews[3]["args"]["notes"] == {threads[0]: max(reviews[3]["args"]["notes"].values())}
    assert {p["repo"] for p in reviews} == {PATH}
    assert {p["args"]["branch"] for p in reviews} == {"harness/AAA-1"}
    for _ in range(3):
        world.cycle()
    assert len(world.dispatched()) == 5


def test_notes_seen_while_paused_are_answered_once_after_resume(world: World) -> None:
    """#14 point 8: during `mr pause` the notes were marked handled and never answered after
    resume, and the open discussion then blocked the merge."""
    iid = world.open_mr("harness/AAA-1", result="success")
    key = f"{PATH}!{iid}"
    world.cycle()
    assert world.cli("admin", f"mr pause {key}")[0] == 0
    first = world.note(iid, "please rename this")
    data = world.cycle()
    assert data["muted"] == [f"address_review {key}"]
    for _ in range(3):
        assert world.cycle()["examined"] == []  # held, and not re-read while paused
    assert world.dispatched() == []
    assert world.cli("admin", f"mr resume {key}")[0] == 0
    world.cycle()
    [held] = world.dispatched("address_review")
    assert held["args"]["discussions"] == [first]
    for _ in range(3):
        world.cycle()
    assert len(world.dispatched()) == 1
    world.note(iid, "and one more thing")
    world.cycle()
    assert len(world.dispatched("address_review")) == 2


def test_notes_seen_while_escalated_are_answered_after_resume(world: World) -> None:
    iid = world.open_mr("harness/AAA-1")
    key = f"{PATH}!{iid}"
    world.cycle()
    for _ in range(3):
        world.push("harness/AAA-1")
        world.cycle()
    assert world.entry(iid)["escalated"]  # type: ignore[index]
    note = world.note(iid, "why is this still red?")
    assert world.cycle()["muted"] == [f"address_review {key}"]
    assert world.dispatched("address_review") == []
    assert world.cli("admin", f"mr resume {key}")[0] == 0
    world.cycle()
    [answer] = world.dispatched("address_review")
    assert answer["args"]["discussions"] == [note]


def test_a_reviewer_who_comments_twenty_times_gets_the_budget_and_one_notice(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#21 point 3: a bot-vs-bot review loop would run for ever. Each round is dispatched
    (the dev-agent's replies are test_delivery_truth's); past the budget the notes are held,
    the MR gets one notice and the operator one DM; a day later a round frees up."""
    from datetime import UTC, datetime, timedelta

    # #34 item 14: new discussions each time (no reply to ours) count against the ceiling
    _monitor_setting(world.tmp / "agent-config", review_round_ceiling=4)
    iid = world.open_mr("harness/AAA-1", result="success")
    key = f"{PATH}!{iid}"
    world.cycle()
    for n in range(20):
        world.note(iid, f"nit {n}: rename this too", author="bob")
        if n < 6 or n == 19:  # a round per note while the budget lasts, then a burst
            world.cycle()
    world.cycle()
    rounds = world.dispatched("address_review")
    assert len(rounds) == 4  # monitor.review_round_ceiling
    notices = [body for body in world.bot_notes(iid) if "review rounds" in body]
    assert len(notices) == 1
    dms = [t for t in world.dms() if "review round budget is spent" in t]
    assert len(dms) == 1 and f"admin: mr rescan {key}" in dms[0]
    assert world.entry(iid)["held"] is True  # type: ignore[index]
    # the operator's own intent passes the budget: one more round, all held notes in it
    assert world.cli("admin", f"mr rescan {key}")[0] == 0
    world.cycle()
    assert len(world.dispatched("address_review")) == 5
    world.note(iid, "nit 20: and this", author="bob")
    world.cycle()
    assert len(world.dispatched("address_review")) == 5  # still spent within the window
    later = datetime.now(UTC) + timedelta(hours=25)  # the window moved on
    monkeypatch.setenv("HARNESS_NOW", later.isoformat())
    world.cycle()
    [*_, fresh] = world.dispatched("address_review")
    assert len(world.dispatched("address_review")) == 6 and fresh["trigger"]["kind"] != (
        "admin_command"
    )
    assert len([t for t in world.dms() if "review round budget is spent" in t]) == 1


def test_global_pause_holds_replies_and_the_operators_rescan_still_works(world: World) -> None:
    iid = world.open_mr("harness/AAA-1", result="success")
    key = f"{PATH}!{iid}"
    world.cycle()
    assert world.cli("pause")[0] == 0
    world.note(iid, "please rename this")
    assert world.cycle()["held_back"] == [f"address_review {key}"]
    for _ in range(3):
        assert world.cycle()["examined"] == []  # held work is not re-read while paused
    assert world.dispatched() == []
    state = json.loads((world.tmp / "harness-home" / "oncall-state.json").read_text())
    assert state["held_back_total"] == 1
    assert world.cli("admin", f"mr rescan {key}")[0] == 0
    world.cycle()
    [p] = world.dispatched("address_review")
    assert p["trigger"]["kind"] == "admin_command"
    assert world.cli("resume")[0] == 0
    for _ in range(3):
        world.cycle()
    assert len(world.dispatched()) == 1


def test_work_held_by_the_global_pause_is_done_once_after_resume(world: World) -> None:
    iid = world.open_mr("harness/AAA-1")
    world.cli("pause")
    world.cycle()
    assert world.dispatched() == []
    world.cli("resume")
    world.cycle()
    world.cycle()
    [fix] = world.dispatched()
    assert fix["args"]["mode"] == "fix_ci" and fix["args"]["mr"] == f"{PATH}!{iid}"


# -- rate limits ---------------------------------------------------------------------------------
@GITLAB_ONLY
def test_429_storm_mid_cycle_loses_nothing_and_duplicates_nothing(world: World) -> None:
    from harness_cli.sandbox.httpbase import Fault

    iids = [world.open_mr(f"harness/AAA-1-{n}", result="success") for n in range(3)]
    world.cycle()
    cursor_before = world.state()["cursors"][PATH]
    for iid in iids:
        world.note(iid, f"comment on !{iid}")
    # Retry-After: 0, one more 429 than python-gitlab's default ten retries
    storm = Fault(
        kind="status",
        status=429,
        match=f"/merge_requests/{iids[1]}/discussions",
        headers={"Retry-After": "0"},
        times=11,
    )
    world.emu.add_fault(storm)
    first = world.cycle()
    assert "rate limited" in first["ended_early"]
    assert first["dispatched"] == [f"dev-agent address_review {PATH}!{iids[0]}"]
    assert world.state()["cursors"][PATH] == cursor_before  # the cursor stayed
    limited = world.emu.recorded(f"/merge_requests/{iids[1]}/discussions")
    assert (
        len([r for r in limited if r.status == 429]) == 11
    )  # python-gitlab honoured Retry-After and retried; then we stopped
    second = world.cycle()
    assert second["ended_early"] == ""
    assert sorted(second["dispatched"]) == [
        f"dev-agent address_review {PATH}!{iid}" for iid in iids[1:]
    ]
    for _ in range(3):
        world.cycle()
    reviews = world.dispatched("address_review")
    assert sorted(p["args"]["mr"] for p in reviews) == sorted(f"{PATH}!{i}" for i in iids)


@GITLAB_ONLY
def test_a_retry_after_past_the_cycle_budget_ends_the_cycle_without_sleeping(
    world: World,
) -> None:
    import time

    from harness_cli.sandbox.httpbase import Fault

    iid = world.open_mr("harness/AAA-1", result="success")
    world.cycle()
    world.note(iid, "a comment during the storm")
    world.emu.add_fault(
        Fault(
            kind="status",
            status=429,
            match=f"/merge_requests/{iid}/discussions",
            headers={"Retry-After": "600"},
            times=1,
        )
    )
    started = time.monotonic()
    first = world.cycle()
    assert time.monotonic() - started < 30  # not the 600 s GitLab asked for
    assert "rate limited" in first["ended_early"] and first["dispatched"] == []
    limited = world.emu.recorded(f"/merge_requests/{iid}/discussions")
    assert [r.status for r in limited].count(429) == 1  # no retry storm either
    second = world.cycle()
    assert second["dispatched"] == [f"dev-agent address_review {PATH}!{iid}"]


def test_unchanged_mrs_cost_no_calls_beyond_the_listing(world: World) -> None:
    iids = [world.open_mr(f"harness/AAA-1-{n}", result="success") for n in range(4)]
    world.cycle()
    world.cycle()  # the cursor settles
    idle = world.cycle()
    # the project, the MR listing, the pipeline listing, the target branch's head
    assert idle["examined"] == [] and idle["calls"] <= 4
    world.note(iids[2], "one change")
    busy = world.cycle()
    assert busy["examined"] == [f"{PATH}!{iids[2]}"]
    assert busy["calls"] <= 6  # + the MR and its discussions


# -- the end of an MR ---------------------------------------------------------------------------
def test_merge_removes_the_worktree_closes_the_case_and_says_so_once(
    world: World, tmp_path: Path
) -> None:
    from harness_cli.delivery import worktrees
    from harness_cli.delivery.thresholds import DeliveryThresholds

    wt = worktrees.create(
        CASE,
        world.clone_url,
        PATH,
        "main",
        thresholds=DeliveryThresholds(worktree_root=str(tmp_path / "wt")),
    )
    iid = world.open_mr("harness/AAA-1", result="success", fix=True)
    world.cycle()
    _spent(CASE, 0.42)
    assert world.merge(iid)
    data = world.cycle()
    assert data["finished"] == [f"{PATH}!{iid} merged"]
    assert not wt.path.exists() and worktrees.for_case(CASE) is None
    assert world.entry(iid) is None
    case = json.loads((tmp_path / "workspace" / "case-workspaces" / CASE / "case.json").read_text())
    assert case["status"] == "closed"
    assert [h["to"] for h in case["history"]][-2:] == ["merged", "closed"]
    assert case["mrs"][0]["state"] == "merged"
    for _ in range(3):
        world.cycle()
    [merged] = [t for t in world.dms() if "merged" in t]
    assert merged.endswith(f"\nCost: case {CASE} so far $0.4200")  # #18: the case's spend
    assert world.dispatched() == []
    # "a review thread that just closed": TASK.md is consolidated as the case ends
    [consolidate] = payloads(world.tmp, "consolidate")
    assert consolidate["case_id"] == CASE and consolidate["trigger"]["kind"] == "mr_merged"


def _spent(case_id: str, usd: float) -> None:
    """What the case's workflow runs added to case.json (``_workflow.metered`` at their end)."""
    from harness_cli.config import load_config
    from harness_cli.cost.meter import Tally
    from harness_cli.workflows.runner import add_spend
    from harness_cli.workspace.registry import update_case

    with update_case(case_id, load_config().harness.thresholds, "test") as case:
        case.cost = add_spend(case.cost, "dev-agent", Tally(calls=3, input=900, usd=usd))


def test_closed_without_merge_escalates_the_case(world: World, tmp_path: Path) -> None:
    iid = world.open_mr("harness/AAA-1", result="success")
    world.cycle()
    world.close(iid)
    world.cycle()
    case = json.loads((tmp_path / "workspace" / "case-workspaces" / CASE / "case.json").read_text())
    assert case["status"] == "escalated" and world.entry(iid) is None
    [dm] = [t for t in world.dms() if "closed without merging" in t]
    assert f"admin: close-case {CASE}" in dm


# -- mergeability -------------------------------------------------------------------------------
def _conflict_on_main() -> dict[str, Any]:
    path, old, _ = SAMPLE_BUG_FIX
    return {
        "branch": "main",
        "message": "A teammate rewrote the same line",
        "files": {path: _sample_discount().replace(old, "    if quantity >= 11:\n")},
    }


def _sample_discount() -> str:
    from harness_cli.sandbox.scenarios.sample_repo import sample_project_files

    return sample_project_files()[SAMPLE_BUG_FIX[0]]


def test_conflict_gets_the_push_recovery_not_a_ci_fix(world: World) -> None:
    iid = world.open_mr("harness/AAA-1", result="running", fix=True)
    world.cycle()  # pipeline still running: re-read next cycle
    world.commit(**_conflict_on_main())
    world.finish_pipeline(world.head_pipeline(iid), "failed")
    world.cycle()
    [p] = world.dispatched()
    assert p["args"] == {
        "mode": "fix_ci",
        "mr": f"{PATH}!{iid}",
        "branch": "harness/AAA-1",
        "merge_status": "conflict",
        "target_branch": "main",
    }
    assert p["trigger"]["kind"] == "ci_event"
    for _ in range(3):
        world.cycle()
    assert len(world.dispatched()) == 1


def test_a_conflicting_push_to_the_target_is_found_on_the_next_cycle(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#14 point 2: the MR itself does not change; it was noticed only at the 6 h re-check."""
    monkeypatch.setenv("HARNESS_NOW", "2026-11-30T08:00:00Z")
    iid = world.open_mr("harness/AAA-1", result="success", fix=True)
    world.cycle()
    world.cycle()
    world.commit(**_conflict_on_main())
    monkeypatch.setenv("HARNESS_NOW", "2026-11-30T08:10:00Z")  # ten minutes, not six hours
    data = world.cycle()
    assert data["examined"] == [f"{PATH}!{iid}"]
    [p] = world.dispatched()
    assert p["args"]["merge_status"] == "conflict" and p["args"]["target_branch"] == "main"
    assert world.entry(iid)["merge_status"] == "conflict"  # type: ignore[index]
    for _ in range(2):  # main does not move again: no further listing, no second dispatch
        assert world.cycle()["examined"] == []
    assert len(world.dispatched()) == 1


@GITLAB_ONLY
def test_a_pipeline_rerun_on_an_unchanged_mr_is_seen_on_the_next_cycle(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#14 point 9: a new pipeline on the same sha touches no MR; it went unseen for 6 h."""
    monkeypatch.setenv("HARNESS_NOW", "2026-11-30T08:00:00Z")
    iid = world.open_mr("harness/AAA-1", result="success")
    world.cycle()
    world.cycle()
    assert world.dispatched() == []
    updated = world.project.mergerequests.get(iid).updated_at
    world.force("failed")
    rerun = world.project.pipelines.create({"ref": "harness/AAA-1"})  # "Run pipeline"
    world.emu.wait_for_pipelines(60)
    assert world.project.mergerequests.get(iid).updated_at == updated  # the MR did not change
    monkeypatch.setenv("HARNESS_NOW", "2026-11-30T08:10:00Z")
    world.cycle()
    [fix] = world.dispatched("fix_ci")
    assert fix["args"]["pipeline_id"] == rerun.id


# -- the harness's own repository, adoption ------------------------------------------------------
@GITLAB_ONLY
def test_improvement_mr_on_the_harness_repo_is_watched_the_same_way(
    world: World, tmp_path: Path
) -> None:
    """pr-ci-fixer: an MR against the harness's own repo, whose case is the finalize case."""
    own = "acme/harness"
    world.emu.control(
        "create_project",
        {"path": own, "files": {"README.md": "# harness\n"}, "ci_command": ["false"]},
    )
    world.case("FIN-1", project="team-b")
    from harness_cli.state import files
    from harness_cli.state.models import PatchPrEntry

    with files.patch_pr_state().update() as st:
        st.cases["FIN-1"] = PatchPrEntry(status="open")
    world.emu.control(
        "commit",
        {"project": own, "branch": "gap/retry", "files": {"a.py": "x = 1\n"}, "message": "m"},
    )
    harness_project = world.gl.projects.get(own)
    mr = harness_project.mergerequests.create(
        {"source_branch": "gap/retry", "target_branch": "main", "title": "Retry budget"}
    )
    world.emu.wait_for_pipelines(60)
    assert world.cli("mr-monitor", "--watch", f"{own}!{mr.iid}", "--case", "FIN-1")[0] == 0
    world.open_mr("harness/AAA-1", result="success")
    world.cycle()
    [fix] = world.dispatched("fix_ci")
    assert fix["case_id"] == "FIN-1" and fix["args"]["mr"] == f"{own}!{mr.iid}"
    assert set(world.state()["cursors"]) == {own, PATH}
    world.emu.control("merge", {"project": own, "iid": mr.iid, "force": True})
    world.cycle()
    assert files.patch_pr_state().read().cases["FIN-1"].status == "merged"


def test_watch_refuses_what_it_cannot_watch(world: World) -> None:
    code, _, err = world.cli("mr-monitor", "--watch", f"{PATH}!99", "--case", CASE)
    assert code == 2 and "no MR" in err
    code, _, err = world.cli("mr-monitor", "--watch", f"{PATH}!1")
    assert code == 2 and "--case" in err
    iid = world.open_mr("harness/AAA-1", result="success")
    code, out, _ = world.cli("mr-monitor", "--watch", f"{PATH}!{iid}", "--case", CASE, "--json")
    assert code == 0 and "already watched" in out
    case = json.loads(
        (world.tmp / "workspace" / "case-workspaces" / CASE / "case.json").read_text()
    )
    assert case["status"] == "mr_open" and len(case["mrs"]) == 1


def test_a_second_cycle_at_once_exits_3(world: World) -> None:
    from harness_cli.state.locks import hold

    with hold("mr-monitor", timeout=0):
        assert world.cli("mr-monitor")[0] == 3


# -- pure decisions (L0) ------------------------------------------------------------------------
def _note(nid: int, author: str, *, system: bool = False) -> Note:
    return Note(id=nid, author=author, body="b", system=system, created_at="", resolvable=True)


@pytest.mark.parametrize(
    ("name", "human"),
    [
        ("alice", True),
        ("abbot", True),
        ("project_12_bot_3f9a", False),
        ("group_4_bot_77", False),
        ("renovate-bot", False),
        ("dependabot[bot]", False),
        ("ghost", False),
        ("lint_bot", False),
    ],
)
def test_only_humans_are_reviewers(name: str, human: bool) -> None:
    assert decide.is_reviewer_note(_note(1, name), me="harness-bot") is human


def test_reply_dedup_by_author_and_by_what_was_dispatched() -> None:
    me = "harness-bot"
    threads = [
        Discussion("answered", [_note(1, "alice"), _note(2, me)]),
        Discussion("open", [_note(3, "alice"), _note(4, me), _note(5, "bob")]),
        Discussion("system", [_note(6, "alice", system=True)]),
        Discussion("bots", [_note(7, "renovate-bot"), _note(8, "linter")]),
        Discussion("in-flight", [_note(9, "alice")]),
    ]
    work = decide.discussions_to_answer(
        threads, me=me, handled={"in-flight": 9}, ignored=["linter"]
    )
    assert work == [decide.ReviewWork("open", 5, "bob", follows_reply=True)]


def test_ci_verdicts() -> None:
    entry = MonitoredMr(project="g/p", iid=1, case_id="C", case_dir="/c")
    red = {"id": 7, "sha": "abc", "status": "failed"}
    assert decide.ci_verdict(entry, None, max_consecutive=3) == "none"
    assert decide.ci_verdict(entry, {**red, "status": "running"}, max_consecutive=3) == "running"
    assert decide.ci_verdict(entry, red, max_consecutive=3) == "fix"
    entry.last_fix_sha = "abc"
    assert decide.ci_verdict(entry, red, max_consecutive=3) == "not_new"
    entry.last_fix_sha, entry.fix_ci_attempts = "old", 3
    assert decide.ci_verdict(entry, red, max_consecutive=3) == "escalate"
    entry.last_pipeline_id = 7
    assert decide.ci_verdict(entry, red, max_consecutive=3) == "seen"
    assert decide.ci_verdict(entry, {**red, "id": 8, "status": "success"}, max_consecutive=3) == (
        "green"
    )


def test_thresholds_forbid_typos() -> None:
    from pydantic import ValidationError

    from harness_cli.delivery.monitor.thresholds import MonitorThresholds, thresholds_from

    with pytest.raises(ValidationError):
        MonitorThresholds.model_validate({"fix_ci_max_consecutiv": 3})
    assert thresholds_from(object()).fix_ci_max_consecutive == 3
    assert thresholds_from(type("H", (), {"mr_monitor": {"fix_ci_max_consecutive": 5}})())
    assert os.environ["HARNESS_DISPATCH"] == "record"


def test_an_escalation_dm_that_fails_is_sent_next_cycle_exactly_once(world: World) -> None:
    from harness_cli.sandbox.httpbase import Fault

    world.open_mr("harness/AAA-1")
    world.cycle()
    for _ in range(3):
        world.push("harness/AAA-1")
        if len(world.dispatched()) < 3:
            world.cycle()
    world.slack.add_fault(Fault(kind="status", status=500, match="chat.postMessage", times=1))
    failed = world.cycle()  # the escalation is made; its DM owed (the outbox, #20)
    assert failed["escalated"]  # delivered by the same cycle's flush or the next one
    world.cycle()
    for _ in range(3):
        world.cycle()
    assert len([t for t in world.dms() if "still red" in t]) == 1
    assert len(world.dispatched()) == 3


def test_the_cursor_is_inclusive_and_closes_up_once_the_lag_window_was_read_twice() -> None:
    from harness_cli.delivery.monitor.cycle import _move_cursor
    from harness_cli.services.gitlab import MergeRequest
    from harness_cli.state import files

    def mr(iid: int, at: str) -> MergeRequest:
        return MergeRequest(PATH, iid, "opened", "b", "main", "t", "", "", updated_at=at)

    newest = "2026-11-30T10:00:00.250Z"
    _move_cursor(PATH, "2026-11-30T09:00:00.000Z", {1: mr(1, newest)}, 10.0)
    first = files.monitored_mrs().read().cursors[PATH]
    assert first == "2026-11-30T09:59:50.250Z"  # newest less the lag
    _move_cursor(PATH, first, {1: mr(1, newest)}, 10.0)
    # nothing newer in the lag window: the cursor closes up to, never past, the newest seen,
    # so a second MR updated in that same millisecond is listed ("on or after") next time
    assert files.monitored_mrs().read().cursors[PATH] == newest
    _move_cursor(PATH, newest, {}, 10.0)
    assert files.monitored_mrs().read().cursors[PATH] == newest

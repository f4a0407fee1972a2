"""L3/L4: `harness finalize` end to end on the sandbox — the harness's own repo on the GitLab
emulator, or (the ``forge`` parameter) on the GitHub emulator while the teams stay on GitLab, as
the reference keeps it (real bare repos, real CI); the patch-suggester as a scripted model behind
the Anthropic emulator (the harness's own tool loop over the real anthropic SDK), DMs through the
Slack emulator. What is checked is what reached the forge, Slack, the case folder and
$HARNESS_HOME."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.delivery.style import lint_description
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.gitlab_api import GitLabEmulator
from harness_cli.sandbox.model_script import RequestView
from tests.conftest import payloads
from tests.forges import use_github
from tests.improvement.conftest import HARNESS_FILES, HARNESS_REPO, new_case
from tests.improvement.corpus import gap_report, planted_reports, write_reports

CASE = "AAA-7"
NEW_RULE = "Query the table directly before inferring its schema from the models."

pytestmark = pytest.mark.slow


@pytest.fixture
def gitlab_emu(
    forge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GitLabEmulator]:
    emulator = GitLabEmulator(tmp_path / "gitlab", ci_timeout=60, watch_interval=0.1)
    emulator.start()
    try:
        if forge == "gitlab":
            emulator.control(
                "create_project",
                {"path": HARNESS_REPO, "files": HARNESS_FILES, "ci_command": "python -m pytest -q"},
            )
        monkeypatch.setenv("GITLAB_URL", emulator.url)
        monkeypatch.setenv("GITLAB_TOKEN", "glpat-harness-bot")
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def github_emu(
    forge: str, ready: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """With ``forge == "github"``: the harness's own repo on GitHub (improvement.self_repo_forge),
    the teams' repos still on GitLab — the reference's arrangement."""
    if forge != "github":
        yield None
        return
    from harness_cli.sandbox.github_api import GitHubEmulator

    hub = GitHubEmulator(tmp_path / "github", ci_timeout=60)
    hub.start()
    try:
        hub.control(
            "create_repo",
            {"repo": HARNESS_REPO, "files": HARNESS_FILES, "ci_command": "python -m pytest -q"},
        )
        use_github(hub, tmp_path, monkeypatch, config=ready, projects=False)
        path = ready / "harness.yaml"
        path.write_text(
            path.read_text().replace(
                "  self_repo: acme/harness", "  self_repo: acme/harness\n  self_repo_forge: github"
            )
        )
        yield hub
    finally:
        hub.stop()


@pytest.fixture
def model(
    model_server: AnthropicEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AnthropicEmulator:
    model_server.reset()
    model_server.load_script("improvement")
    monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-improvement")
    home = tmp_path / "user-home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    return model_server


class World:
    def __init__(self, cli: Any, gitlab: GitLabEmulator, model: AnthropicEmulator, slack: Any,
                 root: Path, hub: Any = None) -> None:  # fmt: skip
        self.cli, self.gitlab, self.model, self.slack, self.root = cli, gitlab, model, slack, root
        self.hub = hub
        """The GitHub emulator when the harness's repo is there."""

    def fail_ci(self) -> None:
        if self.hub is not None:
            self.hub.control("set_ci_result", {"repo": HARNESS_REPO, "conclusion": "failure"})
        else:
            self.gitlab.control(
                "set_pipeline_result", {"project": HARNESS_REPO, "status": "failed"}
            )

    def wait_ci(self) -> None:
        if self.hub is not None:
            self.hub.wait_for_runs(60)
        else:
            self.gitlab.wait_for_pipelines(60)

    def merge(self, iid: int) -> dict[str, Any]:
        if self.hub is not None:
            merged: dict[str, Any] = self.hub.control(
                "merge", {"repo": HARNESS_REPO, "number": iid, "author": "alice"}
            )
            return merged
        return dict(self.gitlab.control(
            "merge", {"project": HARNESS_REPO, "iid": iid, "author": "alice", "force": True}
        ))  # fmt: skip

    def mr_path(self, iid: int) -> str:
        """How the MR's URL ends on the harness repo's forge."""
        return (
            f"/{HARNESS_REPO}/pull/{iid}" if self.hub else f"/{HARNESS_REPO}/-/merge_requests/{iid}"
        )

    def bare(self) -> str:
        if self.hub is not None:
            return str(self.hub.snapshot()["repos"][0]["bare_repo"])
        return str(self.gitlab.snapshot()["projects"][0]["bare_repo"])

    def case(self, case_id: str = CASE, *reports: str) -> Path:
        folder = new_case(case_id, status="closed")
        for n, text in enumerate(reports, 1):
            (folder / f"gap_report_{n:03d}.md").write_text(text)
        return folder

    def finalize(self, *args: str, expect: int = 0) -> dict[str, Any]:
        code, out, err = self.cli("finalize", *args, "--json")
        assert code == expect, f"finalize exited {code}: {err}{out}"
        data: dict[str, Any] = json.loads(out.splitlines()[-1])
        return data

    def mrs(self) -> list[dict[str, Any]]:
        if self.hub is not None:
            return [
                {"iid": p["number"], "title": ("Draft: " if p["draft"] else "") + p["title"],
                 "description": p["body"] or "", "source_branch": p["head"],
                 "target_branch": p["base"], "sha": p["head_sha"]}
                for p in self.hub.snapshot()["pulls"] if p["repo"] == HARNESS_REPO
            ]  # fmt: skip
        return [m for m in self.gitlab.snapshot()["merge_requests"] if m["project"] == HARNESS_REPO]

    def state(self, name: str) -> dict[str, Any]:
        path = self.root / "harness-home" / name
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        return data

    def show(self, branch: str, path: str) -> str:
        bare = self.bare()
        return subprocess.run(
            ["git", "show", f"refs/heads/{branch}:{path}"], cwd=bare, capture_output=True,
            text=True, check=True,
        ).stdout  # fmt: skip

    def branches(self) -> list[str]:
        bare = self.bare()
        out = subprocess.run(["git", "branch", "--format=%(refname:short)"], cwd=bare,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        return out.split()

    def dms(self) -> list[str]:
        return [str(m["text"]) for m in self.slack.messages("D0SELF")]

    def prompts(self) -> list[str]:
        found = []
        for rec in self.model.recorded("/v1/messages"):
            body = rec.json_body()
            view = RequestView.from_body(body)
            if view.role == "patch-suggester" and view.turn == 0:
                found.append(view.user_text)
        return found


@pytest.fixture
def world(cli, ready: Path, gitlab_emu: GitLabEmulator, github_emu: Any,  # type: ignore[no-untyped-def]
          model: AnthropicEmulator, slack_emu, tmp_path: Path) -> World:  # fmt: skip
    return World(cli, gitlab_emu, model, slack_emu, tmp_path, github_emu)


def test_sop_prompt_and_kb_gaps_are_what_the_improvement_mr_is_for(world: World) -> None:
    """#14 point 12: exactly what the reference's improvement MR touches was dropped as out
    of scope."""
    world.case(
        CASE,
        gap_report(category="sop_gap", confidence=85, title="The SOP never says to query"),
        gap_report(category="prompt_gap", confidence=85, title="The prompt asks for inference"),
        gap_report(category="kb_gap", confidence=85, title="The KB lacks the orders table"),
    )
    [case] = world.finalize(CASE)["data"]["cases"]
    assert case["status"] == "open" and case["dropped"] == []
    assert case["kept"] == ["gap_report_001.md", "gap_report_002.md", "gap_report_003.md"]


def test_what_finalize_writes_is_committed_also_on_a_retry(world: World) -> None:
    """#14 point 12: finalize.json reached git only when the retrospective happened to change
    too; a retried finalize (failed, then open) left the outcome out of the workspace."""
    folder = world.case(CASE, gap_report(confidence=85, body="[scenario: nothing] no change"))
    assert world.finalize(CASE, expect=1)["data"]["cases"][0]["status"] == "failed"
    (folder / "gap_report_001.md").write_text(gap_report(confidence=85))
    assert world.finalize(CASE)["data"]["cases"][0]["status"] == "open"
    root = world.root / "workspace"
    status = subprocess.run(
        ["git", "status", "--porcelain", "--", f"case-workspaces/{CASE}"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert status == "", status
    committed = subprocess.run(
        ["git", "show", f"HEAD:case-workspaces/{CASE}/finalize.json"], cwd=root,
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert json.loads(committed)["status"] == "open"


def test_one_mr_against_the_harness_repo_and_a_second_run_does_nothing(world: World) -> None:
    folder = world.case(
        CASE,
        gap_report(confidence=85),
        gap_report(confidence=30, title="A weak hunch about retries"),
        gap_report(category="other", confidence=95, title="The model was slow"),
    )
    data = world.finalize(CASE)
    [case] = data["data"]["cases"]
    assert case["status"] == "open" and case["kept"] == ["gap_report_001.md"]
    assert {d["report"] for d in case["dropped"]} == {"gap_report_002.md", "gap_report_003.md"}
    [mr] = world.mrs()
    assert case["mr_url"].endswith(world.mr_path(mr["iid"]))
    assert mr["source_branch"] == f"harness/{CASE}" and mr["target_branch"] == "main"
    assert mr["title"] == "Require the direct table query before schema inference"  # not Draft
    assert lint_description(mr["description"]) == []
    assert NEW_RULE in world.show(f"harness/{CASE}", "agent-config/prompts/investigator.md")
    entry = world.state("patch-pr-state.json")["cases"][CASE]
    assert entry["status"] == "open" and entry["mr_url"] == case["mr_url"]
    watched = world.state("monitored-mrs.json")["mrs"][f"{HARNESS_REPO}!{mr['iid']}"]
    assert watched["case_id"] == CASE and watched["source_branch"] == f"harness/{CASE}"
    accepted = json.loads((folder / "finalize" / "acceptance" / "latest.json").read_text())
    assert accepted["passed"] and [c["command"] for c in accepted["checks"]] == ["make test"]
    statuses = [(folder / f"gap_report_{n:03d}.md").read_text() for n in (1, 2, 3)]
    assert "status: accepted" in statuses[0]
    assert all("status: false_positive" in s for s in statuses[1:])
    retro = json.loads((folder / "retrospective.json").read_text())
    assert retro["ended_by"] == "closed"  # the case's own end wins
    assert "data_gathering/gap:skipped_source" in retro["by_type"]["data_gathering"]
    [dm] = world.dms()
    assert dm.startswith(f"finalize {CASE}: improvement MR opened against {HARNESS_REPO}")
    assert case["mr_url"] in dm and "Merging it is yours." in dm
    [prompt] = world.prompts()
    assert "gap_report_001.md" in prompt and "A weak hunch" not in prompt
    assert "The model was slow" not in prompt and "No AI attribution" in prompt
    assert not world.model.unmatched()
    calls = len(world.model.recorded("/v1/messages"))

    again = world.finalize(CASE)
    [case] = again["data"]["cases"]
    assert case["status"] == "skipped" and case["message"].startswith("already finalized")
    assert again["skipped"] and not again["changed"]
    assert len(world.mrs()) == 1 and len(world.model.recorded("/v1/messages")) == calls
    assert len(world.dms()) == 1


def test_red_ci_on_the_improvement_mr_enters_mr_monitors_loop(world: World) -> None:
    world.case(CASE, gap_report(confidence=90))
    world.fail_ci()
    world.finalize(CASE)
    [mr] = world.mrs()
    world.wait_ci()
    code, out, err = world.cli("mr-monitor", "--json")
    assert code == 0, out + err
    [fix] = [p for p in payloads(world.root, "dev-agent") if p["args"].get("mode") == "fix_ci"]
    assert fix["case_id"] == CASE and fix["args"]["mr"] == f"{HARNESS_REPO}!{mr['iid']}"
    assert fix["trigger"]["kind"] == "ci_failed"
    # Merging stays a human act; mr-monitor then records the end in patch-pr-state.json.
    merged = world.merge(mr["iid"])
    assert merged["ok"], merged
    code, out, err = world.cli("mr-monitor", "--json")
    assert code == 0, out + err
    assert world.state("patch-pr-state.json")["cases"][CASE]["status"] == "merged"


def test_a_style_violation_goes_back_to_the_agent_never_out(world: World) -> None:
    world.case(CASE, gap_report(confidence=90, body="Schema inferred again. [scenario: bad-style]"))
    data = world.finalize(CASE)
    assert data["data"]["cases"][0]["status"] == "open"
    [mr] = world.mrs()
    assert "**Root cause:**" not in mr["description"] and lint_description(mr["description"]) == []
    resend = [p for p in world.prompts() if "The MR description was sent back" in p]
    assert len(resend) == 1 and "[STYLE] S3 (description line 1)" in resend[0]


def test_failed_acceptance_goes_back_once_then_the_mr_is_ready(world: World) -> None:
    folder = world.case(CASE, gap_report(confidence=90, body="[scenario: breaks-checks]"))
    data = world.finalize(CASE)
    assert data["data"]["cases"][0]["status"] == "open"
    runs = sorted((folder / "finalize" / "acceptance").glob("2*.json"))
    assert [json.loads(p.read_text())["passed"] for p in runs] == [False, True]
    assert any("required checks and they failed" in p for p in world.prompts())
    [mr] = world.mrs()
    assert not mr["title"].startswith("Draft:")
    assert (
        world.show(f"harness/{CASE}", "harness_cli/schema_rule.py") == "DIRECT_QUERY_FIRST = True\n"
    )


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [("nothing", "changed nothing"), ("outside", "outside harness_cli/")],
)
def test_refused_changes_push_nothing_and_record_failed(
    world: World, scenario: str, reason: str
) -> None:
    world.case(CASE, gap_report(confidence=90, body=f"[scenario: {scenario}]"))
    data = world.finalize(CASE, expect=1)
    [case] = data["data"]["cases"]
    assert case["status"] == "failed" and reason in case["message"]
    assert world.mrs() == [] and f"harness/{CASE}" not in world.branches()
    entry = world.state("patch-pr-state.json")["cases"][CASE]
    assert entry["status"] == "failed" and reason in entry["detail"]
    assert reason in world.dms()[0]
    worktree = Path(world.state("worktrees.json")["worktrees"][CASE]["path"])
    status = subprocess.run(["git", "status", "--porcelain"], cwd=worktree, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert status == ""  # what the refused round left was discarded: a retry starts clean
    assert world.finalize("--due")["data"]["cases"] == []  # --due leaves a failure to a human


def test_the_largest_gap_pattern_clusters_feed_the_next_finalize(world: World) -> None:
    write_reports(world.root / "workspace" / "case-workspaces", planted_reports(24, themes=2))
    code, _, err = world.cli("gap-patterns")
    assert code == 0, err
    handed = [c["id"] for c in world.state("gap-patterns.json")["clusters"] if c["handoff"]]
    assert len(handed) == 2
    world.case(CASE, gap_report(confidence=20))  # its own gap is dropped: clusters only
    [case] = world.finalize(CASE)["data"]["cases"]
    assert case["status"] == "open" and case["kept"] == [] and case["clusters"] == handed
    [prompt] = world.prompts()
    assert all(cid in prompt for cid in handed) and "Proposed fix: " in prompt
    clusters = world.state("gap-patterns.json")["clusters"]
    assert {c["id"]: c["handed_to"] for c in clusters if c["handoff"]} == dict.fromkeys(
        handed, CASE
    )
    world.case("AAA-8", gap_report(confidence=20))
    [other] = world.finalize("AAA-8")["data"]["cases"]
    assert other["status"] == "no_gaps" and other["clusters"] == []

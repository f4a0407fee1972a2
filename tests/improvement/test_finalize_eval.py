"""The improvement MR that finalize opens carries the eval suite's before/after figures in its
description, computed by the harness from its own eval run — the packaged prompts and SOPs
against the ones the MR leaves — and never taken from the model's text."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import github
import pytest

import harness_cli
from harness_cli.delivery.style import lint_description
from harness_cli.eval import gate
from harness_cli.eval.cases import DEFAULT_DIR
from harness_cli.sandbox.github_workflows import default_workflow
from harness_cli.sandbox.gitlab_api import GitLabEmulator
from tests.conftest import payloads
from tests.forges import use_github
from tests.improvement.conftest import HARNESS_FILES, HARNESS_REPO
from tests.improvement.corpus import gap_report
from tests.improvement.test_finalize import CASE, World, model, world

__all__ = ["model", "world"]  # the fixtures, shared with test_finalize


pytestmark = pytest.mark.slow

PIPELINE = "python -m pytest -q && harness eval --overlay . --baseline evals/baseline.json -j 1"
"""The harness repo's CI as an improvement MR meets it on GitLab: its tests, then its eval
step."""
PACKAGED = Path(harness_cli.__file__).parent / "defaults"
EVAL_GATE = PACKAGED / "cron/github-actions/harness-eval-gate.yml"
"""The eval gate the harness ships for its own repository on GitHub, run as shipped by the
emulator's Actions runner (its ``run:`` steps for real)."""
GATE_CHECK = "eval-gate"
"""The gate's job, the check run branch protection requires on the harness repo's main."""


@pytest.fixture
def gitlab_emu(
    forge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GitLabEmulator]:
    emulator = GitLabEmulator(tmp_path / "gitlab", ci_timeout=300, watch_interval=0.1)
    emulator.start()
    try:
        if forge == "gitlab":
            emulator.control(
                "create_project",
                {"path": HARNESS_REPO, "files": HARNESS_FILES,
                 "ci_command": ["sh", "-c", PIPELINE]},
            )  # fmt: skip
        monkeypatch.setenv("GITLAB_URL", emulator.url)
        monkeypatch.setenv("GITLAB_TOKEN", "glpat-harness-bot")
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def github_emu(
    forge: str, ready: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """With ``forge == "github"``: the harness's own repo on GitHub with its tests' workflow
    and the shipped eval gate, the gate a required check of main (a red gate blocks the
    merge, as branch protection does)."""
    if forge != "github":
        yield None
        return
    from harness_cli.sandbox.github_api import GitHubEmulator

    hub = GitHubEmulator(tmp_path / "github", ci_timeout=300)
    hub.start()
    try:
        workflows = {
            ".github/workflows/ci.yml": default_workflow("python -m pytest -q", "main"),
            ".github/workflows/harness-eval-gate.yml": EVAL_GATE.read_text(),
        }
        hub.control("create_repo", {"repo": HARNESS_REPO, "files": {**HARNESS_FILES, **workflows},
                                    "protection": {"required_checks": [GATE_CHECK]}})  # fmt: skip
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


def ci_on(world: World, sha: str) -> list[tuple[str, str]]:
    """Each pipeline (GitHub: the eval gate's workflow run) on ``sha`` once CI is done: its
    result in GitLab's words and its job log."""
    if world.hub is not None:
        world.hub.wait_for_runs(600)
        runs = [r for r in world.hub.state.runs.values()
                if r.head_sha == sha and r.path.endswith("harness-eval-gate.yml")]  # fmt: skip
        return [
            ({"failure": "failed"}.get(r.conclusion or "", r.conclusion or r.status),
             "".join(line for j in r.current_jobs() for line in j.log))
            for r in sorted(runs, key=lambda r: r.id)
        ]  # fmt: skip
    world.gitlab.wait_for_pipelines(timeout=600)
    pipelines = [p for p in world.gitlab.state.pipelines.values() if p.sha == sha]
    return [(p.status, "".join(p.jobs[-1].trace)) for p in pipelines]


def test_the_improvement_mr_states_the_eval_figures_from_the_run(
    world: World, ready: Path, tmp_path: Path
) -> None:
    suite = tmp_path / "mini-suite"
    suite.mkdir()
    shutil.copy(DEFAULT_DIR / "honest-complete.yaml", suite / "honest-complete.yaml")
    path = ready / "harness.yaml"
    path.write_text(path.read_text().replace("eval_suites: []", f"eval_suites: ['{suite}']"))
    world.case(CASE, gap_report(confidence=85))

    data = world.finalize(CASE)
    [case] = data["data"]["cases"]
    assert case["status"] == "open", case
    [mr] = world.mrs()
    text = mr["description"]
    # The MR's investigator template (the harness repo's tiny one) replaces the packaged one
    # in the "after" run: the scripted investigator no longer finds its iteration line, so
    # the case fails after — a real, measured drop the model's own text never mentions.
    assert "The harness ran its eval suite (mini-suite, 1 trial(s) per case" in text
    assert "1 of 1 cases passed (100%, 95 % interval 21% to 100%) before" in text
    assert "0 of 1 cases passed (0%, 95 % interval 0% to 79%) after" in text
    assert re.search(r"paired difference of -100 points \(95 % interval -100 to [+-]\d+\)", text)
    assert text.index("The harness ran its eval suite") < text.index("Changes:")
    assert lint_description(text) == []
    # the model's description carried no figure; the scripted report is unchanged otherwise
    assert "Require the direct table query" in mr["title"]
    # the MR carries the before run, and its pipeline ran `harness eval` against it: the
    # measured drop (0 of 1 after, below the before interval's 21 %) fails the pipeline
    baseline = json.loads(world.show(mr["source_branch"], "evals/baseline.json"))
    assert (baseline["passed"], baseline["started"], baseline["runs"]) == (1, 1, 1)
    assert baseline["suites"] == [str(suite)]
    assert "its pipeline runs `harness eval --overlay . --baseline evals/baseline.json`" in text
    ran = ci_on(world, mr["sha"])
    assert ran, "no pipeline on the MR's head"
    status, trace = ran[-1]
    assert "1 trial(s) started and counted; baseline 0/1" in trace, trace[-3000:]
    assert "eval gate FAILED: 0/1 cases passed (0%) against the baseline's 1/1" in trace
    assert status == "failed"
    if world.hub is not None:
        _the_shipped_gate_blocks_then_passes(world, mr)


def _the_shipped_gate_blocks_then_passes(world: World, mr: dict[str, Any]) -> None:
    """#32: the eval gate the harness ships for GitHub, run as shipped on the Actions runner. Its
    red check blocks the improvement PR (a required check of main); pr-ci-fixer (mr-monitor's
    fix_ci loop, at most 3 attempts) gets the gate's log; once the PR's investigator template
    is the packaged one again and the operator signed that model-facing change off, as the gate
    asks, it runs green on the new head and the merge goes through."""
    alice = "ghp_aliceReviewerAliceReviewer000000000000"
    world.hub.control("add_token", {"token": alice, "user": "alice"})
    world.hub.control("set_role", {"repo": HARNESS_REPO, "user": "alice", "role": "maintain"})
    hub = github.Github(base_url=world.hub.api_url, auth=github.Auth.Token(alice), lazy=True)
    hub.get_repo(HARNESS_REPO).get_pull(mr["iid"]).mark_ready_for_review()  # a reviewer's act
    refused = world.merge(mr["iid"])
    assert not refused["ok"] and refused["status"] == 405, refused
    assert refused["error"]["message"] == f'Required status check "{GATE_CHECK}" is failure.'
    code, out, err = world.cli("mr-monitor", "--json")
    assert code == 0, out + err
    [fix] = _fixes(world)
    assert fix["trigger"]["kind"] == "ci_failed" and fix["args"]["mr"].endswith(f"!{mr['iid']}")
    assert "eval gate FAILED" in Path(fix["args"]["trace_file"]).read_text()
    key = fix["args"]["mr"]
    assert world.state("monitored-mrs.json")["mrs"][key]["fix_ci_attempts"] == 1
    # the fix: the packaged investigator template back, and (a model-facing change the
    # scripted gate cannot judge) the operator's sign-off of exactly that change, as the
    # gate asks in its log: green on the new head, nothing more to fix, and merged
    packaged = (PACKAGED / "agent-config/prompts/investigator.md").read_text()
    fix_files = {"agent-config/prompts/investigator.md": packaged}
    signoff = json.dumps({"digest": _digest(world.root / "digest", fix_files), "by": "alice"})
    status, trace = _push(world, mr, {**fix_files, "eval-signoff.json": signoff})
    assert status == "success", trace[-3000:]
    assert "eval gate held: 1/1 cases passed" in trace, trace[-3000:]
    assert "the operator alice signed it off" in trace
    assert world.cli("mr-monitor", "--json")[0] == 0  # green: nothing more to fix
    assert _fixes(world) == [fix]
    merged = world.merge(mr["iid"])
    assert merged["ok"], merged


def test_a_link_planted_where_the_baseline_goes_is_never_written_through(
    world: World, ready: Path, tmp_path: Path
) -> None:
    """#28 R2: code the patch-suggester wrote leaves ``evals/baseline.json`` as a symlink to
    the operator's harness.yaml when a required check imports it; finalize's eval step then
    writes the baseline there. The checks run in a clean copy and the harness writes no link:
    the operator's config is untouched and the MR carries a real baseline file."""
    suite = tmp_path / "mini-suite"
    suite.mkdir()
    shutil.copy(DEFAULT_DIR / "honest-complete.yaml", suite / "honest-complete.yaml")
    target = ready / "harness.yaml"
    text = target.read_text().replace("eval_suites: []", f"eval_suites: ['{suite}']")
    # a check that runs the package; improvements may touch evals/ (where the baseline goes)
    check = "self_repo_checks: [\"python -c 'import harness_cli'\"]\n  self_repo_paths: "
    check += '["harness_cli/", "agent-config/prompts/", "evals/"]'
    target.write_text(text.replace('self_repo_checks: ["make test"]', check))
    before = target.read_bytes()
    world.model.load_script("improvement", {"plant_target": str(target)})
    world.case(CASE, gap_report(confidence=85, body="[scenario: plant]"))

    data = world.finalize(CASE)

    assert target.read_bytes() == before  # the operator's config is untouched
    [case] = data["data"]["cases"]
    assert case["status"] == "open", case
    [mr] = world.mrs()
    baseline = json.loads(world.show(mr["source_branch"], "evals/baseline.json"))
    assert baseline["suites"] == [str(suite)]
    [wt] = (tmp_path / "worktrees").glob("case-*")
    assert not (wt / "evals" / "baseline.json").is_symlink()


def _push(world: World, mr: dict[str, Any], files: dict[str, str]) -> tuple[str, str]:
    """A commit of ``files`` on the PR's branch (GitHub's web editor); the gate's run on it."""
    assert world.hub is not None
    world.hub.control("commit", {"repo": HARNESS_REPO, "branch": mr["source_branch"],
                                 "files": files, "message": "Answer the eval gate"})  # fmt: skip
    [head] = [m["sha"] for m in world.mrs() if m["iid"] == mr["iid"]]
    return ci_on(world, head)[-1]


def _fixes(world: World) -> list[dict[str, Any]]:
    return [p for p in payloads(world.root, "dev-agent") if p["args"].get("mode") == "fix_ci"]


def _digest(folder: Path, files: dict[str, str]) -> str:
    """The digest the gate names for a change that leaves ``files`` as given (what the
    operator signs off), from the harness's own rule (harness_cli.eval.gate)."""
    folder.mkdir()
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "the fix"]):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)
    return gate.change_digest(folder, sorted(files))

"""The improvement MR that finalize opens carries the eval suite's before/after figures in its
description, computed by the harness from its own eval run — the packaged prompts and SOPs
against the ones the MR leaves — and never taken from the model's text."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_cli.delivery.style import lint_description
from harness_cli.investigation.library import DEFAULT_DIR
from harness_cli.sandbox.gitlab_api import GitLabEmulator
from tests.improvement.conftest import HARNESS_FILES, HARNESS_REPO
from tests.improvement.corpus import gap_report
from tests.improvement.test_finalize import CASE, World, github_emu, model, world

__all__ = ["github_emu", "model", "world"]  # the fixtures, shared with test_finalize


@pytest.fixture
def forge() -> str:
    """GitLab only for now: the eval figures of an improvement PR on GitHub are not checked here
    yet (#32 stays open on it); test_finalize runs the loop itself on both forges."""
    return "gitlab"


pytestmark = pytest.mark.slow

PIPELINE = "python -m pytest -q && harness eval --overlay . --baseline evals/baseline.json -j 1"
"""The harness repo's CI as an improvement MR meets it: its tests, then its eval step."""


@pytest.fixture
def gitlab_emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitLabEmulator]:
    emulator = GitLabEmulator(tmp_path / "gitlab", ci_timeout=300, watch_interval=0.1)
    emulator.start()
    try:
        emulator.control(
            "create_project",
            {"path": HARNESS_REPO, "files": HARNESS_FILES, "ci_command": ["sh", "-c", PIPELINE]},
        )
        monkeypatch.setenv("GITLAB_URL", emulator.url)
        monkeypatch.setenv("GITLAB_TOKEN", "glpat-harness-bot")
        yield emulator
    finally:
        emulator.stop()


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
    world.gitlab.wait_for_pipelines(timeout=600)
    pipelines = [p for p in world.gitlab.state.pipelines.values() if p.sha == mr["sha"]]
    assert pipelines, world.gitlab.snapshot()["pipelines"]
    trace = "".join(pipelines[-1].jobs[-1].trace)
    assert "1 trial(s) started and counted; baseline 0/1" in trace, trace[-3000:]
    assert "eval gate FAILED: 0/1 cases passed (0%) against the baseline's 1/1" in trace
    assert pipelines[-1].status == "failed"


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

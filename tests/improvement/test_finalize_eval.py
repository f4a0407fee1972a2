"""The improvement MR that finalize opens carries the eval suite's before/after figures in its
description, computed by the harness from its own eval run — the packaged prompts and SOPs
against the ones the MR leaves — and never taken from the model's text."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness_cli.delivery.style import lint_description
from harness_cli.investigation.library import DEFAULT_DIR
from tests.improvement.corpus import gap_report
from tests.improvement.test_finalize import CASE, World, gitlab_emu, model, world

__all__ = ["gitlab_emu", "model", "world"]  # the fixtures, shared with test_finalize
pytestmark = pytest.mark.slow


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
    assert "1 of 1 passed (100%, 95 % interval 21% to 100%) before" in text
    assert "0 of 1 passed (0%, 95 % interval 0% to 79%) after" in text
    assert re.search(r"paired difference of -100 points \(95 % interval -100 to [+-]\d+\)", text)
    assert text.index("The harness ran its eval suite") < text.index("Changes:")
    assert lint_description(text) == []
    # the model's description carried no figure; the scripted report is unchanged otherwise
    assert "Require the direct table query" in mr["title"]

"""Grading from the wire (#31 item 3): guard notes are checked in the prompts the model
received, so a prompt template that drops them fails the cases that expect them (the
harness's own records still hold the codes); ``honest: true`` adds "never forced, never capped
below its claim"; the last confidence is checked where the operator reads it (the exit line,
the DM)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from harness_cli import resources
from harness_cli.eval.cases import EVALS_DIR, LibraryCase, Observed
from harness_cli.eval.grader import check

INV = EVALS_DIR / "investigation"
EXPECTING_NOTES = ("complete-under-70", "symptom-forever", "honest-review-drop")


def test_a_template_without_guard_notes_fails_the_cases_that_expect_them(
    cli: Any, tmp_path: Path
) -> None:
    root = tmp_path / "cfg"
    shutil.copytree(resources.example_config(), root / "agent-config")
    shutil.copytree(resources.example_sops(), root / "sops")
    template = root / "agent-config" / "prompts" / "investigator.md"
    template.write_text(template.read_text().replace("$guard_notes", ""))
    cases = [str(INV / f"{c}.yaml") for c in EXPECTING_NOTES]
    code, out, err = cli("eval", *cases, "--config-root", str(root), "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert data["variants"]["baseline"][-1]["passed"] == 0, data["variants"]["baseline"]
    for trial in data["not_passed"]:
        assert any("guard note in a prompt the model received" in p for p in trial["problems"])


def _case(**expect: Any) -> LibraryCase:
    return LibraryCase.model_validate({"id": "x", "description": "d", "honest": True,
                                       "expect": {"exit": "complete", **expect}})  # fmt: skip


def _seen(**kw: Any) -> Observed:
    line = "exit=complete       confidence=76%  iterations=2   elapsed=0min"
    base: dict[str, Any] = {
        "runtime": "anthropic",
        "exit": "complete",
        "exit_code": 0,
        "exit_line": line,
        "iterations": 2,
        "status": "",
        "dm": [f"`{line}`"],
    }
    return Observed(**{**base, **kw})


def test_an_honest_model_is_never_forced_nor_capped_below_its_closing_claim() -> None:
    assert check(_case(), _seen(claimed=[90, 76])) == []
    assert any("capped to 76%" in p for p in check(_case(), _seen(claimed=[90, 90])))
    forced = check(_case(), _seen(claimed=[76, 76], codes={"CONFIDENCE_FORCE"}))
    assert any("an honest model was forced (CONFIDENCE_FORCE)" in p for p in forced)


def test_the_last_confidence_is_checked_where_the_operator_reads_it() -> None:
    assert check(_case(confidences=[60, 76]), _seen(confidences=[60, 76])) == []
    told = check(_case(confidences=[60, 80]), _seen(confidences=[60, 80]))
    assert any("the exit line says confidence=76%, not 80%" in p for p in told)
    assert any("the DM does not tell confidence=80%" in p for p in told)
